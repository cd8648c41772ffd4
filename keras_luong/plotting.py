"""Attention heatmaps."""


def plot_attention(weights, source_tokens, target_tokens, path=None, title=None, ax=None):
    """Draws `weights` `(T, S)` as a heatmap, target tokens down, source tokens across.

    Returns the matplotlib figure; saves it to `path` if given. Needs matplotlib."""
    import matplotlib

    if path is not None and ax is None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    weights = weights[: len(target_tokens), : len(source_tokens)]
    if ax is None:
        figure, ax = plt.subplots(
            figsize=(0.35 * len(source_tokens) + 1.5, 0.35 * len(target_tokens) + 1.2)
        )
    else:
        figure = ax.figure
    ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(source_tokens)), [repr(t)[1:-1] for t in source_tokens])
    ax.set_yticks(range(len(target_tokens)), list(target_tokens))
    ax.tick_params(axis="x", labelrotation=90)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(title)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure
