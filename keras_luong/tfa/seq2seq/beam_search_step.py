"""One step of tensorflow-addons' beam search, its state and its outputs, in `keras.ops`. The
ranking is keras-luong's (`samplers.penalties`: GNMT's length and coverage penalties;
`backend.top_k`); what is tensorflow-addons' own is the bookkeeping: `(batch, beam)` states, a
finished beam continued by the end id at no cost, back-pointers gathered at the end."""

import collections

import keras
import numpy as np
from keras import ops

from keras_luong.backend.loops import take_along_rows
from keras_luong.backend.top_k import top_k_indices
from keras_luong.samplers import penalties
from keras_luong.tfa.seq2seq.wrapper import AttentionWrapperState


class StaticShape(tuple):
    """A static shape, a tuple that also answers `as_list()` as TensorFlow's `TensorShape`
    does (tensorflow-addons' `output_size` entries are `TensorShape`s)."""

    def as_list(self):
        return list(self)


class BeamSearchDecoderState(
    collections.namedtuple(
        "BeamSearchDecoderState",
        ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"),
    )
):
    """The state of `BeamSearchDecoder`, each entry `[batch_size, beam_width, ...]`: the
    cell's state, each beam's log-probability, whether it has ended, its length and (with a
    coverage penalty) its attention summed over its steps."""


