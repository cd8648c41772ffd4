"""tensorflow-addons' beam search helpers: `tile_batch`, `gather_tree` and
`gather_tree_from_array`, in `keras.ops` (time-major, as tensorflow-addons lays them out)."""

import keras
import numpy as np
from keras import ops

from keras_luong.backend.loops import known_values


def tile_batch(t, multiplier, name=None):
    """Repeats each batch entry of `t` (or of every tensor of a nested structure)
    `multiplier` times in place: `[batch, ...]` becomes `[batch * multiplier, ...]` holding
    `t[0], t[0], ..., t[1], t[1], ...`, as a memory is laid out for beam search.

    Args:
        t: A tensor `[batch, ...]`, or a nested structure of them.
        multiplier: The number of copies of each entry (the beam width).
        name: Unused (tensorflow-addons' name scope).
    """

    def tile(x):
        x = ops.convert_to_tensor(x)
        if len(x.shape) < 1:
            raise ValueError(
                "Invalid value for argument t. Expected tensors of rank 1 or more. "
                f"Received: t.shape={tuple(x.shape)}"
            )
        return ops.repeat(x, multiplier, axis=0)

    return keras.tree.map_structure(tile, t)


def _reverse_within(x, lengths):
    """Each column of the time-major `x` `[time, batch, ...]` reversed over its first
    `lengths[b]` steps, the steps after left in place (`tf.reverse_sequence`)."""
    steps = ops.arange(ops.shape(x)[0], dtype="int32")[:, None]
    index = ops.where(steps < lengths[None], lengths[None] - 1 - steps, steps)  # (T, B)
    for _ in range(len(x.shape) - 2):
        index = ops.expand_dims(index, -1)
    return ops.take_along_axis(x, ops.broadcast_to(index, ops.shape(x)), axis=0)


def _check_parents(parent_ids, beam_width):
    """A `ValueError` for a parent index outside `[0, beam_width)`, where the ids are known
    (not while a function is traced)."""
    parents = known_values(parent_ids)
    if parents is not None and parents.size and (parents.min() < 0 or parents.max() >= beam_width):
        bad = parents[(parents < 0) | (parents >= beam_width)]
        raise ValueError(
            "All parent ids must be non-negative and less than beam_width "
            f"({beam_width}). Received: parent ids {np.unique(bad).tolist()}"
        )


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token):
    """The full beams from the ids chosen at each step and the beams they extend:
    tensorflow-addons' `gather_tree`.

    Args:
        step_ids: The ids chosen at each step, int32 `[max_time, batch_size, beam_width]`.
        parent_ids: The beam each id extends, int32 `[max_time, batch_size, beam_width]`.
        max_sequence_lengths: The number of steps of each batch entry, `[batch_size]`.
        end_token: The end id: past a beam's first end id, every id is the end id.

    Returns:
        int32 `[max_time, batch_size, beam_width]`: each beam's ids from its first step.
    """
    step_ids = ops.cast(step_ids, "int32")
    parent_ids = ops.cast(parent_ids, "int32")
    if len(step_ids.shape) != 3 or len(parent_ids.shape) != 3:
        raise ValueError(
            "Invalid value for arguments step_ids and parent_ids. Expected "
            "[max_time, batch_size, beam_width]. Received: step_ids.shape="
            f"{tuple(step_ids.shape)}, parent_ids.shape={tuple(parent_ids.shape)}"
        )
    max_time = ops.shape(parent_ids)[0]
    beam_width = parent_ids.shape[2]
    lengths = ops.minimum(ops.cast(max_sequence_lengths, "int32"), max_time)
    in_time = (ops.arange(max_time, dtype="int32")[:, None] < lengths[None])[..., None]
    end = ops.cast(end_token, "int32")
    step_ids = ops.where(in_time, step_ids, end)
    parent_ids = ops.where(in_time, parent_ids, 0)
    _check_parents(parent_ids, beam_width)
    reversed_ids = _reverse_within(step_ids, lengths)
    reversed_parents = _reverse_within(parent_ids, lengths)

    def back(parent, step):  # one step back along each beam's ancestors
        ids, parents = step
        return ops.take_along_axis(parents, parent, axis=1), ops.take_along_axis(
            ids, parent, axis=1
        )

    _, earlier = ops.scan(back, reversed_parents[0], (reversed_ids[1:], reversed_parents[1:]))
    beams = ops.concatenate([reversed_ids[:1], earlier], axis=0)
    beams = _reverse_within(beams, lengths)
    # Only end ids after the first end id.
    before_end = ops.cumsum(ops.cast(ops.equal(beams, end), "int32"), axis=0) == 0
    return ops.where(before_end, beams, end)


def gather_tree_from_array(t, parent_ids, sequence_length):
    """Per-step values reordered along each final beam's ancestors: tensorflow-addons'
    `gather_tree_from_array`.

    Args:
        t: The stacked values of each step, `[max_time, batch_size, beam_width, ...]` or
            `[max_time, batch_size * beam_width, ...]`.
        parent_ids: The beam each step's hypothesis extends, `[max_time, batch_size,
            beam_width]`.
        sequence_length: Each beam's length `[batch_size, beam_width]`: steps past it keep
            their own beam's values.
    """
    t = ops.convert_to_tensor(t)
    parent_ids = ops.cast(parent_ids, "int32")
    beam_width = parent_ids.shape[2]
    batch_size = ops.shape(parent_ids)[1]
    beam_ids = ops.broadcast_to(
        ops.arange(beam_width, dtype="int32")[None, None], ops.shape(parent_ids)
    )
    lengths = ops.cast(sequence_length, "int32")
    sorted_beam_ids = gather_tree(beam_ids, parent_ids, ops.max(lengths, axis=1), beam_width + 1)
    steps = ops.arange(ops.shape(parent_ids)[0], dtype="int32")[:, None, None]
    in_bound = steps < lengths[None]
    sorted_beam_ids = ops.where(in_bound, sorted_beam_ids, beam_ids)
    shape = ops.shape(t)
    grouped = ops.reshape(t, (shape[0], batch_size, beam_width, -1))
    ordered = ops.take_along_axis(grouped, sorted_beam_ids[..., None], axis=2)
    return ops.reshape(ordered, shape)
