"""Bahdanau's additive attention, global and monotonic, with tensorflow-addons' weights."""

import math

import keras
from keras import ops

from keras_luong.attention.alignments import register_alignment
from keras_luong.attention.global_attention import GlobalAttention
from keras_luong.attention.monotonic_attention import MonotonicAttention
from keras_luong.attention.names import check_current_name
from keras_luong.attention.scores import additive_score, score_mode
from keras_luong.checks import check_integer


def bahdanau_weights(layer, query_dim, value_dim):
    # tensorflow-addons' memory_layer, query_layer and attention_v, in its order.
    return {
        "key_kernel": (value_dim, layer.units),
        "query_kernel": (query_dim, layer.units),
        "score_kernel": (layer.units,),
    }


class BahdanauScore:
    """The additive score of Bahdanau et al. (2015) in tensorflow-addons' form, for an
    attention layer class: `e_t(s) = v · tanh(W_q h + W_k h̄_s)`, or with `normalize`,
    `(g · v / ‖v‖) · tanh(W_q h + W_k h̄_s + b)` (weight normalisation, Salimans and Kingma
    2016: `g` a scalar initialised to `√(1 / units)`, `b` zeros)."""

    def __init__(self, units, normalize=False, score_mode="additive", **kwargs):
        check_integer("units", units)
        check_current_name("score_mode", score_mode)
        if score_mode != "additive":
            raise ValueError(
                f"{type(self).__name__} scores with Bahdanau's additive score only. "
                f"Received: score_mode={score_mode!r}"
            )
        if not isinstance(normalize, bool):
            raise ValueError(
                "Invalid value for argument normalize. Expected True or False. "
                f"Received: normalize={normalize!r}"
            )
        super().__init__(score_mode="additive", units=units, **kwargs)
        self.normalize = normalize

    def build(self, query_shape, value_shape):
        super().build(query_shape, value_shape)
        self.score_gain = self.score_offset = None
        if self.normalize:
            self.score_gain = self.add_weight(
                name="score_gain",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
            self.score_offset = self.add_weight(
                name="score_offset", shape=(self.units,), initializer="zeros"
            )

    @score_mode("additive", weights=bahdanau_weights)
    def bahdanau_score(self, query, keys):
        vector, offset = self.score_kernel, None
        if self.normalize:
            vector = ops.cast(vector, query.dtype)
            gain = ops.cast(self.score_gain, query.dtype)
            vector = gain * vector / ops.sqrt(ops.sum(ops.square(vector)))
            offset = self.score_offset
        return additive_score(self, query, keys, vector, offset)

    def get_config(self):
        config = super().get_config()
        config["normalize"] = self.normalize
        return config


@keras.saving.register_keras_serializable(package="keras_luong")
class BahdanauAttention(BahdanauScore, GlobalAttention):
    """Bahdanau (additive) attention: tensorflow-addons' `BahdanauAttention`, global.

    For a query `h` (the decoder state) and encoder states `h̄_s` (the value):

    ```
    e(s)  = v · tanh(W_q h + W_k h̄_s)                       (normalize=False)
    e(s)  = (g · v / ‖v‖) · tanh(W_q h + W_k h̄_s + b)       (normalize=True)
    a(s)  = softmax_s(e(s))      over the valid source positions
    c     = Σ_s a(s) h̄_s
    ```

    The keys `W_k h̄_s` are projected once per source (`prepare`). Which state is the query is
    the decoder's business: in `LuongDecoder` (and tensorflow-addons' `AttentionWrapper`) it is
    the RNN's output after the step, `h_t`; in Bahdanau, Cho and Bengio (2015) the state before
    it, `s_{t-1}`.

    Its weights are tensorflow-addons' one for one: `key_kernel` `(d_v, units)` is
    `memory_layer.kernel`, `query_kernel` `(d_q, units)` is `query_layer.kernel`,
    `score_kernel` `(units,)` is `attention_v`, and with `normalize=True` `score_gain` `()` is
    `attention_g` and `score_offset` `(units,)` is `attention_b`.

    Args:
        units: The width of the additive score's hidden layer (tensorflow-addons' `units`).
        normalize: Whether `v` is weight-normalised, with a gain `g` and an offset `b`.
            Defaults to `False`.
        score_mode: Always `"additive"` (it is in the config so that the config round-trips).
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the score;
            tensorflow-addons has none. Defaults to `False`.
        max_source_length: Unused (`GlobalAttention`'s `"location"` score takes it).
        attentional_units: If set, return `h̃ = tanh(W_c [c; h])` with this many units instead
            of the context `c` (as `AttentionWrapper(attention_layer_size=...)`).
        attentional_activation: The activation of `h̃`. Defaults to `"tanh"`; `None` is
            tensorflow-addons' linear attention layer.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout.
        kernel_initializer: Initializer of the kernels. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Its call takes `GlobalAttention`'s arguments: `query`, `value`, `query_mask`, `value_mask`,
    `memory`, `initial_state`, `step`, `training`, `return_attention_scores`, `return_state`.

    Returns:
        The context `c` (or `h̃`), `(batch_size, Tq, d)` or `(batch_size, d)` for one step;
        and, if `return_attention_scores=True`, the weights `(batch_size, Tq, S)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> query = np.random.rand(2, 3, 6).astype("float32")  # 3 decoding steps
    >>> value = np.random.rand(2, 5, 4).astype("float32")  # 5 source positions
    >>> attention = BahdanauAttention(units=8, normalize=True)
    >>> context, weights = attention(query, value, return_attention_scores=True)
    >>> [tuple(w.shape) for w in attention.weights]  # key, query, v, g, b
    [(4, 8), (6, 8), (8,), (), (8,)]
    >>> W_k, W_q, v, g, b = (ops.convert_to_numpy(w) for w in attention.weights)
    >>> hidden = np.tanh((query @ W_q)[:, :, None] + (value @ W_k)[:, None] + b)
    >>> scores = hidden @ (g * v / np.linalg.norm(v))
    >>> expected = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    >>> bool(np.allclose(ops.convert_to_numpy(weights), expected, atol=1e-5))
    True

    Reference:
        Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly Learning to Align and
        Translate", ICLR 2015 (arXiv:1409.0473).
    """

    def __init__(
        self,
        units,
        normalize=False,
        score_mode="additive",
        max_source_length=None,
        use_scale=False,
        attentional_units=None,
        attentional_activation="tanh",
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(
            units=units,
            normalize=normalize,
            score_mode=score_mode,
            max_source_length=max_source_length,
            use_scale=use_scale,
            attentional_units=attentional_units,
            attentional_activation=attentional_activation,
            dropout=dropout,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            **kwargs,
        )


@keras.saving.register_keras_serializable(package="keras_luong")
class BahdanauMonotonicAttention(BahdanauScore, MonotonicAttention):
    """Monotonic attention (Raffel et al., 2017) with Bahdanau's additive score:
    tensorflow-addons' `BahdanauMonotonicAttention`.

    `e_t(s)` is `BahdanauAttention`'s score plus a learned bias `r` (`score_bias_init`), and
    the alignment follows `MonotonicAttention`'s process (`mode` `"parallel"`, `"recursive"`
    or `"hard"`, `sigmoid_noise`, `inference_mode`); its state is the previous alignment.

    Args:
        units: The width of the additive score's hidden layer.
        normalize: Whether `v` is weight-normalised (see `BahdanauAttention`).
        mode: `"parallel"` (tensorflow-addons' default), `"recursive"` (exact) or `"hard"`.
        score_bias_init: Initial value of the bias `r`. Defaults to 0.
        sigmoid_noise: Standard deviation of the noise added to the scores in training.
        inference_mode: The mode used when not training. Defaults to `mode`.
        score_mode: Always `"additive"` (it is in the config so that the config round-trips).
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the score;
            tensorflow-addons has none. Defaults to `False`.
        attentional_units: If set, return `h̃ = tanh(W_c [c; h])` with this many units.
        attentional_activation: The activation of `h̃`. Defaults to `"tanh"`.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout and the noise.
        kernel_initializer: Initializer of the kernels. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Its call takes `MonotonicAttention`'s arguments and returns what that layer's call returns.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> query = np.random.rand(1, 4, 6).astype("float32")
    >>> value = np.random.rand(1, 5, 6).astype("float32")
    >>> attention = BahdanauMonotonicAttention(units=8, mode="hard", score_bias_init=1.0)
    >>> _, alignments = attention(query, value, return_attention_scores=True)
    >>> alignments = ops.convert_to_numpy(alignments)[0]
    >>> bool(np.all((alignments == 0) | (alignments == 1)))
    True

    Reference:
        Raffel, Luong, Liu, Weiss and Eck, "Online and Linear-Time Attention by Enforcing
        Monotonic Alignments", ICML 2017 (arXiv:1704.00784).
    """

    def __init__(
        self,
        units,
        normalize=False,
        mode="parallel",
        score_bias_init=0.0,
        sigmoid_noise=0.0,
        inference_mode=None,
        score_mode="additive",
        use_scale=False,
        attentional_units=None,
        attentional_activation="tanh",
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(
            units=units,
            normalize=normalize,
            score_mode=score_mode,
            mode=mode,
            score_bias_init=score_bias_init,
            sigmoid_noise=sigmoid_noise,
            inference_mode=inference_mode,
            use_scale=use_scale,
            attentional_units=attentional_units,
            attentional_activation=attentional_activation,
            dropout=dropout,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            **kwargs,
        )


@register_alignment("global", score_mode="additive")
def make_bahdanau_attention(units, **arguments):
    """`LuongSeq2Seq(score_mode="additive")`'s attention: the additive score's `units` the
    model's."""
    return BahdanauAttention(units, **arguments)


@register_alignment("hard-monotonic", score_mode="additive")
def make_bahdanau_hard_monotonic_attention(units, **arguments):
    """`LuongSeq2Seq(alignment="hard-monotonic", score_mode="additive")`'s attention."""
    return BahdanauMonotonicAttention(
        units, mode="parallel", inference_mode="hard", sigmoid_noise=1.0, **arguments
    )
