"""tensorflow-addons' monotonic attention: `monotonic_attention` and the two monotonic
mechanisms, over keras-luong's `MonotonicAttention` and `BahdanauMonotonicAttention`."""

import keras
from keras import ops

from keras_luong.attention.bahdanau_attention import (
    BahdanauMonotonicAttention as KerasBahdanauMonotonicAttention,
)
from keras_luong.attention.monotonic_attention import MonotonicAttention, monotonic_alignment
from keras_luong.checks import check_one_of
from keras_luong.tfa.seq2seq.mechanisms import AttentionMechanism

MONOTONIC_MODES = ("recursive", "parallel", "hard")


def monotonic_attention(p_choose_i, previous_attention, mode):
    """Raffel et al.'s monotonic alignment `(batch, max_time)` from the stopping probabilities
    and the previous alignment: tensorflow-addons' `monotonic_attention`.

    Args:
        p_choose_i: The probabilities of stopping at each position `(batch, max_time)`.
        previous_attention: The previous step's alignment `(batch, max_time)` (one-hot at
            the first position before the first step).
        mode: `"recursive"` (exact), `"parallel"` (closed form) or `"hard"` (for 0/1
            probabilities).
    """
    check_one_of("mode", mode, MONOTONIC_MODES)
    p = ops.convert_to_tensor(p_choose_i)
    return monotonic_alignment(p, ops.cast(previous_attention, p.dtype), mode)


class MonotonicMechanism(AttentionMechanism):
    """What tensorflow-addons' two monotonic mechanisms share: the stopping probabilities
    `sigmoid(score + r + noise)` (0/1 in `"hard"` mode) by the keras-luong layer, then
    `monotonic_attention` from the previous alignments (the state), which start one-hot at
    the first position. Noise of standard deviation `sigmoid_noise` is added at every call,
    as tensorflow-addons adds it."""

    def alignments(self, query, state, memory):
        noisy = self.sigmoid_noise > 0
        p = self.attention.stop_probabilities(query[:, None], memory, training=noisy)
        alignments = monotonic_alignment(p[:, 0], ops.cast(state, p.dtype), self.mode)
        return alignments, alignments

    def initial_alignments(self, batch_size, dtype):
        """One-hot at the first position `(batch_size, max_time)`."""
        first = ops.zeros((batch_size,), dtype="int32")
        return ops.one_hot(first, ops.shape(self.values)[1], dtype=dtype)

    def monotonic_config(self):
        return {
            "sigmoid_noise": self.sigmoid_noise,
            "sigmoid_noise_seed": self.sigmoid_noise_seed,
            "score_bias_init": self.score_bias_init,
            "mode": self.mode,
        }


class LuongMonotonicAttention(MonotonicMechanism):
    """tensorflow-addons' `LuongMonotonicAttention` over keras-luong's
    `MonotonicAttention(score_mode="general")` (`attention_score_bias` is its `score_bias`).

    Args:
        units: The depth of the keys, which must be the query's depth.
        memory: Optional memory `(batch, max_time, depth)`; else `setup_memory` sets it.
        memory_sequence_length: Optional lengths `(batch,)` of the memory's rows.
        scale: Whether a learned scalar multiplies the score. Defaults to `False`.
        sigmoid_noise: The pre-sigmoid noise's standard deviation. Defaults to 0.
        sigmoid_noise_seed: The noise's seed.
        score_bias_init: The score bias' initial value. Defaults to 0.
        mode: `"parallel"` (the default), `"recursive"` or `"hard"`.
        dtype: The layer's dtype.
        name: The layer's name. Defaults to `"LuongMonotonicAttention"`.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        scale=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        dtype=None,
        name="LuongMonotonicAttention",
        **kwargs,
    ):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.units, self.scale = units, scale
        self.sigmoid_noise, self.sigmoid_noise_seed = sigmoid_noise, sigmoid_noise_seed
        self.score_bias_init, self.mode = (
            score_bias_init,
            check_one_of("mode", mode, MONOTONIC_MODES),
        )
        self.attention = MonotonicAttention(
            score_mode="general",
            use_scale=scale,
            mode=mode,
            score_bias_init=score_bias_init,
            sigmoid_noise=sigmoid_noise,
            seed=sigmoid_noise_seed,
            name="luong_monotonic_attention",
            dtype=dtype,
        )
        self._setup_given_memory(memory, memory_sequence_length)

    def _known_query_depth(self):
        return self.units

    def get_config(self):
        config = {**super().get_config(), "units": self.units, "scale": self.scale}
        return {**config, **self.monotonic_config()}


class BahdanauMonotonicAttention(MonotonicMechanism):
    """tensorflow-addons' `BahdanauMonotonicAttention` over keras-luong's own
    (`attention_score_bias` is its `score_bias`).

    Args:
        units: The width of the score's hidden layer.
        memory: Optional memory `(batch, max_time, depth)`; else `setup_memory` sets it.
        memory_sequence_length: Optional lengths `(batch,)` of the memory's rows.
        normalize: Whether the score is weight normalised. Defaults to `False`.
        sigmoid_noise: The pre-sigmoid noise's standard deviation. Defaults to 0.
        sigmoid_noise_seed: The noise's seed.
        score_bias_init: The score bias' initial value. Defaults to 0.
        mode: `"parallel"` (the default), `"recursive"` or `"hard"`.
        kernel_initializer: The kernels' initializer. Defaults to `"glorot_uniform"`.
        dtype: The layer's dtype.
        name: The layer's name. Defaults to `"BahdanauMonotonicAttention"`.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        normalize=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        kernel_initializer="glorot_uniform",
        dtype=None,
        name="BahdanauMonotonicAttention",
        **kwargs,
    ):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.units, self.normalize = units, normalize
        self.kernel_initializer = kernel_initializer
        self.sigmoid_noise, self.sigmoid_noise_seed = sigmoid_noise, sigmoid_noise_seed
        self.score_bias_init, self.mode = (
            score_bias_init,
            check_one_of("mode", mode, MONOTONIC_MODES),
        )
        self.attention = KerasBahdanauMonotonicAttention(
            units,
            normalize=normalize,
            mode=mode,
            score_bias_init=score_bias_init,
            sigmoid_noise=sigmoid_noise,
            seed=sigmoid_noise_seed,
            kernel_initializer=kernel_initializer,
            name="bahdanau_monotonic_attention",
            dtype=dtype,
        )
        self._setup_given_memory(memory, memory_sequence_length)

    def get_config(self):
        config = {
            **super().get_config(),
            "units": self.units,
            "normalize": self.normalize,
            "kernel_initializer": keras.initializers.serialize(
                keras.initializers.get(self.kernel_initializer)
            ),
        }
        return {**config, **self.monotonic_config()}
