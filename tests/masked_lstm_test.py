"""keras_luong.backend.masked_lstm: the encoder's masked LSTM as a loop of tensor arithmetic equals
Keras' masked `LSTM` and `Bidirectional(LSTM)` (outputs, states and gradients) for right,
left and inner padding and a row with no valid step, on every backend."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong.backend import masked_lstm
from keras_luong.backend.loops import unrolled
from keras_luong.backend.masked_lstm import _lstm_layers, cell_loop, lstm_sequence, run_encoder
from tests.test_case import BACKEND, assert_allclose, autograd_nodes, gradients, random

MASK = np.array(
    [
        [1, 1, 1, 1, 1, 1, 1],  # no padding
        [1, 1, 1, 1, 0, 0, 0],  # right padding
        [0, 0, 1, 1, 1, 1, 1],  # left padding
        [1, 1, 0, 0, 1, 1, 0],  # inner padding
        [0, 0, 0, 0, 0, 0, 0],  # nothing valid
    ],
    bool,
)
INPUTS = random((5, 7, 3), seed=1, low=-2.0, high=2.0)


def encoder(bidirectional, use_bias=True, seed=0):
    keras.utils.set_random_seed(seed)
    # A bias far from the initial zeros, so that a step wrongly taken shows.
    lstm = keras.layers.LSTM(
        4,
        return_sequences=True,
        return_state=True,
        use_bias=use_bias,
        bias_initializer="random_normal",
    )
    layer = keras.layers.Bidirectional(lstm) if bidirectional else lstm
    layer(INPUTS, mask=MASK)
    return layer


def ours(layer, inputs, mask):
    """`lstm_sequence` for every direction of `layer`, joined as Keras joins them."""
    if isinstance(layer, keras.layers.Bidirectional):
        forward = lstm_sequence(layer.forward_layer, inputs, mask)
        backward = lstm_sequence(layer.backward_layer, inputs, mask)
        return [ops.concatenate([forward[0], backward[0]], axis=-1), *forward[1:], *backward[1:]]
    return list(lstm_sequence(layer, inputs, mask))


@pytest.mark.parametrize("bidirectional, use_bias", [(True, True), (False, True), (False, False)])
def test_outputs_and_states_equal_keras_masked_lstm(bidirectional, use_bias):
    layer = encoder(bidirectional, use_bias)
    expected = layer(INPUTS, mask=MASK)
    got = ours(layer, INPUTS, MASK)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)
    sequence = ops.convert_to_numpy(got[0])
    if bidirectional:  # Keras zeroes a Bidirectional's padded outputs
        assert np.all(sequence[~MASK] == 0)
    else:  # a plain LSTM repeats the last output at a padded step
        np.testing.assert_array_equal(sequence[1, 4:], np.repeat(sequence[1, 3:4], 3, axis=0))
    # The row with nothing valid keeps its zero initial states.
    for state in got[1:]:
        assert np.all(ops.convert_to_numpy(state)[4] == 0)


# Rows sorted by length, as `BucketedBatches` sorts them: the first three steps keep every
# row, and on eager torch they run without the mask's `where`.
SORTED_MASK = np.arange(7)[None, :] < np.array([7, 7, 6, 5, 3])[:, None]


@pytest.mark.parametrize("bidirectional", [True, False])
def test_steps_that_keep_every_row_equal_keras_masked_lstm(bidirectional):
    layer = encoder(bidirectional)
    inputs = ops.convert_to_tensor(INPUTS)
    if BACKEND == "torch":
        inputs.requires_grad_(True)
    got = ours(layer, inputs, SORTED_MASK)
    for a, b in zip(got, layer(INPUTS, mask=SORTED_MASK), strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)
    if BACKEND == "torch":  # a `where` for h and for c at each of the 4 padded steps
        directions = 2 if bidirectional else 1
        assert autograd_nodes(*got[1:])["WhereBackward0"] == directions * 2 * 4


@pytest.mark.parametrize("bidirectional", [True, False])
def test_gradients_equal_keras_masked_lstm(bidirectional):
    layer = encoder(bidirectional)
    weights = [random(tuple(x.shape), seed=i + 2) for i, x in enumerate(layer(INPUTS, mask=MASK))]

    def loss(outputs):
        return sum(
            ops.sum(o * ops.convert_to_tensor(w)) for o, w in zip(outputs, weights, strict=True)
        )

    class Keras(keras.layers.Layer):
        def call(self, x):
            return layer(x, mask=MASK)

    class Ours(keras.layers.Layer):
        def call(self, x):
            return ours(layer, x, MASK)

    expected_variables, (expected_inputs,) = gradients(_wrap(Keras(), layer), loss, [INPUTS])
    got_variables, (got_inputs,) = gradients(_wrap(Ours(), layer), loss, [INPUTS])
    assert len(got_variables) == len(layer.trainable_weights)
    for a, b in zip(got_variables, expected_variables, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got_inputs, expected_inputs, atol=1e-5, rtol=1e-5)
    # Padded inputs get no gradient (a step wrongly taken would give them one).
    assert np.all(got_inputs[~MASK] == 0)


def _wrap(wrapper, layer):
    """`wrapper` tracking `layer`, so its trainable variables are the LSTM's."""
    wrapper.inner = layer
    wrapper.build((None, 7, 3))
    return wrapper


