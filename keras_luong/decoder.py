import keras
from keras import ops

from keras_luong.input_feeding_cell import InputFeedingCell, deserialize_nested

# Cells that have a fused Keras layer (cuDNN on a GPU) for the no-input-feeding fast path.
_FUSED_LAYERS = {keras.layers.LSTMCell: keras.layers.LSTM, keras.layers.GRUCell: keras.layers.GRU}


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongDecoder(keras.layers.Layer):
    """A Luong attention decoder run over a whole target sequence (teacher forcing).

    For each target step `t` it runs an `InputFeedingCell`: the RNN cell on `[x_t; h̃_{t-1}]`,
    attention over the encoder memory, and `h̃_t = tanh(W_c [c_t; h_t])`. With
    `input_feeding=False` no step depends on `h̃_{t-1}`, so the decoder takes a fast path: the
    RNN over the whole sequence at once (Keras' fused `LSTM`/`GRU` layer for an `LSTMCell` or
    `GRUCell`, cuDNN on a GPU), then the attention for all steps in one batched call.

    `step()` runs one decoding step with the same cell, so step-by-step decoding reproduces the
    teacher-forced output exactly.

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`).
            For the fast path an `LSTMCell`/`GRUCell` serves as the template of a fused
            `LSTM`/`GRU` layer, whose own cell the decoder then uses.
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
        return_attention_scores: Also return the alignments `(batch_size, T, S)`.
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
            # Kept as a config: the template itself is never built or tracked.
            self._cell_config = keras.saving.serialize_keras_object(cell)
            cell = self.rnn.cell
        self.cell = InputFeedingCell(cell, attention, input_feeding=input_feeding)
        self.attention = attention
        self.units = self.cell.units
        self.supports_masking = True

    def build(self, inputs_shape, memory_shape):
        self.cell.build(inputs_shape, memory_shape)
        if self.rnn is not None and not self.rnn.built:
            self.rnn.build(inputs_shape)

    def get_initial_state(self, batch_size, cell_states=None):
        return self.cell.get_initial_state(batch_size, cell_states)

    def step(
        self,
        inputs,
        states,
        memory,
        memory_mask=None,
        step=None,
        keys=None,
        training=None,
        return_attention_scores=False,
    ):
        """One decoding step, the loop's own code: returns `(h̃_t, new_states)` (and the
        weights `(batch_size, S)` if asked for).

        Pass `keys=self.attention.compute_keys(memory)` to project the memory once per
        source rather than once per step."""
        return self.cell(
            inputs,
            states,
            memory,
            memory_mask=memory_mask,
            step=step,
            keys=keys,
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
        if memory_mask is not None:
            memory_mask = ops.cast(memory_mask, "bool")
        if inputs_mask is not None:
            inputs_mask = ops.cast(inputs_mask, "bool")
        if self.input_feeding:
            outputs, weights, states = self._loop(
                inputs, memory, states, inputs_mask, memory_mask, training, return_attention_scores
            )
        else:
            outputs, weights, states = self._fast_path(
                inputs, memory, states, inputs_mask, memory_mask, training
            )
        result = [outputs]
        if return_attention_scores:
            result.append(weights)
        if return_state:
            result.append(states)
        return result[0] if len(result) == 1 else tuple(result)

    def _loop(
        self, inputs, memory, states, inputs_mask, memory_mask, training, return_attention_scores
    ):
        keys = self.attention.compute_keys(memory)
        batch = ops.shape(inputs)[0]
        xs = _time_major_with_mask(inputs, inputs_mask)

        def body(carry, x):
            t, states = carry[0], carry[1]
            x_t, keep = x[:, :-1], ops.expand_dims(x[:, -1] > 0.5, -1)
            attentional, new_states, *weights = self.step(
                x_t,
                states,
                memory,
                memory_mask,
                step=t,
                keys=keys,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            # Padded target steps leave every state as it was.
            new_states = [
                ops.where(keep, new, old) for new, old in zip(new_states, states, strict=True)
            ]
            weights = (ops.where(keep, ops.cast(w, "float32"), 0.0) for w in weights)
            carry = (t + 1, new_states, *weights)
            # TensorFlow's scan wants each step's output shaped like the carry.
            return carry, carry

        carry = (ops.convert_to_tensor(0, dtype="int32"), states)
        if return_attention_scores:
            carry += (ops.zeros((batch, ops.shape(memory)[1]), dtype="float32"),)
        (_, states, *_), (_, all_states, *all_weights) = _scan(body, carry, xs)
        outputs = ops.transpose(all_states[-1], (1, 0, 2))
        if inputs_mask is not None:
            outputs = outputs * ops.cast(ops.expand_dims(inputs_mask, -1), outputs.dtype)
        weights = ops.transpose(all_weights[0], (1, 0, 2)) if all_weights else None
        return outputs, weights, states

    def _fast_path(self, inputs, memory, states, inputs_mask, memory_mask, training):
        *cell_states, _ = states
        if self.rnn is not None:
            sequence, *cell_states = self.rnn(
                inputs, initial_state=cell_states, mask=inputs_mask, training=training
            )
        else:
            sequence, cell_states = self._run_cell(inputs, cell_states, inputs_mask, training)
        outputs, weights = self.attention(
            sequence,
            memory,
            query_mask=inputs_mask,
            value_mask=memory_mask,
            training=training,
            return_attention_scores=True,
            **self.cell.attention_kwargs(step=0),
        )
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

        def body(carry, x):
            x_t, keep = x[:, :-1], ops.expand_dims(x[:, -1] > 0.5, -1)
            states = keras.tree.pack_sequence_as(cell.state_size, carry[:-1])
            hidden, new_states = cell(x_t, states, training=training)
            new = [*keras.tree.flatten(new_states), hidden]
            carry = [ops.where(keep, n, o) for n, o in zip(new, carry, strict=True)]
            return carry, carry

        zero_hidden = ops.zeros((ops.shape(inputs)[0], self.cell.cell_output_size))
        carry = [*cell_states, ops.cast(zero_hidden, cell_states[0].dtype)]
        final, stacked = _scan(body, carry, _time_major_with_mask(inputs, inputs_mask))
        return ops.transpose(stacked[-1], (1, 0, 2)), final[:-1]

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


def _time_major_with_mask(inputs, mask):
    """`(T, B, E + 1)`: the inputs with the mask as a last column. One tensor to scan over, as
    TensorFlow's scan cannot check several sequences of unknown length against each other."""
    if mask is None:
        mask = ops.ones(ops.shape(inputs)[:2], dtype=inputs.dtype)
    packed = ops.concatenate([inputs, ops.cast(ops.expand_dims(mask, -1), inputs.dtype)], -1)
    return ops.transpose(packed, (1, 0, 2))


