"""Checkpoint averaging: one model whose weights are the mean of several of one architecture
(OpenNMT-py's `average_models.py`, fairseq's `average_checkpoints.py`), and a callback that
ends training with the mean of the last epochs' weights."""

import keras
import numpy as np

from keras_luong.checks import check_integer


def average_models(models, weights=None):
    """A new model whose every weight is the (weighted) mean of `models`' weights.

    Args:
        models: Sequence-to-sequence models of one architecture (the same class and config,
            built; called on `(source, target_in)`), or paths of their `.keras` files.
        weights: Optional relative weights of the models (positive numbers, as many as
            models). Defaults to equal weights.

    Returns:
        A model made from the first model's config (its vocabularies too, where it has them),
        with the averaged weights; compile it to train or evaluate it.

    Example:

    >>> import numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> models = [LuongSeq2Seq(10, 10, units=8, embedding_dim=4) for _ in range(2)]
    >>> for model in models:
    ...     _ = model((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
    >>> averaged = average_models(models)
    >>> kernels = [m.projection.kernel.numpy() for m in (*models, averaged)]
    >>> np.allclose(kernels[2], (kernels[0] + kernels[1]) / 2, atol=1e-7)
    True
    """
    if isinstance(models, (str, keras.Model)) or not len(models):
        raise ValueError(
            "Invalid value for argument models. Expected a non-empty list of models or "
            f"paths of .keras files. Received: models={models!r:.120}"
        )
    models = [keras.saving.load_model(m) if isinstance(m, str) else m for m in models]
    first = models[0]
    for index, model in enumerate(models):
        if not model.built:
            raise ValueError(
                f"Invalid value for argument models: models[{index}] has no weights yet "
                "(call it once on data, or load it)."
            )
        if type(model) is not type(first) or _architecture(model) != _architecture(first):
            raise ValueError(
                "Invalid value for argument models: every model must have the first one's "
                f"class and config. Received: models[{index}] of type "
                f"{type(model).__name__} whose config (its name aside) differs from models[0]'s"
            )
    if weights is None:
        weights = [1.0] * len(models)
    weights = np.asarray(weights, "float64")
    if weights.shape != (len(models),) or not np.all(weights > 0):
        raise ValueError(
            "Invalid value for argument weights. Expected one positive number per model "
            f"({len(models)}). Received: weights={weights.tolist()!r}"
        )
    weights = weights / weights.sum()
    values = [model.get_weights() for model in models]
    averaged = [
        np.sum(
            [w * v[i].astype("float64") for w, v in zip(weights, values, strict=True)], axis=0
        ).astype(values[0][i].dtype)
        for i in range(len(values[0]))
    ]
    model = type(first).from_config(first.get_config())
    _build(model)
    model.set_weights(averaged)
    vocabularies = [getattr(first, f"{side}_vocabulary", None) for side in ("source", "target")]
    if all(v is not None for v in vocabularies) and hasattr(model, "set_vocabularies"):
        model.set_vocabularies(*vocabularies)
    return model


def _architecture(model):
    """A model's config without its name (two models of one architecture differ in names)."""
    return {key: value for key, value in model.get_config().items() if key != "name"}


def _build(model):
    """Builds `model` (a sequence-to-sequence model called on `(source, target_in)`) by one
    call on ones, unless it is built already."""
    if not model.built:
        ones = np.ones((1, 2), "int32")
        model((ones, ones))


class CheckpointAverage(keras.callbacks.Callback):
    """Keeps the weights of the last `last` epochs of training and, when training ends, sets
    the model's weights to their mean (`average_models` of those epochs' checkpoints, without
    the files).

    An average of the last epochs' weights smooths the noise of the final steps as a
    checkpoint average does (OpenNMT-py's and fairseq's); Keras' `use_ema=True` on an
    optimizer keeps an exponential moving average of every step's weights instead, and
    replaces the weights with it at the end of `fit` too. The two serve different runs: the
    moving average follows every step (its `ema_momentum`, 0.99 by default, spans about 100
    steps: the last part of an epoch on a mid-sized corpus), this average spans whole epochs,
    costs nothing per step (a copy of the weights per epoch, in host memory), and its
    checkpoints are those a validation curve chose from.

    Args:
        last: How many epochs' weights to keep and average. Defaults to 2.
        average_at_end: Set the model's weights to the average when training ends (else
            `averaged_weights()` gives it). Defaults to `True`.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> average = CheckpointAverage(last=2)
    >>> x, y = np.ones((4, 2)), np.zeros((4, 1))
    >>> _ = model.fit(x, y, epochs=3, verbose=0, callbacks=[average])
    >>> len(average.kept)
    2
    """

    def __init__(self, last=2, average_at_end=True):
        super().__init__()
        self.last = check_integer("last", last)
        self.average_at_end = bool(average_at_end)
        self.kept = []

    def on_train_begin(self, logs=None):
        self.kept = []

    def on_epoch_end(self, epoch, logs=None):
        self.kept.append([np.array(w) for w in self.model.get_weights()])
        del self.kept[: -self.last]

    def averaged_weights(self):
        """The mean of the kept epochs' weights (float ones averaged in float64; others, such
        as a random seed's state, from the last epoch)."""
        if not self.kept:
            raise ValueError("CheckpointAverage has kept no weights: no epoch has ended.")
        return [
            np.mean([epoch[i].astype("float64") for epoch in self.kept], axis=0).astype(
                self.kept[-1][i].dtype
            )
            if np.issubdtype(self.kept[-1][i].dtype, np.floating)
            else self.kept[-1][i]
            for i in range(len(self.kept[-1]))
        ]

    def on_train_end(self, logs=None):
        if self.average_at_end and self.kept:
            self.model.set_weights(self.averaged_weights())
