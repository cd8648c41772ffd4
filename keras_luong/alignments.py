"""The attention layer a model builds for each `alignment` name: one table, so that the model
never names an attention class."""

from keras_luong.bahdanau_attention import BahdanauAttention, BahdanauMonotonicAttention
from keras_luong.global_attention import GlobalAttention
from keras_luong.local_attention import LocalAttention
from keras_luong.monotonic_attention import MonotonicAttention


def _global(window, max_source_length, **arguments):
    return GlobalAttention(max_source_length=max_source_length, **arguments)


def _local(alignment):
    def make(window, max_source_length, **arguments):
        return LocalAttention(alignment=alignment, window=window, **arguments)

    return make


def _hard_monotonic(window, max_source_length, **arguments):
    # Raffel et al.'s monotonic attention, trained on its expected alignment with noise,
    # decoded hard.
    return MonotonicAttention(
        mode="parallel", inference_mode="hard", sigmoid_noise=1.0, **arguments
    )


def _bahdanau(window, max_source_length, score_units, **arguments):
    return BahdanauAttention(score_units, **arguments)


def _bahdanau_hard_monotonic(window, max_source_length, score_units, **arguments):
    return BahdanauMonotonicAttention(
        score_units, mode="parallel", inference_mode="hard", sigmoid_noise=1.0, **arguments
    )


# name -> a function of (window, max_source_length, **attention arguments) -> the layer.
ATTENTION_FOR = {
    "global": _global,
    "monotonic": _local("monotonic"),
    "predictive": _local("predictive"),
    "hard-monotonic": _hard_monotonic,
}
ALIGNMENTS = tuple(ATTENTION_FOR)
# With score_mode="bahdanau": Bahdanau's additive score, its `units` the model's.
BAHDANAU_ATTENTION_FOR = {"global": _bahdanau, "hard-monotonic": _bahdanau_hard_monotonic}


def make_attention(alignment, window=10, max_source_length=None, score_units=None, **arguments):
    """The attention layer of `alignment` (one of `ALIGNMENTS`), with `arguments` (score mode,
    attentional units, dropout, dtype, name). `score_mode="bahdanau"` gives Bahdanau's
    attention, global or hard-monotonic, with `score_units` units (the attentional units
    when `None`)."""
    if arguments.get("score_mode") == "bahdanau":
        arguments["score_units"] = score_units or arguments.get("attentional_units")
        arguments.pop("score_mode")
        if alignment not in BAHDANAU_ATTENTION_FOR:
            raise ValueError(
                "Bahdanau's score is implemented for global and hard-monotonic attention. "
                f"Received: alignment={alignment!r} with score_mode='bahdanau'"
            )
        return BAHDANAU_ATTENTION_FOR[alignment](window, max_source_length, **arguments)
    return ATTENTION_FOR[alignment](window, max_source_length, **arguments)
