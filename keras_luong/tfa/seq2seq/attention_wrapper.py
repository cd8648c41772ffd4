"""tensorflow-addons' `attention_wrapper` module: the attention mechanisms and their
functions (see `keras_luong.tfa.seq2seq.mechanisms` and `.monotonic`)."""

from keras_luong.tfa.seq2seq.mechanisms import (  # noqa: F401
    AttentionMechanism,
    BahdanauAttention,
    LuongAttention,
    hardmax,
    safe_cumprod,
)
from keras_luong.tfa.seq2seq.monotonic import (  # noqa: F401
    BahdanauMonotonicAttention,
    LuongMonotonicAttention,
    monotonic_attention,
)
