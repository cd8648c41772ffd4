"""tensorflow-addons' `BasicDecoder`: a cell, a sampler and an optional output layer, decoded by
`dynamic_decode`."""

import collections

import keras

from keras_luong.tfa.seq2seq.decoder import BaseDecoder, check_cell
from keras_luong.tfa.seq2seq.sampler import Sampler


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    """What `BasicDecoder` gives at each step: the (projected) cell output and the ids."""


class BasicDecoder(BaseDecoder):
    """A cell (an RNN cell, or `AttentionWrapper`) decoded step by step by a sampler:
    tensorflow-addons' `BasicDecoder`. Called on `inputs` with `initial_state=` and the
    sampler's arguments (`sequence_length=` for `TrainingSampler`, `start_tokens=` and
    `end_token=` for `GreedyEmbeddingSampler`), it returns `(BasicDecoderOutput(rnn_output,
    sample_id), final_state, final_sequence_lengths)`, batch major unless
    `output_time_major=True`.

    Args:
        cell: A Keras RNN cell: `cell(inputs, states) -> (output, new_states)`.
        sampler: A sampler of `keras_luong.tfa.seq2seq` (`TrainingSampler`, ...).
        output_layer: Optional layer applied to each step's cell output (a `Dense` to the
            vocabulary, say).
        output_time_major: Whether the outputs are `[time, batch, ...]`. Defaults to
            `False`.
        impute_finished: Whether a finished row's outputs are zeroed and its state kept.
            Defaults to `False`.
        maximum_iterations: Optional bound on the number of steps (needed where the loop is
            traced, unless the inputs' length bounds it).
        parallel_iterations: Unused (tensorflow-addons' `tf.while_loop` argument).
        swap_memory: Unused (tensorflow-addons' `tf.while_loop` argument).
        **kwargs: Base layer keyword arguments, such as `name`.
    """

    def __init__(self, cell, sampler, output_layer=None, **kwargs):
        check_cell(cell)
        if not isinstance(sampler, Sampler):
            raise ValueError(
                "Invalid value for argument sampler. Expected a sampler of "
                f"keras_luong.tfa.seq2seq. Received: sampler={sampler!r}"
            )
        super().__init__(**kwargs)
        self.cell = cell
        self.sampler = sampler
        self.output_layer = output_layer

    def initialize(self, inputs, initial_state=None, **kwargs):
        """The sampler's `(finished, first_inputs)` and the initial state.

        Args:
            inputs: The sampler's first argument (the target inputs for `TrainingSampler`,
                the embedding for `GreedyEmbeddingSampler`).
            initial_state: The cell's initial state.
            **kwargs: The sampler's other arguments (`sequence_length=`, `start_tokens=`...).
        """
        finished, first_inputs = self.sampler.initialize(inputs, **kwargs)
        first_state = keras.tree.flatten(initial_state)[0] if initial_state is not None else None
        self._cell_dtype = "float32" if first_state is None else first_state.dtype
        return finished, first_inputs, initial_state

    @property
    def batch_size(self):
        return self.sampler.batch_size

    def _rnn_output_size(self):
        size = self.cell.output_size
        if self.output_layer is None:
            return size
        return self.output_layer.compute_output_shape((None, size))[-1]

    @property
    def output_size(self):
        """The size of one row's output at one step: `BasicDecoderOutput(rnn_output size,
        sample id shape)`."""
        return BasicDecoderOutput(self._rnn_output_size(), self.sampler.sample_ids_shape)

    @property
    def output_dtype(self):
        """The dtypes of one step's output: `BasicDecoderOutput`."""
        return BasicDecoderOutput(self._cell_dtype, self.sampler.sample_ids_dtype)

    def step(self, time, inputs, state, training=None):
        """One step: `(BasicDecoderOutput, next_state, next_inputs, finished)`.

        Args:
            time: The step's index.
            inputs: The step's inputs.
            state: The state before the step.
            training: Whether the cell runs in training mode.
        """
        cell_outputs, cell_state = self.cell(inputs, state, training=training)
        if isinstance(state, (list, tuple)) and not hasattr(state, "_fields"):
            cell_state = keras.tree.pack_sequence_as(state, keras.tree.flatten(cell_state))
        if self.output_layer is not None:
            cell_outputs = self.output_layer(cell_outputs)
        sample_ids = self.sampler.sample(time=time, outputs=cell_outputs, state=cell_state)
        finished, next_inputs, next_state = self.sampler.next_inputs(
            time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids
        )
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished
