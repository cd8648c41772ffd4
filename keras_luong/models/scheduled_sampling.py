"""Scheduled sampling (Bengio, Vinyals, Jaitly and Shazeer, 2015): in training, the decoder's
input at a step is, with some probability, the model's own prediction at the step before
instead of the gold token, so that it learns from the inputs it will see when decoding.

`LuongSeq2Seq(scheduled_sampling="argmax" | "sample", sampling_probability=p)` trains so;
`ScheduledSampling`, a callback, raises `p` over training by Bengio et al.'s decays.
"""

import math

import keras
from keras import ops

from keras_luong.checks import MASKED_SCORE, check_integer, check_number, check_one_of
from keras_luong.generation.generator import start_decoding

MODES = ("argmax", "sample")


def check_arguments(scheduled_sampling, sampling_probability):
    """`LuongSeq2Seq`'s `scheduled_sampling` (`None` or one of `MODES`) checked, and its
    `sampling_probability` as a float in [0, 1]."""
    if scheduled_sampling is not None:
        check_one_of("scheduled_sampling", scheduled_sampling, MODES)
    sampling_probability = check_number("sampling_probability", sampling_probability, 0.0)
    if sampling_probability > 1:
        raise ValueError(
            "Invalid value for argument sampling_probability. Expected a probability in "
            f"[0, 1]. Received: sampling_probability={sampling_probability!r}"
        )
    return sampling_probability


def sampling_state(model, scheduled_sampling, sampling_probability):
    """`(sampling_probability, sampling_seed)` of `model`: with `scheduled_sampling`, a
    non-trainable variable that `ScheduledSampling` sets and the seed of the draws; without,
    the float and `None`."""
    if scheduled_sampling is None:
        return sampling_probability, None
    variable = model.add_weight(
        shape=(),
        initializer=keras.initializers.Constant(sampling_probability),
        trainable=False,
        dtype="float32",
        name="sampling_probability",
    )
    return variable, keras.random.SeedGenerator(0, name="sampling_seed")


SCHEDULES = ("linear", "exponential", "inverse_sigmoid")


def scheduled_logits(model, source, target_in, training):
    """The logits `(B, T, V)` of `model` on `(source, target_in)` where each target step's
    input is the model's own prediction at the step before with probability
    `model.sampling_probability` (the start token and padded steps are always the gold ones),
    the prediction being the argmax of its logits or a sample from them (Gumbel-max).

    Every random draw happens before the loop (the choice of the steps, the Gumbel noise,
    the dropout masks of the embeddings, `h̃`, the attention and the cell), as in
    `LuongDecoder`: a draw inside a compiled JAX loop would leak its seed's state. The
    predictions are not differentiated through (as in the paper)."""
    if not model.built:  # build the layers outside the loop: weights made in a JAX scan leak
        model((source[:1], target_in[:1]))
    decoder = model.decoder
    memory, states, _ = start_decoding(model, source, training=training)
    batch, steps = ops.shape(target_in)[0], ops.shape(target_in)[1]

    seed = model.sampling_seed
    vocabulary = model.target_vocabulary_size
    chosen = keras.random.uniform((batch, steps), seed=seed) < ops.cast(
        model.sampling_probability, "float32"
    )
    chosen = ops.logical_and(chosen, ops.arange(steps)[None, :] > 0)
    if model.scheduled_sampling == "sample":
        uniform = keras.random.uniform((batch, steps, vocabulary), 1e-7, 1.0, seed=seed)
        noise = -ops.log(-ops.log(uniform))
    else:
        noise = ops.zeros((batch, steps, 1))
    # The model's dropout layer draws its masks for every step at once (ones in, mask out).
    ones = ops.ones((batch, steps, model.embedding_dim), decoder.compute_dtype)
    embedding_keep = model.dropout_layer(ones, training=training)
    ones = ops.ones((batch, steps, decoder.cell.output_size), decoder.compute_dtype)
    output_keep = model.dropout_layer(ones, training=training)
    # Padding and the start token are never predicted (as in `generate`).
    banned = ops.arange(vocabulary) < 2

    def step(x_t, states, t, memory):
        gold, use_prediction, noise_t, embedding_keep_t, output_keep_t = x_t
        *states, previous = states  # (B, 1): the loop keeps states of rank 2 and more
        token = ops.where(use_prediction, previous[:, 0], gold)
        logits, _, states = model.next_token_logits(
            token, states, memory, t, training=training,
            dropout_masks=(embedding_keep_t, output_keep_t),
        )  # fmt: skip
        scores = ops.where(banned[None, :], MASKED_SCORE, ops.cast(logits, "float32"))
        prediction = ops.argmax(ops.stop_gradient(scores) + noise_t, axis=-1, keepdims=True)
        return [logits], [*states, ops.cast(prediction, "int32")]

    target_in = ops.cast(target_in, "int32")
    valid = ops.not_equal(target_in, 0)
    inputs = (target_in, chosen, noise, embedding_keep, output_keep)
    logits_like = [ops.zeros((batch, vocabulary), model.compute_dtype)]
    (logits,), _ = decoder.run_steps(
        step, [*states, target_in[:, :1]], inputs, valid, memory, model.embedding_dim,
        logits_like, training,
    )  # fmt: skip
    # A padded step's h̃ is zero, as in teacher forcing: its logits are the projection of 0.
    padded = model.projection(ops.zeros((1, 1, decoder.cell.output_size), decoder.compute_dtype))
    return ops.where(ops.expand_dims(valid, -1), logits, ops.cast(padded, logits.dtype))


