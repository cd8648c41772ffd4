"""The sequence loss of tensorflow-addons' seq2seq: token cross-entropy weighted per token, with
its averaging flags, plus label smoothing and the padding id left out."""

import keras
from keras import ops

from keras_luong.backend.engine import replica_sum, replicas_in_step
from keras_luong.backend.ops import smoothed_crossentropy
from keras_luong.checks import check_integer, check_rate, unpack_inputs


def sequence_loss(
    logits,
    targets,
    weights=None,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    label_smoothing=0.0,
):
    """tensorflow-addons' `sequence_loss`: the cross-entropy of `logits` `(B, T, V)` against
    the ids `targets` `(B, T)`, weighted by `weights` `(B, T)` (ones when not given), then
    reduced as the flags say:

    - `average_across_timesteps` and `average_across_batch` (the default): one number,
      `Σ w·ce / Σ w`;
    - `sum_over_timesteps` and `sum_over_batch`: one number, `Σ w·ce / (number of w ≠ 0)`;
    - one of the averages alone: `Σ w·ce / Σ w` over that axis, a `(B,)` or `(T,)` vector;
    - one of the sums alone: `Σ w·ce / (number of w ≠ 0)` over that axis;
    - no flag: the weighted cross-entropy `(B, T)` itself;
    - an average with a sum: a `ValueError` (the order would be ambiguous).

    A sum of zero weights gives 0, not NaN.

    Args:
        logits: Unnormalised log-probabilities `(B, T, V)`.
        targets: The target ids `(B, T)`.
        weights: Weights `(B, T)` (0 for padding); ones when `None` (the default).
        average_across_timesteps: Divide by the weights' sum over time. Defaults to `True`.
        average_across_batch: Divide by the weights' sum over the batch. Defaults to `True`.
        sum_over_timesteps: Divide by the number of non-zero weights over time. Defaults to
            `False`.
        sum_over_batch: Divide by the number of non-zero weights over the batch. Defaults
            to `False`.
        label_smoothing: Mixes the one-hot targets with the uniform distribution, as Keras'
            losses do. Defaults to 0 (tensorflow-addons' case).

    Example:

    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]], "float32"))  # (1, 2, 2)
    >>> targets = np.array([[0, 1]])
    >>> weights = np.array([[1.0, 0.0]], "float32")  # the second token is padding
    >>> round(float(sequence_loss(logits, targets, weights)), 4)  # -log 0.5
    0.6931
    """
    check_reduction(
        average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
    )
    label_smoothing = check_rate("label_smoothing", label_smoothing)
    logits = ops.convert_to_tensor(logits)
    if len(logits.shape) != 3:
        raise ValueError(
            "Invalid logits: expected (batch_size, steps, vocabulary). "
            f"Received: logits.shape={tuple(logits.shape)}"
        )
    logits = ops.cast(logits, "float32")
    targets = ops.cast(targets, "int32")
    crossent = smoothed_crossentropy(logits, targets, label_smoothing)
    return reduce_sequence_loss(
        crossent,
        weights,
        average_across_timesteps,
        average_across_batch,
        sum_over_timesteps,
        sum_over_batch,
    )


def check_reduction(
    average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
):
    """A `ValueError` for an average and a sum together: their order would be ambiguous
    (tensorflow-addons refuses them too)."""
    flags = {
        "average_across_timesteps": average_across_timesteps,
        "average_across_batch": average_across_batch,
        "sum_over_timesteps": sum_over_timesteps,
        "sum_over_batch": sum_over_batch,
    }
    for average in ("average_across_timesteps", "average_across_batch"):
        for total in ("sum_over_timesteps", "sum_over_batch"):
            if flags[average] and flags[total]:
                raise ValueError(
                    f"{average} and {total} cannot both be True because of ambiguous order. "
                    f"Received: {average}=True, {total}=True"
                )


def reduce_sequence_loss(
    crossent,
    weights=None,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
):
    """The token losses `crossent` `(B, T)` weighted by `weights` `(B, T)` (ones when `None`)
    and reduced as `sequence_loss`'s flags say (checked by `check_reduction`)."""
    check_reduction(
        average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
    )
    weights = ops.ones_like(crossent) if weights is None else ops.cast(weights, crossent.dtype)
    crossent = crossent * weights

    def count(axis=None):
        return ops.sum(ops.cast(ops.not_equal(weights, 0), crossent.dtype), axis=axis)

    if average_across_timesteps and average_across_batch:
        return ops.divide_no_nan(ops.sum(crossent), ops.sum(weights))
    if sum_over_timesteps and sum_over_batch:
        return ops.divide_no_nan(ops.sum(crossent), count())
    if average_across_timesteps or average_across_batch:
        axis = 0 if average_across_batch else 1
        return ops.divide_no_nan(ops.sum(crossent, axis=axis), ops.sum(weights, axis=axis))
    if sum_over_timesteps or sum_over_batch:
        axis = 0 if sum_over_batch else 1
        return ops.divide_no_nan(ops.sum(crossent, axis=axis), count(axis))
    return crossent


