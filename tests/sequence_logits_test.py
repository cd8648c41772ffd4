"""`sequence_logits`: the output layer applied to a sequence as one matrix gives `Dense`'s
values and gradients, and the model's logits keep the target's mask."""

import keras
import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.backend.ops import sequence_logits
from tests.test_case import assert_allclose, gradients, random, to_numpy

B, T, D, V = 3, 4, 5, 7


class SequenceLogits(keras.layers.Layer):
    """`sequence_logits` of its own `Dense`, as a layer (for `gradients`)."""

    def __init__(self, activation=None):
        super().__init__()
        self.dense = keras.layers.Dense(V, activation=activation, bias_initializer="random_normal")

    def build(self, shape):
        self.dense.build((None, shape[-1]))

    def call(self, x):
        return sequence_logits(self.dense, x)


def test_values_equal_the_numpy_product():
    layer = SequenceLogits("tanh")
    x = random((B, T, D), seed=1)
    layer.build(x.shape)
    kernel, bias = (to_numpy(w) for w in layer.dense.weights)
    assert_allclose(layer(x), np.tanh(x @ kernel + bias), atol=1e-6)


@pytest.mark.parametrize("form", ["plain", "no bias", "lora"])
def test_linear_forms_equal_the_numpy_product(form):
    """A plain float32 `Dense` (on torch its bias added inside the product, as a row of the
    kernel), one without a bias, and one with LoRA enabled (its kernel plus `A @ B`), against
    numpy's `x @ kernel + bias`."""
    dense = keras.layers.Dense(V, use_bias=form != "no bias", bias_initializer="random_normal")
    dense.build((None, D))
    if form == "lora":
        dense.enable_lora(2, b_initializer="random_normal")
    x = random((B, T, D), seed=4)
    expected = x @ to_numpy(dense.kernel) + (0 if form == "no bias" else to_numpy(dense.bias))
    assert np.abs(expected).max() > 0.1
    assert_allclose(sequence_logits(dense, keras.ops.convert_to_tensor(x)), expected, atol=1e-6)


def test_gradients_equal_the_numpy_gradients():
    """Of sum(outputs * r): r's product with the inputs for the kernel, its sum for the bias,
    its product with the kernel for the inputs (on torch through the product that holds the
    bias as the kernel's last row)."""
    layer = SequenceLogits()
    x, r = random((B, T, D), seed=2), random((B, T, V), seed=3)
    layer.build(x.shape)
    kernel = to_numpy(layer.dense.kernel)
    (d_kernel, d_bias), (d_x,) = gradients(
        layer, lambda out: keras.ops.sum(out * keras.ops.convert_to_tensor(r)), [x]
    )
    assert_allclose(d_kernel, x.reshape(-1, D).T @ r.reshape(-1, V), atol=1e-5)
    assert_allclose(d_bias, r.sum(axis=(0, 1)), atol=1e-5)
    assert_allclose(d_x, r @ kernel.T, atol=1e-5)


def test_the_model_logits_are_dense_logits_with_the_target_mask():
    """`LuongSeq2Seq`'s logits equal its output layer applied as a `Dense` to the decoder's
    outputs, and a layer after the model sees the target's padding mask."""
    model = LuongSeq2Seq(11, 13, units=8, embedding_dim=4)
    source = np.array([[3, 4, 5, 0], [6, 7, 0, 0]], "int32")
    target = np.array([[1, 8, 9], [1, 10, 0]], "int32")
    logits = model((source, target))
    seen = []

    class Recorder(keras.layers.Layer):
        supports_masking = True

        def call(self, inputs, mask=None):
            seen.append(None if mask is None else to_numpy(mask))
            return inputs

    Recorder()(logits)
    np.testing.assert_array_equal(seen[0], target != 0)
    value, value_mask, states = model.encode(source)
    embedded = model.target_embedding(target)
    attentional = model.decoder(
        embedded, value, initial_state=states, value_mask=value_mask, inputs_mask=target != 0
    )
    assert_allclose(logits, model.projection(attentional), atol=1e-6)


def masked_cross_entropy(logits, target_out, mask):
    """Numpy: the mean negative log-likelihood of `target_out` over the positions of `mask`."""
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_probs, target_out[..., None], -1)[..., 0]
    return (nll * mask).sum() / mask.sum()


@pytest.mark.parametrize("scheduled_sampling", [None, "argmax"])
def test_fit_and_evaluate_leave_the_padding_out_of_the_loss(scheduled_sampling):
    """The loss `evaluate` and `train_on_batch` report (Keras' own loss, which reads the
    logits' mask) is numpy's mean over the target's real tokens, filler rows weighing
    nothing: on JAX the trainer runs the model's `call`, not `__call__`, so the mask must be
    set inside it. With scheduled sampling (at probability 0, teacher forcing) as well."""
    model = LuongSeq2Seq(11, 13, units=8, embedding_dim=4, scheduled_sampling=scheduled_sampling)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    source = np.array([[3, 4, 5, 0], [6, 7, 0, 0], [0, 0, 0, 0]], "int32")
    target_in = np.array([[1, 8, 9, 4], [1, 10, 0, 0], [0, 0, 0, 0]], "int32")
    target_out = np.array([[8, 9, 4, 2], [10, 2, 0, 0], [0, 0, 0, 0]], "int32")
    model((source, target_in))
    bias = model.projection.bias  # logits far from uniform, so padding would count
    bias.assign(3 * np.random.default_rng(0).standard_normal(bias.shape))
    logits = to_numpy(model((source, target_in)))
    expected = masked_cross_entropy(logits, target_out, target_in != 0)
    unmasked = masked_cross_entropy(logits, target_out, np.ones_like(target_in))
    assert abs(unmasked - expected) > 1e-2
    evaluated = model.evaluate((source, target_in), target_out, verbose=0)
    np.testing.assert_allclose(evaluated, expected, rtol=2e-6)
    trained = model.train_on_batch((source, target_in), target_out)  # the loss before the step
    np.testing.assert_allclose(trained, expected, rtol=2e-6)
