"""What `translate` gives beside the text: each translation's alignment to its source (the
attention's weights and a link per target token, OpenNMT-py's `-report_align`) and its unknown
tokens replaced from the source (OpenNMT-py's `-replace_unk`, with its phrase table)."""

import collections
import os

import keras
import numpy as np

from keras_luong.backend.engine import compiles_with_xla
from keras_luong.checks import check_path
from keras_luong.generation.generator import teacher_forced_input


class Alignment(
    collections.namedtuple("Alignment", ["source_tokens", "target_tokens", "weights", "links"])
):
    """A translation's alignment to its source, from the attention of its decoding steps.

    Attributes:
        source_tokens: The source's tokens as the source vocabulary's `tokenize` splits it
            (words, characters or subword pieces): the positions the model attended to.
        target_tokens: The translation's tokens before its end token, as the target
            vocabulary's `tokenize` writes them (the unknown id as its `oov_token`, also
            where `replace_unk` replaced it in the text).
        weights: float32 `(len(target_tokens), len(source_tokens))`: row `t` holds the
            attention weights of the step that generated target token `t`.
        links: One `(source index, target index)` pair per target token, the source token
            its weights are largest on (none for an empty source).

    Example:

    What `translate(["das haus brennt"], return_alignments=True)` gives for a translation
    "house burns" whose two steps attended most to "haus", then "brennt":

    >>> import numpy as np
    >>> weights = np.array([[0.2, 0.7, 0.1], [0.1, 0.3, 0.6]], "float32")
    >>> links = [(int(j), t) for t, j in enumerate(weights.argmax(axis=1))]
    >>> found = Alignment(["das", "haus", "brennt"], ["house", "burns"], weights, links)
    >>> found.links, found.pharaoh()
    ([(1, 0), (2, 1)], '1-0 2-1')
    """

    __slots__ = ()

    def pharaoh(self):
        """The links as Pharaoh pairs, `"i-j"` for source token `i` and target token `j`
        (from 0), as fast_align writes them and OpenNMT-py's `-report_align` prints them."""
        return " ".join(f"{i}-{j}" for i, j in self.links)


class Aligner(keras.Model):
    """A model's attention weights over a teacher-forced target, `(source, target_in)` to
    `(B, T, S)`, as one compiled function (`predict_on_batch`: jitted on JAX, XLA on
    TensorFlow; the model called eagerly took 10x greedy decoding's time on JAX). The
    alignments of a sampler that does not record them in its loop (one that does not
    return its cache, as keras-hub's); the pass took 1.44x greedy decoding's time where the
    loop's record takes 1.00x (`python -m benchmarks.speed decoding_controls`, JAX)."""

    def __init__(self, seq2seq, **kwargs):
        super().__init__(**kwargs)
        self.seq2seq = seq2seq

    def call(self, inputs):
        return self.seq2seq(inputs, training=False, return_attention_scores=True)[1]


def generated_alignments(model, source, generated, max_length):
    """The alignments of generated ids: the decoder re-run over its own output (step decoding
    equals teacher forcing), zero after the end token. For a sampler that does not record
    them in its decoding loop."""
    ids = generated[0] if isinstance(generated, tuple) else generated
    flat = np.reshape(ids, (-1, max_length))
    if flat.shape[0] == 0:
        return np.zeros((*ids.shape, source.shape[1]), "float32")
    repeated = np.repeat(source, flat.shape[0] // source.shape[0], axis=0)
    target_in = teacher_forced_input(flat, model.start_token)
    aligner = model.__dict__.get("_aligner")
    if aligner is None:  # kept on the model (not tracked by Keras as state)
        aligner = model.__dict__["_aligner"] = Aligner(model)
        aligner.jit_compile = compiles_with_xla()
    weights = aligner.predict_on_batch((repeated.astype("int32"), target_in))
    return np.reshape(np.asarray(weights, "float32"), (*ids.shape, source.shape[1]))


def read_translation(ids, weights, source_tokens, vocabulary, replace_unk, phrase_table):
    """`(text, alignment)` of one translation's ids `(T,)`: the alignment from the weights
    `(T, S)` of its steps (`None` without them), each unknown token written, if
    `replace_unk`, as the source token its weights are largest on or that token's entry in
    `phrase_table`."""
    if weights is None:
        return vocabulary.decode(ids), None
    kept = vocabulary._kept_positions(ids)  # the positions `decode` writes
    kept_ids = [int(ids[t]) for t in kept]
    weights = np.asarray(weights, "float32")[kept, : len(source_tokens)]
    links = []
    if len(source_tokens):
        links = [(int(j), t) for t, j in enumerate(np.argmax(weights, axis=-1))]
    tokens = [vocabulary._symbol(i) for i in kept_ids]
    found = Alignment(list(source_tokens), tokens, weights, links)
    unknowns = None
    if replace_unk and links:  # with no source token, there is nothing to copy
        table = phrase_table or {}
        copied = [source_tokens[j] for j, t in links if kept_ids[t] == vocabulary.OOV]
        unknowns = [table.get(token, token) for token in copied]
    return vocabulary.decode(ids, unknowns), found


def check_phrase_table(phrase_table):
    """`translate`'s `phrase_table`: `None`, a dict of strings, or the path of a file of
    `source|||target` lines (OpenNMT-py's `-phrase_table` format; the first entry of a
    source token counts)."""
    if phrase_table is None or isinstance(phrase_table, dict):
        if phrase_table and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in phrase_table.items()
        ):
            raise ValueError(
                "Invalid value for argument phrase_table. Expected a dict of source tokens to "
                f"target strings. Received: phrase_table={phrase_table!r:.200}"
            )
        return phrase_table
    path = check_path("phrase_table", phrase_table)
    if not os.path.isfile(path):
        raise ValueError(
            f"Invalid value for argument phrase_table: no such file. Received: {path!r}"
        )
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except UnicodeDecodeError:
        raise ValueError(
            f"Invalid value for argument phrase_table: {path} is not UTF-8 text, a line "
            f"'source|||target' each. Received: phrase_table={path!r}"
        ) from None
    table = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        source, separator, target = line.rstrip("\n").partition("|||")
        if not separator or not source.strip():
            raise ValueError(
                f"Invalid value for argument phrase_table: line {number} of {path} is not "
                f"'source|||target'. Received: {line.rstrip()!r:.100}"
            )
        table.setdefault(source.strip(), target.strip())
    return table
