"""The backend fast paths of single operations, one function each: the layers, samplers and
generator call these by name, and the choice of a backend's kernel stays here. Each says
what it earns and the benchmark that measured it; every other backend takes the general
`keras.ops` form."""

import contextlib
import contextvars

import keras
from keras import ops

from keras_luong.backend.loops import own_methods, step_call


def project(x, kernel):
    """`x @ kernel` over the last axis of `x` (a kernel of rank 2, or 1 for a dot product),
    as one 2-D matmul between two reshapes. Not `ops.matmul` on `x` itself: on TensorFlow a
    matmul of rank 3 by rank 2 is a `tensordot`, whose gradient inside a loop does not compile
    with XLA (its transpose permutation is carried from the forward loop and is no longer a
    constant); nor an einsum with an ellipsis, which TensorFlow without XLA runs ~10x slower.
    On torch, whose matmul folds the leading axes itself (the same 2-D matmul), the two
    reshapes would only add Keras' per-call cost (a decoding step makes several)."""
    kernel = ops.cast(kernel, x.dtype)  # float32 where float16 scores are computed in float32
    if keras.backend.backend() == "torch":
        return ops.matmul(x, kernel)
    vector = len(kernel.shape) == 1
    if vector:
        kernel = ops.expand_dims(kernel, -1)
    leading = ops.shape(x)[:-1]
    y = ops.matmul(ops.reshape(x, (-1, kernel.shape[0])), kernel)
    return ops.reshape(y, leading) if vector else ops.reshape(y, (*leading, kernel.shape[1]))


def batched_dot(query, keys):
    """`(B, T, d)` queries against `(B, S, d)` keys: the scores `(B, T, S)`. On torch the
    same batched matmul as torch's einsum, without its equation parsing at every step."""
    if keras.backend.backend() == "torch":
        return ops.matmul(query, ops.swapaxes(keys, -1, -2))
    return ops.einsum("btd,bsd->bts", query, keys)


def dense_rows(dense, rows):
    """`dense(rows)` for rows `(N, d)`. On torch, a plain float32 `Dense` adds its bias inside
    the product: the rows get a column of ones and the kernel the bias as its last row, so
    one matrix product gives `x @ kernel + bias` (as torch's own `Linear` does with `addmm`)
    and its weight gradient gives the bias's, where Keras' `Dense` adds the bias in a pass
    over the `(N, V)` logits and sums their gradient in another
    (`python -m benchmarks.speed output_layer --other separate-bias`)."""
    if keras.backend.backend() == "torch" and plain_float32_dense(dense) and ops.is_tensor(rows):
        ones = ops.ones_like(rows[:, :1])
        kernel = ops.concatenate([dense.kernel, ops.expand_dims(dense.bias, 0)], axis=0)
        return ops.matmul(ops.concatenate([rows, ones], axis=-1), kernel)
    return dense(rows)


def plain_float32_dense(dense):
    """Whether `dense` is a built float32 `Dense` (its `call` Keras' own) with a bias, no
    activation and no quantisation: its output is `x @ dense.kernel + dense.bias`, which can
    then be computed from its weights directly."""
    return (
        own_methods(dense, keras.layers.Dense, "call")
        and dense.built
        and dense.use_bias
        and dense.activation is keras.activations.linear
        and dense.quantization_mode is None
        and dense.compute_dtype == dense.variable_dtype == "float32"
    )


_PORTABLE_WRITES = contextvars.ContextVar("portable_writes", default=False)


@contextlib.contextmanager
def portable_writes():
    """Within it, `write_column` writes by a select against the positions: an op that every
    export format holds, where the XLA update slice it is elsewhere has no ONNX counterpart."""
    token = _PORTABLE_WRITES.set(True)
    try:
        yield
    finally:
        _PORTABLE_WRITES.reset(token)


def write_column(prompt, index, column):
    """`prompt` `(rows, length, ...)` with `column` `(rows, ...)` written at position `index`
    of its second axis (a scalar tensor). A dynamic update slice where the loop is compiled;
    on eager torch, where Keras' `slice_update` with a tensor index builds index tensors at
    every step, and within `portable_writes`, a select against the positions (the same
    result)."""
    rank = len(prompt.shape)
    if keras.backend.backend() == "torch" or _PORTABLE_WRITES.get():
        positions = ops.arange(ops.shape(prompt)[1], dtype=index.dtype)
        positions = ops.reshape(positions, (1, -1) + (1,) * (rank - 2))
        return ops.where(positions == index, ops.expand_dims(column, 1), prompt)
    return ops.slice_update(prompt, [0, index] + [0] * (rank - 2), ops.expand_dims(column, 1))


