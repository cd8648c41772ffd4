import keras
from keras import ops

from keras_luong.checks import check_rank
from keras_luong.scores import BaseLuongAttention


@keras.saving.register_keras_serializable(package="keras_luong")
class InputFeedingCell(keras.layers.Layer):
    """One Luong decoding step: an RNN cell, attention over the memory, and input feeding.

    ```
    h_t  = cell([x_t; h̃_{t-1}], states_{t-1})       ([x_t] when input_feeding=False)
    c_t  = attention(h_t, memory)
    h̃_t  = tanh(W_c [c_t; h_t])                      (the attention's attentional_units)
    ```

    The state is the wrapped cell's state (flattened) followed by `h̃_{t-1}`, which is zero at
    `t = 0` (and, for an attention that carries it, `MonotonicAttention`, the previous
    alignment `(batch_size, S)`). Keras 3's `RNN` cannot pass the memory to a cell, so
    `LuongDecoder` runs this cell with its own loop, and `step`-by-step decoding calls it
    directly. The encoder states (the `value`) are prepared once per source, `memory =
    cell.prepare(value, value_mask)`, and the memory is handed to every step.

    Args:
        cell: A Keras RNN cell: `LSTMCell`, `GRUCell`, `SimpleRNNCell` or `StackedRNNCells`.
        attention: A `GlobalAttention` or `LocalAttention` with `attentional_units` set (the
            size of `h̃`).
        input_feeding: Whether `h̃_{t-1}` is fed to the cell with `x_t`. Defaults to `True`.
        **kwargs: Base layer keyword arguments.

    Call arguments:
        inputs: `x_t`, `(batch_size, input_dim)`.
        states: A list: the cell's states, flattened, then `h̃_{t-1}`.
        memory: The prepared source, `cell.prepare(value, value_mask)`, computed once per
            source.
        step: The decoding step `t`: an integer or a scalar or `(batch_size,)` tensor (used
            by local-m; every attention takes it).
        training: Whether dropout is applied.
        return_attention_scores: If `True`, also return the weights `(batch_size, S)`.
        dropout_mask: Optional attention dropout drawn ahead for this step (see
            `attention.dropout_mask()`), in place of a random draw.

    Returns:
        `(h̃_t, new_states)`, or `(h̃_t, new_states, weights)`; the new states end with
        `h̃_t`, fed to the next step.

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

    def __init__(self, cell, attention, input_feeding=True, **kwargs):
        super().__init__(**kwargs)
        if not (isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size")):
            raise ValueError(
                "Invalid value for argument cell. Expected a Keras RNN cell (a layer with a "
                f"state_size, such as keras.layers.LSTMCell). Received: cell={cell!r}"
            )
        if not isinstance(attention, BaseLuongAttention):
            raise ValueError(
                "Invalid value for argument attention. Expected a keras_luong GlobalAttention "
                f"or LocalAttention. Received: attention={attention!r}"
            )
        if not attention.attentional_units:
            raise ValueError(
                "The attention of an InputFeedingCell must compute h̃ = tanh(W_c [c; h]): "
                "create it with attentional_units=<size of h̃>. "
                f"Received: attention.attentional_units={attention.attentional_units!r}"
            )
        self.cell = cell
        self.attention = attention
        self.units = attention.attentional_units
        self.input_feeding = input_feeding
        self.supports_masking = True

    @property
    def cell_state_size(self):
        return keras.tree.flatten(self.cell.state_size)

    @property
    def carries_alignment(self):
        """Whether the attention needs the previous step's alignment (`MonotonicAttention`):
        then the states end with it, `(batch_size, S)`."""
        return self.attention.carries_alignment

    @property
    def state_size(self):
        """The cell's state sizes, then `h̃`'s; then `None`, the source length, for the
        alignment an attention such as `MonotonicAttention` carries from step to step."""
        return [*self.cell_state_size, self.units] + ([None] if self.carries_alignment else [])

    @property
    def output_size(self):
        return self.units

    @property
    def cell_output_size(self):
        return getattr(self.cell, "output_size", None) or self.cell_state_size[0]

    def build(self, inputs_shape, memory_shape=None):
        """Builds the wrapped cell for inputs `(batch_size, input_dim)`, and the attention if
        it is not built yet from the shapes of a memory (a dict holding the value's under
        `"value"`)."""
        input_dim = inputs_shape[-1] + (self.units if self.input_feeding else 0)
        if not self.cell.built:
            self.cell.build((inputs_shape[0], input_dim))
        if memory_shape is not None:
            self.build_attention(memory_shape["value"])

    def build_attention(self, value_shape):
        """Builds the attention, if it is not built yet, for encoder states of `value_shape`
        and queries of the wrapped cell's output size."""
        if not self.attention.built:
            self.attention.build((value_shape[0], self.cell_output_size), value_shape)

    def prepare(self, value, value_mask=None):
        """The memory every step attends to: `attention.prepare(value, value_mask)` (the
        attention built first if it is not yet), computed once per source."""
        self.build_attention(value.shape)
        return self.attention.prepare(value, value_mask)

    def get_initial_state(self, batch_size, cell_states=None, source_length=None):
        """Zeros for every state, or `cell_states` (e.g. the encoder's final `[h, c]`) followed
        by a zero `h̃_{-1}`; with an attention that carries its alignment, then the initial
        alignment over `source_length` positions (all the weight on the first)."""
        if self.carries_alignment and source_length is None:
            raise ValueError(
                f"{type(self.attention).__name__} carries its alignment from step to step: "
                "get_initial_state needs the source length, get_initial_state(batch_size, "
                "cell_states, source_length=S). Received: source_length=None"
            )
        if cell_states is None:
            cell_states = [
                ops.zeros((batch_size, size), dtype=self.compute_dtype)
                for size in self.cell_state_size
            ]
        cell_states = keras.tree.flatten(cell_states)
        shapes = [tuple(getattr(state, "shape", ())) for state in cell_states]
        batch = batch_size if isinstance(batch_size, int) else None

        def fits(shape, size):  # (batch, size), either unknown in a symbolic call
            return (
                len(shape) == 2
                and shape[-1] in (None, size)
                and shape[0] in (None, batch if batch is not None else shape[0])
            )

        if len(cell_states) != len(self.cell_state_size) or not all(
            fits(shape, size) for shape, size in zip(shapes, self.cell_state_size, strict=False)
        ):
            raise ValueError(
                f"Expected {len(self.cell_state_size)} initial cell states of shapes "
                f"{[(batch, size) for size in self.cell_state_size]}. "
                f"Received: states of shapes {shapes}"
            )
        feed = ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
        if self.carries_alignment:
            alignment = self.attention.initial_alignment(batch_size, source_length)
            return [*cell_states, feed, alignment]
        return [*cell_states, feed]

    def call(
        self,
        inputs,
        states,
        memory,
        step=None,
        training=None,
        return_attention_scores=False,
        dropout_mask=None,
    ):
        self.check_step_arguments(inputs, states, memory)
        alignment = {}
        if self.carries_alignment:
            *states, previous = states
            alignment = {"previous_alignment": previous}
        *cell_states, feed = states
        if self.input_feeding:
            inputs = ops.concatenate([inputs, ops.cast(feed, inputs.dtype)], axis=-1)
        cell_states = keras.tree.pack_sequence_as(self.cell.state_size, cell_states)
        hidden, new_cell_states = self.cell(inputs, cell_states, training=training)
        return_weights = return_attention_scores or self.carries_alignment
        attended = self.attention(
            hidden,
            memory=memory,
            step=step,
            training=training,
            return_attention_scores=return_weights,
            dropout_mask=dropout_mask,
            **alignment,
        )
        attentional = attended[0] if return_weights else attended
        new_states = [*keras.tree.flatten(new_cell_states), attentional]
        if self.carries_alignment:
            new_states.append(ops.cast(attended[1], "float32"))
        if return_attention_scores:
            return attentional, new_states, attended[1]
        return attentional, new_states

    def compute_output_shape(self, inputs_shape, states_shape=None, memory_shape=None):
        """`((batch_size, units), [state shapes])`: `h̃_t` and the new states, shaped as
        `state_size` (the cell's states, then `h̃_t`)."""
        batch = inputs_shape[0]
        return (batch, self.units), [(batch, size) for size in self.state_size]

    def compute_output_spec(
        self,
        inputs,
        states,
        memory,
        step=None,
        training=None,
        return_attention_scores=False,
        dropout_mask=None,
    ):
        self.check_step_arguments(inputs, states, memory)
        value = memory["value"]
        output_shape, state_shapes = self.compute_output_shape(inputs.shape)
        states_spec = [keras.KerasTensor(shape, self.compute_dtype) for shape in state_shapes]
        if self.carries_alignment:
            states_spec[-1] = keras.KerasTensor((inputs.shape[0], value.shape[1]), "float32")
        result = [keras.KerasTensor(output_shape, self.compute_dtype), states_spec]
        if return_attention_scores:
            result.append(keras.KerasTensor((inputs.shape[0], value.shape[1]), "float32"))
        return tuple(result)

    def check_step_arguments(self, inputs, states, memory):
        """Refuses what one step cannot run on: `inputs` not `(batch_size, input_dim)`, a
        number of states other than `state_size`'s, a memory that is not prepared."""
        check_rank("inputs", inputs.shape, (2,))
        if not isinstance(states, (list, tuple)) or len(states) != len(self.state_size):
            shapes = [tuple(getattr(s, "shape", ())) for s in keras.tree.flatten(states)]
            raise ValueError(
                f"Invalid states: expected a list of {len(self.state_size)} states, the cell's "
                f"then h̃_(t-1), of sizes {self.state_size} (get_initial_state() makes them). "
                f"Received: {len(shapes)} states of shapes {shapes}"
            )
        if not isinstance(memory, dict) or "value" not in memory:
            raise TypeError(
                "Invalid memory: expected the prepared source, cell.prepare(value, "
                "value_mask) (decoder.prepare and attention.prepare give the same). "
                f"Received: memory of type {type(memory).__name__}"
            )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "attention": keras.saving.serialize_keras_object(self.attention),
                "input_feeding": self.input_feeding,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = deserialize_nested(config)
        # Files from keras-luong 0.1.0 store units, which always equalled the attention's.
        config.pop("units", None)
        return cls(**config)


def deserialize_nested(config):
    """The config with its serialized `cell` and `attention` turned back into layers."""
    config = dict(config)
    for name in ("cell", "attention"):
        config[name] = keras.saving.deserialize_keras_object(config[name])
    return config
