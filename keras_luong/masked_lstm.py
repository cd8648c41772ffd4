"""The encoder's masked LSTM on an eager backend, as a short loop of tensor arithmetic.

Keras runs an LSTM with a mask through its generic RNN loop, which on an eager backend (torch)
calls the cell as a layer at every step (its fused kernel, cuDNN on a GPU, is taken only
without a mask). `run_encoder` computes the same outputs and states, to rounding, from the
layer's own weights: the input projection once for all steps, then per step one matmul, the
gates, and the mask's `where` (a padded step keeps the states; its output is zero where Keras'
is, in a `Bidirectional`, or the last output). A batch with no padding goes to Keras' own
unmasked path. Layers this does not cover (other activations, dropout in training, mixed
precision, a subclass) are called as they are.
"""

import keras
from keras import ops


def run_encoder(encoder, inputs, mask, training=None):
    """`encoder(inputs, mask=mask, training=training)` for an `LSTM` or a `Bidirectional`
    `LSTM` returning sequences and states: `[sequence, *states]`."""
    layers = _lstm_layers(encoder, training)
    if (
        layers is None
        or keras.backend.backend() != "torch"
        or keras.backend.is_keras_tensor(inputs)
    ):
        # Compiled backends run Keras' loop as one scan: nothing to gain there.
        return encoder(inputs, mask=mask, training=training)
    if mask is None or bool(ops.all(mask)):
        # No padding: Keras' unmasked path (its fused kernel: cuDNN on a GPU, a loop of torch
        # ops on a CPU) computes the same thing. A copy, since Keras would otherwise take
        # the mask the inputs carry from the embedding and run its generic loop.
        return encoder(ops.copy(inputs), training=training)
    results = [lstm_sequence(layer, inputs, mask) for layer in layers]
    if len(results) == 1:
        return list(results[0])
    (forward, forward_h, forward_c), (backward, backward_h, backward_c) = results
    sequence = ops.concatenate([forward, backward], axis=-1)
    return [sequence, forward_h, forward_c, backward_h, backward_c]


def _lstm_layers(encoder, training):
    """The LSTM layers `lstm_sequence` can run for `encoder`, or `None`."""
    if isinstance(encoder, keras.layers.Bidirectional):
        if encoder.merge_mode != "concat" or not encoder.return_sequences:
            return None
        layers = [encoder.forward_layer, encoder.backward_layer]
    else:
        layers = [encoder]
    return layers if all(_covered(layer, training) for layer in layers) else None


def _covered(layer, training):
    if type(layer) is not keras.layers.LSTM or not layer.built:
        return False
    cell, policy = layer.cell, layer.dtype_policy
    return (
        layer.return_sequences
        and layer.return_state
        and not layer.stateful
        and policy.compute_dtype == policy.variable_dtype
        and cell.activation is keras.activations.tanh
        and cell.recurrent_activation is keras.activations.sigmoid
        and (not training or (cell.dropout == 0 and cell.recurrent_dropout == 0))
    )


def lstm_sequence(layer, inputs, mask):
    """`(sequence, h, c)` of a Keras `LSTM` layer over `inputs` `(B, T, d)` with the boolean
    `mask` `(B, T)`, from zero states, in the layer's direction; the sequence in input order."""
    cell = layer.cell
    units = cell.units
    kernel = ops.convert_to_tensor(cell.kernel)
    recurrent = ops.convert_to_tensor(cell.recurrent_kernel)
    bias = ops.convert_to_tensor(cell.bias) if cell.use_bias else None
    inputs = ops.cast(inputs, kernel.dtype)
    projected = ops.matmul(inputs, kernel)  # (B, T, 4u): every step's input projection at once
    keep = ops.expand_dims(ops.cast(mask, "bool"), -1)
    batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
    zero = ops.zeros((batch, units), kernel.dtype)
    h = c = output = zero
    zero_output = getattr(layer, "zero_output_for_mask", False)
    outputs = [None] * steps
    order = range(steps - 1, -1, -1) if layer.go_backwards else range(steps)
    for t in order:
        # The order of Keras' LSTMCell: x W, + h U, + b.
        z = projected[:, t] + h @ recurrent
        if bias is not None:
            z = z + bias
        gates = ops.sigmoid(z)
        new_c = gates[:, units : 2 * units] * c + gates[:, :units] * ops.tanh(
            z[:, 2 * units : 3 * units]
        )
        new_h = gates[:, 3 * units :] * ops.tanh(new_c)
        step_keep = keep[:, t]
        h = ops.where(step_keep, new_h, h)
        c = ops.where(step_keep, new_c, c)
        output = ops.where(step_keep, new_h, zero if zero_output else output)
        outputs[t] = output
    return ops.stack(outputs, axis=1), h, c
