"""What a one-step decoder layer shares whatever its timing (Luong's input-feeding step,
Bahdanau's previous-state step): the wrapped RNN cell and attention, the memory prepared once
per source, the states, their shapes and their checks."""

import keras
from keras import ops

from keras_luong.attention.protocol import attention_state_spec, check_attention
from keras_luong.backend.loops import step_call
from keras_luong.checks import check_rank


class AttentionCell(keras.layers.Layer):
    """The base of `InputFeedingCell` and `BahdanauCell`: a Keras RNN cell and a keras-luong
    attention, run one target step at a time over a prepared memory.

    The states are the wrapped cell's (flattened), then what the step carries from one step to
    the next besides them (`carried_sizes`: `h̃_{t-1}` for input feeding, nothing for
    Bahdanau's step), then the attention's own (`attention.state_size`). A subclass says how
    wide the wrapped cell's input is (`rnn_input_size`) and runs the step (`call`).
    """

    # Says what the states are, in the error of a step given the wrong ones.
    states_description = "the cell's, then the attention's"

    def __init__(self, cell, attention, **kwargs):
        super().__init__(**kwargs)
        if not (isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size")):
            raise ValueError(
                "Invalid value for argument cell. Expected a Keras RNN cell (a layer with a "
                f"state_size, such as keras.layers.LSTMCell). Received: cell={cell!r}"
            )
        self.cell = cell
        self.attention = check_attention(attention)
        self.supports_masking = True

    @property
    def cell_state_size(self):
        return flat_sizes(self.cell.state_size)

    @property
    def carried_sizes(self):
        """The sizes of the states the step carries besides the cell's and the attention's
        (zeros at the first step)."""
        return []

    @property
    def state_size(self):
        """The cell's state sizes, then the carried states', then the attention's (`None`:
        one value per source position)."""
        return [*self.cell_state_size, *self.carried_sizes, *self.attention.state_size]

    @property
    def cell_output_size(self):
        return getattr(self.cell, "output_size", None) or self.cell_state_size[0]

    def rnn_input_size(self, input_size):
        """The width of the wrapped cell's input at a step whose `x_t` is `input_size` wide."""
        raise NotImplementedError

    def build(self, inputs_shape, memory_shape=None):
        """Builds the attention, if it is not built yet, from the shapes of a memory (a dict
        holding the value's under `"value"`), then the wrapped cell for inputs
        `(batch_size, input_dim)`."""
        if memory_shape is not None:
            self.build_attention(memory_shape["value"])
        if not self.cell.built:
            self.cell.build((inputs_shape[0], self.rnn_input_size(inputs_shape[-1])))

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

    def get_initial_state(self, batch_size, cell_states=None, memory=None):
        """Zeros for every state, or `cell_states` (e.g. the encoder's final `[h, c]`) followed
        by zeros for the carried states; then the attention's initial state for the prepared
        `memory` (`cell.prepare(value, value_mask)`; needed only by an attention with state,
        such as `MonotonicAttention`)."""
        if memory is None and self.attention.state_size:
            raise ValueError(
                f"{type(self.attention).__name__} keeps a state from step to step, made "
                "from the source: pass the memory, get_initial_state(batch_size, "
                "cell_states, memory=cell.prepare(value, value_mask)). Received: memory=None"
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
        if None in self.carried_sizes:
            raise ValueError(
                "The states' sizes depend on the value's (the attention has no "
                "attentional_units, so the context takes h̃'s place): prepare the memory first, "
                "get_initial_state(batch_size, cell_states, memory=cell.prepare(value, "
                f"value_mask)). Received: memory={'None' if memory is None else 'a memory'}"
            )
        carried = [
            ops.zeros((batch_size, size), dtype=self.compute_dtype) for size in self.carried_sizes
        ]
        attention_states = []
        if self.attention.state_size:
            attention_states = self.attention.get_initial_state(batch_size, memory)
        return [*cell_states, *carried, *attention_states]

    def project_ahead(self, inputs, training=None):
        """For a loop that knows every step's input in advance (the decoder's target
        sequence `(B, T, d)`): what `projected_call` needs for every step, computed once,
        or `None` where this cell has no such path (its steps then run `call`)."""
        return None

    def attend(self, query, memory, attention_state, step, training, return_attention_scores):
        """The attention's step call: `(output, [weights,] new attention state)`."""
        return step_call(
            self.attention,
            query,
            memory=memory,
            initial_state=list(attention_state),
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
            return_state=True,
        )

    def compute_output_shape(self, inputs_shape, states_shape=None, memory_shape=None):
        """`((batch_size, output_size), [state shapes])`: a step's output and the new states,
        shaped as `state_size` (`None` where the attention keeps one value per source
        position)."""
        batch = inputs_shape[0]
        return (batch, self.output_size), [(batch, size) for size in self.state_size]

    def state_spec(self, batch_size, source_length):
        """The symbolic states: `KerasTensor`s shaped as `get_initial_state` returns them."""
        states = [
            keras.KerasTensor((batch_size, size), self.compute_dtype)
            for size in [*self.cell_state_size, *self.carried_sizes]
        ]
        return states + attention_state_spec(self.attention, batch_size, source_length)

    def compute_output_spec(
        self,
        inputs,
        states,
        memory,
        step=None,
        training=None,
        return_attention_scores=False,
    ):
        self.check_step_arguments(inputs, states, memory)
        batch, source_length = inputs.shape[0], memory["value"].shape[1]
        result = (
            keras.KerasTensor((batch, self.output_size), self.compute_dtype),
            self.state_spec(batch, source_length),
        )
        if return_attention_scores:
            result += (keras.KerasTensor((batch, source_length), "float32"),)
        return result

    def check_step_arguments(self, inputs, states, memory):
        """Refuses what one step cannot run on: `inputs` not `(batch_size, input_dim)`, a
        number of states other than `state_size`'s, a memory that is not prepared."""
        check_rank("inputs", inputs.shape, (2,))
        if not isinstance(states, (list, tuple)) or len(states) != len(self.state_size):
            shapes = [tuple(getattr(s, "shape", ())) for s in keras.tree.flatten(states)]
            raise ValueError(
                f"Invalid states: expected a list of {len(self.state_size)} states, "
                f"{self.states_description}, of sizes {self.state_size} "
                "(get_initial_state() makes them). "
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
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config))


def flat_sizes(size):
    """A cell's `state_size` (an int, or nested lists of ints) as a flat list, read at every
    step: plain Python, where `keras.tree.flatten` costs tens of microseconds on torch."""
    if isinstance(size, (list, tuple)):
        return [flat for sub in size for flat in flat_sizes(sub)]
    return [size]


def deserialize_nested(config):
    """The config with its serialized `cell` and `attention` turned back into layers."""
    config = dict(config)
    for name in ("cell", "attention"):
        config[name] = keras.saving.deserialize_keras_object(config[name])
    return config
