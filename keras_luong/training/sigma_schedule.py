"""`SigmaSchedule`: local-p's Gaussian narrowed over the first epochs of training."""

import keras

from keras_luong.checks import check_integer


class SigmaSchedule(keras.callbacks.Callback):
    """Narrows local-p's Gaussian epoch by epoch, from each layer's `initial_sigma` to its
    `sigma`: a start close to global attention, then the paper's local-p.

    At the start of epoch `e` (counted from 0) it sets each layer's `sigma_variable` to

    ```
    σ_e = σ_0 · (σ_final / σ_0) ^ (e / epochs)   for e < epochs,   σ_final after
    ```

    where `σ_0` is the layer's `initial_sigma` and `σ_final` its `sigma` (`window / 2` by
    default): with `epochs=3`, 40 → 5 is 40, 20, 10, then 5. The layers are the
    `LocalAttention` layers built with `initial_sigma`, found among the model's layers, their
    cells and their cells' attention (`LuongSeq2Seq`'s `model.decoder.cell.attention`), or
    given as `layers`.

    Local-p attends only within the window around its predicted position, and the words
    outside the window give that position no gradient. With the paper's narrow Gaussian from
    the first step, in the translation guide's seed study (pairs of two sentences), local-p's
    attention walked over the second half of the source only, in every seed; a wider window
    alone did not change that. Started wide (a window of half-width 40, σ from 40 to 5 over
    three epochs) it locked on over the whole source in every seed, as global attention does.

    Args:
        epochs: The epochs over which σ narrows; σ is `sigma` from this epoch on. Defaults to
            3.
        layers: Optional: the layers to schedule, each a `LocalAttention` with
            `initial_sigma`. Defaults to those found in the model.

    Example:

    >>> import keras, numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> model = LuongSeq2Seq(10, 10, units=8, embedding_dim=4, alignment="local-p",
    ...                      window=8, attention_arguments={"initial_sigma": 8.0, "sigma": 2.0})
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> source = np.array([[4, 5, 6], [7, 8, 0]])
    >>> target_in = np.array([[1, 4, 5], [1, 7, 8]])
    >>> target_out = np.array([[4, 5, 2], [7, 8, 2]])
    >>> schedule = SigmaSchedule(epochs=2)
    >>> history = model.fit((source, target_in), target_out, epochs=3, verbose=0,
    ...                     callbacks=[schedule])
    >>> schedule.history
    [8.0, 4.0, 2.0]
    """

    def __init__(self, epochs=3, layers=None):
        super().__init__()
        self.epochs = check_integer("epochs", epochs)
        self.layers = None if layers is None else list(layers)
        if self.layers is not None:
            for layer in self.layers:
                _check_annealed(layer, "layers")
        self.history = []

    def sigma(self, layer, epoch):
        """The layer's σ at the start of `epoch` (0-based)."""
        start, final = layer.initial_sigma, layer.final_sigma
        if epoch >= self.epochs:
            return final
        return start * (final / start) ** (epoch / self.epochs)

    def on_train_begin(self, logs=None):
        if self.layers is None:
            found = [layer for layer in _attention_layers(self.model) if _annealed(layer)]
            if not found:
                raise ValueError(
                    "SigmaSchedule found no LocalAttention layer built with initial_sigma in "
                    f"the model. Received: model={self.model.name!r}"
                )
            self.layers = found

    def on_epoch_begin(self, epoch, logs=None):
        sigmas = []
        for layer in self.layers:
            sigma = self.sigma(layer, epoch)
            if layer.sigma_variable is not None:
                layer.sigma_variable.assign(sigma)
            elif sigma != layer.initial_sigma:
                # Not built yet (TensorFlow builds the model at its first batch): the variable
                # will start at initial_sigma, which is only right for the first epoch.
                raise ValueError(
                    f"SigmaSchedule sets layer {layer.name!r}'s sigma to {sigma} at epoch "
                    f"{epoch}, but the layer is not built yet. Call the model on a batch "
                    f"before fit. Received: initial_epoch={epoch}"
                )
            sigmas.append(sigma)
        self.history.append(sigmas[0] if len(sigmas) == 1 else sigmas)


def _annealed(layer):
    return getattr(layer, "initial_sigma", None) is not None and hasattr(layer, "final_sigma")


def _check_annealed(layer, argument):
    if not _annealed(layer):
        raise ValueError(
            f"Invalid value for argument {argument}. Expected LocalAttention layers built with "
            f"initial_sigma. Received: {layer!r}"
        )


def _attention_layers(model):
    """The layers of `model`, their RNN cells (`cell`, `cells`) and the cells' `attention`,
    depth first, each once."""
    seen, order, pending = set(), [], [model]
    while pending:
        layer = pending.pop()
        if id(layer) in seen or not isinstance(layer, keras.layers.Layer):
            continue
        seen.add(id(layer))
        order.append(layer)
        children = [
            child
            for name in ("layers", "cells")  # a list of them (`RecurrentEncoder.layers` counts)
            if isinstance(getattr(layer, name, None), (list, tuple))
            for child in getattr(layer, name)
        ]
        children += [getattr(layer, name, None) for name in ("cell", "attention")]
        pending.extend(reversed([child for child in children if child is not None]))
    return order
