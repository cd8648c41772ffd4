"""The loops the decoder layers run, apart from the layers (as Keras keeps `backend.rnn` apart
from `layers/rnn`): a masked scan over time that compiles on every backend, and the pre-drawing
of a Keras RNN cell's dropout masks that a loop needs."""

import contextlib
import contextvars
import functools
import inspect
import math
import sys

import keras
from keras import ops

_UNROLLED = contextvars.ContextVar("unrolled", default=False)


@contextlib.contextmanager
def unrolled():
    """Within it, the loops are traced for an artifact that holds no loop of data-dependent
    length and no branch on a tensor's values (`torch.export`, LiteRT): the samplers run
    every step to the prompt's end, and the encoder its own loop whatever the mask holds."""
    token = _UNROLLED.set(True)
    try:
        yield
    finally:
        _UNROLLED.reset(token)


def unrolling():
    """Whether the loops are traced within `unrolled`."""
    return _UNROLLED.get()


def take_rows(x, rows):
    """The rows of `x` `(n, ...)` at the int32 indices `rows` (of any shape): `(*rows.shape,
    ...)`, `ops.take(x, rows, axis=0)`. Within `unrolled`, a gather of a matrix's rows:
    Keras' torch `take` squeezes the gathered axis of any other, which torch's ONNX export
    writes as a squeeze that fails on a dynamic axis above 1."""
    if not unrolling():
        return ops.take(x, rows, axis=0)
    entry = tuple(x.shape[1:])
    taken = ops.take(ops.reshape(x, (-1, math.prod(entry))), rows, axis=0)
    return ops.reshape(taken, (-1, *rows.shape[1:], *entry))


def take_along_rows(x, indices):
    """Each row's entries of `x` `(rows, n, ...)` at its int32 `indices` `(rows, k)`:
    `(rows, k, ...)`, `ops.take_along_axis` along axis 1 (an entry being a slice where `x`
    has more axes). Within `unrolled`, one gather from the flat rows (the same entries):
    torch's `take_along_dim` compares the row counts of its operands, which fixes a dynamic
    batch in `torch.export`."""
    if not unrolling():
        for _ in range(len(x.shape) - 2):  # broadcast along the entries' own axes
            indices = ops.expand_dims(indices, -1)
        return ops.take_along_axis(x, indices, axis=1)
    offsets = ops.arange(ops.shape(indices)[0], dtype="int32")[:, None] * ops.shape(x)[1]
    return take_rows(ops.reshape(x, (-1, *x.shape[2:])), indices + offsets)


def own_methods(obj, cls, *names):
    """Whether `obj` is a `cls` whose methods `names` are `cls`'s own: what a fast path that
    replaces those methods asks of an object, so that a subclass keeping them keeps the fast
    path, and one that overrides any of them gets its own methods called."""
    kind = type(obj)
    return isinstance(obj, cls) and all(getattr(kind, name) is getattr(cls, name) for name in names)


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


def torch_compiling():
    """Whether `torch.compile` is tracing the code that asks (`jit_compile=True` on torch).
    Such code is compiled, as on the other backends: the eager fast paths below read tensor
    values, which breaks dynamo's graph at every read, and the frames after each break are
    compiled apart with guards on the shapes of their arguments' lists."""
    torch = sys.modules.get("torch")  # imported by Keras' torch backend, never here
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return compiling is not None and compiling()


def eager_torch(*tensors):
    """Whether the backend is torch, run eagerly, and none of `tensors` (nested structures
    too) is symbolic: the loops then run op by op in Python, where the compiled backends (and
    `torch.compile`) trace."""
    return (
        keras.backend.backend() == "torch"
        and not torch_compiling()
        and not any(keras.backend.is_keras_tensor(x) for x in keras.tree.flatten(tensors))
    )


def on_cpu(x):
    """Whether the tensor `x` lives in the host's memory (a CPU), not an accelerator's: the
    eager fast paths that replace Keras' fused kernels are the CPU's alone (on a GPU, Keras
    takes cuDNN for an LSTM or GRU with a right-padded mask)."""
    return getattr(getattr(x, "device", None), "type", "cpu") == "cpu"


def known_values(x):
    """`x` as a NumPy array where its values are known (run eagerly), else `None` (traced by
    a compiled backend, or Keras' symbolic shape inference): what a Python loop may branch on."""
    if x is None or keras.backend.is_keras_tensor(x):
        return None
    try:
        return ops.convert_to_numpy(x)
    except Exception:  # a tracer or a graph tensor: no values until it runs
        return None


