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


class PaperPreset:
    """Gives a model class `paper()`, the model of section 4.1 (`PAPER`)."""

    @classmethod
    def paper(cls, source_vocabulary_size=50000, target_vocabulary_size=50000, **overrides):
        """The model of Luong, Pham and Manning (2015, section 4.1): 4 stacked LSTM layers of
        1000 cells in the encoder and the decoder, 1000-dimensional embeddings, the source
        reversed, every weight uniform in ±0.1, the decoder started from the encoder's final
        states layer for layer (`bridge="copy"`). The attention is their best single model's
        (`alignment="local-p"`, the general score, input feeding, dropout 0.2);
        Table 1's other attentional rows are `alignment="global", score_mode="location"`
        (with `max_source_length`), `input_feeding=False` and `dropout=0.0`. `overrides`
        replace any argument (for example `units=` for a smaller run).

        Train it as they did: `keras.optimizers.SGD(HalvingSchedule(steps_per_epoch,
        halve_after=5), global_clipnorm=5.0)` for 10 epochs (12 epochs and `halve_after=8`
        with dropout), batches of 128 pairs, sentences over 50 words dropped. (`dropout` here
        applies to the embeddings, to `h̃` and between the stacked layers of the encoder and
        of the decoder, as the paper's did; between the decoder's layers it is Keras' cell
        dropout, one mask per sequence where the paper drew one per step.)

        Args:
            source_vocabulary_size: Source ids. Defaults to 50000 (the paper's 50K words).
            target_vocabulary_size: Target ids. Defaults to 50000.
            **overrides: Any argument of `LuongSeq2Seq`, replacing the paper's.
        """
        initializer = keras.initializers.RandomUniform(-0.1, 0.1)
        arguments = {**PAPER, "initializer": initializer, **overrides}
        return cls(source_vocabulary_size, target_vocabulary_size, **arguments)


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
