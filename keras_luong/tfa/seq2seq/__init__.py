"""tensorflow-addons 0.23's `tfa.seq2seq` names over keras-luong's layers.

    import keras_luong.tfa as tfa

    attention = tfa.seq2seq.LuongAttention(units, memory, memory_sequence_length=lengths)

The modules are tensorflow-addons' own (`attention_wrapper`, `beam_search_decoder`, `loss`),
so `from keras_luong.tfa.seq2seq import attention_wrapper` works as it did. A tensorflow-addons
name this namespace does not provide yet raises an `AttributeError` that names what to use.
"""

from keras_luong.tfa.seq2seq.attention_wrapper import (
    AttentionMechanism,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    hardmax,
    monotonic_attention,
    safe_cumprod,
)
from keras_luong.tfa.seq2seq.beam_search_decoder import (
    gather_tree,
    gather_tree_from_array,
    tile_batch,
)
from keras_luong.tfa.seq2seq.loss import SequenceLoss, sequence_loss
from keras_luong.tfa.seq2seq.not_yet import not_provided_yet

__all__ = [
    "AttentionMechanism",
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

__getattr__ = not_provided_yet("keras_luong.tfa.seq2seq")
