"""average_models against the numpy mean of the models' weights, and its refusals;
CheckpointAverage against the weights each epoch ended with."""

import keras
import numpy as np
import pytest

from keras_luong import CheckpointAverage, LuongSeq2Seq, average_models
from tests.test_case import save_and_load

ONES = (np.ones((2, 3), "int32"), np.ones((2, 4), "int32"))


def built(seed, **kwargs):
    keras.utils.set_random_seed(seed)
    model = LuongSeq2Seq(11, 9, units=8, embedding_dim=4, **kwargs)
    model(ONES)
    return model


def test_the_average_is_the_numpy_mean_of_the_weights(tmp_path):
    models = [built(seed) for seed in range(3)]
    expected = [np.mean(ws, axis=0) for ws in zip(*(m.get_weights() for m in models), strict=True)]
    averaged = average_models(models)
    assert type(averaged) is LuongSeq2Seq and averaged is not models[0]
    for got, want in zip(averaged.get_weights(), expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-7)
    # Weighted, and from .keras files: (1 · first + 3 · second) / 4.
    paths = [save_and_load(m, tmp_path, f"m{i}.keras")[0] for i, m in enumerate(models[:2])]
    weighted = average_models(paths, weights=[1, 3])
    first, second = models[0].get_weights(), models[1].get_weights()
    for got, a, b in zip(weighted.get_weights(), first, second, strict=True):
        np.testing.assert_allclose(got, (a + 3 * b) / 4, atol=1e-7)
    # The averaged model runs: its logits are those of its weights.
    logits = averaged.predict(ONES, verbose=0)
    assert logits.shape == (2, 4, 9) and np.all(np.isfinite(logits))


def test_mismatched_models_and_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="non-empty list"):
        average_models([])
    with pytest.raises(ValueError, match=r"models\[1\] of type LuongSeq2Seq whose config"):
        average_models([built(0), built(1, alignment="local-m")])
    with pytest.raises(ValueError, match=r"models\[1\] has no weights yet"):
        average_models([built(0), LuongSeq2Seq(11, 9, units=8, embedding_dim=4)])
    with pytest.raises(ValueError, match="one positive number per model"):
        average_models([built(0), built(1)], weights=[1, -1])


class Recorder(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.epochs = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(self.model.get_weights())


def test_checkpoint_average_ends_training_with_the_last_epochs_mean():
    model = built(0)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    target = np.full((2, 4), 3, "int32")
    recorder, average = Recorder(), CheckpointAverage(last=2)
    model.fit(ONES, target, epochs=3, verbose=0, callbacks=[recorder, average])
    second, third = recorder.epochs[1], recorder.epochs[2]
    assert not np.allclose(second[-1], third[-1])  # training moved the weights
    for got, a, b in zip(model.get_weights(), second, third, strict=True):
        np.testing.assert_allclose(got, (a + b) / 2, atol=1e-7)
    kept_only = CheckpointAverage(last=3, average_at_end=False)
    model.fit(ONES, target, epochs=1, verbose=0, callbacks=[kept_only])
    assert len(kept_only.kept) == 1
    for got, want in zip(kept_only.averaged_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="last=0"):
        CheckpointAverage(last=0)
