"""keras_luong.loops.step_call: a loop step calls a layer's `call` directly only when Keras'
`__call__` has nothing to do for it, with the same result either way."""

import keras
import numpy as np
import pytest

from keras_luong.loops import step_call
from tests.test_case import assert_allclose, random


class Counted(keras.layers.Dense):
    """A Dense layer that counts the calls that go through `__call__`."""

    calls = 0

    def __call__(self, *args, **kwargs):
        Counted.calls += 1
        return super().__call__(*args, **kwargs)


class NoTraining(keras.layers.Layer):
    """A layer whose `call` takes no `training` (Keras' `__call__` leaves it out)."""

    def call(self, x):
        return 2.0 * x


X = random((3, 4))


def counted(**kwargs):
    layer = Counted(5, **kwargs)
    layer.build((None, 4))
    return layer


def through_call(layer, *args, **kwargs):
    """Whether `step_call` went through `__call__`, and its result."""
    before = Counted.calls
    result = step_call(layer, *args, **kwargs)
    return Counted.calls > before, result


def test_a_built_layer_outside_training_is_called_directly_with_the_same_result():
    layer = counted()
    expected = layer(X)
    went_through, result = through_call(layer, keras.ops.convert_to_tensor(X), training=False)
    assert not went_through
    assert_allclose(result, expected, atol=1e-7, rtol=1e-7)


@pytest.mark.parametrize("case", ["training", "unbuilt", "mixed", "symbolic"])
def test_keras_call_is_kept_where_it_has_work_to_do(case):
    if case == "unbuilt":
        layer = Counted(5)
    else:
        layer = counted(dtype="mixed_float16" if case == "mixed" else None)
    x = keras.Input((4,)) if case == "symbolic" else keras.ops.convert_to_tensor(X)
    went_through, result = through_call(layer, x, training=case == "training")
    assert went_through
    assert result.shape[-1] == 5
    if case == "mixed":  # autocast: float16 out of float32 weights
        assert keras.backend.standardize_dtype(result.dtype) == "float16"
    if case != "symbolic":
        expected = keras.ops.matmul(
            keras.ops.cast(X, result.dtype), keras.ops.cast(layer.kernel, result.dtype)
        )
        assert_allclose(result, expected, atol=1e-2 if case == "mixed" else 1e-6, rtol=1e-3)


def test_a_call_without_the_argument_goes_through_keras():
    layer = NoTraining()
    layer.build((None, 4))
    result = step_call(layer, keras.ops.convert_to_tensor(X), training=False)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(result), 2.0 * X)
