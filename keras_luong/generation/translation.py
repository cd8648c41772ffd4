"""The bodies of `GenerationMixin.generate` (ids in, checked, ids out) and `translate` (texts in,
texts out, decoded in batches sorted by length, each text with its own length bound)."""

import keras
import numpy as np

from keras_luong.backend.engine import compiles_with_xla
from keras_luong.checks import MASKED_SCORE, check_integer, check_texts, check_token_ids
from keras_luong.data.batching import length_sorted_batches
from keras_luong.data.vocabulary_assets import check_vocabulary_size
from keras_luong.generation.bounds import (
    LENGTH_BOUND,
    check_length_bound,
    check_prefix,
    cut_to_longest_source,
    default_max_length,
    length_bucket,
)
from keras_luong.generation.generator import generate_ids
from keras_luong.generation.scoring import generated_token_scores
from keras_luong.generation.word_alignments import (
    check_phrase_table,
    generated_alignments,
    read_translation,
)


def generate_checked(
    model, inputs, max_length, stop_token_ids, sampler, batch_size, return_attention_scores,
    length_bound, prefix,
):  # fmt: skip
    """See `GenerationMixin.generate`."""
    source = check_token_ids("inputs", inputs, model.source_vocabulary_size, rank=2)
    if not isinstance(source, np.ndarray):
        raise TypeError(
            "Invalid value for argument inputs. Expected source ids as an array "
            "(batch_size, S); use generator().predict for a dataset. Received: inputs of "
            f"type {type(inputs).__name__}"
        )
    batch_size = check_integer("batch_size", batch_size)
    length_bound = check_length_bound(length_bound)
    if max_length is None:
        lengths = np.count_nonzero(source, axis=1).tolist()
        max_length = default_max_length(lengths, length_bound)
    cut = cut_to_longest_source(source, model.longest_source)
    prefix = check_prefix(model, prefix, len(source), max_length)
    generated = generate_ids(
        model,
        cut,
        max_length,
        sampler,
        batch_size,
        prefix=prefix,
        stop_token_ids=stop_token_ids,
        record_attention=return_attention_scores,
    )
    if not return_attention_scores:
        return generated
    generated, alignments = generated
    if alignments is None:
        alignments = generated_alignments(model, cut, generated, max_length)
    padding = [(0, 0)] * (alignments.ndim - 1) + [(0, source.shape[1] - cut.shape[1])]
    return generated, np.pad(alignments, padding)  # the cut padding's weights: zeros


