"""Checkpoint averaging: one model whose weights are the mean of several of one architecture
(OpenNMT-py's `average_models.py`, fairseq's `average_checkpoints.py`), and a callback that
ends training with the mean of the last epochs' weights."""

import keras
import numpy as np


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
