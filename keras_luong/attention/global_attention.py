import keras
from keras import ops

from keras_luong.attention.alignments import register_alignment
from keras_luong.attention.base import BaseLuongAttention
from keras_luong.attention.protocol import Attended
from keras_luong.attention.scores import dot_score, score_mode
from keras_luong.backend.loops import eager_torch, own_methods
from keras_luong.backend.ops import project
from keras_luong.checks import MASKED_SCORE, check_integer

# The methods whose work `GlobalAttention.eager_step` does in one function.
EAGER_STEP_REPLACES = ("attend", "score", "masked_softmax", "combine", "attentional_state")


@keras.saving.register_keras_serializable(package="keras_luong")
class GlobalAttention(BaseLuongAttention):
    """Luong global attention: every decoding step attends to every source position.

    For a decoder state `h_t` (the query) and encoder states `h̄_s` (the value):

    ```
    a_t(s) = softmax_s(score(h_t, h̄_s))      over the valid source positions
    c_t    = Σ_s a_t(s) h̄_s
    h̃_t    = tanh(W_c [c_t; h_t])            only when `attentional_units` is set
    ```

    with `score` one of `"dot"` (`h_t · h̄_s`), `"general"` (`h_t · W_a h̄_s`), `"concat"`
    (`v_a · tanh(W_q h_t + W_k h̄_s)`) or `"location"` (`softmax(W_a h_t)`, truncated to the
    source length: where that length is known only when a compiled model runs, positions from
    `max_source_length` on get zero weight; wherever it is known before, a longer source is a
    `ValueError`, and `LuongSeq2Seq` checks its data's length before its model runs). The
    keys `W_a h̄_s` / `W_k h̄_s` are projected once per call, whatever the number of query
    steps; `prepare(value, value_mask)` computes them once for a caller that
    attends to one source step after step (a decoder) and passes the result as `memory=`.

    Args:
        score_mode: One of `"dot"`, `"general"`, `"concat"`, `"location"`.
            Defaults to `"general"`.
        units: Width of the `"concat"` score's hidden layer. Defaults to the query's size.
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the scores.
        max_source_length: Required by `"location"`: the longest source it scores.
        attentional_units: If set, return `h̃_t = tanh(W_c [c_t; h_t])` with this many units
            instead of the context `c_t`.
        attentional_activation: The activation of `h̃_t`. Defaults to `"tanh"` (the paper's);
            `None` is tensorflow-addons' linear attention layer.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout.
        kernel_initializer: Initializer of the kernels. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: The decoder states: `(batch_size, Tq, d_q)` for all steps at once, or
            `(batch_size, d_q)` for one step.
        value: The encoder states, `(batch_size, S, d_v)`.
        query_mask: Optional boolean mask `(batch_size, Tq)` (or `(batch_size,)` for one step);
            outputs at masked steps are zero. Taken from the query's Keras mask if not given.
        value_mask: Optional boolean mask `(batch_size, S)`; masked source positions get zero
            weight. Taken from the value's Keras mask if not given.
        memory: Optional `prepare(value, value_mask)`, computed once per source, in place of
            `value` and `value_mask`.
        step: Unused by global attention; every Luong attention takes it, so that a decoder
            calls them all alike.
        training: Whether attention dropout is applied.
        return_attention_scores: If `True`, also return the attention weights.
        initial_state: Unused: global attention keeps no state from step to step (see
            `BaseLuongAttention`); taken so that every attention is called alike.
        return_state: If `True`, also return the state after the last step (an empty list).

    Returns:
        The context `c_t` `(batch_size, Tq, d_v)` (or `h̃_t`, `(batch_size, Tq,
        attentional_units)`), without the `Tq` axis for a one-step query; and, if
        `return_attention_scores=True`, the weights `(batch_size, Tq, S)` (before dropout).

    Example:

    >>> import numpy as np
    >>> encoder_states = np.random.rand(2, 7, 16).astype("float32")
    >>> decoder_states = np.random.rand(2, 5, 32).astype("float32")
    >>> attention = GlobalAttention(score_mode="general", attentional_units=32)
    >>> attentional, weights = attention(
    ...     decoder_states, encoder_states, return_attention_scores=True
    ... )
    >>> tuple(attentional.shape), tuple(weights.shape)
    ((2, 5, 32), (2, 5, 7))

    Reference:
        Luong, Pham and Manning, "Effective Approaches to Attention-based Neural Machine
        Translation", EMNLP 2015 (arXiv:1508.04025), section 3.1.
    """

    def __init__(
        self,
        score_mode="general",
        max_source_length=None,
        units=None,
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
            score_mode=score_mode,
            units=units,
            use_scale=use_scale,
            attentional_units=attentional_units,
            attentional_activation=attentional_activation,
            dropout=dropout,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            **kwargs,
        )
        self.max_source_length = check_integer(
            "max_source_length", max_source_length, allow_none=True
        )
        if score_mode == "location" and max_source_length is None:
            raise ValueError(
                "The 'location' score needs argument max_source_length (the longest source "
                "it will see). Received: max_source_length=None"
            )

    def _location_weights(self, query_dim, value_dim):
        return {"location_kernel": (query_dim, self.max_source_length)}

    @score_mode("location", weights=_location_weights)
    def location_score(self, query, keys):
        scores = project(query, self.location_kernel)
        source_length = ops.shape(keys)[1]
        if isinstance(source_length, int):  # known: _check_source_length refused a longer one
            return scores[..., :source_length]
        # Known only as the compiled model runs: positions past max_source_length get no weight.
        batch, steps = ops.shape(query)[0], ops.shape(query)[1]
        extra = ops.maximum(source_length - self.max_source_length, 0)
        padding = ops.full((batch, steps, extra), MASKED_SCORE, dtype=scores.dtype)
        return ops.concatenate([scores, padding], axis=-1)[..., :source_length]

    @property
    def longest_source(self):
        """`max_source_length` with the `"location"` score, else `None` (any number)."""
        return self.max_source_length if self.score_mode == "location" else None

    def _check_source_length(self, source_length):
        if (
            self.longest_source is not None
            and source_length is not None
            and source_length > self.longest_source
        ):
            raise ValueError(
                "The 'location' score is defined over at most max_source_length="
                f"{self.max_source_length} source positions. "
                f"Received: a value of length {source_length}"
            )

    def attend(
        self,
        query,
        memory,
        state,
        query_mask=None,
        step=None,
        training=None,
        return_attention_scores=False,
        draws=None,
    ):
        scores = self.score(query, memory["keys"])
        mask = memory.get("mask")
        weights = self.masked_softmax(scores, None if mask is None else mask[:, None, :])
        context = self.combine(weights, memory["value"], training, draws)
        return Attended(self.attentional_state(context, query), weights, None, state)

    def eager_step(self, memory, training=None):
        """A function that attends one step, `step(query) -> (output, weights)`: the one-step
        call's output `(B, d)` and weights `(B, S)` for a query `(B, d_q)`, made once for a
        prepared `memory`; or `None`, where the layer's call must attend.

        `LuongDecoder` uses it on eager PyTorch, where Keras' cost per operation is a large
        share of a step's time: the keys are transposed and the mask turned into an additive
        score once per sequence, and a step is four tensor products, a softmax and the
        activation, without the call's argument checks and conversions. It is there for the
        `"dot"` and `"general"` scores in float32 without attention dropout in training, for a
        layer whose methods it replaces (`EAGER_STEP_REPLACES`) are this class's own (a
        subclass that overrides one gets its own called), for tensors of eager torch. The
        values are the call's: a masked position has `MASKED_SCORE` added to its score where
        `attend` puts it in its place, and both give it exactly zero weight.

        Args:
            memory: The prepared source, `prepare(value, value_mask)`.
            training: Whether the steps are for training (dropout then needs the call).
        """
        entry = self._score_entry
        if (
            not own_methods(self, GlobalAttention, *EAGER_STEP_REPLACES)
            or not eager_torch(memory["value"])
            or entry.score is not dot_score
            or entry.reads_state
            or self.compute_dtype != "float32"
            or (training and self.dropout > 0)
        ):
            return None
        keys = ops.swapaxes(memory["keys"], -1, -2)  # (B, d, S)
        value = memory["value"]
        mask = memory.get("mask")
        if mask is not None:
            penalty = ops.where(mask, 0.0, MASKED_SCORE)[:, None, :]  # (B, 1, S)
            keep = ops.cast(mask, "float32")[:, None, :]
        scale = None if self.scale is None else ops.convert_to_tensor(self.scale)
        kernel = None
        if self.attentional_units:
            kernel = ops.convert_to_tensor(self.attentional_kernel)
        single = value.shape[1] == 1  # one position takes all the weight, as in the call

        def step(query):
            scores_ = query[:, None, :] @ keys  # (B, 1, S)
            if scale is not None:
                scores_ = scores_ * scale
            if single:
                weights = ops.ones_like(scores_)
            else:
                weights = ops.softmax(scores_ if mask is None else scores_ + penalty, axis=-1)
            if mask is not None:
                weights = weights * keep
            context = (weights @ value)[:, 0]
            if kernel is None:
                return context, weights[:, 0]
            state = ops.concatenate([context, query], axis=-1) @ kernel
            return self.attentional_activation(state), weights[:, 0]

        return step

    def get_config(self):
        config = super().get_config()
        config["max_source_length"] = self.max_source_length
        return config


@register_alignment("global")
def make_global_attention(score_mode, max_source_length, **arguments):
    """`LuongSeq2Seq(alignment="global")`'s attention."""
    return GlobalAttention(score_mode=score_mode, max_source_length=max_source_length, **arguments)
