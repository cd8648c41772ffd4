"""keras_luong.backend.loops.step_call: a loop step calls a layer's `call` directly only when Keras'
`__call__` has nothing to do for it, with the same result either way; and the helpers of the
loops traced for `torch.export` (`unrolled`)."""

import contextlib

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong.backend.loops import (
    full_steps,
    masked_scan,
    own_methods,
    step_call,
    take_along_rows,
    take_rows,
    unless_full,
    unrolled,
)
from keras_luong.backend.masked_lstm import lstm_sequence
from tests.test_case import BACKEND, assert_allclose, autograd_nodes, random


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
    """Outside training: `__call__` for an unbuilt layer, mixed precision and symbolic
    inputs; in training, on JAX and TensorFlow (compiled: `__call__` runs once)."""
    if case == "unbuilt":
        layer = Counted(5)
    else:
        layer = counted(dtype="mixed_float16" if case == "mixed" else None)
    x = keras.Input((4,)) if case == "symbolic" else keras.ops.convert_to_tensor(X)
    went_through, result = through_call(layer, x, training=case == "training")
    # In training, torch calls directly too (its loop runs eagerly, step by step).
    assert went_through or (case == "training" and BACKEND == "torch")
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


class DropsOut(keras.layers.Layer):
    """Calls a Dropout layer without `training`: it comes from the call context."""

    def __init__(self):
        super().__init__()
        self.dropout = keras.layers.Dropout(0.5, seed=1)

    def call(self, x, training=None):
        return self.dropout(x)


class Loop(keras.layers.Layer):
    """A layer whose step calls another through `step_call`, as the decoder's loop does."""

    def __init__(self):
        super().__init__()
        self.inner = DropsOut()

    def build(self, shape):
        self.inner.build(shape)

    def call(self, x, training=None):
        return step_call(self.inner, x, training=training)


def test_a_direct_call_in_training_keeps_the_training_of_the_call_context():
    """Called directly inside a layer's call, the inner layer's sublayers still see
    `training=True` from the outer `__call__`: the dropout acts (zeros and 2s, as Keras'
    inverted dropout at rate 0.5), and not outside training."""
    layer = Loop()
    ones = keras.ops.ones((8, 64))
    layer.build(ones.shape)
    trained = keras.ops.convert_to_numpy(layer(ones, training=True))
    assert set(np.unique(trained).tolist()) == {0.0, 2.0}
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(ones, training=False)), 1.0)


def test_a_mask_that_keeps_everything_is_dropped_where_its_values_are_known():
    """On eager torch a full mask becomes `None` (the loop's `where`s would change nothing);
    a mask with padding stays, and the compiled backends keep every mask."""
    full = keras.ops.ones((2, 3), "bool")
    padded = keras.ops.convert_to_tensor(np.array([[True, True, False], [True, True, True]]))
    assert unless_full(None) is None
    assert unless_full(padded) is padded
    assert (unless_full(full) is None) == (BACKEND == "torch")
    assert unless_full(keras.Input((3,), dtype="bool")) is not None


def test_full_steps_are_the_steps_every_row_keeps_where_the_values_are_known():
    """On eager torch, one bool a step: whether no row pads it (its `where` would change
    nothing); the compiled backends and a symbolic mask give `None`, as does no mask."""
    mask = keras.ops.convert_to_tensor(
        np.array([[1, 1, 1, 1, 0], [1, 1, 0, 1, 1], [1, 1, 1, 0, 0]], bool)
    )
    expected = [True, True, False, False, False] if BACKEND == "torch" else None
    assert full_steps(mask) == expected
    assert full_steps(None) is None
    assert full_steps(keras.Input((5,), dtype="bool")) is None
    with unrolled():  # traced for export: the loop may not branch on values
        assert full_steps(mask) is None


def _scan_case():
    """A running sum over `(B, T, 2)` inputs with a mask, through `masked_scan`: the sums
    `(B, T, 2)` and the final state, and the same in numpy."""
    inputs = random((3, 5, 2), seed=4)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 1, 1, 0, 1]], bool)

    def step(x_t, states, t):
        total = states[0] + x_t * keras.ops.cast(t + 1, x_t.dtype)
        return [total], [total]

    zeros = keras.ops.zeros((3, 2))
    expected, total = np.zeros((3, 5, 2), "float32"), np.zeros((3, 2), "float32")
    for t in range(5):
        new = total + inputs[:, t] * (t + 1)
        total = np.where(mask[:, t, None], new, total)
        expected[:, t] = np.where(mask[:, t, None], new, 0.0)
    return inputs, mask, step, zeros, expected, total


