"""The window of local attention (Luong, Pham and Manning 2015, section 3.2): the `2D + 1`
source positions around each aligned position `p_t`, gathered from the flat value so that a
step costs O(D) whatever the source's length, and local-p's Gaussian over them."""

from keras import ops

from keras_luong.backend.loops import take_rows


def gather_window(memory, positions, window):
    """The window of half-width `window` around the aligned positions `positions` `(B, T)`
    of a prepared local `memory` (see `LocalAttention.prepare`): `(positions, index, inside,
    value)`, the window's source positions `(B, T, 2D + 1)`, the same clipped into the
    source (the gathered ones), whether each is a real position (from the source's first
    valid position `start` to `start + S_i - 1`, and unmasked) and the gathered value
    `(B, T, 2D + 1, d_v)`."""
    value, lengths = memory["value"], ops.cast(memory["lengths"], "float32")
    batch, source_length = ops.shape(value)[0], ops.shape(value)[1]
    starts = memory.get("starts")
    offsets = ops.arange(-window, window + 1, dtype="int32")
    positions = ops.expand_dims(ops.cast(ops.floor(positions), "int32"), -1) + offsets
    first = 0 if starts is None else ops.reshape(starts, (-1, 1, 1))
    end = lengths[:, None, None] + ops.cast(first, "float32")
    inside = ops.logical_and(positions >= first, ops.cast(positions, "float32") < end)
    index = ops.clip(positions, 0, source_length - 1)
    flat_index = index + ops.reshape(ops.arange(batch, dtype="int32") * source_length, (-1, 1, 1))
    if "flat_mask" in memory:
        inside = ops.logical_and(inside, take_rows(memory["flat_mask"], flat_index))
    return positions, index, inside, take_rows(memory["flat_value"], flat_index)


def gaussian(weights, window, positions, variance):
    """local-p's weights: `weights` `(B, T, 2D + 1)` times `exp(-(s - p_t)^2 / (2 σ^2))` at
    each window position `s` (`window`, `(B, T, 2D + 1)`) around the real-valued `p_t`
    (`positions`, `(B, T)`), σ^2 being `variance`. Not renormalised (the paper's choice)."""
    distance = ops.cast(window, weights.dtype) - ops.expand_dims(positions, -1)
    return weights * ops.exp(-ops.square(distance) / (2.0 * variance))