class BeamSearchDecoderOutput(
    collections.namedtuple("BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))
):
    """One step of `BeamSearchDecoder`: the beams' scores (every candidate's with
    `output_all_scores=True`), the ids chosen and the beams they extend."""


class FinalBeamSearchDecoderOutput(
    collections.namedtuple(
        "FinalBeamSearchDecoderOutput", ("predicted_ids", "beam_search_decoder_output")
    )
):
    """What `BeamSearchDecoder` returns: each beam's ids from its first step
    (`[batch_size, time, beam_width]`, best beam first) and the outputs of every step."""


def _mask_probs(probs, eos_token, finished):
    """Log-probabilities `[batch, beam, vocabulary]` where a finished beam has one
    continuation, `eos_token`, at no cost (log-probability 0, the dtype's least value
    elsewhere)."""
    lowest = np.finfo(keras.backend.standardize_dtype(probs.dtype)).min
    ids = ops.arange(ops.shape(probs)[-1], dtype="int32")
    finished_row = ops.where(ops.equal(ids, ops.cast(eos_token, "int32")), 0.0, lowest)
    return ops.where(finished[..., None], ops.cast(finished_row, probs.dtype), probs)


def _attention_probs(cell_state, coverage_penalty_weight):
    """The alignments `[batch, beam, max_time]` of the cell's `AttentionWrapperState`s (their mean
    over several mechanisms or wrappers), for the coverage penalty; `None` without it."""
    if coverage_penalty_weight == 0.0:
        return None
    states = [cell_state] if isinstance(cell_state, AttentionWrapperState) else cell_state
    found = []
    for state in states if isinstance(states, (list, tuple)) else []:
        if isinstance(state, AttentionWrapperState):
            alignments = state.alignments
            if isinstance(alignments, tuple):
                alignments = ops.mean(ops.stack(alignments, axis=-1), axis=-1)
            found.append(alignments)
    if not found:
        raise ValueError(
            "coverage_penalty_weight must be 0.0 if no cell is attentional: the coverage "
            "penalty reads the alignments of an AttentionWrapper. Received: "
            f"coverage_penalty_weight={coverage_penalty_weight}"
        )
    return found[0] if len(found) == 1 else ops.mean(ops.stack(found, axis=-1), axis=-1)


def _split_beams(x, batch_size, beam_width):
    """`[batch_size * beam_width, ...]` as `[batch_size, beam_width, ...]` (tensors only)."""
    if not ops.is_tensor(x) or len(x.shape) < 1:
        return x
    return ops.reshape(x, (batch_size, beam_width, *ops.shape(x)[1:]))


def _merge_beams(x):
    """`[batch_size, beam_width, ...]` as `[batch_size * beam_width, ...]` (tensors only)."""
    if not ops.is_tensor(x) or len(x.shape) < 2:
        return x
    return ops.reshape(x, (-1, *ops.shape(x)[2:]))


def _gather_beams(beam_ids, x):
    """Each batch entry's beams of `x` `[batch, beam, ...]` in the order `beam_ids`
    `[batch, beam]` (tensors of two axes or more only)."""
    if not ops.is_tensor(x) or len(x.shape) < 2:
        return x
    return take_along_rows(x, beam_ids)


def _beam_search_step(
    time,
    logits,
    next_cell_state,
    beam_state,
    batch_size,
    beam_width,
    end_token,
    length_penalty_weight,
    coverage_penalty_weight,
    output_all_scores,
):
    """One step of beam search over `logits` `[batch, beam, vocabulary]`: each beam's
    candidates scored by GNMT's length (and coverage) penalty, the `beam_width` best of each
    batch entry kept, the states gathered along. Returns `(BeamSearchDecoderOutput,
    BeamSearchDecoderState)`."""
    lengths = ops.cast(beam_state.lengths, "int32")
    previously_finished = beam_state.finished
    not_finished = ops.logical_not(previously_finished)
    vocabulary = logits.shape[-1]
    step_log_probs = ops.log_softmax(logits, axis=-1)
    step_log_probs = _mask_probs(step_log_probs, end_token, previously_finished)
    total_probs = beam_state.log_probs[..., None] + step_log_probs
    # The end id adds nothing to the length it is ranked by; any other id of a running beam 1.
    not_end = ops.not_equal(ops.arange(vocabulary, dtype="int32"), ops.cast(end_token, "int32"))
    candidate_lengths = lengths[..., None] + ops.cast(
        ops.logical_and(not_end[None, None], not_finished[..., None]), "int32"
    )
    accumulated = None
    attention_probs = _attention_probs(next_cell_state, coverage_penalty_weight)
    if attention_probs is not None:
        attention_probs = attention_probs * ops.cast(not_finished[..., None], "float32")
        accumulated = beam_state.accumulated_attention_probs + attention_probs
    scores = penalties.length_normalize(total_probs, candidate_lengths, length_penalty_weight)
    if accumulated is not None:
        # GNMT's coverage penalty, on the beams that have ended (tensorflow-addons' rule).
        coverage = penalties.gnmt_coverage(accumulated, coverage_penalty_weight)
        scores = scores + (coverage * ops.cast(previously_finished, coverage.dtype))[..., None]
    scores_flat = ops.reshape(scores, (-1, beam_width * vocabulary))
    word_indices = top_k_indices(scores_flat, beam_width)  # (batch, beam), best first
    next_beam_scores = take_along_rows(scores_flat, word_indices)
    next_beam_probs = take_along_rows(
        ops.reshape(total_probs, (-1, beam_width * vocabulary)), word_indices
    )
    next_word_ids = ops.cast(word_indices % vocabulary, "int32")
    next_beam_ids = ops.cast(word_indices // vocabulary, "int32")
    previously_finished = _gather_beams(next_beam_ids, previously_finished)
    next_finished = ops.logical_or(
        previously_finished, ops.equal(next_word_ids, ops.cast(end_token, "int32"))
    )
    next_lengths = _gather_beams(next_beam_ids, lengths) + ops.cast(
        ops.logical_not(previously_finished), "int32"
    )
    next_accumulated = () if accumulated is None else _gather_beams(next_beam_ids, accumulated)

    def gather_state(x):  # a cell state of two axes or more, [batch_size, beam_width, ...]
        if not ops.is_tensor(x) or len(x.shape) < 2:
            return x
        grouped = ops.reshape(x, (batch_size, beam_width, -1))
        return ops.reshape(_gather_beams(next_beam_ids, grouped), ops.shape(x))

    next_cell_state = keras.tree.map_structure(gather_state, next_cell_state)
    state = BeamSearchDecoderState(
        cell_state=next_cell_state,
        log_probs=next_beam_probs,
        lengths=next_lengths,
        finished=next_finished,
        accumulated_attention_probs=next_accumulated,
    )
    output = BeamSearchDecoderOutput(
        scores=scores if output_all_scores else next_beam_scores,
        predicted_ids=next_word_ids,
        parent_ids=next_beam_ids,
    )
    return output, state
