"""Luong attention (Luong, Pham and Manning, 2015) as Keras 3 layers."""

from keras_luong.bahdanau_attention import BahdanauAttention, BahdanauMonotonicAttention
from keras_luong.bahdanau_decoder import BahdanauCell, BahdanauDecoder
from keras_luong.base_attention import BaseLuongAttention
from keras_luong.batching import BucketedBatches
from keras_luong.callbacks import BleuCallback
from keras_luong.decoder import LuongDecoder
from keras_luong.global_attention import GlobalAttention
from keras_luong.input_feeding_cell import InputFeedingCell
from keras_luong.local_attention import LocalAttention
from keras_luong.losses import SequenceLoss
from keras_luong.monotonic_attention import MonotonicAttention
from keras_luong.samplers import BeamSearchSampler, GreedySampler
from keras_luong.scheduled_sampling import ScheduledSampling
from keras_luong.seq2seq import LuongSeq2Seq
from keras_luong.vocabulary import SubwordVocabulary, Vocabulary

__version__ = "0.1.0"

__all__ = [
    "BahdanauAttention",
    "BahdanauCell",
    "BahdanauDecoder",
    "BahdanauMonotonicAttention",
    "BaseLuongAttention",
    "BeamSearchSampler",
    "BleuCallback",
    "BucketedBatches",
    "GlobalAttention",
    "GreedySampler",
    "InputFeedingCell",
    "LocalAttention",
    "LuongDecoder",
    "LuongSeq2Seq",
    "MonotonicAttention",
    "ScheduledSampling",
    "SequenceLoss",
    "SubwordVocabulary",
    "Vocabulary",
]
