"""Training runs that can be repeated and resumed: determinism and BackupAndRestore."""

import keras
import numpy as np

from keras_luong import LuongSeq2Seq
from keras_luong.datasets import dates
from tests.test_case import BACKEND, to_numpy

_LOADED = dates.load_data(40, seed=5)
DATA = _LOADED["train"]  # 32 examples: two batches of 16
X = (DATA["source"], DATA["target_in"])
Y = DATA["target_out"]


def _dates_model(seed, **kwargs):
    keras.utils.set_random_seed(seed)
    model = LuongSeq2Seq(
        len(_LOADED["source_vocabulary"]),
        len(dates.TARGET_VOCABULARY),
        units=8,
        embedding_dim=4,
        **kwargs,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        # JAX compiles as always; TensorFlow with XLA too; torch's trainer stays eager.
        jit_compile=BACKEND != "torch",
    )
    return model


def test_two_seeded_runs_with_dropout_give_identical_losses():
    """With `keras.utils.set_random_seed`, attention dropout, embedding dropout and shuffling
    repeat exactly: the same losses, bit for bit, and the same weights."""
    runs = []
    for _ in range(2):
        model = _dates_model(11, attention_dropout=0.3, dropout=0.2)
        history = model.fit(X, Y, batch_size=16, epochs=2, shuffle=True, verbose=0)
        runs.append((history.history["loss"], [to_numpy(w) for w in model.weights]))
    (losses, weights), (again, weights_again) = runs
    assert losses == again
    for a, b in zip(weights, weights_again, strict=True):
        np.testing.assert_array_equal(a, b)
    # A different seed gives a different run (so the equality above is not vacuous).
    other = _dates_model(12, attention_dropout=0.3, dropout=0.2)
    assert other.fit(X, Y, batch_size=16, epochs=2, verbose=0).history["loss"] != losses


class _Interrupt(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("interrupted")


def test_backup_and_restore_resumes_to_the_uninterrupted_weights(tmp_path):
    """Training interrupted after epoch 2 of 4 and resumed with `BackupAndRestore` ends with
    the weights of the uninterrupted run (to 1e-6; the batches come in order, no dropout)."""
    fit = {"batch_size": 16, "epochs": 4, "shuffle": False, "verbose": 0}
    uninterrupted = _dates_model(3)
    uninterrupted.fit(X, Y, **fit)

    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    interrupted = _dates_model(3)
    # BackupAndRestore wants a built model (Keras raises a clear ValueError on TensorFlow).
    interrupted((X[0][:1], X[1][:1]))
    try:
        interrupted.fit(X, Y, callbacks=[backup, _Interrupt(1)], **fit)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the run was not interrupted")
    halfway = [to_numpy(w) for w in interrupted.weights]
    resumed = _dates_model(4)  # another initialisation: the backup must replace it
    resumed((X[0][:1], X[1][:1]))
    history = resumed.fit(X, Y, callbacks=[backup], **fit)
    assert len(history.history["loss"]) == 2  # epochs 3 and 4 only
    for got, expected in zip(resumed.weights, uninterrupted.weights, strict=True):
        np.testing.assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-6, rtol=1e-6)
    # The run really was cut short: halfway weights differ from the final ones.
    assert any(
        not np.allclose(h, to_numpy(w)) for h, w in zip(halfway, uninterrupted.weights, strict=True)
    )
