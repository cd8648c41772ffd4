"""The model and training schedule of Luong, Pham and Manning (2015), section 4.1."""

import keras
from keras import ops

from keras_luong.checks import check_integer, check_number

# Section 4.1: 4 stacked LSTM layers of 1000 cells on each side, 1000-dimensional embeddings,
# the source reversed, every parameter uniform in [-0.1, 0.1], vocabularies of the 50K most
# frequent words, the decoder started from the encoder's final states layer for layer; their
# best single model attends with local-p and the general score, feeds its input and trains
# with dropout 0.2.
PAPER = {
    "units": 1000,
    "embedding_dim": 1000,
    "encoder_layers": 4,
    "decoder_layers": 4,
    "bidirectional": False,
    "reverse_source": True,
    "bridge": "copy",
    "window": 10,
    "alignment": "local-p",
    "score_mode": "general",
    "input_feeding": True,
    "dropout": 0.2,
}


def paper_arguments(**overrides):
    """The arguments of `LuongSeq2Seq` as the paper built it (`PAPER`, and its uniform
    ±0.1 initializer), `overrides` replacing any of them: see `LuongSeq2Seq.paper`."""
    return {
        **PAPER,
        "initializer": keras.initializers.RandomUniform(-0.1, 0.1),
        **overrides,
    }


@keras.saving.register_keras_serializable(package="keras_luong")
class HalvingSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A constant learning rate halved at the start of every epoch after `halve_after`
    epochs: the paper's SGD schedule (rate 1.0; halved every epoch after epoch 5, or after
    epoch 8 when training with dropout for 12 epochs).

    ```
    rate(step) = initial_learning_rate · 0.5 ** max(0, epoch - halve_after + 1),
    epoch = step // steps_per_epoch   (0-based)
    ```

    Args:
        steps_per_epoch: Optimizer steps in one epoch (batches of the training data).
        initial_learning_rate: Defaults to 1.0.
        halve_after: Epochs at the initial rate before the first halving. Defaults to 5.

    Example:

    >>> schedule = HalvingSchedule(steps_per_epoch=100, halve_after=5)
    >>> [float(schedule(step)) for step in (0, 499, 500, 600, 750)]
    [1.0, 1.0, 0.5, 0.25, 0.125]
    >>> optimizer = keras.optimizers.SGD(schedule, global_clipnorm=5.0)  # the paper's
    """

    def __init__(self, steps_per_epoch, initial_learning_rate=1.0, halve_after=5):
        self.steps_per_epoch = check_integer("steps_per_epoch", steps_per_epoch)
        self.initial_learning_rate = check_number(
            "initial_learning_rate", initial_learning_rate, minimum=0, exclusive=True
        )
        self.halve_after = check_integer("halve_after", halve_after, minimum=0)

    def __call__(self, step):
        epoch = ops.floor_divide(ops.cast(step, "float32"), float(self.steps_per_epoch))
        halvings = ops.maximum(epoch - self.halve_after + 1.0, 0.0)
        return self.initial_learning_rate * ops.power(0.5, halvings)

    def get_config(self):
        return {
            "steps_per_epoch": self.steps_per_epoch,
            "initial_learning_rate": self.initial_learning_rate,
            "halve_after": self.halve_after,
        }
