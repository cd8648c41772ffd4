"""Callbacks for training translation models."""

import time

import keras
import numpy as np
from keras import ops

from keras_luong.checks import check_integer, check_texts
from keras_luong.evaluation import corpus_bleu


class EveryFrequencyEpochs(keras.callbacks.Callback):
    """A callback whose work runs every `self.frequency` epochs and after the last one, as
    Keras' `validation_freq` runs validation."""

    last_epoch = None

    def on_train_begin(self, logs=None):
        self.last_epoch = self.params.get("epochs") if self.params else None

    def due(self, epoch):
        """Whether the work runs at the end of `epoch` (0-based)."""
        return not (epoch + 1) % self.frequency or epoch + 1 == self.last_epoch


class BleuCallback(EveryFrequencyEpochs):
    """Translates held-out sentences every `frequency` epochs and logs their corpus BLEU.

    The score goes into the epoch's `logs` under `name` (`"val_bleu"` by default), and the
    length ratio of the output's words to the references' under `name + "_length_ratio"` (a
    ratio well above 1: the decoder runs on; below 1: it stops early), where
    `History`, `ModelCheckpoint(monitor="val_bleu", mode="max")`, `EarlyStopping` and
    `ReduceLROnPlateau` read it: put this callback before them in the list. It is only
    logged on the epochs it is computed, as Keras' own validation metrics with
    `validation_freq`.

    Args:
        sources: The source sentences (strings).
        references: Their references: one string per sentence, or a list of them.
        max_length: The most target tokens decoded per sentence; by default `translate`'s
            rule (each sentence's own bound, 1.5 × its source tokens + 10).
        source_vocabulary: The source vocabulary; the model's own (`set_vocabularies`) if
            `None`.
        target_vocabulary: The target vocabulary; likewise.
        sampler: The sampler of `model.translate`. Defaults to the model's
            (`compile(sampler=...)`, greedy unless set there).
        frequency: Decode every this many epochs (and after the last). Defaults to 1.
        tokenize: sacreBLEU's tokenizer (see `keras_luong.evaluation.corpus_bleu`):
            `"13a"` for detokenized text, `"none"` for text tokenized beforehand. Defaults to
            `"13a"`, sacreBLEU's.
        name: The key in `logs`. Defaults to `"val_bleu"`.
        batch_size: Sentences decoded at once. Defaults to 32, as `translate`.
        verbose: 1 prints the score, the number of sentences and the seconds taken. Defaults
            to 1.

    Example:

    >>> import keras, numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> from keras_luong.data.vocabulary import Vocabulary
    >>> words = Vocabulary.from_corpus(["a b c d"], split="whitespace")
    >>> model = LuongSeq2Seq(len(words), len(words), units=8, embedding_dim=4)
    >>> model.set_vocabularies(words, words)
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> source = words.encode_batch(["a b", "c d"])
    >>> bleu = BleuCallback(["a b", "c d"], ["a b", "c d"], max_length=4, verbose=0)
    >>> history = model.fit(
    ...     (source, words.encode_batch(["a b", "c d"], start=True)),
    ...     words.encode_batch(["a b", "c d"], end=True),
    ...     epochs=2, callbacks=[bleu], verbose=0,
    ... )
    >>> len(history.history["val_bleu"])  # one score per epoch, in percent
    2
    >>> hypotheses = model.translate(["a b", "c d"], max_length=4)
    >>> history.history["val_bleu"][-1] == corpus_bleu(hypotheses, ["a b", "c d"])
    True
    """

    def __init__(
        self,
        sources,
        references,
        max_length=None,
        source_vocabulary=None,
        target_vocabulary=None,
        sampler=None,
        frequency=1,
        tokenize="13a",
        name="val_bleu",
        batch_size=32,
        verbose=1,
    ):
        super().__init__()
        # Checked now, not after the first epoch's training time is spent.
        sources = check_texts("sources", sources, allow_empty=False)
        if isinstance(references, str) or len(references) != len(sources):
            raise ValueError(
                "Expected one reference (or list of references) per source. Received: "
                f"{len(sources)} sources and {len(references)} references"
            )
        check_integer("frequency", frequency)
        check_integer("max_length", max_length, allow_none=True)
        corpus_bleu(["a"], ["a"], tokenize=tokenize)  # refuses an unknown tokenizer now
        self.sources = list(sources)
        self.references = list(references)
        self.max_length = max_length
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary
        self.sampler = sampler
        self.frequency = frequency
        self.tokenize = tokenize
        self.name = name
        self.batch_size = batch_size
        self.verbose = verbose

    def score(self):
        """Translates the sources with the model and returns their corpus BLEU, a `BleuScore`
        (the score with its brevity penalty and length ratio)."""
        hypotheses = self.model.translate(
            self.sources,
            self.source_vocabulary,
            self.target_vocabulary,
            max_length=self.max_length,
            sampler=self.sampler,
            batch_size=self.batch_size,
        )
        return corpus_bleu(hypotheses, self.references, tokenize=self.tokenize, return_details=True)

    def on_epoch_end(self, epoch, logs=None):
        if not self.due(epoch):
            return
        started = time.perf_counter()
        bleu = self.score()
        if logs is not None:
            logs[self.name] = bleu.score
            logs[f"{self.name}_length_ratio"] = bleu.length_ratio
        if self.verbose:
            seconds = time.perf_counter() - started
            print(
                f"Epoch {epoch + 1}: {self.name} {bleu.score:.2f} (length ratio "
                f"{bleu.length_ratio:.3f}, brevity penalty {bleu.brevity_penalty:.3f}; "
                f"{len(self.sources)} sentences, {seconds:.1f} s)",
                flush=True,
            )


