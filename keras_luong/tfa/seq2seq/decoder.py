"""tensorflow-addons' decoders' base classes and `dynamic_decode`, in `keras.ops`.

`dynamic_decode` calls the decoder's `step` until every row has finished or
`maximum_iterations` steps have run. Run eagerly it stops where tensorflow-addons' loop stops;
traced by a compiled backend (inside `fit`, a `tf.function` or `jax.jit`), where whether every
row has finished is not known while tracing, it runs a number of steps known when it is traced:
`maximum_iterations`, or the inputs' length for teacher forcing. Outputs past a row's end are
then what tensorflow-addons' would be with `impute_finished=True`: zeros.
"""

import keras
from keras import ops

from keras_luong.backend.loops import known_values
from keras_luong.checks import check_integer
from keras_luong.tfa.seq2seq.wrapper import holds_history


def check_callable(name, value):
    """`value`, if it is callable or `None`."""
    if value is None or callable(value):
        return value
    raise ValueError(
        f"Invalid value for argument {name}. Expected a callable. Received: {name}={value!r}"
    )


def check_cell(cell):
    """`cell`, if it is a Keras RNN cell: a layer with `get_initial_state`, called on
    `(inputs, states)`."""
    if not isinstance(cell, keras.layers.Layer) or not hasattr(cell, "get_initial_state"):
        raise ValueError(
            "Invalid value for argument cell. Expected an RNN cell (a layer with "
            f"get_initial_state, called on (inputs, states)). Received: cell={cell!r}"
        )
    return cell


class Decoder:
    """tensorflow-addons' `Decoder`: `initialize(name=None) -> (finished, inputs, state)` and
    `step(time, inputs, state, name=None)`, with `batch_size`, `output_size`, `output_dtype`
    and optionally `finalize`."""

    tracks_own_finished = False

    def initialize(self, name=None):
        raise NotImplementedError

    def step(self, time, inputs, state, training=None, name=None):
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError


