import keras
from keras import ops

from keras_luong.input_feeding_cell import InputFeedingCell, deserialize_nested
from keras_luong.scores import _check_mask

# Cells that have a fused Keras layer (cuDNN on a GPU) for the no-input-feeding fast path.
_FUSED_LAYERS = {keras.layers.LSTMCell: keras.layers.LSTM, keras.layers.GRUCell: keras.layers.GRU}


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongDecoder(keras.layers.Layer):
    """A Luong attention decoder run over a whole target sequence (teacher forcing).

    For each target step `t` it runs an `InputFeedingCell`: the RNN cell on `[x_t; h̃_{t-1}]`,
    attention over the encoder memory, and `h̃_t = tanh(W_c [c_t; h_t])`. The memory is
    prepared once per sequence (`attention.prepare`: keys, mask, lengths), never per step.
    With `input_feeding=False` no step depends on `h̃_{t-1}`, so the decoder takes a fast
    path: the RNN over the whole sequence at once (Keras' fused `LSTM`/`GRU` layer for an
    `LSTMCell` or `GRUCell`, cuDNN on a GPU), then the attention for all steps in one batched
    call.

    `step()` runs one decoding step with the same cell, so step-by-step decoding reproduces the
    teacher-forced output exactly.

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`).
            On the fast path (`input_feeding=False`) an `LSTMCell`/`GRUCell` is the template
            of a fused `LSTM`/`GRU` layer made from its config; the decoder uses that layer's
            own cell (`decoder.cell.cell`), and if the given cell is already built its weights
            are copied into it, so nothing the cell learned is lost.
        attention: A `GlobalAttention` or `LocalAttention` with `attentional_units` set.
        input_feeding: Feed `h̃_{t-1}` to the cell at step `t`. Defaults to `True`.
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: The target embeddings, `(batch_size, T, E)`.
        memory: The encoder states, `(batch_size, S, d)`.
        initial_state: Optional list of the cell's initial states (e.g. the encoder's final
            `[h, c]`); the rest start at zero.
        inputs_mask: Optional boolean `(batch_size, T)` target mask: padded steps keep the
            states unchanged and output zeros. Taken from the inputs' Keras mask if not given.
        memory_mask: Optional boolean `(batch_size, S)` source mask. Taken from the memory's
            Keras mask if not given.
        training: Whether dropout is applied.
        return_attention_scores: Also return the alignments `(batch_size, T, S)` (computed
            only when asked for).
        return_state: Also return the final states (a list, as `InputFeedingCell` keeps them).

    Returns:
        `h̃` for every step, `(batch_size, T, units)`; then the alignments and the final
        states, if asked for, in that order.
    """

    def __init__(self, cell, attention, input_feeding=True, **kwargs):
        super().__init__(**kwargs)
        self.input_feeding = input_feeding
        self.rnn = None
        self._cell_config = None
        fused = _FUSED_LAYERS.get(type(cell))
        if not input_feeding and fused is not None:
            config = cell.get_config()
            config.pop("name", None)
            self.rnn = fused(**config, return_sequences=True, return_state=True)
            if cell.built:
                # The fused layer's cell replaces the template: carry its weights over.
                self.rnn.build((None, None, cell.kernel.shape[0]))
                self.rnn.cell.set_weights(cell.get_weights())
            # Kept as a config: the template itself is never tracked.
            self._cell_config = keras.saving.serialize_keras_object(cell)
            cell = self.rnn.cell
        self.cell = InputFeedingCell(
            cell, attention, input_feeding=input_feeding, dtype=self.dtype_policy
        )
        self.attention = attention
        self.units = self.cell.units
        self.supports_masking = True

    def build(self, inputs_shape, memory_shape):
        self.cell.build(inputs_shape, memory_shape)
        if self.rnn is not None and not self.rnn.built:
            self.rnn.build(inputs_shape)

    def get_initial_state(self, batch_size, cell_states=None):
        return self.cell.get_initial_state(batch_size, cell_states)

    def prepare(self, memory, memory_mask=None):
        """The encoder states prepared once per source for `step()`:
        `attention.prepare(memory, memory_mask)`."""
        return self.attention.prepare(memory, memory_mask)

    def step(self, inputs, states, memory, step=None, training=None, return_attention_scores=False):
        """One decoding step, the loop's own code: returns `(h̃_t, new_states)` (and the
        weights `(batch_size, S)` if asked for). `memory` is `self.prepare(...)`, computed
        once per source."""
        return self.cell(
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
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        batch = ops.shape(inputs)[0]
        states = self.cell.get_initial_state(batch, initial_state)
        prepared = self.prepare(memory, memory_mask)
        inputs_mask = _check_mask("inputs_mask", inputs_mask, inputs.shape[:2])
        if inputs_mask is not None:
            # Padded steps run on zeros: nothing they hold (NaN included) reaches the outputs
            # or the gradients.
            keep = ops.expand_dims(inputs_mask, -1)
            inputs = ops.where(keep, inputs, ops.zeros_like(inputs))
        run = self._loop if self.input_feeding else self._fast_path
        outputs, weights, states = run(
            inputs, prepared, states, inputs_mask, training, return_attention_scores
        )
        result = [outputs]
        if return_attention_scores:
            result.append(weights)
        if return_state:
            result.append(states)
        return result[0] if len(result) == 1 else tuple(result)

    def _loop(self, inputs, memory, states, inputs_mask, training, return_attention_scores):
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        source_length = ops.shape(memory["value"])[1]
        # Every random draw happens before the loop (a draw inside a compiled JAX loop leaks
        # its seed's state): the attention's dropout masks for all steps, scanned with the
        # inputs, and the cell's own (Keras' RNN does the same for its cells).
        width = inputs.shape[-1] + (self.units if self.input_feeding else 0)
        cell_inputs_like = ops.zeros((batch, width), self.compute_dtype)
        predraw_cell_dropout(self.cell.cell, cell_inputs_like, states[:-1], training)
        attention_dropout = bool(training) and self.attention.dropout > 0
        if attention_dropout:
            inputs = (inputs, self.attention.dropout_mask(batch, steps, source_length))

        def step(x, states, t):
            x_t, step_memory = x, memory
            if attention_dropout:
                x_t, dropout_mask = x
                step_memory = {**memory, "dropout_mask": ops.expand_dims(dropout_mask, 1)}
            attentional, new_states, *weights = self.cell(
                x_t,
                states,
                step_memory,
                step=t,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            return [attentional, *weights], new_states

        outputs_like = [ops.zeros((batch, self.units), dtype=self.compute_dtype)]
        if return_attention_scores:
            outputs_like.append(ops.zeros((batch, source_length), "float32"))
        (outputs, *weights), states = masked_scan(step, states, inputs, inputs_mask, outputs_like)
        reset_cell_dropout(self.cell.cell)
        return outputs, (weights[0] if weights else None), states

    def _fast_path(self, inputs, memory, states, inputs_mask, training, return_attention_scores):
        *cell_states, _ = states
        if self.rnn is not None:
            sequence, *cell_states = self.rnn(
                inputs, initial_state=cell_states, mask=inputs_mask, training=training
            )
        else:
            sequence, cell_states = self._run_cell(inputs, cell_states, inputs_mask, training)
        attended = self.attention(
            sequence,
            memory=memory,
            query_mask=inputs_mask,
            step=0,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        outputs, weights = attended if return_attention_scores else (attended, None)
        # The last h̃ of each sequence: at its last unmasked step.
        if inputs_mask is None:
            last = outputs[:, -1]
        else:
            lengths = ops.sum(ops.cast(inputs_mask, "int32"), axis=1)
            index = ops.maximum(lengths - 1, 0)[:, None, None]
            last = ops.take_along_axis(outputs, index, axis=1)[:, 0]
        return outputs, weights, [*keras.tree.flatten(cell_states), last]

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

    def compute_output_shape(self, inputs_shape, memory_shape):
        """`h̃` for every target step: `(batch_size, T, units)`."""
        return (*inputs_shape[:2], self.units)

    def compute_output_spec(
        self,
        inputs,
        memory,
        initial_state=None,
        inputs_mask=None,
        memory_mask=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        shape = self.compute_output_shape(inputs.shape, memory.shape)
        result = [keras.KerasTensor(shape, self.compute_dtype)]
        if return_attention_scores:
            result.append(keras.KerasTensor((*inputs.shape[:2], memory.shape[1]), "float32"))
        if return_state:
            _, state_shapes = self.cell.compute_output_shape(inputs.shape, None, memory.shape)
            result.append([keras.KerasTensor(s, self.compute_dtype) for s in state_shapes])
        return result[0] if len(result) == 1 else tuple(result)

    def compute_mask(self, inputs, previous_mask):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": self._cell_config or keras.saving.serialize_keras_object(self.cell.cell),
                "attention": keras.saving.serialize_keras_object(self.attention),
                "input_feeding": self.input_feeding,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config))


def predraw_cell_dropout(cell, inputs_like, states, training):
    """Draws a Keras RNN cell's dropout masks (input and recurrent) before a loop, as
    `keras.layers.RNN` does: the cell caches them and uses the same masks at every step, and
    no random draw happens inside the loop. `inputs_like` has the shape of the cell's input
    at one step, `states` are its states, flattened. Recurses into `StackedRNNCells`."""
    if not training:
        return
    if hasattr(cell, "cells"):  # StackedRNNCells: each cell's input is the last one's output
        nested = keras.tree.pack_sequence_as(cell.state_size, list(states))
        for sub, sub_states in zip(cell.cells, nested, strict=True):
            sub_states = keras.tree.flatten(sub_states)
            predraw_cell_dropout(sub, inputs_like, sub_states, training)
            size = getattr(sub, "output_size", None) or keras.tree.flatten(sub.state_size)[0]
            inputs_like = ops.zeros((ops.shape(inputs_like)[0], size), inputs_like.dtype)
    elif hasattr(cell, "get_dropout_mask") and hasattr(cell, "get_recurrent_dropout_mask"):
        cell.get_dropout_mask(inputs_like)
        cell.get_recurrent_dropout_mask(states[0])


def reset_cell_dropout(cell):
    """Forgets the masks `predraw_cell_dropout` cached, so the next sequence draws anew."""
    for sub in getattr(cell, "cells", [cell]):
        if hasattr(sub, "reset_dropout_mask"):
            sub.reset_dropout_mask()
            sub.reset_recurrent_dropout_mask()


def keep_where(keep, new, old):
    """`new` where `keep` (a `(B, 1)` boolean), else `old`, for every tensor of two equal
    structures: padded steps leave the states as they were."""
    return keras.tree.map_structure(lambda n, o: ops.where(keep, n, ops.cast(o, n.dtype)), new, old)


def masked_scan(step_fn, states, inputs, mask, outputs_like):
    """Runs `step_fn(x_t, states, t) -> (outputs, new_states)` over the time axis of `inputs`
    `(B, T, E)` (or a tuple of `(B, T, ...)` tensors, sliced alike), with `t` the step
    index. Where `mask` `(B, T)` is False, the states stay as they were and the outputs are
    zeros. `outputs_like` holds one `(B, ...)` zero tensor per
    output (its shape and dtype). Returns the outputs stacked to `(B, T, ...)` (a list, only
    those of `outputs_like`) and the final states.

    Every step costs the same whatever T. JAX and torch run `ops.scan`. On TensorFlow,
    Keras' scan is a `tf.while_loop` without `maximum_iterations`, whose gradient XLA cannot
    compile; there the same step runs in `ops.while_loop` with `maximum_iterations` set, each
    output written into its own `(T, B, ...)` buffer by `scatter_update` (one row per step;
    the XLA update-slice that `slice_update` becomes has no gradient in TensorFlow)."""
    xs = keras.tree.map_structure(
        lambda x: ops.transpose(x, (1, 0, *range(2, len(x.shape)))), inputs
    )
    keeps = None if mask is None else ops.expand_dims(ops.transpose(mask), -1)

    def one_step(t, states, x_t, keep):
        outputs, new_states = step_fn(x_t, states, t)
        if keep is not None:
            new_states = keep_where(keep, new_states, states)
            outputs = [ops.where(keep, o, ops.zeros_like(o)) for o in outputs]
        return [ops.cast(o, like.dtype) for o, like in zip(outputs, outputs_like, strict=True)], (
            new_states
        )

    if keras.backend.backend() != "tensorflow":

        def body(carry, x):
            t, states = carry
            x_t, keep = x if keeps is not None else (x, None)
            outputs, states = one_step(t, states, x_t, keep)
            return (t + 1, states), outputs

        scanned = xs if keeps is None else (xs, keeps)
        (_, states), outputs = ops.scan(body, (ops.convert_to_tensor(0, "int32"), states), scanned)
        return [ops.transpose(o, (1, 0, *range(2, len(o.shape)))) for o in outputs], states

    steps = ops.shape(keras.tree.flatten(xs)[0])[0]
    buffers = [ops.zeros((steps, *ops.shape(o)), dtype=o.dtype) for o in outputs_like]

    def loop(t, states, buffers):
        keep = None if keeps is None else ops.take(keeps, t, axis=0)
        x_t = keras.tree.map_structure(lambda x: ops.take(x, t, axis=0), xs)
        outputs, states = one_step(t, states, x_t, keep)
        row = ops.reshape(t, (1, 1))
        buffers = [
            ops.scatter_update(b, row, ops.expand_dims(o, 0))
            for b, o in zip(buffers, outputs, strict=True)
        ]
        return t + 1, states, buffers

    _, states, buffers = ops.while_loop(
        lambda t, *_: t < steps,
        loop,
        (ops.convert_to_tensor(0, "int32"), states, buffers),
        maximum_iterations=steps,
    )
    return [ops.transpose(b, (1, 0, *range(2, len(b.shape)))) for b in buffers], states