@keras.saving.register_keras_serializable(package="keras_luong")
class ScheduledSampling(keras.callbacks.Callback):
    """Sets a model's `sampling_probability` at the start of every epoch (or batch) by one of
    the decays of Bengio et al. (2015), which give the probability `ε_i` of feeding the gold
    token at training step `i`; the model's own prediction is fed with `1 - ε_i`:

    ```
    linear            ε_i = max(minimum, k - c·i)
    exponential       ε_i = max(minimum, k^i)          (k < 1)
    inverse_sigmoid   ε_i = max(minimum, k / (k + exp(i / k)))   (k ≥ 1)
    ```

    The model must be built with `scheduled_sampling="argmax"` or `"sample"`.

    Args:
        schedule: `"linear"`, `"exponential"` or `"inverse_sigmoid"`.
        k: The decay's `k`. Defaults to 1.0 (linear), 0.9 (exponential), 5.0 (inverse
            sigmoid) when `None`.
        c: The linear decay's slope. Defaults to 0.1.
        minimum: The least `ε_i` (the share of gold tokens never goes below it). Defaults
            to 0.
        per: `"epoch"` (`i` counts epochs) or `"batch"` (`i` counts training steps).
            Defaults to `"epoch"`.

    Example:

    >>> schedule = ScheduledSampling("linear", k=1.0, c=0.25)
    >>> [round(1 - schedule.gold_probability(i), 2) for i in range(5)]  # p per epoch
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> # model = LuongSeq2Seq(..., scheduled_sampling="argmax")
    >>> # model.fit(..., callbacks=[schedule])
    """

    def __init__(self, schedule="inverse_sigmoid", k=None, c=0.1, minimum=0.0, per="epoch"):
        super().__init__()
        check_one_of("schedule", schedule, SCHEDULES)
        check_one_of("per", per, ("epoch", "batch"))
        default = {"linear": 1.0, "exponential": 0.9, "inverse_sigmoid": 5.0}[schedule]
        k = default if k is None else k
        if schedule == "exponential":
            check_number("k", k, minimum=0.0, exclusive=True)
            if k >= 1:
                raise ValueError(
                    "Invalid value for argument k. The exponential decay needs 0 < k < 1. "
                    f"Received: k={k!r}"
                )
        elif schedule == "inverse_sigmoid":
            check_number("k", k, minimum=1.0)
        else:
            check_number("k", k)
        self.schedule = schedule
        self.k = k
        self.c = check_number("c", c)
        self.minimum = check_number("minimum", minimum, minimum=0.0)
        self.per = per
        self.step = 0

    def gold_probability(self, i):
        """`ε_i`: the probability of feeding the gold token at step (or epoch) `i`.

        Args:
            i: The step (or epoch), counted from 0.

        Returns:
            A float in [`minimum`, 1].
        """
        check_integer("i", i, minimum=0)
        if self.schedule == "linear":
            epsilon = self.k - self.c * i
        elif self.schedule == "exponential":
            epsilon = self.k**i
        else:
            epsilon = self.k / (self.k + math.exp(min(i / self.k, 700.0)))
        return min(1.0, max(self.minimum, epsilon))

    def _set(self, i):
        if getattr(self.model, "scheduled_sampling", None) is None:
            raise ValueError(
                "ScheduledSampling needs a model built with scheduled_sampling='argmax' or "
                f"'sample'. Received: a model with scheduled_sampling="
                f"{getattr(self.model, 'scheduled_sampling', None)!r}"
            )
        self.model.sampling_probability.assign(1.0 - self.gold_probability(i))

    def on_epoch_begin(self, epoch, logs=None):
        if self.per == "epoch":
            self._set(epoch)

    def on_train_batch_begin(self, batch, logs=None):
        if self.per == "batch":
            self._set(self.step)
            self.step += 1

    def get_config(self):
        return {
            "schedule": self.schedule,
            "k": self.k,
            "c": self.c,
            "minimum": self.minimum,
            "per": self.per,
        }