class BaseDecoder(keras.layers.Layer):
    """tensorflow-addons' `BaseDecoder`: a layer whose call runs `dynamic_decode` on itself.

    Args:
        output_time_major: Whether the outputs are `[time, batch, ...]`. Defaults to
            `False`.
        impute_finished: Whether a finished row's outputs are zeroed and its state kept.
            Defaults to `False`.
        maximum_iterations: Optional bound on the number of steps.
        parallel_iterations: Unused (tensorflow-addons' `tf.while_loop` argument).
        swap_memory: Unused (tensorflow-addons' `tf.while_loop` argument).
        **kwargs: Base layer keyword arguments, such as `name`.
    """

    tracks_own_finished = False

    def __init__(
        self,
        output_time_major=False,
        impute_finished=False,
        maximum_iterations=None,
        parallel_iterations=32,
        swap_memory=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.output_time_major = output_time_major
        self.impute_finished = impute_finished
        self.maximum_iterations = maximum_iterations
        self.parallel_iterations = parallel_iterations
        self.swap_memory = swap_memory
        self.built = True  # its layers build themselves at the first step

    def __call__(self, *args, **kwargs):
        if holds_history((args, kwargs)):
            return self.call(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def call(
        self,
        inputs,
        initial_state=None,
        training=None,
        sequence_length=None,
        mask=None,
        start_tokens=None,
        end_token=None,
        **kwargs,
    ):
        # The samplers' arguments are named, so that Keras takes each on its own (an int
        # `end_token` beside a tensor `start_tokens` in one `**kwargs` is refused).
        named = {
            "sequence_length": sequence_length,
            "mask": mask,
            "start_tokens": start_tokens,
            "end_token": end_token,
        }
        init_kwargs = {k: v for k, v in named.items() if v is not None}
        init_kwargs.update(kwargs, initial_state=initial_state)
        return self._decode(inputs, init_kwargs, training)

    def _decode(self, inputs, init_kwargs, training=None):
        """`dynamic_decode` of this decoder with its own settings, `initialize` given
        `inputs` and `init_kwargs`."""
        return dynamic_decode(
            self,
            output_time_major=self.output_time_major,
            impute_finished=self.impute_finished,
            maximum_iterations=self.maximum_iterations,
            training=training,
            decoder_init_input=inputs,
            decoder_init_kwargs=init_kwargs,
        )

    def initialize(self, inputs, initial_state=None, **kwargs):
        raise NotImplementedError

    def step(self, time, inputs, state, training):
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    def compute_output_spec(self, inputs, *args, **kwargs):
        # The decoding loop runs on Keras' symbolic tensors as it runs on real ones.
        return self.call(inputs, *args, **kwargs)


def _stack(steps, time_major):
    """One output per step, stacked on a time axis."""

    def stack(*values):
        stacked = ops.stack(values, axis=0)
        return stacked if time_major or len(stacked.shape) < 2 else ops.swapaxes(stacked, 0, 1)

    return keras.tree.map_structure(stack, *steps)


def _keep_finished(finished, new, old):
    """`new` where a row has not finished, `old` where it has (tensors whose leading axes
    are `finished`'s only)."""
    if not ops.is_tensor(new) or len(getattr(new, "shape", ())) < len(finished.shape):
        return new
    where = finished
    for _ in range(len(new.shape) - len(finished.shape)):
        where = ops.expand_dims(where, -1)
    return ops.where(where, old, new)


def dynamic_decode(
    decoder,
    output_time_major=False,
    impute_finished=False,
    maximum_iterations=None,
    parallel_iterations=32,
    swap_memory=False,
    training=None,
    scope=None,
    enable_tflite_convertible=False,
    **kwargs,
):
    """Calls the decoder's `initialize` once and its `step` until every row has finished:
    tensorflow-addons' `dynamic_decode`.

    Args:
        decoder: A `Decoder` or `BaseDecoder`.
        output_time_major: Whether the outputs are `[time, batch, ...]`. Defaults to `False`.
        impute_finished: Whether a finished row's outputs are zeroed and its state kept.
            Defaults to `False`.
        maximum_iterations: Optional bound on the number of steps, a positive integer.
        parallel_iterations: Unused (tensorflow-addons' `tf.while_loop` argument).
        swap_memory: Unused (tensorflow-addons' `tf.while_loop` argument).
        training: Whether the step runs in training mode.
        scope: Unused (tensorflow-addons' name scope).
        enable_tflite_convertible: Unused: the loop exports as any keras-luong model does.
        **kwargs: `decoder_init_input` and `decoder_init_kwargs`, what a `BaseDecoder`'s
            `initialize` takes.

    Returns:
        `(final_outputs, final_state, final_sequence_lengths)`.
    """
    if maximum_iterations is not None:
        maximum_iterations = check_integer("maximum_iterations", int(maximum_iterations))
    if isinstance(decoder, Decoder):
        finished, inputs, state = decoder.initialize()
    else:
        finished, inputs, state = decoder.initialize(
            kwargs.pop("decoder_init_input", None), **kwargs.pop("decoder_init_kwargs", {})
        )
    bound = maximum_iterations
    teacher_steps = getattr(getattr(decoder, "sampler", None), "max_time", None)
    if bound is None and teacher_steps is not None:
        bound = teacher_steps
    lengths = ops.zeros_like(finished, dtype="int32")
    steps, time = [], 0
    while True:
        known = known_values(ops.all(finished))
        if (bound is not None and time >= bound) or (known is not None and bool(known)):
            break
        if known is None and bound is None:
            raise ValueError(
                "dynamic_decode is traced here (inside fit, a tf.function or jax.jit), where "
                "whether every row has finished is not known: give maximum_iterations. "
                "Received: maximum_iterations=None"
            )
        outputs, next_state, next_inputs, step_finished = decoder.step(
            time, inputs, state, training
        )
        next_finished = (
            step_finished
            if decoder.tracks_own_finished
            else ops.logical_or(step_finished, finished)
        )
        if decoder.tracks_own_finished and getattr(next_state, "lengths", None) is not None:
            lengths = ops.cast(next_state.lengths, "int32")  # the beams' own, reordered
        else:
            lengths = ops.where(ops.logical_not(finished), time + 1, lengths)
        # Traced, the loop runs past the step where every row has finished: those steps'
        # outputs are zeros, as tensorflow-addons' loop, stopped there, pads them. A decoder
        # that tracks its own finished rows (beam search) keeps its outputs, which it reads
        # back along its beams.
        if impute_finished or (known is None and not decoder.tracks_own_finished):
            outputs = keras.tree.map_structure(
                lambda x, done=finished: _keep_finished(done, x, ops.zeros_like(x)), outputs
            )
        if impute_finished:
            next_state = keras.tree.map_structure(
                lambda new, old, done=finished: _keep_finished(done, new, old),
                next_state,
                state,
            )
        steps.append(outputs)
        finished, inputs, state, time = next_finished, next_inputs, next_state, time + 1
    if not steps:
        raise ValueError("dynamic_decode ran no step: every row had finished before the first one.")
    final_outputs = _stack(steps, time_major=True)
    try:
        final_outputs, state = decoder.finalize(final_outputs, state, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = keras.tree.map_structure(
            lambda x: x if len(x.shape) < 2 else ops.swapaxes(x, 0, 1), final_outputs
        )
    return final_outputs, state, lengths