def smoothed_crossentropy(logits, targets, label_smoothing):
    """The cross-entropy `(B, T)` of float32 `logits` `(B, T, V)` against the smoothed targets
    `(1 - ε)·one_hot + ε/V` of int32 `targets` (Keras' rule), `-Σ_v y_v log p_v`, in the form
    each backend computes fastest forward and backward (`benchmarks/speed/sequence_loss_speed.py`;
    the values are the same to rounding):

    - JAX: `logsumexp(z) - (1 - ε)·z_target - (ε/V)·Σ_v z_v`, no `(B, T, V)` tensor besides
      the logits: XLA fuses `logsumexp` with its gradient;
    - torch: `-(1 - ε)·log p_target - (ε/V)·Σ_v log p_v` from `log_softmax`, one fused kernel
      forward and backward, where `logsumexp` is four passes over the logits and its
      gradient three more;
    - TensorFlow: Keras' `categorical_crossentropy` of the smoothed one-hot targets, whose
      fused kernel gives the gradient `softmax - y` in its forward pass, where the gradient of
      any gather of `z_target` or sum over `V` adds dense `(B, T, V)` passes.

    Unsmoothed, torch and TensorFlow take Keras' `sparse_categorical_crossentropy` (fused
    kernels on both).
    """
    size = logits.shape[-1]
    backend = keras.backend.backend()

    def at_targets(x):
        return ops.take_along_axis(x, ops.expand_dims(targets, -1), axis=-1)[..., 0]

    if backend == "jax":
        crossent = ops.logsumexp(logits, axis=-1) - (1.0 - label_smoothing) * at_targets(logits)
        if label_smoothing:
            crossent = crossent - (label_smoothing / size) * ops.sum(logits, axis=-1)
        return crossent
    if not label_smoothing:  # rows of (B·T, V): torch's kernel takes the classes on axis 1
        crossent = ops.sparse_categorical_crossentropy(
            ops.reshape(targets, (-1,)), ops.reshape(logits, (-1, size)), from_logits=True
        )
        return ops.reshape(crossent, ops.shape(targets))
    if backend == "tensorflow":
        smoothed = ops.one_hot(targets, size) * (1.0 - label_smoothing) + label_smoothing / size
        return ops.categorical_crossentropy(smoothed, logits, from_logits=True)
    log_probs = ops.log_softmax(logits, axis=-1)
    crossent = -(1.0 - label_smoothing) * at_targets(log_probs)
    return crossent - (label_smoothing / size) * ops.sum(log_probs, axis=-1)


def sequence_logits(dense, sequence):
    """The output layer `dense` on a sequence `(batch_size, T, d)`, multiplied as the matrix
    `(batch_size * T, d)`: the values of `dense(sequence)`, without its Keras mask (which
    `MaskCarrier` puts back). On JAX, XLA compiles the gradient of the three-dimensional
    product of a vocabulary-sized output layer into a much slower program than the matrix's;
    the default model's training step at 8,000 subwords takes 0.71–0.74 of the time this way
    (`benchmarks/speed/output_layer.py`). Other backends run the same either way.

    On torch a plain float32 `Dense` adds its bias inside the product: the matrix gets a
    column of ones and the kernel the bias as its last row, so one matrix product gives
    `x @ kernel + bias` (as torch's own `Linear` does with `addmm`) and its weight gradient
    gives the bias's, where Keras' `Dense` adds the bias in a pass over the `(rows, V)` logits
    and sums their gradient in another (`python -m benchmarks.speed output_layer --other
    separate-bias`).
    """
    batch, steps = ops.shape(sequence)[0], ops.shape(sequence)[1]
    logits = dense_rows(dense, ops.reshape(sequence, (-1, sequence.shape[-1])))
    return ops.reshape(logits, (batch, steps, logits.shape[-1]))


def step_logits(dense, attentional, logits_bias=None):
    """The output layer `dense`'s logits for one step, plus `logits_bias` (float32). A plain
    float32 `Dense` adds its bias and `logits_bias` to the product in one add (a pass
    over `(rows, V)` fewer per step; the sum is the same, `logits_bias` being zero
    wherever it is not the masked score)."""
    if logits_bias is None:
        return step_call(dense, attentional)
    if plain_float32_dense(dense) and ops.is_tensor(attentional):
        bias = ops.convert_to_tensor(dense.bias) + logits_bias
        return ops.matmul(attentional, dense.kernel) + bias
    return ops.cast(step_call(dense, attentional), "float32") + logits_bias
