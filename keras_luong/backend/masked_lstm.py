"""The encoder's masked LSTM on an eager backend, as a short loop of tensor arithmetic.

Keras runs an LSTM with a mask through its generic RNN loop, which on an eager backend (torch)
calls the cell as a layer at every step (its fused kernel, cuDNN on a GPU, is taken only
without a mask). `run_encoder` computes the same outputs and states, to rounding, from the
layer's own weights: the input projection once for all steps, then per step one matmul, the
gates, and, at a step that some row pads, the mask's `where` (a padded step keeps the states;
its output is zero where Keras' is, in a `Bidirectional`, or the last output). A batch with
no padding goes to Keras' own unmasked path. Layers this does not cover (other activations,
dropout in training, mixed precision, a subclass with its own `call`) are called as they are,
and so is every layer on a GPU, where Keras takes cuDNN for a right-padded mask.
"""

import keras
from keras import ops

from keras_luong.backend.loops import eager_torch, on_cpu, own_methods, step_keeps, unrolling


def run_encoder(encoder, inputs, mask, training=None):
    """`encoder(inputs, mask=mask, training=training)` for an `LSTM` or a `Bidirectional`
    `LSTM` returning sequences and states: `[sequence, *states]`."""
    layers = _lstm_layers(encoder, training)
    if unrolling():
        # Traced for an export that holds no loop of Keras' (torch.export, where it fixes
        # the batch by iterating a step's output over its rows; LiteRT, where it becomes
        # TensorList ops): a loop of our own, over the fixed source length.
        if layers is None:
            return cell_loop(encoder, inputs, mask, training)
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")
    elif layers is None or not eager_torch(inputs) or not on_cpu(inputs):
        # Compiled backends run Keras' loop as one scan: nothing to gain there. On a GPU,
        # Keras runs a right-padded mask (`BucketedBatches` pads on the right) in cuDNN.
        return encoder(inputs, mask=mask, training=training)
    elif mask is None or bool(ops.all(mask)):
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
    if not own_methods(layer, keras.layers.LSTM, "call", "inner_loop") or not layer.built:
        return False
    return (
        layer.return_sequences
        and layer.return_state
        and not layer.stateful
        and plain_lstm_cell(layer.cell, training)
    )


def plain_lstm_cell(cell, training):
    """Whether `cell` is a built Keras `LSTMCell` whose step `lstm_gates` computes: tanh and
    sigmoid, its variables in its compute dtype, no dropout to draw in `training`."""
    if not own_methods(cell, keras.layers.LSTMCell, "call") or not cell.built:
        return False
    policy = cell.dtype_policy
    return (
        policy.compute_dtype == policy.variable_dtype
        and cell.activation is keras.activations.tanh
        and cell.recurrent_activation is keras.activations.sigmoid
        and (not training or (cell.dropout == 0 and cell.recurrent_dropout == 0))
    )


def lstm_gates(z, c, units):
    """The LSTM's new `(h, c)` from the pre-activations `z` `(B, 4 units)` of the gates
    i, f, candidate, o (Keras' order) and the carry `c`."""
    i, f, candidate, o = ops.split(z, 4, axis=-1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(candidate)
    return ops.sigmoid(o) * ops.tanh(c), c


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
    mask = ops.cast(mask, "bool")
    batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
    h = c = ops.zeros((batch, units), kernel.dtype)
    # One step's projection each, split once: indexing step t instead would have the
    # gradient fill a zero tensor of the whole projection at every step. A step that no
    # row pads has no keep: it needs no `where`.
    projected, keeps = ops.unstack(projected, axis=1), step_keeps(mask)
    outputs = [None] * steps
    order = range(steps - 1, -1, -1) if layer.go_backwards else range(steps)
    for t in order:
        # The order of Keras' LSTMCell: x W, + h U, + b.
        z = projected[t] + h @ recurrent
        if bias is not None:
            z = z + bias
        new_h, new_c = lstm_gates(z, c, units)
        if keeps[t] is None:
            h, c = new_h, new_c
        else:
            h = ops.where(keeps[t], new_h, h)
            c = ops.where(keeps[t], new_c, c)
        # Keras' output at a padded step is the last one, which is the state h kept there
        # (both start at zero and change together).
        outputs[t] = h
    sequence = ops.stack(outputs, axis=1)
    if getattr(layer, "zero_output_for_mask", False):  # zeros at padded steps instead
        sequence = ops.where(ops.expand_dims(mask, -1), sequence, ops.zeros_like(sequence))
    return sequence, h, c


def cell_loop(encoder, inputs, mask, training=None):
    """`encoder(inputs, mask=mask, training=training)` for a Keras RNN layer (or a
    `Bidirectional` of two, concatenated) returning sequences and states, by a Python loop
    that calls its cell at every step: `[sequence, *states]`. The loop that `torch.export`
    and LiteRT unroll over a fixed source length."""
    if isinstance(encoder, keras.layers.Bidirectional):
        forward, *forward_states = _cell_sequence(encoder.forward_layer, inputs, mask, training)
        backward, *backward_states = _cell_sequence(encoder.backward_layer, inputs, mask, training)
        sequence = ops.concatenate([forward, backward], axis=-1)
        return [sequence, *forward_states, *backward_states]
    return _cell_sequence(encoder, inputs, mask, training)


def _cell_sequence(layer, inputs, mask, training):
    """`[sequence, *states]` of one RNN layer from zero states, in its direction; a padded
    step keeps the states, and its output is the last one (zero where the layer zeroes it)."""
    cell = layer.cell
    inputs = ops.convert_to_tensor(inputs)
    batch = ops.shape(inputs)[0]
    sizes = keras.tree.flatten(cell.state_size)
    states = [ops.zeros((batch, size), inputs.dtype) for size in sizes]
    keep = ops.ones(ops.shape(inputs)[:2], "bool") if mask is None else ops.cast(mask, "bool")
    steps, keeps = ops.unstack(inputs, axis=1), ops.unstack(ops.expand_dims(keep, -1), axis=1)
    output = ops.zeros((batch, keras.tree.flatten(cell.output_size)[0]), inputs.dtype)
    outputs = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if layer.go_backwards else range(len(steps))
    for t in order:
        new_output, new_states = cell(
            steps[t], states if len(states) > 1 else states[0], training=training
        )
        states = [
            ops.where(keeps[t], new, old)
            for new, old in zip(keras.tree.flatten(new_states), states, strict=True)
        ]
        output = ops.where(keeps[t], new_output, output)
        outputs[t] = output
    sequence = ops.stack(outputs, axis=1)
    if getattr(layer, "zero_output_for_mask", False):
        sequence = ops.where(ops.expand_dims(keep, -1), sequence, ops.zeros_like(sequence))
    return [sequence, *states]
