"""Luong attention (Luong, Pham and Manning, 2015) as Keras 3 layers."""

import importlib
import sys

# The modules run as `python -m keras_luong.<name>`.
_COMMAND_LINES = (
    "keras_luong.prepare",
    "keras_luong.translate",
    "keras_luong.evaluate",
    "keras_luong.train",
)


def _starting_the_command_line():
    """True while a command line (`python -m keras_luong.prepare`, `.translate`,
    `.evaluate`, `.train`) is starting: Python imports this package first, with
    `sys.argv[0]` set to "-m" until it has found the module. Its `--help` and argument
    errors then answer without importing Keras (seconds with TensorFlow or torch); the tool
    imports what it runs once its arguments are read."""
    argv = getattr(sys, "orig_argv", [])
    return sys.argv[:1] == ["-m"] and any(
        a == "-m" and b in _COMMAND_LINES for a, b in zip(argv, argv[1:], strict=False)
    )


if not _starting_the_command_line():
    from keras_luong.alignments import register_alignment
    from keras_luong.averaging import CheckpointAverage, average_models
    from keras_luong.bahdanau_attention import BahdanauAttention, BahdanauMonotonicAttention
    from keras_luong.bahdanau_decoder import BahdanauCell, BahdanauDecoder
    from keras_luong.base_attention import BaseLuongAttention
    from keras_luong.batching import BucketedBatches
    from keras_luong.callbacks import AttentionCallback, BleuCallback, SigmaSchedule
    from keras_luong.decoder import LuongDecoder
    from keras_luong.ensemble import Ensemble
    from keras_luong.global_attention import GlobalAttention
    from keras_luong.input_feeding_cell import InputFeedingCell
    from keras_luong.local_attention import LocalAttention
    from keras_luong.location_attention import LocationSensitiveAttention
    from keras_luong.losses import SequenceLoss
    from keras_luong.model_parts import RecurrentEncoder
    from keras_luong.monotonic_attention import MonotonicAttention
    from keras_luong.paper import HalvingSchedule
    from keras_luong.samplers import BeamSearchSampler, GreedySampler
    from keras_luong.scheduled_sampling import ScheduledSampling
    from keras_luong.seq2seq import LuongSeq2Seq
    from keras_luong.vocabulary import SubwordVocabulary, Vocabulary

from keras_luong.version import __version__  # noqa: E402, F401

__all__ = [
    "AttentionCallback",
    "BahdanauAttention",
    "BahdanauCell",
    "BahdanauDecoder",
    "BahdanauMonotonicAttention",
    "BaseLuongAttention",
    "BeamSearchSampler",
    "BleuCallback",
    "BucketedBatches",
    "CheckpointAverage",
    "Ensemble",
    "GlobalAttention",
    "GreedySampler",
    "HalvingSchedule",
    "InputFeedingCell",
    "LocalAttention",
    "LocationSensitiveAttention",
    "LuongDecoder",
    "LuongSeq2Seq",
    "MonotonicAttention",
    "RecurrentEncoder",
    "ScheduledSampling",
    "SequenceLoss",
    "SigmaSchedule",
    "SubwordVocabulary",
    "Vocabulary",
    "average_models",
    "register_alignment",
]


def __getattr__(name):
    # The names above, imported when first asked for where the command line skipped them.
    if name in __all__:
        module = importlib.import_module(_MODULES[name])
        return getattr(module, name)
    raise AttributeError(f"module 'keras_luong' has no attribute {name!r}")


_MODULES = {
    "AttentionCallback": "keras_luong.callbacks",
    "BahdanauAttention": "keras_luong.bahdanau_attention",
    "BahdanauCell": "keras_luong.bahdanau_decoder",
    "BahdanauDecoder": "keras_luong.bahdanau_decoder",
    "BahdanauMonotonicAttention": "keras_luong.bahdanau_attention",
    "BaseLuongAttention": "keras_luong.base_attention",
    "BeamSearchSampler": "keras_luong.samplers",
    "BleuCallback": "keras_luong.callbacks",
    "BucketedBatches": "keras_luong.batching",
    "GlobalAttention": "keras_luong.global_attention",
    "GreedySampler": "keras_luong.samplers",
    "InputFeedingCell": "keras_luong.input_feeding_cell",
    "LocalAttention": "keras_luong.local_attention",
    "LocationSensitiveAttention": "keras_luong.location_attention",
    "LuongDecoder": "keras_luong.decoder",
    "LuongSeq2Seq": "keras_luong.seq2seq",
    "HalvingSchedule": "keras_luong.paper",
    "Ensemble": "keras_luong.ensemble",
    "CheckpointAverage": "keras_luong.averaging",
    "MonotonicAttention": "keras_luong.monotonic_attention",
    "RecurrentEncoder": "keras_luong.model_parts",
    "ScheduledSampling": "keras_luong.scheduled_sampling",
    "SequenceLoss": "keras_luong.losses",
    "SigmaSchedule": "keras_luong.callbacks",
    "SubwordVocabulary": "keras_luong.vocabulary",
    "Vocabulary": "keras_luong.vocabulary",
    "average_models": "keras_luong.averaging",
    "register_alignment": "keras_luong.alignments",
}
