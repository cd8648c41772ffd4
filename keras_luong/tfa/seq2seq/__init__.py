"""tensorflow-addons 0.23's `tfa.seq2seq` names over keras-luong's layers.

    import keras_luong.tfa as tfa

    attention = tfa.seq2seq.LuongAttention(units, memory, memory_sequence_length=lengths)

Every public name of tensorflow-addons' `tfa.seq2seq` is here, and its modules
(`attention_wrapper`, `basic_decoder`, `beam_search_decoder`, `decoder`, `loss`, `sampler`) too,
so `from keras_luong.tfa.seq2seq import attention_wrapper` works as it did.
"""

from keras_luong.tfa.seq2seq.attention_wrapper import (
    AttentionMechanism,
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    hardmax,
    monotonic_attention,
    safe_cumprod,
)
from keras_luong.tfa.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from keras_luong.tfa.seq2seq.beam_search_decoder import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    gather_tree,
    gather_tree_from_array,
    tile_batch,
)
from keras_luong.tfa.seq2seq.decoder import BaseDecoder, Decoder, dynamic_decode
from keras_luong.tfa.seq2seq.loss import SequenceLoss, sequence_loss
from keras_luong.tfa.seq2seq.sampler import (
    CustomSampler,
    GreedyEmbeddingSampler,
    InferenceSampler,
    SampleEmbeddingSampler,
    Sampler,
    ScheduledEmbeddingTrainingSampler,
    ScheduledOutputTrainingSampler,
    TrainingSampler,
)

__all__ = [
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BaseDecoder",
    "BasicDecoder",
    "BasicDecoderOutput",
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "CustomSampler",
    "Decoder",
    "FinalBeamSearchDecoderOutput",
    "GreedyEmbeddingSampler",
    "InferenceSampler",
    "SampleEmbeddingSampler",
    "Sampler",
    "ScheduledEmbeddingTrainingSampler",
    "ScheduledOutputTrainingSampler",
    "TrainingSampler",
    "dynamic_decode",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "LuongAttention",
    "LuongMonotonicAttention",
    "SequenceLoss",
    "gather_tree",
    "gather_tree_from_array",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
    "sequence_loss",
    "tile_batch",
]
