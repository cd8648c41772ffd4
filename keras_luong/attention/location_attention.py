import keras
from keras import ops

from keras_luong.attention.alignments import register_alignment
from keras_luong.attention.base import BaseLuongAttention
from keras_luong.attention.scores import additive_score, score_mode
from keras_luong.backend.ops import project
from keras_luong.checks import check_integer


def hybrid_weights(layer, query_dim, value_dim):
    # W (query), V (keys), the location filters F and their projection U, b and w.
    channels = 2 if layer.cumulative else 1
    return {
        "query_kernel": (query_dim, layer.units),
        "key_kernel": (value_dim, layer.units),
        "location_filters": (layer.kernel_size, channels, layer.filters),
        "location_kernel": (layer.filters, layer.units),
        "score_bias": (layer.units,),
        "score_kernel": (layer.units,),
    }


@keras.saving.register_keras_serializable(package="keras_luong")
class LocationSensitiveAttention(BaseLuongAttention):
    """Location-sensitive (hybrid) attention (Chorowski et al., 2015): the score sees where
    the previous step attended, as well as what the source holds.

    For a query `h_t` (the decoder state), encoder states `h̄_s` and the previous alignment
    `a_{t-1}`:

    ```
    f_t    = F * a_{t-1}                              `filters` filters of width `kernel_size`
    e_t(s) = w · tanh(W h_t + V h̄_s + U f_t(s) + b)
    a_t    = softmax_s(e_t)                           over the valid source positions
    c_t    = Σ_s a_t(s) h̄_s
    ```

    With `cumulative=True` the filters read two channels, `a_{t-1}` and the sum of every
    alignment before step `t` (the cumulative alignment of Tacotron 2, which keeps the
    attention moving forward over long inputs). The state is `[a_{t-1}]` (`[a_{t-1}, Σ a]`
    with `cumulative`), zeros before the first step. The layer implements one step
    (`step_call`); the loop over a query's steps is the base's.

    Args:
        units: Width of the score's hidden layer (`W`, `V`, `U` project to it).
        filters: Number of location filters. Defaults to 32.
        kernel_size: Width of the location filters (odd: centred on the position). Defaults
            to 31.
        cumulative: Also convolve the cumulative alignment. Defaults to `False`.
        score_mode: Always `"hybrid"` (in the config so that the config round-trips).
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the scores.
        attentional_units: If set, the layer returns `h̃ = tanh(W_c [c_t; h_t])` of this
            width instead of the context `c_t`.
        attentional_activation: The activation of `h̃`. Defaults to `"tanh"`.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout.
        kernel_initializer: Initializer of every kernel. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of every kernel.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments and returns: as `MonotonicAttention`'s (`initial_state=`,
    `return_state=True`).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> query = np.random.rand(2, 3, 4).astype("float32")  # 3 decoding steps
    >>> value = np.random.rand(2, 5, 4).astype("float32")  # 5 source positions
    >>> attention = LocationSensitiveAttention(units=8, filters=2, kernel_size=3)
    >>> output, weights = attention(query, value, return_attention_scores=True)
    >>> np.allclose(ops.convert_to_numpy(weights).sum(-1), 1.0, atol=1e-6)
    True

    Reference:
        Chorowski, Bahdanau, Serdyuk, Cho and Bengio, "Attention-Based Models for Speech
        Recognition", NeurIPS 2015 (arXiv:1506.07503); Shen et al., "Natural TTS Synthesis by
        Conditioning WaveNet on Mel Spectrogram Predictions", ICASSP 2018 (arXiv:1712.05884).
    """

    def __init__(
        self,
        units,
        filters=32,
        kernel_size=31,
        cumulative=False,
        score_mode="hybrid",
        **kwargs,
    ):
        check_integer("units", units)
        check_integer("filters", filters)
        if check_integer("kernel_size", kernel_size) % 2 == 0:
            raise ValueError(
                "Invalid value for argument kernel_size. Expected an odd width (the filters "
                f"are centred on each position). Received: kernel_size={kernel_size!r}"
            )
        if score_mode != "hybrid":
            raise ValueError(
                "LocationSensitiveAttention scores with its hybrid (content and location) "
                f"score only. Received: score_mode={score_mode!r}"
            )
        if not isinstance(cumulative, bool):
            raise ValueError(
                "Invalid value for argument cumulative. Expected True or False. "
                f"Received: cumulative={cumulative!r}"
            )
        super().__init__(score_mode=score_mode, units=units, **kwargs)
        self.filters = filters
        self.kernel_size = kernel_size
        self.cumulative = cumulative

    @property
    def state_size(self):
        return (None, None) if self.cumulative else (None,)

    def get_initial_state(self, batch_size, memory):
        """Zeros: no step has attended anywhere yet, `(batch_size, S)` each."""
        zeros = ops.zeros((batch_size, ops.shape(memory["value"])[1]), "float32")
        return [zeros] * len(self.state_size)

    @score_mode("hybrid", weights=hybrid_weights)
    def hybrid_score(self, query, keys, state):
        # (B, S, channels) alignments -> (B, S, filters) location features -> (B, 1, S, units).
        alignments = ops.stack([ops.cast(a, query.dtype) for a in state], axis=-1)
        filters = ops.cast(self.location_filters, query.dtype)
        if alignments.shape[1] == 0:  # an empty source: nothing to convolve (torch refuses)
            features = ops.zeros((ops.shape(alignments)[0], 0, self.filters), query.dtype)
        else:
            features = ops.conv(alignments, filters, padding="same")
        location = project(features, self.location_kernel) + ops.cast(self.score_bias, query.dtype)
        return additive_score(self, query, keys, self.score_kernel, location[:, None])

    def step_call(self, query, memory, state, step=None, training=None, draws=None):
        scores = self.score(query[:, None], memory["keys"], state=state)
        mask = memory.get("mask")
        weights = self.masked_softmax(scores, None if mask is None else mask[:, None])
        dropout_mask = None if draws is None else draws[:, None]
        context = self.combine(weights, memory["value"], training, dropout_mask)
        weights = weights[:, 0]
        next_state = [weights] + ([state[1] + weights] if self.cumulative else [])
        return self.attentional_state(context[:, 0], query), weights, next_state

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "cumulative": self.cumulative,
            }
        )
        return config


@register_alignment("location-sensitive")
def make_location_sensitive_attention(units, **arguments):
    """`LuongSeq2Seq(alignment="location-sensitive")`'s attention, its score `units` the model's."""
    return LocationSensitiveAttention(units, **arguments)
