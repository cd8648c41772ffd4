"""Luong attention (Luong, Pham and Manning, 2015) as Keras 3 layers.

The package is laid out by concern:

- `attention/`: the attention protocol, the shared base and its scores, the alignment
  registry, and one module per mechanism;
- `decoders/`: the one-step cells and the decoders that own the loop;
- `samplers/`: greedy decoding and beam search, in keras-hub's call convention;
- `generation/`: `generate`/`translate`, the compiled generator and its export formats;
- `models/`: `LuongSeq2Seq`, its parts, `Ensemble`, scheduled sampling and the presets;
- `data/`: vocabularies, batching and corpora prepared on disk; `datasets/`: the loaders;
- `training/`: losses, callbacks, checkpoint averaging and the allocator setting;
- `backend/`: the loops and every backend-specific fast path, in one place;
- the command lines: `prepare`, `train`, `translate`, `evaluate` and `demo`.
"""

import ast
import importlib
import sys

from keras_luong.version import __version__

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


# The public names, each imported from its home: the one list of them. `__all__` and the
# look-up of a name that a starting command line skipped are read from these lines. Importing
# a class registers it with Keras, so a saved `.keras` file loads after `import keras_luong`.
if not _starting_the_command_line():
    from keras_luong.attention.alignments import register_alignment
    from keras_luong.attention.bahdanau_attention import (
        BahdanauAttention,
        BahdanauMonotonicAttention,
    )
    from keras_luong.attention.base import BaseLuongAttention
    from keras_luong.attention.global_attention import GlobalAttention
    from keras_luong.attention.local_attention import LocalAttention
    from keras_luong.attention.location_attention import LocationSensitiveAttention
    from keras_luong.attention.monotonic_attention import MonotonicAttention
    from keras_luong.data.batching import BucketedBatches
    from keras_luong.data.subword_vocabulary import SubwordVocabulary
    from keras_luong.data.vocabulary import Vocabulary
    from keras_luong.decoders.bahdanau_decoder import BahdanauCell, BahdanauDecoder
    from keras_luong.decoders.input_feeding_cell import InputFeedingCell
    from keras_luong.decoders.luong_decoder import LuongDecoder
    from keras_luong.generation.scoring import TokenScores
    from keras_luong.generation.word_alignments import Alignment
    from keras_luong.models.ensemble import Ensemble
    from keras_luong.models.parts import RecurrentEncoder
    from keras_luong.models.presets import HalvingSchedule
    from keras_luong.models.scheduled_sampling import ScheduledSampling
    from keras_luong.models.seq2seq import LuongSeq2Seq
    from keras_luong.samplers import BeamSearchSampler, GreedySampler, RandomSampler
    from keras_luong.training.averaging import CheckpointAverage, average_models
    from keras_luong.training.callbacks import AttentionCallback, BleuCallback
    from keras_luong.training.losses import SequenceLoss
    from keras_luong.training.sigma_schedule import SigmaSchedule


def _public_names():
    """`{name: module}` for the imports above, read from this file (no import needed)."""
    with open(__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {alias.name: node.module for node in block.body for alias in node.names}


_MODULES = _public_names()
__all__ = sorted(_MODULES)


def __getattr__(name):
    # A public name that a starting command line skipped, imported when first asked for.
    if name in _MODULES:
        value = getattr(importlib.import_module(_MODULES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keras_luong' has no attribute {name!r}")