@pytest.mark.parametrize("padded", [True, False])
def test_run_encoder_equals_the_keras_call(padded):
    layer = encoder(True)
    mask = MASK[:4] if padded else np.ones((4, 7), bool)
    inputs = ops.convert_to_tensor(INPUTS[:4])
    expected = layer(inputs, mask=mask)
    got = run_encoder(layer, inputs, ops.convert_to_tensor(mask))
    for a, b in zip(got, expected, strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)


def test_layers_it_does_not_cover_are_called_as_they_are():
    """A GRU or another activation: the layer's own call; an LSTM with dropout: its own call
    in training only."""
    keras.utils.set_random_seed(0)
    mask = ops.convert_to_tensor(MASK[:4])
    inputs = ops.convert_to_tensor(INPUTS[:4])
    for layer in (
        keras.layers.GRU(4, return_sequences=True, return_state=True),
        keras.layers.LSTM(4, activation="relu", return_sequences=True, return_state=True),
    ):
        layer(inputs, mask=mask)
        assert _lstm_layers(layer, training=False) is None
        expected = layer(inputs, mask=mask)
        got = run_encoder(layer, inputs, mask)
        for a, b in zip(got, expected, strict=True):
            assert_allclose(a, b, atol=1e-6, rtol=1e-6)
    dropout = keras.layers.LSTM(4, recurrent_dropout=0.5, return_sequences=True, return_state=True)
    dropout(inputs, mask=mask)
    assert _lstm_layers(dropout, training=True) is None
    assert _lstm_layers(dropout, training=False) == [dropout]
    assert _lstm_layers(encoder(True), training=True) is not None