def alignment_statistics(weights, source_mask, target_mask):
    """How sharply, how monotonically and over how much of the source alignments `(B, T, S)`
    attend, as three numbers.

    - `entropy`: the mean over the target tokens of the alignment's entropy divided by the
      log of its source's length, `H(a_t) / log S_i`: 1 for uniform attention over the
      source, 0 for attention on one position. (Sources of one token are left out.)
    - `diagonal`: the mean over the pairs of the correlation (Pearson) between the target
      position `t` and the attended source position `Σ_s s · a_t(s)`: near 1 when attention
      walks along the source as the target goes on, 0 when it stays in one place (on one
      word, or spread evenly over the sentence). Pairs with fewer than 2 target tokens, or
      whose attended position does not move at all, count as 0.
    - `span`: the mean over the pairs of how far the attention's centroid
      `c_t = Σ_s s · a_t(s) / Σ_s a_t(s)` walks over the target tokens, as a share of the
      source: the median slope of `c_t` against `t` over every two target tokens (Theil–Sen),
      times the distance from the first target token to the last, over `S_i − 1`, in absolute
      value and at most 1. Near 1 when the target's tokens attend from the source's first word
      to its last (or its last to its first), near 0 when attention stays in one place. A
      correlation cannot see attention that walks over part of the source only (the second
      half, say); the span does, and a median slope is not moved by a few tokens that attend
      elsewhere (the first token at the source's first word, say), where the centroid's range
      would count them as a walk. Pairs with fewer than 2 target tokens or source tokens count
      as 0; steps whose weights are all 0 are left out.

    Args:
        weights: Alignments `(B, T, S)`, each row a distribution over the valid source
            positions (zeros at padding).
        source_mask: `(B, S)` booleans, true at real source tokens.
        target_mask: `(B, T)` booleans, true at real target tokens.

    Returns:
        A dict of three floats, under the keys `"entropy"`, `"diagonal"` and `"span"`.

    Example:

    >>> import numpy as np
    >>> eye = np.eye(3, dtype="float32")[None]  # target token t attends to source word t
    >>> stats = alignment_statistics(eye, np.ones((1, 3), bool), np.ones((1, 3), bool))
    >>> round(stats["entropy"], 6), round(stats["diagonal"], 6), round(stats["span"], 6)
    (0.0, 1.0, 1.0)
    """
    weights = np.asarray(weights, "float64")
    source_mask = np.asarray(source_mask, bool)
    target_mask = np.asarray(target_mask, bool)
    if weights.ndim != 3 or weights.shape[:1] + weights.shape[2:] != source_mask.shape:
        raise ValueError(
            "Expected weights (batch_size, T, S) and source_mask (batch_size, S). Received: "
            f"weights.shape={weights.shape}, source_mask.shape={source_mask.shape}"
        )
    if target_mask.shape != weights.shape[:2]:
        raise ValueError(
            "Expected target_mask (batch_size, T) to match weights (batch_size, T, S). "
            f"Received: target_mask.shape={target_mask.shape}, weights.shape={weights.shape}"
        )
    weights = np.where(source_mask[:, None, :], weights, 0.0)
    lengths = source_mask.sum(axis=1)  # (B,)
    plogp = np.where(weights > 0, weights * np.log(np.where(weights > 0, weights, 1.0)), 0.0)
    entropy = -plogp.sum(axis=-1)  # (B, T)
    counted = target_mask & (lengths[:, None] > 1)
    # Clipped: float32 weights that are uniform can give 1 + 1e-9.
    normalised = np.clip(entropy / np.log(np.maximum(lengths, 2))[:, None], 0.0, 1.0)
    mean_entropy = float(normalised[counted].mean()) if counted.any() else 0.0

    attended = (weights * np.arange(weights.shape[2])).sum(axis=-1)  # (B, T)
    mass = weights.sum(axis=-1)
    centroid = attended / np.where(mass > 0, mass, 1.0)
    correlations, spans = [], []
    for row in range(weights.shape[0]):
        steps = np.flatnonzero(target_mask[row])
        if len(steps) < 2:
            correlations.append(0.0)
            spans.append(0.0)
            continue
        kept = steps[mass[row, steps] > 0]  # steps without weight left out
        spans.append(_walk_span(kept, centroid[row, kept], lengths[row]))
        position = attended[row, steps]
        if np.ptp(position) < 1e-9:
            correlations.append(0.0)
            continue
        correlations.append(float(np.corrcoef(steps, position)[0, 1]))
    diagonal = float(np.mean(correlations)) if correlations else 0.0
    span = float(np.mean(spans)) if spans else 0.0
    return {"entropy": mean_entropy, "diagonal": diagonal, "span": span}


