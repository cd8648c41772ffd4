"""tensorflow-addons' `sequence_loss` and `SequenceLoss`, over keras-luong's sequence loss."""

import keras
from keras import ops

from keras_luong.training.losses import check_reduction, reduce_sequence_loss
from keras_luong.training.losses import sequence_loss as keras_luong_sequence_loss


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    softmax_loss_function=None,
    name=None,
):
    """The weighted cross-entropy of a sequence's logits, reduced as the flags say:
    tensorflow-addons' `sequence_loss` (see `keras_luong.training.losses.sequence_loss`).

    Args:
        logits: The logits `[batch, time, classes]`.
        targets: The target ids `[batch, time]`.
        weights: Each token's weight `[batch, time]`.
        average_across_timesteps: Divide by the weights' sum over time. Defaults to `True`.
        average_across_batch: Divide by the weights' sum over the batch. Defaults to `True`.
        sum_over_timesteps: Divide by the number of non-zero weights over time. Defaults to
            `False`.
        sum_over_batch: Divide by the number of non-zero weights over the batch. Defaults to
            `False`.
        softmax_loss_function: Optional `f(labels=, logits=)` in place of the cross-entropy,
            given the flattened ids `[batch * time]` and logits `[batch * time, classes]`.
        name: Unused (tensorflow-addons' name scope).
    """
    check_reduction(
        average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
    )
    for argument, value, rank in (("logits", logits, 3), ("targets", targets, 2)):
        if value is None or len(ops.shape(value)) != rank:
            raise ValueError(
                f"Invalid value for argument {argument}. Expected a tensor of rank {rank} "
                "([batch_size, sequence_length"
                + (", classes])." if rank == 3 else "]).")
                + f" Received: {argument}.shape={None if value is None else ops.shape(value)}"
            )
    if weights is None or len(ops.shape(weights)) != 2:
        raise ValueError(
            "Invalid value for argument weights. Expected a tensor of rank 2 ([batch_size, "
            "sequence_length]). Received: "
            f"weights.shape={None if weights is None else ops.shape(weights)}"
        )
    flags = (average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch)
    if softmax_loss_function is None:
        return keras_luong_sequence_loss(logits, targets, weights, *flags)
    logits = ops.convert_to_tensor(logits)
    shape = ops.shape(targets)
    crossent = softmax_loss_function(
        labels=ops.reshape(targets, (-1,)), logits=ops.reshape(logits, (-1, logits.shape[-1]))
    )
    return reduce_sequence_loss(ops.reshape(crossent, shape), weights, *flags)


class SequenceLoss(keras.losses.Loss):
    """tensorflow-addons' `SequenceLoss`: `sequence_loss` of `y_pred` against `y_true`,
    `sample_weight` its weights (ones when not given), reduced by its flags alone (Keras'
    reduction is `"none"`). Its defaults give the mean over the tokens of non-zero weight.

    Args:
        average_across_timesteps: See `sequence_loss`. Defaults to `False`.
        average_across_batch: See `sequence_loss`. Defaults to `False`.
        sum_over_timesteps: See `sequence_loss`. Defaults to `True`.
        sum_over_batch: See `sequence_loss`. Defaults to `True`.
        softmax_loss_function: See `sequence_loss`.
        name: The loss's name. Defaults to `"sequence_loss"`.
    """

    def __init__(
        self,
        average_across_timesteps=False,
        average_across_batch=False,
        sum_over_timesteps=True,
        sum_over_batch=True,
        softmax_loss_function=None,
        name=None,
    ):
        super().__init__(reduction="none", name=name or "sequence_loss")
        check_reduction(
            average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
        )
        self.average_across_timesteps = average_across_timesteps
        self.average_across_batch = average_across_batch
        self.sum_over_timesteps = sum_over_timesteps
        self.sum_over_batch = sum_over_batch
        self.softmax_loss_function = softmax_loss_function

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        if len(y_true.shape) == 3 and y_true.shape[-1] == y_pred.shape[-1]:
            y_true = ops.argmax(y_true, axis=-1)  # one-hot targets, as Keras' fit passes them
        if sample_weight is None:
            sample_weight = ops.ones(ops.shape(y_true)[:2])
        return sequence_loss(
            y_pred,
            y_true,
            sample_weight,
            average_across_timesteps=self.average_across_timesteps,
            average_across_batch=self.average_across_batch,
            sum_over_timesteps=self.sum_over_timesteps,
            sum_over_batch=self.sum_over_batch,
            softmax_loss_function=self.softmax_loss_function,
        )

    def call(self, y_true, y_pred):
        return self(y_true, y_pred)

    def get_config(self):
        return {
            "name": self.name,
            "average_across_timesteps": self.average_across_timesteps,
            "average_across_batch": self.average_across_batch,
            "sum_over_timesteps": self.sum_over_timesteps,
            "sum_over_batch": self.sum_over_batch,
        }