def translate_texts(
    model, texts, source_vocabulary, target_vocabulary, max_length, sampler, batch_size,
    tokens_per_batch, verbose, length_bound=LENGTH_BOUND, prefixes=None,
    return_alignments=False, replace_unk=False, phrase_table=None, return_token_scores=False,
    **kwargs,
):  # fmt: skip
    """See `GenerationMixin.translate`."""
    phrase_table = check_phrase_table(phrase_table)
    if phrase_table is not None and not replace_unk:
        raise ValueError(
            "Invalid value for argument phrase_table: it is read with replace_unk=True. "
            f"Received: replace_unk={replace_unk!r}"
        )
    vocabularies = {}
    for side, vocabulary, size in (
        ("source", source_vocabulary, model.source_vocabulary_size),
        ("target", target_vocabulary, model.target_vocabulary_size),
    ):
        if vocabulary is None:
            vocabulary = getattr(model, f"{side}_vocabulary", None)
            if vocabulary is None:
                raise ValueError(
                    f"Invalid value for argument {side}_vocabulary. Expected a vocabulary: "
                    "the model has none (see set_vocabularies). "
                    f"Received: {side}_vocabulary=None"
                )
        check_vocabulary_size(side, vocabulary, size)
        vocabularies[side] = vocabulary
    texts = check_texts("texts", texts)
    batch_size = check_integer("batch_size", batch_size)
    verbose = check_integer("verbose", verbose, minimum=0, maximum=2)
    progress = keras.utils.Progbar(len(texts), verbose=verbose, unit_name="text")
    rows = [vocabularies["source"].encode(t) for t in texts]
    longest = model.longest_source
    for i, row in enumerate(rows if longest is not None else ()):
        if len(row) > longest:
            raise ValueError(
                f"Invalid value for argument texts: texts[{i}] has {len(row)} source "
                f"tokens, past the {longest} source positions the model's attention "
                f"scores (max_source_length). Received: texts[{i}]={texts[i]!r:.100}"
            )
    length_bound = check_length_bound(length_bound)
    if max_length is None:  # each text's own bound
        bounds = np.array([default_max_length([len(r)], length_bound) for r in rows], "int64")
        # One generator whose length holds every text's bound, each row ending at its
        # own bound inside it: one compiled function per source shape, kept for the next
        # call (per-batch bounds would each compile a generator of their own).
        bound = length_bucket(bounds.max(initial=1))
    else:
        bound = check_integer("max_length", max_length)
        bounds = np.full(len(rows), bound, "int64")
    prefix_rows = None
    if prefixes is not None:  # each text's, its ids counted in its length bound
        prefixes = check_texts("prefixes", prefixes)
        if len(prefixes) != len(texts):
            raise ValueError(
                f"Invalid value for argument prefixes. Expected one prefix for each of the "
                f"{len(texts)} texts. Received: {len(prefixes)} prefixes"
            )
        prefix_rows = [vocabularies["target"].encode(p) for p in prefixes]
        bounds = np.maximum(bounds, [len(p) + 1 for p in prefix_rows])
        if max_length is None:
            bound = length_bucket(bounds.max(initial=1))
    results, alignments, token_scores = [None] * len(rows), [None] * len(rows), [None] * len(rows)
    # keras-luong's samplers record their steps' attention as they decode; the outputs of
    # others (keras-hub's) are decoded once more, teacher forced, where weights are needed.
    record = return_alignments or replace_unk
    target_vocabulary = vocabularies["target"]
    for indices, filled, length in batch_plan(
        [len(r) for r in rows], batch_size, tokens_per_batch, longest
    ):
        source = padded_rows(rows, filled, length)
        prefix = None
        if prefix_rows is not None:
            prefix = padded_rows(prefix_rows, filled, bound)
            prefix = check_prefix(model, prefix, len(filled), bound)
        generated = generate_ids(
            model,
            source,
            bound,
            sampler,
            batch_size,
            row_bounds=length_bound if max_length is None else None,
            prefix=prefix,
            record_attention=record,
            **kwargs,
        )
        weights = None
        if record:
            generated, weights = generated
        # The rows that filled the batch out are dropped.
        kept = slice(len(indices))
        source = source[kept]
        generated = keras.tree.map_structure(lambda part, kept=kept: part[kept], generated)
        weights = None if weights is None else weights[kept]
        cut = np.arange(bound) >= bounds[indices][:, None]  # (rows, bound)
        scores = None
        if isinstance(generated, tuple):  # every beam, with its score
            ids, scores = generated
            ids = np.where(cut[:, None, :], 0, ids)
            # A hypothesis beam search never reached scores about MASKED_SCORE (a row with
            # fewer continuations than beams: most tokens banned, or a prefix that ends it):
            # each row's n-best list holds its `live` hypotheses alone.
            scores = np.asarray(scores)
            live = [np.flatnonzero(row > MASKED_SCORE / 2) for row in scores]
        else:
            ids = np.where(cut, 0, generated)
        if return_token_scores:
            found = generated_token_scores(model, source, ids, target_vocabulary)
            for row, i in enumerate(indices):
                token_scores[i] = (
                    found[row] if scores is None else [found[row][j] for j in live[row]]
                )
        if weights is not None:  # zero past each row's own bound, as the ids
            weights = np.where(ids[..., None] == 0, 0.0, weights).astype("float32")
        elif return_alignments or (replace_unk and np.any(ids == target_vocabulary.OOV)):
            weights = generated_alignments(model, source, ids, bound)
        for row, i in enumerate(indices):
            source_tokens = None if weights is None else vocabularies["source"].tokenize(texts[i])
            # One translation a row; with all beams, one a hypothesis.
            hypotheses = ids[row][live[row]] if scores is not None else ids[row][None]
            steps = [None] * len(hypotheses)
            if weights is not None:
                steps = weights[row][live[row]] if scores is not None else weights[row][None]
            read = [
                read_translation(
                    hypothesis,
                    step_weights,
                    source_tokens,
                    target_vocabulary,
                    replace_unk,
                    phrase_table,
                )  # fmt: skip
                for hypothesis, step_weights in zip(hypotheses, steps, strict=True)
            ]
            if scores is None:
                results[i], alignments[i] = read[0]
            else:
                results[i] = [
                    (text, float(scores[row][j]))
                    for (text, _), j in zip(read, live[row], strict=True)
                ]
                alignments[i] = [found for _, found in read]
        progress.add(len(indices))
    returned = [results]
    if return_alignments:
        returned.append(alignments)
    if return_token_scores:
        returned.append(token_scores)
    return tuple(returned) if len(returned) > 1 else results


def batch_plan(lengths, batch_size, tokens_per_batch, longest):
    """`translate`'s batches of the texts of `lengths` tokens: `[(indices, filled, width)]`,
    the texts' indices sorted by length, the rows to decode and their padded width.

    A compiled generator (XLA's, on JAX and TensorFlow) compiles once for each shape of its
    input, which the first call pays for. There, widths are rounded up to a power of two, and
    a short batch (the last of its width) is filled out to the rows of its width's largest
    batch with copies of its last text, whose outputs are dropped. 500 long sentences then
    reach it in 2 shapes instead of 5; with the generator built up front as well, their
    first call with beam 5 took 7.0 s against 14.7 s, the second 4.1 s either way
    (`python -m benchmarks.opennmt decode`, JAX, before and after). Eager torch decodes each
    batch as it is: `filled` is `indices`, and widths are multiples of 8. The padding stops
    at the attention's longest source (`longest`; the tokens are within it)."""
    compiled = compiles_with_xla()
    plan = length_sorted_batches(
        lengths, batch_size, tokens_per_batch=tokens_per_batch, power_of_two=compiled
    )
    plan = [(i, width if longest is None else min(width, longest)) for i, width in plan]
    most = {}  # the rows of each width's largest batch
    for indices, width in plan:
        most[width] = max(most.get(width, 0), len(indices))
    return [
        (indices, np.pad(indices, (0, most[width] - len(indices)), mode="edge"), width)
        if compiled
        else (indices, indices, width)
        for indices, width in plan
    ]


def padded_rows(rows, indices, width):
    """The id lists `rows[i]` for `i` in `indices`, as int32 `(len(indices), width)`, 0 after
    each."""
    ids = np.zeros((len(indices), width), "int32")
    for row, i in enumerate(indices):
        ids[row, : len(rows[i])] = rows[i]
    return ids
