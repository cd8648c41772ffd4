"""`sequence_logits`: the output layer applied to a sequence as one matrix gives `Dense`'s
values and gradients, and the model's logits keep the target's mask."""

import keras
import numpy as np

from keras_luong import LuongSeq2Seq
from keras_luong.generator import sequence_logits
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


def test_gradients_equal_the_numpy_gradients():
    """Of sum(outputs * r): r's product with the inputs for the kernel, its sum for the bias,
    its product with the kernel for the inputs."""
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
