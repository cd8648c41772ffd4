"""The decoder of Bahdanau, Cho and Bengio (2015): attention read from the previous state,
the context fed into the RNN with the previous word, and a deep output layer."""

import keras
from keras import ops

from keras_luong.backend.loops import step_call
from keras_luong.backend.ops import project
from keras_luong.checks import check_integer, check_one_of
from keras_luong.decoders.attention_cell import AttentionCell, flat_sizes
from keras_luong.decoders.luong_decoder import AttentionDecoder

DEEP_OUTPUTS = ("maxout", "tanh")


# A model's `attention_timing`: Luong's decoder, or Bahdanau's.
@keras.saving.register_keras_serializable(package="keras_luong")
class BahdanauCell(AttentionCell):
    """One decoding step of Bahdanau, Cho and Bengio (2015): attend with the previous state,
    then run the RNN on the previous word and the context, then a deep output layer.

    ```
    c_t  = attention(s_{t-1}, memory)      s_{t-1}: the cell's output state
    s_t  = cell([x_t; c_t], states_{t-1})
    t̃_t  = W_o [s_t; c_t; x_t] + b_o       2·units wide with maxout
    o_t  = max(t̃_t[2j], t̃_t[2j+1])        deep_output="maxout" (the paper's)
    o_t  = tanh(t̃_t)                       deep_output="tanh"
    ```

    `x_t` is the embedded previous target word `y_{t-1}`; the vocabulary projection reads
    `o_t`. Luong's step (`InputFeedingCell`) attends after the RNN step, with `h_t`; this one
    before it, with `s_{t-1}`, which at `t = 0` is the initial state (e.g. the encoder's,
    bridged). The paper's appendix writes `s_{t-1}` in the deep output where its text writes
    `s_t`; this layer reads `s_t`, as the text and the common implementations do.

    The states are the wrapped cell's (flattened), then the attention's (`MonotonicAttention`
    keeps the previous alignment); nothing else is carried: the query is the cell's own
    output state (an LSTM's `h`; the top cell's in a `StackedRNNCells`).

    Args:
        cell: A Keras RNN cell: `LSTMCell`, `GRUCell`, `SimpleRNNCell` or `StackedRNNCells`.
        attention: A keras-luong attention layer without `attentional_units` (its output is
            the context `c_t`): `BahdanauAttention` as in the paper, or any other, Luong's
            scores and local windows included.
        units: The size of `o_t`. Defaults to the cell's output size.
        deep_output: `"maxout"` (the paper's) or `"tanh"`. Defaults to `"maxout"`.
        kernel_initializer: The initializer of `W_o`. Defaults to `"glorot_uniform"`.
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: `x_t`, `(batch_size, input_dim)`.
        states: A list: the cell's states, flattened, then the attention's.
        memory: The prepared source, `cell.prepare(value, value_mask)`.
        step: The decoding step `t` (used by local-m).
        training: Whether dropout is applied.
        return_attention_scores: If `True`, also return the weights `(batch_size, S)`.

    Returns:
        `(o_t, new_states)`, or `(o_t, new_states, weights)`.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_luong import BahdanauAttention
    >>> cell = BahdanauCell(keras.layers.GRUCell(8), BahdanauAttention(10), units=6)
    >>> value = np.random.rand(2, 5, 8).astype("float32")  # encoder states
    >>> memory = cell.prepare(value, value_mask=np.arange(5) < np.array([[5], [3]]))
    >>> states = cell.get_initial_state(2)  # the GRU's h, zero
    >>> x = np.random.rand(2, 4).astype("float32")  # one embedded target token
    >>> output, states, weights = cell(
    ...     x, states, memory=memory, step=0, return_attention_scores=True
    ... )
    >>> tuple(output.shape), [tuple(s.shape) for s in states]
    ((2, 6), [(2, 8)])
    >>> keras.ops.convert_to_numpy(weights)[1, 3:].tolist()  # padding gets no weight
    [0.0, 0.0]

    Reference:
        Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly Learning to Align
        and Translate", ICLR 2015 (arXiv:1409.0473).
    """

    def __init__(
        self,
        cell,
        attention,
        units=None,
        deep_output="maxout",
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(cell, attention, **kwargs)
        if getattr(attention, "attentional_units", None):
            raise ValueError(
                "The attention of a BahdanauCell must return the context c_t itself: create "
                "it without attentional_units (h̃ = tanh(W_c [c; h]) is Luong's output, "
                "which this step replaces by its deep output). Received: "
                f"attention.attentional_units={attention.attentional_units!r}"
            )
        self.units = check_integer("units", units, allow_none=True) or self.cell_output_size
        self.deep_output = check_one_of("deep_output", deep_output, DEEP_OUTPUTS)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.query_index = output_state_index(cell)
        self.context_size = None

    @property
    def output_size(self):
        return self.units

    def rnn_input_size(self, input_size):
        """`x_t`'s width plus the context's (the value's)."""
        if self.context_size is None:
            raise ValueError(
                "A BahdanauCell's RNN reads [x_t; c_t], so its size needs the value's: "
                "prepare a memory (or build with the memory's shapes) first."
            )
        return input_size + self.context_size

    def build_attention(self, value_shape):
        super().build_attention(value_shape)
        self.context_size = value_shape[-1]

    def build(self, inputs_shape, memory_shape=None):
        super().build(inputs_shape, memory_shape)
        width = self.cell_output_size + self.context_size + inputs_shape[-1]
        pieces = 2 if self.deep_output == "maxout" else 1
        self.output_kernel = self.add_weight(
            name="output_kernel",
            shape=(width, pieces * self.units),
            initializer=self.kernel_initializer,
        )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(pieces * self.units,), initializer="zeros"
        )

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
        cell_states, attention_state = states[:cells], states[cells:]
        context, *weights, attention_state = self.attend(
            cell_states[self.query_index],
            memory,
            attention_state,
            step,
            training,
            return_attention_scores,
        )
        context = ops.cast(context, inputs.dtype)
        cell_inputs = ops.concatenate([inputs, context], axis=-1)
        cell_states = keras.tree.pack_sequence_as(self.cell.state_size, cell_states)
        hidden, new_cell_states = step_call(self.cell, cell_inputs, cell_states, training=training)
        output = self.deep(ops.concatenate([hidden, context, inputs], axis=-1))
        new_states = [*keras.tree.flatten(new_cell_states), *attention_state]
        return (output, new_states, *weights)

    def deep(self, features):
        """The deep output `o_t` of `[s_t; c_t; x_t]`."""
        pre = project(features, self.output_kernel)
        pre = pre + ops.cast(self.output_bias, pre.dtype)
        if self.deep_output == "tanh":
            return ops.tanh(pre)
        pairs = ops.reshape(pre, (*ops.shape(pre)[:-1], self.units, 2))
        return ops.max(pairs, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "deep_output": self.deep_output,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_luong")
class BahdanauDecoder(AttentionDecoder):
    """The decoder of Bahdanau, Cho and Bengio (2015) run over a whole target sequence
    (teacher forcing): a `BahdanauCell` at every step, which attends with the previous state
    `s_{t-1}`, feeds `[y_{t-1}; c_t]` to the RNN and outputs the deep output `o_t` of
    `[s_t; c_t; y_{t-1}]`.

    It takes the arguments, call arguments and methods of `LuongDecoder` (`prepare`,
    `get_initial_state`, `step`), with Bahdanau's timing in place of Luong's. Every step
    depends on the one before through its attention, so there is no fast path.

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`).
        attention: A keras-luong attention layer without `attentional_units`.
        units: The size of the deep output. Defaults to the cell's output size.
        deep_output: `"maxout"` (the paper's) or `"tanh"`. Defaults to `"maxout"`.
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: The target embeddings, `(batch_size, T, E)`.
        value: The encoder states, `(batch_size, S, d)`.
        initial_state: Optional list of the cell's initial states; zeros otherwise.
        inputs_mask: Optional boolean `(batch_size, T)` target mask.
        value_mask: Optional boolean `(batch_size, S)` source mask.
        training: Whether dropout is applied.
        return_attention_scores: Also return the alignments `(batch_size, T, S)`.
        return_state: Also return the final states.

    Returns:
        `o_t` for every step, `(batch_size, T, units)`; then the alignments and the final
        states, if asked for, in that order.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import BahdanauAttention
    >>> decoder = BahdanauDecoder(keras.layers.LSTMCell(8), BahdanauAttention(10))
    >>> targets = np.random.rand(2, 4, 5).astype("float32")  # embedded target inputs
    >>> value = np.random.rand(2, 6, 8).astype("float32")  # encoder states
    >>> outputs = decoder(targets, value)
    >>> memory, states = decoder.prepare(value), decoder.get_initial_state(2)
    >>> for t in range(4):
    ...     output, states = decoder.step(targets[:, t], states, memory, step=t)
    >>> np.allclose(ops.convert_to_numpy(output), ops.convert_to_numpy(outputs[:, -1]), atol=1e-5)
    True
    """

    def __init__(self, cell, attention, units=None, deep_output="maxout", **kwargs):
        super().__init__(**kwargs)
        self.cell = BahdanauCell(
            cell, attention, units=units, deep_output=deep_output, dtype=self.dtype_policy
        )
        self.attention = attention
        self.supports_masking = True

    @property
    def units(self):
        """The size of the deep output."""
        return self.cell.units

    @property
    def deep_output(self):
        return self.cell.deep_output

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "deep_output": self.deep_output})
        return config


def output_state_index(cell):
    """Where a Keras cell's output is among its flattened states: its first state (an LSTM's
    `h`, a GRU's), the top cell's in a `StackedRNNCells`."""
    if hasattr(cell, "cells"):
        below = sum(len(flat_sizes(sub.state_size)) for sub in cell.cells[:-1])
        return below + output_state_index(cell.cells[-1])
    return 0
