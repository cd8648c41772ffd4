"""tensorflow-addons' `BeamSearchDecoder`, in `keras.ops`. The module hands on, as
tensorflow-addons' did, the state and output types and the step (`beam_search_step`) and the
helpers `tile_batch`, `gather_tree` and `gather_tree_from_array` (`beam_paths`)."""

import keras
from keras import ops

from keras_luong.checks import check_integer
from keras_luong.tfa.seq2seq.beam_paths import gather_tree, gather_tree_from_array, tile_batch
from keras_luong.tfa.seq2seq.beam_search_step import (
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    StaticShape,
    _attention_probs,
    _beam_search_step,
    _mask_probs,  # noqa: F401 (tensorflow-addons' own tests call it from this module)
    _merge_beams,
    _split_beams,
)
from keras_luong.tfa.seq2seq.decoder import BaseDecoder, check_callable, check_cell
from keras_luong.tfa.seq2seq.wrapper import AlignmentHistory

__all__ = [
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "FinalBeamSearchDecoderOutput",
    "gather_tree",
    "gather_tree_from_array",
    "tile_batch",
]


class BeamSearchDecoder(BaseDecoder):
    """Beam search over a cell: tensorflow-addons' `BeamSearchDecoder`.

    The cell's initial state and the attention's memory hold `batch_size * beam_width` rows
    (`tile_batch`). Called on an embedding matrix (or with `embedding_fn`) with
    `start_tokens=` `[batch_size]`, `end_token=` and `initial_state=`, it returns
    `(FinalBeamSearchDecoderOutput, BeamSearchDecoderState, lengths)`:
    `predicted_ids` `[batch_size, time, beam_width]` (best beam first; time first with
    `output_time_major=True`) and `beam_search_decoder_output.scores`. Beams are ranked by
    `log p / ((5 + length) / 6) ** length_penalty_weight`, plus GNMT's coverage penalty on the
    beams that have ended with `coverage_penalty_weight`. keras-luong's own beam search is
    `generate(sampler=BeamSearchSampler(num_beams, length_penalty))`.

    Args:
        cell: A Keras RNN cell (or `AttentionWrapper`).
        beam_width: The number of beams, a positive integer.
        embedding_fn: Optional function from ids to the cell's inputs. Without it, the call's
            first argument is an embedding matrix `[vocabulary, depth]`.
        output_layer: Optional layer from the cell's output to the logits.
        length_penalty_weight: GNMT's length penalty weight. Defaults to 0.
        coverage_penalty_weight: GNMT's coverage penalty weight (needs an
            `AttentionWrapper`). Defaults to 0.
        reorder_tensor_arrays: Whether an `AttentionWrapper`'s alignment history is reordered
            along the final beams. Defaults to `True`.
        output_all_scores: Whether each step outputs the scores of every candidate
            (`[batch, beam, vocabulary]`) rather than of the beams kept. Defaults to `False`.
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

    tracks_own_finished = True

    def __init__(
        self,
        cell,
        beam_width,
        embedding_fn=None,
        output_layer=None,
        length_penalty_weight=0.0,
        coverage_penalty_weight=0.0,
        reorder_tensor_arrays=True,
        output_all_scores=False,
        **kwargs,
    ):
        check_cell(cell)
        check_callable("embedding_fn", embedding_fn)
        super().__init__(**kwargs)
        self._cell = cell
        self._beam_width = check_integer("beam_width", beam_width, minimum=1)
        self._embedding_fn = embedding_fn
        self._output_layer = output_layer
        self._length_penalty_weight = float(length_penalty_weight)
        self._coverage_penalty_weight = float(coverage_penalty_weight)
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._output_all_scores = output_all_scores

    def call(self, embedding, start_tokens=None, end_token=None, initial_state=None, training=None):
        return self._decode(
            embedding,
            {"start_tokens": start_tokens, "end_token": end_token, "initial_state": initial_state},
            training,
        )

    @property
    def batch_size(self):
        return self._batch_size

    def _logits_size(self):
        size = self._cell.output_size
        if self._output_layer is None:
            return size
        return self._output_layer.compute_output_shape((None, size))[-1]

    @property
    def output_size(self):
        """The shapes of one step's output per batch entry: `BeamSearchDecoderOutput` of
        `StaticShape`s."""
        beam = self._beam_width
        scores = (beam, self._logits_size()) if self._output_all_scores else (beam,)
        return BeamSearchDecoderOutput(
            scores=StaticShape(scores),
            predicted_ids=StaticShape((beam,)),
            parent_ids=StaticShape((beam,)),
        )

    @property
    def output_dtype(self):
        return BeamSearchDecoderOutput(scores="float32", predicted_ids="int32", parent_ids="int32")

    def initialize(self, embedding, start_tokens=None, end_token=None, initial_state=None):
        """`(finished, start_inputs, initial_state)`: only the first beam of each batch entry
        is live at first (the others start finished at log-probability `-inf`), so that the
        beams differ.

        Args:
            embedding: The embedding matrix `[vocabulary, depth]`, or `None` with
                `embedding_fn`.
            start_tokens: The first ids `[batch_size]`.
            end_token: The id that ends a beam.
            initial_state: The cell's state, `[batch_size * beam_width, ...]`.
        """
        if embedding is not None and self._embedding_fn is not None:
            raise ValueError(
                "You can either set embedding_fn or pass embedding at init time, not both."
            )
        if embedding is None and self._embedding_fn is None:
            raise ValueError("You have to either set embedding_fn or pass embedding at init time.")
        embed = self._embedding_fn
        if embedding is not None:
            matrix = ops.convert_to_tensor(embedding)

            def embed(ids):
                return ops.take(matrix, ids, axis=0)

        self._embed = embed
        start_tokens = ops.cast(start_tokens, "int32")
        end_token = ops.cast(end_token, "int32")
        if len(start_tokens.shape) != 1 or len(end_token.shape) != 0:
            raise ValueError(
                "Invalid value for arguments start_tokens and end_token. Expected a vector "
                f"and a scalar. Received: start_tokens.shape={tuple(start_tokens.shape)}, "
                f"end_token.shape={tuple(end_token.shape)}"
            )
        if initial_state is None:
            raise ValueError(
                "BeamSearchDecoder needs initial_state: the cell's state for batch_size * "
                "beam_width rows (cell.get_initial_state(batch_size=batch_size * beam_width))."
            )
        beam = self._beam_width
        self._batch_size = start_tokens.shape[0] or ops.shape(start_tokens)[0]
        self._start_tokens, self._end_token = start_tokens, end_token
        self._start_inputs = embed(
            ops.broadcast_to(start_tokens[:, None], (self._batch_size, beam))
        )
        first = ops.equal(ops.arange(beam, dtype="int32"), 0)[None]
        finished = ops.broadcast_to(ops.logical_not(first), (self._batch_size, beam))
        log_probs = ops.broadcast_to(ops.where(first, 0.0, float("-inf")), (self._batch_size, beam))
        cell_state = keras.tree.map_structure(
            lambda x: _split_beams(x, self._batch_size, beam), initial_state
        )
        attention = _attention_probs(cell_state, self._coverage_penalty_weight)
        accumulated = () if attention is None else ops.zeros_like(attention)
        state = BeamSearchDecoderState(
            cell_state=cell_state,
            log_probs=log_probs,
            finished=finished,
            lengths=ops.zeros((self._batch_size, beam), "int32"),
            accumulated_attention_probs=accumulated,
        )
        return finished, self._start_inputs, state

    def step(self, time, inputs, state, training=None):
        """One step: `(BeamSearchDecoderOutput, next_state, next_inputs, finished)`.

        Args:
            time: The step's index.
            inputs: The step's inputs.
            state: The state before the step.
            training: Whether the cell runs in training mode.
        """
        cell_state = keras.tree.map_structure(_merge_beams, state.cell_state)
        cell_outputs, next_cell_state = self._cell(
            _merge_beams(inputs), cell_state, training=training
        )
        if isinstance(cell_state, (list, tuple)) and not hasattr(cell_state, "_fields"):
            next_cell_state = keras.tree.pack_sequence_as(
                cell_state, keras.tree.flatten(next_cell_state)
            )
        next_cell_state = keras.tree.map_structure(
            lambda x: _split_beams(x, self._batch_size, self._beam_width), next_cell_state
        )
        if self._output_layer is not None:
            cell_outputs = self._output_layer(cell_outputs)
        logits = _split_beams(cell_outputs, -1, self._beam_width)
        output, next_state = _beam_search_step(
            time=time,
            logits=logits,
            next_cell_state=next_cell_state,
            beam_state=state,
            batch_size=self._batch_size,
            beam_width=self._beam_width,
            end_token=self._end_token,
            length_penalty_weight=self._length_penalty_weight,
            coverage_penalty_weight=self._coverage_penalty_weight,
            output_all_scores=self._output_all_scores,
        )
        finished = next_state.finished
        next_inputs = ops.where(
            ops.all(finished), self._start_inputs, self._embed(output.predicted_ids)
        )
        return output, next_state, next_inputs, finished

    def finalize(self, outputs, final_state, sequence_lengths):
        """The beams' ids from their first step (`gather_tree` along the back-pointers), and
        (with `reorder_tensor_arrays`) the alignment histories reordered the same way and
        stacked.

        Args:
            outputs: The steps' `BeamSearchDecoderOutput`s, stacked time first.
            final_state: The last `BeamSearchDecoderState`.
            sequence_lengths: The lengths `dynamic_decode` counted (the state's own are used).
        """
        max_lengths = ops.max(final_state.lengths, axis=1)
        predicted_ids = gather_tree(
            outputs.predicted_ids, outputs.parent_ids, max_lengths, self._end_token
        )
        if self._reorder_tensor_arrays:
            # As tensorflow-addons does, a history comes back stacked, `[time, batch_size *
            # beam_width, ...]`, each beam's row at each step its ancestor's.
            def reorder(history):
                if not isinstance(history, AlignmentHistory) or not history.steps:
                    return history
                return gather_tree_from_array(
                    history.stack(), outputs.parent_ids, final_state.lengths
                )

            final_state = final_state._replace(
                cell_state=keras.tree.map_structure(reorder, final_state.cell_state)
            )
        return FinalBeamSearchDecoderOutput(predicted_ids, outputs), final_state
