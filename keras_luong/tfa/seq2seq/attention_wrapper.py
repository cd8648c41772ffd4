"""tensorflow-addons' `attention_wrapper` module: the attention mechanisms and their
functions, and `AttentionWrapper` with its state (see `keras_luong.tfa.seq2seq.mechanisms`,
`.monotonic` and `.wrapper`)."""

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
from keras_luong.tfa.seq2seq.wrapper import (  # noqa: F401
    AttentionWrapper,
    AttentionWrapperState,
)