def _scan(body, carry, xs):
    """`ops.scan(body, carry, xs)` for a `body` whose per-step output is its new carry.

    On TensorFlow, Keras' scan is a `tf.while_loop` without `maximum_iterations`, whose
    gradient XLA cannot compile; there the same body runs in `ops.while_loop` with
    `maximum_iterations` set, the step outputs written into preallocated buffers. Every other
    backend takes `ops.scan` itself."""
    if keras.backend.backend() != "tensorflow":
        return ops.scan(body, carry, xs)
    steps = ops.shape(xs)[0]
    buffers = [ops.zeros((steps, *ops.shape(c)), dtype=c.dtype) for c in keras.tree.flatten(carry)]

    def loop(t, carry, buffers):
        carry, outputs = body(carry, ops.take(xs, t, axis=0))
        # A select rather than slice_update: TensorFlow has no gradient for the XLA
        # dynamic-update-slice that slice_update becomes.
        here = ops.arange(steps) == t
        buffers = [
            ops.where(ops.reshape(here, (-1,) + (1,) * len(y.shape)), ops.expand_dims(y, 0), b)
            for b, y in zip(buffers, keras.tree.flatten(outputs), strict=True)
        ]
        return t + 1, carry, buffers

    _, carry, buffers = ops.while_loop(
        lambda t, *_: t < steps, loop, (0, carry, buffers), maximum_iterations=steps
    )
    return carry, keras.tree.pack_sequence_as(carry, buffers)
