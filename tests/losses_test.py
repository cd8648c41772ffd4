"""`sequence_loss` and `SequenceLoss` against a float64 numpy reference of tensorflow-addons'
rules (tensorflow-addons itself: tests/tfa_parity_test.py)."""

import itertools

import keras
import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.training.losses import SequenceLoss, sequence_loss
from tests.test_case import assert_allclose, gradients, random, to_numpy

B, T, V = 3, 5, 7


def reference(logits, targets, weights, avg_t, avg_b, sum_t, sum_b, smoothing=0.0):
    logits = logits.astype("float64")
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    target = np.eye(V)[targets] * (1 - smoothing) + smoothing / V
    ce = -(target * log_p).sum(-1) * weights
    nonzero = (weights != 0).astype("float64")

    def divide(a, b):
        return np.where(b != 0, a / np.where(b != 0, b, 1), 0.0)

    if avg_t and avg_b:
        return divide(ce.sum(), weights.sum())
    if sum_t and sum_b:
        return divide(ce.sum(), nonzero.sum())
    if avg_t or avg_b:
        axis = 0 if avg_b else 1
        return divide(ce.sum(axis), weights.sum(axis))
    if sum_t or sum_b:
        axis = 0 if sum_b else 1
        return divide(ce.sum(axis), nonzero.sum(axis))
    return ce


def data(seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(B, T, V)).astype("float32")
    targets = rng.integers(0, V, (B, T))
    weights = rng.uniform(0, 2, (B, T)).astype("float32")
    weights[1, 3:] = 0  # padding
    weights[2] = 0  # a row of padding only: its averages are 0, not NaN
    return logits, targets, weights


FLAGS = [
    flags
    for flags in itertools.product([False, True], repeat=4)
    # (average_t, average_b, sum_t, sum_b): an average and a sum of the same axis, or of
    # different axes, are refused (tensorflow-addons' rule).
    if not (flags[0] or flags[1]) or not (flags[2] or flags[3])
]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "".join("TF"[not x] for x in f))
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_every_reduction_against_numpy(flags, smoothing):
    logits, targets, weights = data()
    actual = sequence_loss(logits, targets, weights, *flags, label_smoothing=smoothing)
    expected = reference(logits, targets, weights, *flags, smoothing)
    assert_allclose(actual, expected, atol=1e-6)
    assert np.all(np.isfinite(to_numpy(actual)))


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_gradient_is_the_softmax_minus_the_smoothed_targets(smoothing):
    # The loss never builds the smoothed one-hot targets; its gradient is still theirs:
    # (softmax(z) - ((1 - e) one_hot + e / V)) * w / sum(w).
    logits, targets, weights = data(2)
    _, (grad,) = gradients(
        keras.layers.Identity(),
        lambda z: sequence_loss(z, targets, weights, label_smoothing=smoothing),
        [logits],
    )
    z = logits.astype("float64")
    softmax = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    smoothed = np.eye(V)[targets] * (1 - smoothing) + smoothing / V
    expected = (softmax - smoothed) * (weights / weights.sum())[..., None]
    assert_allclose(grad, expected, atol=1e-6)


def test_conflicting_flags_are_refused():
    logits, targets, weights = data()
    with pytest.raises(ValueError, match="average_across_timesteps and sum_over_timesteps"):
        sequence_loss(logits, targets, weights, True, False, True, False)
    with pytest.raises(ValueError, match="average_across_batch and sum_over_batch"):
        SequenceLoss(average_across_batch=True, sum_over_batch=True, sum_over_timesteps=False)
    with pytest.raises(ValueError, match="average_across_batch and sum_over_timesteps"):
        sequence_loss(logits, targets, weights, False, True, True, False)
    with pytest.raises(ValueError, match="label_smoothing"):
        SequenceLoss(label_smoothing=1.5)


def test_the_loss_class_leaves_padding_out():
    logits, targets, _ = data(1)
    targets[0, 2:] = 0
    loss = SequenceLoss(label_smoothing=0.1)
    weights = (targets != 0).astype("float32")
    expected = reference(logits, targets, weights, False, False, True, True, 0.1)
    assert_allclose(loss(targets, logits), expected, atol=1e-6)
    assert_allclose(loss(targets[..., None], logits), expected, atol=1e-6)  # (B, T, 1) too
    # Without smoothing: Keras' own masked cross-entropy, the mean over the valid tokens.
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    assert_allclose(SequenceLoss()(targets, logits), keras_loss(targets, logits), atol=1e-6)
    clone = SequenceLoss.from_config(loss.get_config())
    assert clone.get_config() == loss.get_config()


def test_a_model_trains_with_it_and_saves(tmp_path):
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    source = rng.integers(3, 9, (16, 5)).astype("int32")
    target = np.concatenate([np.ones((16, 1)), source, np.full((16, 1), 2)], 1).astype("int32")
    model = LuongSeq2Seq(9, 9, units=8, embedding_dim=4)
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=SequenceLoss(label_smoothing=0.1),
        jit_compile=keras.backend.backend() != "torch",
    )
    x, y = (source, target[:, :-1]), target[:, 1:]
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, batch_size=16, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert after < before - 0.05
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored.loss, SequenceLoss) and restored.loss.label_smoothing == 0.1
    assert np.isclose(restored.evaluate(x, y, verbose=0), after, atol=1e-5)


def test_random_logits_are_finite_at_any_scale():
    logits = 1e4 * random((B, T, V), 3)
    value = sequence_loss(logits, np.zeros((B, T), "int32"))
    assert np.isfinite(float(to_numpy(value)))
