import functools

import keras
from keras import ops

from keras_luong.backend.loops import (
    masked_scan,
    predraw_cell_dropout,
    reset_cell_dropout,
    step_call,
    unless_full,
)
from keras_luong.checks import check_batch, check_floating, check_mask, check_rank
from keras_luong.decoders.attention_cell import deserialize_nested
from keras_luong.decoders.input_feeding_cell import InputFeedingCell

# Cells that have a fused Keras layer (cuDNN on a GPU) for the no-input-feeding fast path.
_FUSED_LAYERS = {keras.layers.LSTMCell: keras.layers.LSTM, keras.layers.GRUCell: keras.layers.GRU}


class AttentionDecoder(keras.layers.Layer):
    """The loop `LuongDecoder` and `BahdanauDecoder` share: a one-step layer (an
    `AttentionCell`, `self.cell`, made by the subclass with `self.attention` and
    `self.units`) run over a whole target sequence by `run_steps`, and one step at a time by
    `step`, the same code; the value prepared into a memory once per sequence."""

    def build(self, inputs_shape, value_shape):
        check_rank("inputs", inputs_shape, (3,))
        self.cell.build_attention(value_shape)
        self.cell.build(inputs_shape)

    def get_initial_state(self, batch_size, cell_states=None, memory=None):
        """The states of `step`: see `InputFeedingCell.get_initial_state` (`memory`, from
        `prepare`, is needed by an attention that keeps a state, `MonotonicAttention`)."""
        return self.cell.get_initial_state(batch_size, cell_states, memory)

    def prepare(self, value, value_mask=None):
        """The memory `step()` attends to: the encoder states prepared once per source,
        `attention.prepare(value, value_mask)`."""
        return self.cell.prepare(value, value_mask)

    def step(self, inputs, states, memory, step=None, training=None, return_attention_scores=False):
        """One decoding step, the loop's own code: returns `(h̃_t, new_states)` (and the
        weights `(batch_size, S)` if asked for). `memory` is `self.prepare(value,
        value_mask)`, computed once per source; `states` starts as `get_initial_state()`."""
        return step_call(
            self.cell,
            inputs,
            states,
            memory,
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
        )

    def call(
        self,
        inputs,
        value,
        initial_state=None,
        inputs_mask=None,
        value_mask=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        check_rank("inputs", inputs.shape, (3,))
        check_floating("inputs", inputs)
        # Checked here for every path: the eager fast paths never call the attention layer.
        check_batch(inputs.shape[0], value.shape[0], "inputs", "value")
        batch = ops.shape(inputs)[0]
        memory = self.prepare(value, value_mask)
        states = self.cell.get_initial_state(batch, initial_state, memory)
        inputs_mask = unless_full(check_mask("inputs_mask", inputs_mask, inputs.shape[:2]))
        if inputs_mask is not None:
            # Padded steps run on zeros: nothing they hold (NaN included) reaches the outputs
            # or the gradients.
            keep = ops.expand_dims(inputs_mask, -1)
            inputs = ops.where(keep, inputs, ops.zeros_like(inputs))
        outputs, weights, states = self.run_sequence(
            inputs, memory, states, inputs_mask, training, return_attention_scores
        )
        result = [outputs]
        if return_attention_scores:
            result.append(weights)
        if return_state:
            result.append(states)
        return result[0] if len(result) == 1 else tuple(result)

    def run_sequence(self, inputs, memory, states, inputs_mask, training, return_attention_scores):
        """The whole target sequence: `(outputs, weights or None, final states)`. Every
        step in turn, by `run_steps`."""
        batch, input_size = ops.shape(inputs)[0], inputs.shape[-1]
        ahead = self.cell.project_ahead(inputs, training)
        if ahead is None:
            call = functools.partial(step_call, self.cell)
        else:  # the inputs' part of every step computed at once
            inputs, recurrent = ahead
            eager_step = getattr(self.attention, "eager_step", None)  # Luong's global only
            attend = None if eager_step is None else eager_step(memory, training)
            call = functools.partial(self.cell.projected_call, recurrent=recurrent, attend=attend)

        def step(x_t, states, t, memory):
            attentional, new_states, *weights = call(
                x_t,
                states,
                memory,
                step=t,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            return [attentional, *weights], new_states

        outputs_like = [ops.zeros((batch, self.cell.output_size), dtype=self.compute_dtype)]
        if return_attention_scores:
            outputs_like.append(ops.zeros((batch, ops.shape(memory["value"])[1]), "float32"))
        (outputs, *weights), states = self.run_steps(
            step, states, inputs, inputs_mask, memory, input_size, outputs_like, training
        )
        return outputs, (weights[0] if weights else None), states

    def run_steps(
        self, step_fn, states, inputs, inputs_mask, memory, input_size, outputs_like, training
    ):
        """The decoder's loop: `step_fn(x_t, states, t, memory) -> (outputs, new_states)` over
        the time axis of `inputs` (a tensor or a tuple of `(B, T, ...)` tensors), by
        `loops.masked_scan`, `states` starting with the cell's. Every random draw happens
        before the loop (a draw inside a compiled JAX loop leaks its seed's state): the
        attention's for all steps, into the memory, and the cell's own for an input of
        `input_size` (Keras' RNN does the same for its cells)."""
        first = keras.tree.flatten(inputs)[0]
        batch, steps = ops.shape(first)[0], ops.shape(first)[1]
        draw_ahead = getattr(self.attention, "draw_ahead", None)  # optional in the protocol
        if draw_ahead is not None:
            memory = draw_ahead(memory, steps, training)
        width = self.cell.rnn_input_size(input_size)
        cell_inputs_like = ops.zeros((batch, width), self.compute_dtype)
        cell_states = states[: len(self.cell.cell_state_size)]
        predraw_cell_dropout(self.cell.cell, cell_inputs_like, cell_states, training)
        try:
            return masked_scan(
                lambda x_t, states, t: step_fn(x_t, states, t, memory),
                states,
                inputs,
                inputs_mask,
                outputs_like,
            )
        finally:
            reset_cell_dropout(self.cell.cell)

    def compute_output_shape(self, inputs_shape, value_shape):
        """A step's output for every target step: `(batch_size, T, output size)`."""
        return (*inputs_shape[:2], self.cell.output_size)

    def compute_output_spec(
        self,
        inputs,
        value,
        initial_state=None,
        inputs_mask=None,
        value_mask=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        check_rank("inputs", inputs.shape, (3,))
        shape = self.compute_output_shape(inputs.shape, value.shape)
        result = [keras.KerasTensor(shape, self.compute_dtype)]
        if return_attention_scores:
            result.append(keras.KerasTensor((*inputs.shape[:2], value.shape[1]), "float32"))
        if return_state:
            result.append(self.cell.state_spec(inputs.shape[0], value.shape[1]))
        return result[0] if len(result) == 1 else tuple(result)

    def compute_mask(self, inputs, previous_mask):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell.cell),
                "attention": keras.saving.serialize_keras_object(self.attention),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config))


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongDecoder(AttentionDecoder):
    """A Luong attention decoder run over a whole target sequence (teacher forcing).

    For each target step `t` it runs an `InputFeedingCell`: the RNN cell on `[x_t; h̃_{t-1}]`,
    attention over the encoder states (the `value`), and `h̃_t = tanh(W_c [c_t; h_t])`. The
    value is prepared once per sequence into a memory (`attention.prepare`: keys, mask,
    lengths), never per step.
    With `input_feeding=False` no step depends on `h̃_{t-1}`, so the decoder takes a fast
    path: the RNN over the whole sequence at once (Keras' fused `LSTM`/`GRU` layer for an
    `LSTMCell` or `GRUCell`, cuDNN on a GPU), then the attention for all steps in one batched
    call.

    `step()` runs one decoding step with the same cell, so step-by-step decoding reproduces the
    teacher-forced output exactly.

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`).
            The decoder trains this cell object. On the fast path (`input_feeding=False`) an
            `LSTMCell`/`GRUCell` runs inside Keras' fused `LSTM`/`GRU` layer (cuDNN on a GPU),
            which is given this very cell, so its weights are the ones trained.
        attention: A keras-luong attention layer, with `attentional_units` set (the paper's
            `h̃`) or not (the context `c_t` in `h̃_t`'s place, fed and output, as
            tensorflow-addons' `AttentionWrapper(attention_layer_size=None)`); its state, if it
            keeps one (`MonotonicAttention`), travels in the decoder's states.
        input_feeding: Feed `h̃_{t-1}` to the cell at step `t`. Defaults to `True`.
        output_attention: Output `h̃_t` (the paper's, the default) or, with `False`, the
            cell's `h_t` at every step while `h̃_t` is still fed to the next one, as
            tensorflow-addons' `AttentionWrapper(output_attention=False)` (needs
            `input_feeding=True`).
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: The target embeddings, `(batch_size, T, E)`.
        value: The encoder states, `(batch_size, S, d)`.
        initial_state: Optional list of the cell's initial states (e.g. the encoder's final
            `[h, c]`); the rest start at zero.
        inputs_mask: Optional boolean `(batch_size, T)` target mask: padded steps keep the
            states unchanged and output zeros. Taken from the inputs' Keras mask if not given.
        value_mask: Optional boolean `(batch_size, S)` source mask. Taken from the value's
            Keras mask if not given.
        training: Whether dropout is applied.
        return_attention_scores: Also return the alignments `(batch_size, T, S)` (computed
            only when asked for).
        return_state: Also return the final states (a list, as `InputFeedingCell` keeps them).

    Returns:
        `h̃` for every step, `(batch_size, T, units)`; then the alignments and the final
        states, if asked for, in that order.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention
    >>> decoder = LuongDecoder(
    ...     keras.layers.LSTMCell(8), GlobalAttention(score_mode="general", attentional_units=8)
    ... )
    >>> targets = np.random.rand(2, 4, 5).astype("float32")  # embedded target inputs
    >>> value = np.random.rand(2, 6, 8).astype("float32")  # encoder states
    >>> outputs, weights = decoder(targets, value, return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(weights.shape)
    ((2, 4, 8), (2, 4, 6))

    Decoding one step at a time reproduces the teacher-forced outputs:

    >>> memory, states = decoder.prepare(value), decoder.get_initial_state(2)
    >>> for t in range(4):
    ...     h_tilde, states = decoder.step(targets[:, t], states, memory, step=t)
    >>> np.allclose(ops.convert_to_numpy(h_tilde), ops.convert_to_numpy(outputs[:, -1]), atol=1e-5)
    True
    """

    def __init__(self, cell, attention, input_feeding=True, output_attention=True, **kwargs):
        super().__init__(**kwargs)
        self.input_feeding = input_feeding
        self.rnn = None
        fused = _FUSED_LAYERS.get(type(cell))
        if not input_feeding and fused is not None:
            config = cell.get_config()
            config.pop("name", None)
            self.rnn = fused(**config, return_sequences=True, return_state=True)
            # The fused layer runs the given cell itself (its own, made from the same config,
            # is never built), so the cell the user holds is the one trained and saved.
            self.rnn.cell = cell
        self.cell = InputFeedingCell(
            cell,
            attention,
            input_feeding=input_feeding,
            output_attention=output_attention,
            dtype=self.dtype_policy,
        )
        self.output_attention = self.cell.output_attention
        self.attention = attention
        self.supports_masking = True

    @property
    def units(self):
        """The size of `h̃` (the context's, without `attentional_units`, once built)."""
        return self.cell.units

    def build(self, inputs_shape, value_shape):
        super().build(inputs_shape, value_shape)
        if self.rnn is not None and not self.rnn.built:
            self.rnn.build(inputs_shape)

    def run_sequence(self, inputs, memory, states, inputs_mask, training, return_attention_scores):
        """The loop with input feeding; without it the fast path (the RNN over the sequence
        at once, then the attention for every step in one call)."""
        run = super().run_sequence if self.input_feeding else self._fast_path
        return run(inputs, memory, states, inputs_mask, training, return_attention_scores)

    def _fast_path(self, inputs, memory, states, inputs_mask, training, return_attention_scores):
        cells = len(self.cell.cell_state_size)
        cell_states, attention_state = states[:cells], states[cells + 1 :]
        if self.rnn is not None:
            sequence, *cell_states = self.rnn(
                inputs, initial_state=cell_states, mask=inputs_mask, training=training
            )
        else:
            sequence, cell_states = self._run_cell(inputs, cell_states, inputs_mask, training)
        attended = self.attention(
            sequence,
            memory=memory,
            initial_state=attention_state,
            query_mask=inputs_mask,
            step=0,
            training=training,
            return_attention_scores=return_attention_scores,
            return_state=True,
        )
        outputs, *weights, attention_state = attended
        # The last h̃ of each sequence: at its last unmasked step (the attention's state stays
        # as it was at masked steps).
        if inputs_mask is None:
            index = ops.full((ops.shape(outputs)[0], 1, 1), ops.shape(outputs)[1] - 1)
        else:
            lengths = ops.sum(ops.cast(inputs_mask, "int32"), axis=1)
            index = ops.maximum(lengths - 1, 0)[:, None, None]
        last = ops.take_along_axis(outputs, ops.cast(index, "int32"), axis=1)[:, 0]
        final = [*keras.tree.flatten(cell_states), last, *attention_state]
        return outputs, (weights[0] if weights else None), final

    def _run_cell(self, inputs, cell_states, inputs_mask, training):
        """The wrapped cell alone over the sequence, for cells with no fused layer.

        Not `keras.layers.RNN(cell)`: on JAX it fails on the nested state lists of a
        `StackedRNNCells` ("TrackedList is not a valid JAX type", Keras 3.15)."""
        cell = self.cell.cell

        def step(x_t, states, t):
            hidden, new_states = cell(
                x_t, keras.tree.pack_sequence_as(cell.state_size, states), training=training
            )
            return [hidden], keras.tree.flatten(new_states)

        batch = ops.shape(inputs)[0]
        outputs_like = [ops.zeros((batch, self.cell.cell_output_size), dtype=self.compute_dtype)]
        predraw_cell_dropout(cell, ops.zeros_like(inputs[:, 0]), list(cell_states), training)
        (sequence,), cell_states = masked_scan(
            step, list(cell_states), inputs, inputs_mask, outputs_like
        )
        reset_cell_dropout(cell)
        return sequence, cell_states

    def get_config(self):
        config = super().get_config()
        config.update(
            {"input_feeding": self.input_feeding, "output_attention": self.output_attention}
        )
        return config