@pytest.mark.skipif(BACKEND != "torch", reason="the eager loop runs on torch only")
def test_an_unpadded_batch_reaches_keras_without_the_mask_it_carries():
    """Inputs from a masking embedding carry their mask; with no padding, the LSTM must get
    none (Keras' unmasked path, its fused kernel), not the mask (its generic loop)."""
    layer = encoder(True)
    ids = np.tile(np.arange(1, 8), (4, 1))  # no padding
    inputs = keras.layers.Embedding(10, 3, mask_zero=True)(ids)
    assert getattr(inputs, "_keras_mask", None) is not None
    seen = []
    call = layer.forward_layer.call

    def spy(*args, **kwargs):
        seen.append(kwargs.get("mask"))
        return call(*args, **kwargs)

    layer.forward_layer.call = spy
    got = run_encoder(layer, inputs, ops.not_equal(ids, 0))
    assert seen == [None]
    expected = layer(ops.copy(inputs), mask=np.ones((4, 7), bool))
    for a, b in zip(got, expected, strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.skipif(BACKEND != "torch", reason="the eager loop runs on torch only")
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_eager_loop_is_the_cpus_and_a_gpu_gets_keras_masked_layer(monkeypatch, device):
    """On a GPU (the device query patched: these machines have none) a padded batch goes to
    Keras' own masked LSTM with its right-padded mask (cuDNN there); on a CPU to the loop of
    `lstm_sequence`. The outputs and the gradients are the same either way."""
    monkeypatch.setattr(masked_lstm, "on_cpu", lambda x: device == "cpu")
    layer = encoder(True)
    mask = ops.convert_to_tensor(SORTED_MASK)  # right-padded, as BucketedBatches pads
    seen = []
    call = layer.forward_layer.call

    def spy(*args, **kwargs):
        seen.append(kwargs.get("mask") is not None)
        return call(*args, **kwargs)

    layer.forward_layer.call = spy
    weights = [random(tuple(x.shape), seed=i + 2) for i, x in enumerate(layer(INPUTS, mask=MASK))]
    seen.clear()

    def loss(outputs):
        return sum(
            ops.sum(o * ops.convert_to_tensor(w)) for o, w in zip(outputs, weights, strict=True)
        )

    class Keras(keras.layers.Layer):
        def call(self, x):
            return layer(x, mask=mask)

    class RunEncoder(keras.layers.Layer):
        def call(self, x):
            return run_encoder(layer, x, mask)

    expected_variables, (expected_inputs,) = gradients(_wrap(Keras(), layer), loss, [INPUTS])
    seen.clear()
    got_variables, (got_inputs,) = gradients(_wrap(RunEncoder(), layer), loss, [INPUTS])
    assert seen == ([] if device == "cpu" else [True])  # Keras' masked layer, on a GPU only
    for a, b in zip(got_variables, expected_variables, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got_inputs, expected_inputs, atol=1e-5, rtol=1e-5)
    for a, b in zip(run_encoder(layer, INPUTS, mask), layer(INPUTS, mask=mask), strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_the_cell_loop_for_export_equals_keras_masked_layers(kind, bidirectional):
    """`cell_loop`, the loop that `torch.export` unrolls for any Keras cell, gives Keras'
    outputs and states for every padding of MASK (a GRU too, whose gate order and reset
    placement are Keras' own since its cell is called)."""
    keras.utils.set_random_seed(0)
    layer_class = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[kind]
    layer = layer_class(
        4, return_sequences=True, return_state=True, bias_initializer="random_normal"
    )
    layer = keras.layers.Bidirectional(layer) if bidirectional else layer
    expected = layer(INPUTS, mask=MASK)
    got = cell_loop(layer, INPUTS, MASK)
    assert len(got) == len(expected) == (1 + (2 if kind == "lstm" else 1) * (1 + bidirectional))
    for a, b in zip(got, expected, strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)


def test_within_unrolled_the_encoder_takes_the_cell_loop_whatever_the_mask(monkeypatch):
    """Traced for export, the mask's values are not read (no shortcut for a full mask) and
    a layer `lstm_sequence` does not cover (a GRU) steps through `cell_loop`."""
    keras.utils.set_random_seed(0)
    gru = keras.layers.GRU(4, return_sequences=True, return_state=True)
    gru(INPUTS, mask=MASK)
    lstm = encoder(bidirectional=False)
    calls = []

    def counted_loop(*args, **kwargs):
        calls.append(args[0])
        return cell_loop(*args, **kwargs)

    monkeypatch.setattr(masked_lstm, "cell_loop", counted_loop)
    full = ops.convert_to_tensor(np.ones_like(MASK))
    with unrolled():
        got = run_encoder(gru, ops.convert_to_tensor(INPUTS), full)
        monkeypatch.setattr(ops, "all", None)  # reading the mask's values fails from here
        from_lstm = run_encoder(lstm, ops.convert_to_tensor(INPUTS), full)
    monkeypatch.undo()
    assert calls == [gru]
    for a, b in zip(got, gru(INPUTS), strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)
    for a, b in zip(from_lstm, lstm(INPUTS), strict=True):
        assert_allclose(a, b, atol=1e-6, rtol=1e-6)