def _values_known(mask):
    """Whether a loop may read `mask`'s values: on eager torch, outside Keras' shape
    inference and an export's trace. Compiled backends trace, and have none."""
    return (
        mask is not None
        and eager_torch(mask)
        and str(getattr(mask, "device", "")) != "meta"  # Keras' shape inference: no values
        and not unrolling()  # traced for export: no values either
    )


def unless_full(mask):
    """`mask`, or `None` where it keeps every position and its values are known (eager
    torch): then the `where`s a masked loop spends on it at every step change nothing.
    Compiled backends keep it (its values are not known while tracing)."""
    if not _values_known(mask) or not bool(ops.all(mask)):
        return mask
    return None


def full_steps(mask):
    """For a `(B, T)` mask whose values are known (see `unless_full`), a list of T bools:
    whether every row keeps step t, where a loop's `where` would change nothing and can be
    left out (batches sorted by length are padded only in their last steps, and most steps
    keep every row). `None` where the values are not known, or there is no mask."""
    if not _values_known(mask):
        return None
    return [bool(full) for full in ops.convert_to_numpy(ops.all(mask, axis=0))]


def step_keeps(mask):
    """Each step's `(B, 1)` keep of a `(B, T)` boolean mask, from one `ops.unstack`, and
    `None` at a step that `full_steps` finds every row keeps: there a loop's `where` would
    change nothing, and leaves it out."""
    keeps = ops.unstack(ops.expand_dims(mask, -1), axis=1)
    full = full_steps(mask)
    if full is None:
        return keeps
    return [None if f else keep for f, keep in zip(full, keeps, strict=True)]


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

    if eager_torch(inputs, mask) and keras.tree.flatten(inputs)[0].shape[1] != 0:
        return _eager_scan(one_step, states, inputs, mask)

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
        # An empty buffer (a batch of 0, or outputs of size 0) has nothing to write, and
        # TensorFlow's scatter refuses updates into an empty tensor.
        buffers = [
            b if 0 in tuple(b.shape) else ops.scatter_update(b, row, ops.expand_dims(o, 0))
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


def _eager_scan(one_step, states, inputs, mask):
    """`masked_scan`'s loop on eager torch, in Python over the time axis split once with
    `ops.unstack`: its gradient is one stack per input, where Keras' scan, indexing step
    `t` of each input, has the backward fill a zero tensor of the whole input for every
    step (T² work). A step the mask keeps in every row runs without `where`s."""
    columns = [ops.unstack(x, axis=1) for x in keras.tree.flatten(inputs)]
    steps = len(columns[0])
    keeps = [None] * steps if mask is None else step_keeps(mask)
    indices = ops.unstack(ops.arange(steps, dtype="int32"))
    outputs = []
    for t, (keep, *x_t) in enumerate(zip(keeps, *columns, strict=True)):
        x_t = keras.tree.pack_sequence_as(inputs, x_t)
        step_outputs, states = one_step(indices[t], states, x_t, keep)
        outputs.append(step_outputs)
    return [ops.stack(list(o), axis=1) for o in zip(*outputs, strict=True)], states


def step_call(layer, *args, **kwargs):
    """`layer(*args, **kwargs)` for one step of a loop: `layer.call` directly once the layer
    is built and its policy computes in its variables' dtype, with backend tensors for
    arguments. Keras' `__call__` then has nothing left to do for the step (no build, no
    conversion, no mask, no autocast, no random state to track), and on an eager backend
    (torch) its bookkeeping is a large share of a step: it flattens every argument, the
    source memory included. In training this holds on torch only, inside the loop's layer
    call (whose call context gives `training` to the layers the step calls in turn); the
    compiled backends trace the step once, so `__call__` costs them nothing per step. Arrays
    and symbolic tensors go through `__call__`, which converts them or traces."""
    policy = layer.dtype_policy
    if (
        (kwargs.get("training") and keras.backend.backend() != "torch")
        or not layer.built
        or policy.compute_dtype != policy.variable_dtype
        or not _takes(type(layer), kwargs)
        or not all(_tensors(arg) for arg in args)
    ):
        return layer(*args, **kwargs)
    return layer.call(*args, **kwargs)


@functools.cache
def _call_arguments(layer_class):
    """The keyword arguments a layer class's `call` takes (`None`: any, with `**kwargs`)."""
    parameters = inspect.signature(layer_class.call).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


def _takes(layer_class, kwargs):
    names = _call_arguments(layer_class)
    return names is None or set(kwargs) <= names


def _tensors(arg):
    """Whether a positional argument is backend tensors (one level of list, tuple or dict)."""
    if isinstance(arg, dict):
        arg = list(arg.values())
    if isinstance(arg, (list, tuple)):
        return all(ops.is_tensor(x) for x in arg)
    return ops.is_tensor(arg)