def test_masked_scan_keeps_states_and_zeroes_outputs_at_masked_steps():
    inputs, mask, step, zeros, expected, total = _scan_case()
    (outputs,), (state,) = masked_scan(
        step,
        [zeros],
        keras.ops.convert_to_tensor(inputs),
        keras.ops.convert_to_tensor(mask),
        [zeros],
    )
    assert_allclose(outputs, expected, atol=1e-6)
    assert_allclose(state, total, atol=1e-6)


@pytest.mark.skipif(BACKEND != "torch", reason="the autograd graph of eager torch")
def test_eager_loops_split_the_time_axis_once_for_the_gradient():
    """On eager torch the decoder's scan and the encoder's LSTM take their steps from one
    `unstack` (`UnbindBackward0`: one stack in the backward), not by indexing a step at a
    time (`SelectBackward0` each: a zero tensor of the whole input filled per step)."""
    inputs, mask, step, zeros, expected, _ = _scan_case()
    x = keras.ops.convert_to_tensor(inputs).requires_grad_(True)
    (outputs,), (state,) = masked_scan(step, [zeros], x, keras.ops.convert_to_tensor(mask), [zeros])
    assert_allclose(outputs, expected.astype("float32"), atol=1e-6)
    names = autograd_nodes(outputs)
    assert "UnbindBackward0" in names and "SelectBackward0" not in names
    # Steps 1 and 2 keep every row: a `where` for the state and one for the output at each
    # of the other three steps only.
    assert autograd_nodes(outputs, state)["WhereBackward0"] == 2 * 3

    lstm = keras.layers.LSTM(4, return_sequences=True, return_state=True)
    lstm(inputs)
    sequence, h, c = lstm_sequence(lstm, x, keras.ops.convert_to_tensor(mask))
    names = autograd_nodes(sequence, h)
    assert "UnbindBackward0" in names and "SelectBackward0" not in names


@pytest.mark.parametrize("within", [False, True])
def test_take_along_rows_takes_numpy_entries(within):
    """Within `unrolled` by one gather of the flat rows, outside by `take_along_axis`: both
    give numpy's `take_along_axis` (rows of several lengths of indices, repeats included)."""
    x = np.arange(24, dtype="float32").reshape(4, 6) * 1.5
    indices = np.array([[5, 0, 0], [1, 2, 3], [4, 4, 1], [0, 5, 2]], "int32")
    blocks = np.arange(48, dtype="float32").reshape(4, 6, 2)  # entries that are slices
    with unrolled() if within else contextlib.nullcontext():
        got = take_along_rows(ops.convert_to_tensor(x), ops.convert_to_tensor(indices))
        sliced = take_along_rows(ops.convert_to_tensor(blocks), ops.convert_to_tensor(indices))
    np.testing.assert_array_equal(ops.convert_to_numpy(got), np.take_along_axis(x, indices, 1))
    expected = np.stack([blocks[row, indices[row]] for row in range(4)])
    np.testing.assert_array_equal(ops.convert_to_numpy(sliced), expected)


@pytest.mark.parametrize("within", [False, True], ids=["eager", "unrolled"])
def test_take_rows_takes_numpy_rows(within):
    """Within `unrolled` by a gather of a matrix's rows, outside by `ops.take`: both give
    numpy's `take` along axis 0, for a vector, a matrix and a 3-D `x`, and indices of one or
    two axes (repeats included)."""
    rows = np.array([3, 0, 0, 2], "int32")
    grid = np.array([[1, 1], [0, 3]], "int32")
    for x in (
        np.arange(4, dtype="float32") * 1.5,
        np.arange(12, dtype="float32").reshape(4, 3),
        np.arange(24, dtype="float32").reshape(4, 3, 2),
    ):
        for indices in (rows, grid):
            with unrolled() if within else contextlib.nullcontext():
                got = take_rows(ops.convert_to_tensor(x), ops.convert_to_tensor(indices))
            np.testing.assert_array_equal(ops.convert_to_numpy(got), np.take(x, indices, 0))


def test_own_methods_keep_a_fast_path_for_a_subclass_that_keeps_the_methods():
    class Proxy:  # as torch.export's module proxies: the module's class second, its name
        pass

    proxy_class = type("LSTM", (Proxy, keras.layers.LSTM), {})

    class Renamed(keras.layers.LSTM):  # keeps every method
        pass

    class MyLSTM(keras.layers.LSTM):
        def call(self, *args, **kwargs):
            return super().call(*args, **kwargs)

    assert own_methods(keras.layers.LSTM(2), keras.layers.LSTM, "call", "inner_loop")
    assert own_methods(object.__new__(proxy_class), keras.layers.LSTM, "call", "inner_loop")
    assert own_methods(Renamed(2), keras.layers.LSTM, "call", "inner_loop")
    assert not own_methods(MyLSTM(2), keras.layers.LSTM, "call", "inner_loop")
    assert not own_methods(keras.layers.GRU(2), keras.layers.LSTM, "call")
