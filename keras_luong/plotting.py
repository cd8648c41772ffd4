"""Attention heatmaps, and word-to-word alignments from subword ones."""

import numpy as np


def plot_attention(weights, source_tokens, target_tokens, path=None, title=None, ax=None):
    """Draws `weights` `(T, S)` as a heatmap, target tokens down, source tokens across, with a
    colorbar.

    `weights` may be larger than the labels (padding); its first `len(target_tokens)` rows and
    `len(source_tokens)` columns are drawn. Spaces are drawn as `␣`; a character that the
    font cannot draw (CJK with matplotlib's default DejaVu Sans) is written as its code point
    (`U+5E74`) rather than as a box.

    Needs matplotlib (`pip install 'keras-luong[plot]'`).

    Args:
        weights: Attention weights `(T, S)` (a numpy array or a tensor).
        source_tokens: The labels of the columns.
        target_tokens: The labels of the rows.
        path: If given, the figure is saved there, without touching pyplot or the
            matplotlib backend.
        title: The figure's title.
        ax: A matplotlib axes to draw on; by default a new figure, drawn with pyplot (inline
            in a notebook).

    Returns:
        The matplotlib figure.
    """
    try:
        import matplotlib  # noqa: F401  (the other imports below are local)
    except ImportError as error:
        raise ImportError(
            "plot_attention needs matplotlib: pip install 'keras-luong[plot]'"
        ) from error
    weights = np.asarray(weights)
    shape = (len(target_tokens), len(source_tokens))
    if weights.ndim != 2 or weights.shape[0] < shape[0] or weights.shape[1] < shape[1]:
        raise ValueError(
            "Expected weights of shape (T, S) with at least as many rows as target_tokens and "
            f"columns as source_tokens, {shape}. Received: weights.shape={weights.shape}"
        )
    weights = weights[: shape[0], : shape[1]]
    if ax is not None:
        figure = ax.figure
    else:
        size = (0.35 * shape[1] + 2.5, 0.35 * shape[0] + 1.2)
        if path is not None:
            from matplotlib.figure import Figure

            figure = Figure(figsize=size)
            ax = figure.add_subplot()
        else:
            import matplotlib.pyplot as plt

            figure, ax = plt.subplots(figsize=size)
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    figure.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    ax.set_xticks(range(shape[1]), [_label(t) for t in source_tokens])
    ax.set_yticks(range(shape[0]), [_label(t) for t in target_tokens])
    ax.tick_params(axis="x", labelrotation=90)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(_label(title, keep_spaces=True))
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def merge_subwords(weights, source_pieces, target_pieces, marker="▁"):
    """Word-to-word alignments from subword ones: `(word_weights, source_words,
    target_words)`.

    A word starts at each piece beginning with `marker` (SentencePiece's `▁`) and takes in
    the pieces after it. A source word receives the weight of all its pieces (the attention
    a target piece pays to the word); a target word's row is the mean of its pieces' rows (so
    rows still sum to at most 1). Pieces without a marker before the first one form a word.

    Args:
        weights: Subword alignments `(T, S)`, at least `len(target_pieces)` rows and
            `len(source_pieces)` columns (padding is cut off).
        source_pieces: The source pieces, e.g. `SubwordVocabulary.tokenize(text)`.
        target_pieces: The target pieces (an end token `"</s>"` may be the last one).
        marker: The word-start mark. Defaults to `"▁"`.

    Example:

    >>> weights = np.array([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8], [0.1, 0.1, 0.8]])
    >>> merged, source, target = merge_subwords(
    ...     weights, ["▁fahr", "rad", "▁."], ["▁bicy", "cle", "▁."]
    ... )
    >>> source, target
    (['fahrrad', '.'], ['bicycle', '.'])
    >>> merged.round(2).tolist()  # columns summed, rows averaged
    [[0.6, 0.4], [0.2, 0.8]]
    """
    weights = np.asarray(weights, "float64")[: len(target_pieces), : len(source_pieces)]
    source_words, source_groups = _words(source_pieces, marker)
    target_words, target_groups = _words(target_pieces, marker)
    columns = np.stack([weights[:, g].sum(axis=1) for g in source_groups], axis=1)
    merged = np.stack([columns[g].mean(axis=0) for g in target_groups])
    return merged, source_words, target_words


def _words(pieces, marker):
    words, groups = [], []
    for i, piece in enumerate(pieces):
        piece = str(piece)
        if not groups or piece.startswith(marker):
            words.append(piece.removeprefix(marker))
            groups.append([i])
        else:
            words[-1] += piece
            groups[-1].append(i)
    return words, groups


def _label(token, keep_spaces=False):
    """`token` with spaces marked and the characters the font lacks written as code points."""
    token = str(token)
    if not keep_spaces:
        token = token.replace(" ", "␣").replace("\u202f", "␣").replace("\xa0", "␣")
    drawable = _drawable()
    return "".join(c if drawable(c) else f"U+{ord(c):04X}" for c in token)


_FONT = {}


def _drawable():
    """A test of whether matplotlib's current default font has a glyph for a character."""
    if "font" not in _FONT:
        from matplotlib import font_manager
        from matplotlib.ft2font import FT2Font

        path = font_manager.findfont(font_manager.FontProperties())
        _FONT["font"] = FT2Font(path)
    font = _FONT["font"]
    return lambda c: c.isascii() or font.get_char_index(ord(c)) != 0
