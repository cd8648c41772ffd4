import keras
from keras import ops

from keras_luong.backend.loops import eager_torch, step_call
from keras_luong.backend.masked_lstm import lstm_gates, plain_lstm_cell
from keras_luong.decoders.attention_cell import AttentionCell, deserialize_nested


@keras.saving.register_keras_serializable(package="keras_luong")
class InputFeedingCell(AttentionCell):
    """One Luong decoding step: an RNN cell, attention over the memory, and input feeding.

    ```
    h_t  = cell([x_t; h̃_{t-1}], states_{t-1})       ([x_t] when input_feeding=False)
    c_t  = attention(h_t, memory)
    h̃_t  = tanh(W_c [c_t; h_t])                      (the attention's attentional_units)
    ```

    The state is the wrapped cell's state (flattened), then `h̃_{t-1}`, which is zero at
    `t = 0`, then whatever state the attention keeps from step to step (its `state_size`:
    nothing for Luong's global and local attention, the previous alignment `(batch_size, S)`
    for `MonotonicAttention`). Keras 3's `RNN` cannot pass the memory to a cell, so
    `LuongDecoder` runs this cell with its own loop, and `step`-by-step decoding calls it
    directly. The encoder states (the `value`) are prepared once per source, `memory =
    cell.prepare(value, value_mask)`, and the memory is handed to every step.

    Args:
        cell: A Keras RNN cell: `LSTMCell`, `GRUCell`, `SimpleRNNCell` or `StackedRNNCells`.
        attention: A keras-luong attention layer (`GlobalAttention`, `LocalAttention`,
            `MonotonicAttention`, or any `BaseLuongAttention`). With `attentional_units` set
            (the size of `h̃`, the paper's) a step computes `h̃_t = tanh(W_c [c_t; h_t])`;
            without it the context `c_t` itself takes `h̃_t`'s place, fed and output
            (tensorflow-addons' `AttentionWrapper(attention_layer_size=None)`), and `units`
            is the value's size once the attention is built.
        input_feeding: Whether `h̃_{t-1}` is fed to the cell with `x_t`. Defaults to `True`.
        output_attention: Whether a step outputs `h̃_t` (the paper's, the default) or the
            cell's `h_t`, as tensorflow-addons' `AttentionWrapper(output_attention=False)`
            does: `h̃_t` is still computed and fed to the next step (so this needs
            `input_feeding=True`), and the states are the same either way.
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: `x_t`, `(batch_size, input_dim)`.
        states: A list: the cell's states, flattened, then `h̃_{t-1}`, then the attention's
            state.
        memory: The prepared source, `cell.prepare(value, value_mask)`, computed once per
            source.
        step: The decoding step `t`: an integer or a scalar or `(batch_size,)` tensor (used
            by local-m; every attention takes it).
        training: Whether dropout is applied.
        return_attention_scores: If `True`, also return the weights `(batch_size, S)`.

    Returns:
        `(h̃_t, new_states)`, or `(h̃_t, new_states, weights)`; in the new states `h̃_t`, fed
        to the next step, follows the cell's.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention
    >>> cell = InputFeedingCell(
    ...     keras.layers.LSTMCell(8), GlobalAttention(score_mode="dot", attentional_units=8)
    ... )
    >>> value = np.random.rand(2, 5, 8).astype("float32")  # encoder states
    >>> memory = cell.prepare(value, value_mask=np.arange(5) < np.array([[5], [3]]))
    >>> states = cell.get_initial_state(2)  # [h, c] of the LSTM, then h̃, all zero
    >>> [tuple(s.shape) for s in states]
    [(2, 8), (2, 8), (2, 8)]
    >>> x = np.random.rand(2, 4).astype("float32")  # one embedded target token
    >>> h_tilde, states, weights = cell(
    ...     x, states, memory=memory, step=0, return_attention_scores=True
    ... )
    >>> np.allclose(ops.convert_to_numpy(states[-1]), ops.convert_to_numpy(h_tilde))
    True
    >>> ops.convert_to_numpy(weights)[1, 3:].tolist()  # padding gets no weight
    [0.0, 0.0]
    """

    states_description = "the cell's, h̃_(t-1), then the attention's"

    def __init__(self, cell, attention, input_feeding=True, output_attention=True, **kwargs):
        if not output_attention and not input_feeding:
            raise ValueError(
                "Invalid value for argument output_attention. Without input feeding the "
                "attention would reach neither the output nor the next step: pass "
                "input_feeding=True with output_attention=False. Received: "
                "output_attention=False, input_feeding=False"
            )
        super().__init__(cell, attention, **kwargs)
        # Without attentional units the context is the attention, as wide as the value: known
        # once the attention is built (`build_attention`).
        self.units = getattr(attention, "attentional_units", None) or None
        self.input_feeding = input_feeding
        self.output_attention = bool(output_attention)

    def build_attention(self, value_shape):
        """Builds the attention as the base does; without `attentional_units`, `units` is
        then the value's size (the context's)."""
        super().build_attention(value_shape)
        if self.units is None:
            self.units = value_shape[-1]

    @property
    def carried_sizes(self):
        """`h̃_{t-1}`'s size: carried whether or not it is fed (the fast path reads it)."""
        return [self.units]

    @property
    def output_size(self):
        """The size of a step's output: `h̃_t`'s (`units`), or the cell's output with
        `output_attention=False`."""
        return self.units if self.output_attention else self.cell_output_size

    def rnn_input_size(self, input_size):
        """`x_t`'s width, plus `h̃`'s with input feeding."""
        return input_size + (self.units if self.input_feeding else 0)

    def call(
        self,
        inputs,
        states,
        memory,
        step=None,
        training=None,
        return_attention_scores=False,
    ):
        self.check_step_arguments(inputs, states, memory)
        cells = len(self.cell_state_size)
        cell_states, feed, attention_state = states[:cells], states[cells], states[cells + 1 :]
        if self.input_feeding:
            inputs = ops.concatenate([inputs, ops.cast(feed, inputs.dtype)], axis=-1)
        cell_states = keras.tree.pack_sequence_as(self.cell.state_size, cell_states)
        hidden, new_cell_states = step_call(self.cell, inputs, cell_states, training=training)
        return self._attend_after(
            hidden,
            new_cell_states,
            memory,
            attention_state,
            step,
            training,
            return_attention_scores,
        )

    def _attend_after(
        self,
        hidden,
        cell_states,
        memory,
        attention_state,
        step,
        training,
        return_attention_scores,
        attend=None,
    ):
        """The rest of a step once the cell has run: attention, `h̃_t`, the new states.
        `attend`, an attention's `eager_step`, attends in place of `self.attend`."""
        if attend is None:
            attentional, *weights, attention_state = self.attend(
                hidden, memory, attention_state, step, training, return_attention_scores
            )
        else:  # an attention without state (`eager_step` makes sure)
            attentional, weights = attend(hidden)
            weights = [weights] if return_attention_scores else []
        new_states = [*keras.tree.flatten(cell_states), attentional, *attention_state]
        output = attentional if self.output_attention else hidden
        return (output, new_states, *weights)

    def project_ahead(self, inputs, training=None):
        """`(x W_x + b` for every step `(B, T, 4 units)`, `[W_h̃; U])` for an `LSTMCell`
        with input feeding, on eager torch: the cell's kernel is `[W_x; W_h̃]` on `[x_t;
        h̃_{t-1}]`, so the part on the known inputs is one matmul for the whole sequence, and
        a step multiplies `[h̃_{t-1}; h_{t-1}]` by the rest and the recurrent kernel, stacked
        (one matmul, no concatenation of `x_t`, no bias add). The same sums as Keras' cell,
        added in another order. Compiled backends trace one step and keep `call`."""
        cell = self.cell
        if (
            not eager_torch(inputs)
            or not self.input_feeding
            or type(self).call is not InputFeedingCell.call
            or not plain_lstm_cell(cell, training)
        ):
            return None
        kernel = ops.convert_to_tensor(cell.kernel)
        width = inputs.shape[-1]
        projected = ops.matmul(ops.cast(inputs, kernel.dtype), kernel[:width])
        if cell.use_bias:
            projected = projected + ops.convert_to_tensor(cell.bias)
        recurrent = ops.concatenate(
            [kernel[width:], ops.convert_to_tensor(cell.recurrent_kernel)], axis=0
        )
        return projected, recurrent

    def projected_call(
        self,
        projected,
        states,
        memory,
        recurrent,
        step=None,
        training=None,
        return_attention_scores=False,
        attend=None,
    ):
        """`call` for a step whose input part `project_ahead` computed: `projected` is
        `x_t W_x + b` `(B, 4 units)`, `recurrent` is `[W_h̃; U]`. `attend`, the attention's
        `eager_step(memory, training)` where it has one, replaces its call."""
        h, c, feed, *attention_state = states
        carried = ops.concatenate([ops.cast(feed, h.dtype), h], axis=-1)
        z = projected + carried @ recurrent
        h, c = lstm_gates(z, c, self.cell.units)
        return self._attend_after(
            h, [h, c], memory, attention_state, step, training, return_attention_scores, attend
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {"input_feeding": self.input_feeding, "output_attention": self.output_attention}
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = deserialize_nested(config)
        # Files from keras-luong 0.1.0 store units, which always equalled the attention's.
        config.pop("units", None)
        return cls(**config)