def _walk_span(steps, centroids, length):
    """How far centroids `(n,)` at increasing target steps `(n,)` walk over a source of
    `length` tokens: the Theil–Sen slope times the steps' extent, over `length - 1`, in
    absolute value and at most 1 (0 with fewer than two steps or source tokens)."""
    if len(steps) < 2 or length < 2:
        return 0.0
    first, second = np.triu_indices(len(steps), k=1)
    slopes = (centroids[second] - centroids[first]) / (steps[second] - steps[first])
    walked = abs(float(np.median(slopes))) * (steps[-1] - steps[0])
    return min(walked / (length - 1), 1.0)


class AttentionCallback(EveryFrequencyEpochs):
    """Logs how the model attends on held-out pairs, every `frequency` epochs: whether its
    attention has locked on to the source.

    Before attention locks on, every target token attends to much the same place (spread
    evenly over the source, or sitting on one word), and the decoder translates like a
    language model. Once it locks on, each token attends to a few source words, and for a
    language pair in much the same word order the attended position walks along the source.
    The callback computes `alignment_statistics` of the model's alignments on the pairs
    (teacher-forced, no dropout) and logs `name + "_entropy"`, `name + "_diagonal"` and
    `name + "_span"` (`val_attention_entropy`, `val_attention_diagonal` and
    `val_attention_span` by default). For a language pair in
    much the same word order, the diagonal is the signal: near 0 before attention locks on,
    rising towards 1 as it does (0.3 → 0.96 over two epochs of an English–German model that
    locks on). The entropy tells the two ways of not being locked on apart: near 1, attention
    spread evenly over the source; near 0 with a diagonal near 0, attention fixed on one
    position whatever the target word. The span tells attention that walks over the whole
    source from attention that walks over part of it (local-p's predicted position can keep
    to a band of the source while the diagonal rises). All three are logged on the epochs
    computed, so `History`,
    `EarlyStopping` and a CSV logger see them.

    Args:
        source: Source ids `(N, S)`, 0 for padding (as `fit` takes them).
        target_in: The targets after the start id `(N, T)`, 0 for padding.
        frequency: Compute every this many epochs (and after the last). Defaults to 1.
        batch_size: Pairs run at once. Defaults to 64.
        name: The prefix of the keys in `logs`. Defaults to `"val_attention"`.
        verbose: 1 prints the three numbers. Defaults to 0.

    Example:

    >>> import keras, numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> model = LuongSeq2Seq(10, 10, units=8, embedding_dim=4)
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> source = np.array([[4, 5, 6], [7, 8, 0]])
    >>> target_in = np.array([[1, 4, 5], [1, 7, 8]])
    >>> target_out = np.array([[4, 5, 2], [7, 8, 2]])
    >>> attention = AttentionCallback(source, target_in)
    >>> history = model.fit((source, target_in), target_out, epochs=2, verbose=0,
    ...                     callbacks=[attention])
    >>> entropy = history.history["val_attention_entropy"]
    >>> len(entropy), 0 <= entropy[-1] <= 1
    (2, True)
    """

    def __init__(self, source, target_in, frequency=1, batch_size=64, name="val_attention",
                 verbose=0):  # fmt: skip
        super().__init__()
        source = np.asarray(source)
        target_in = np.asarray(target_in)
        for arg, value in (("source", source), ("target_in", target_in)):
            if value.ndim != 2 or not len(value) or not np.issubdtype(value.dtype, np.integer):
                raise ValueError(
                    f"Invalid value for argument {arg}. Expected integer ids (N, length) with "
                    f"N > 0. Received: {arg} of shape {value.shape} and dtype {value.dtype}"
                )
        if len(source) != len(target_in):
            raise ValueError(
                "Expected as many targets as sources. Received: "
                f"{len(source)} sources and {len(target_in)} target_in rows"
            )
        self.source = source.astype("int32")
        self.target_in = target_in.astype("int32")
        self.frequency = check_integer("frequency", frequency)
        self.batch_size = check_integer("batch_size", batch_size)
        self.name = name
        self.verbose = verbose

    def statistics(self):
        """`alignment_statistics` of the model's alignments on the pairs, now."""
        weights = []
        for start in range(0, len(self.source), self.batch_size):
            rows = slice(start, start + self.batch_size)
            _, batch = self.model(
                (self.source[rows], self.target_in[rows]),
                training=False,
                return_attention_scores=True,
            )
            weights.append(ops.convert_to_numpy(ops.cast(batch, "float32")))
        return alignment_statistics(np.concatenate(weights), self.source != 0, self.target_in != 0)

    def on_epoch_end(self, epoch, logs=None):
        if not self.due(epoch):
            return
        stats = self.statistics()
        if logs is not None:
            for key, value in stats.items():
                logs[f"{self.name}_{key}"] = value
        if self.verbose:
            print(
                f"Epoch {epoch + 1}: {self.name} entropy {stats['entropy']:.3f}, "
                f"diagonal {stats['diagonal']:.3f}, span {stats['span']:.3f}",
                flush=True,
            )