@keras.saving.register_keras_serializable(package="keras_luong")
class SequenceLoss(keras.losses.Loss):
    """tensorflow-addons' `SequenceLoss` as a Keras 3 loss: `sequence_loss` of the model's
    logits `(B, T, V)` against target ids `(B, T)`, each token weighted 1, or 0 where the target
    is the padding id.

    Its defaults are tensorflow-addons' class's (`sum_over_timesteps=True,
    sum_over_batch=True`: the mean over the tokens that are not padding, the same as
    `average_across_timesteps=True, average_across_batch=True` with 0/1 weights). A reduction
    that leaves a vector (one flag of a pair) is then averaged by Keras' `reduction`, as any
    loss's per-sample values are, and a `sample_weight` given to `fit` multiplies what it
    returns.

    Args:
        average_across_timesteps: See `sequence_loss`. Defaults to `False`.
        average_across_batch: See `sequence_loss`. Defaults to `False`.
        sum_over_timesteps: See `sequence_loss`. Defaults to `True`.
        sum_over_batch: See `sequence_loss`. Defaults to `True`.
        label_smoothing: Mixes the one-hot targets with the uniform distribution. Defaults to 0.
        ignore_index: The target id whose tokens weigh 0 (the padding). Defaults to 0; `None`
            weighs every token 1.
        reduction: Keras' reduction of what the loss returns. Defaults to
            `"sum_over_batch_size"`.
        name: The loss's name. Defaults to `"sequence_loss"`.
        dtype: The loss's dtype.

    Example:

    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]], "float32"))
    >>> targets = np.array([[1, 0]])  # the second token is padding
    >>> round(float(SequenceLoss()(targets, logits)), 4)  # -log 0.5
    0.6931

    In a model: `model.compile(optimizer="adam", loss=SequenceLoss(label_smoothing=0.1))`.
    """

    def __init__(
        self,
        average_across_timesteps=False,
        average_across_batch=False,
        sum_over_timesteps=True,
        sum_over_batch=True,
        label_smoothing=0.0,
        ignore_index=0,
        reduction="sum_over_batch_size",
        name="sequence_loss",
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.average_across_timesteps = bool(average_across_timesteps)
        self.average_across_batch = bool(average_across_batch)
        self.sum_over_timesteps = bool(sum_over_timesteps)
        self.sum_over_batch = bool(sum_over_batch)
        self.label_smoothing = check_rate("label_smoothing", label_smoothing)
        self.ignore_index = check_integer("ignore_index", ignore_index, minimum=0, allow_none=True)
        # The flags are checked once here, as sequence_loss checks them.
        sequence_loss(
            ops.zeros((1, 1, 2)),
            ops.zeros((1, 1), "int32"),
            average_across_timesteps=self.average_across_timesteps,
            average_across_batch=self.average_across_batch,
            sum_over_timesteps=self.sum_over_timesteps,
            sum_over_batch=self.sum_over_batch,
        )

    def call(self, y_true, y_pred):
        y_true = ops.convert_to_tensor(y_true)
        if len(y_true.shape) == 3:  # (B, T, 1), as Keras' sparse losses take too
            y_true = ops.squeeze(y_true, axis=-1)
        weights = None
        if self.ignore_index is not None:
            weights = ops.cast(ops.not_equal(y_true, self.ignore_index), "float32")
        return sequence_loss(
            y_pred,
            y_true,
            weights,
            average_across_timesteps=self.average_across_timesteps,
            average_across_batch=self.average_across_batch,
            sum_over_timesteps=self.sum_over_timesteps,
            sum_over_batch=self.sum_over_batch,
            label_smoothing=self.label_smoothing,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "average_across_timesteps": self.average_across_timesteps,
                "average_across_batch": self.average_across_batch,
                "sum_over_timesteps": self.sum_over_timesteps,
                "sum_over_batch": self.sum_over_batch,
                "label_smoothing": self.label_smoothing,
                "ignore_index": self.ignore_index,
            }
        )
        return config


MEAN_REDUCTIONS = ("sum_over_batch_size", "mean")


class ReplicaTokenWeighting:
    """Makes a sequence model's loss under `tf.distribute` the loss of one device: each token
    weighs the same whichever replica holds it.

    Keras' TensorFlow trainer has every replica average the loss over its own share of the
    batch and then averages the replicas' results. When the shares hold different numbers of
    target tokens (length-bucketed batches, rows added to reach a multiple of the replica
    count, a last batch split unevenly), a token would then weigh more on the replica with
    fewer of them. Here each replica's compiled loss is rescaled by its share of the batch's
    counted tokens (summed over the replicas), which is exact for a loss that averages over
    tokens: Keras' own losses under the model's output mask (the non-padding `target_in`
    positions), or a `SequenceLoss` averaging over batch and time (its non-`ignore_index`
    targets). Other losses, other backends, and one replica are left as they are.
    """

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = super().compute_loss(
            x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training
        )
        replicas = replicas_in_step()
        if replicas == 1 or y is None:
            return loss
        counted = self._counted_tokens(x, y)
        if counted is None:
            return loss
        local = ops.sum(ops.cast(counted, "float32"))
        share = ops.divide_no_nan(local * replicas, replica_sum(local))
        # What compute_loss added besides the compiled loss (regularisers, add_loss): kept.
        additional = (
            sum((ops.sum(ops.cast(extra, "float32")) for extra in self.losses), ops.zeros(()))
            / replicas
        )
        additional = ops.cast(additional, loss.dtype)
        return (loss - additional) * ops.cast(share, loss.dtype) + additional

    def _counted_tokens(self, x, y):
        """The positions the compiled loss averages over, or `None` if it does not average
        over tokens."""
        loss = getattr(self, "loss", None)
        if isinstance(loss, SequenceLoss):
            over_tokens = (loss.sum_over_timesteps and loss.sum_over_batch) or (
                loss.average_across_timesteps and loss.average_across_batch
            )
            if not over_tokens or loss.reduction not in MEAN_REDUCTIONS:
                return None
            y = ops.convert_to_tensor(y)
            if loss.ignore_index is None:
                return ops.ones_like(y, "bool")
            return ops.not_equal(y, loss.ignore_index)
        if isinstance(loss, (dict, list, tuple)) or loss is None:
            return None
        if getattr(loss, "reduction", "sum_over_batch_size") not in MEAN_REDUCTIONS:
            return None
        return ops.not_equal(unpack_inputs(x)[1], 0)  # the model's output mask
