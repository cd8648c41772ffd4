import keras
import numpy as np
from keras import ops

from keras_luong.attention.alignments import register_alignment
from keras_luong.attention.base import BaseLuongAttention
from keras_luong.checks import MASKED_SCORE, check_number, check_one_of, shape_matches

MODES = ("parallel", "recursive", "hard")


@keras.saving.register_keras_serializable(package="keras_luong")
class MonotonicAttention(BaseLuongAttention):
    """Monotonic attention (Raffel et al., 2017) with a Luong score: the alignment only moves
    forward through the source.

    At each decoding step the layer reads the source from where the previous step's
    alignment left it, and stops at position `s` with probability `p_t(s)`:

    ```
    e_t(s) = g · score(h_t, h̄_s) + r              (r: a learned bias; g: use_scale)
    p_t(s) = sigmoid(e_t(s) + noise)               (noise ~ N(0, sigmoid_noise²) in training)
    q_t(s) = (1 - p_t(s-1)) q_t(s-1) + a_{t-1}(s)
    a_t(s) = p_t(s) q_t(s)                         (a_{-1} = one-hot at position 0)
    c_t    = Σ_s a_t(s) h̄_s
    ```

    `a_t` is the expected alignment of the hard process (its weights sum to at most 1: the
    rest is the probability of reading past the end of the source). This is tensorflow-addons'
    `LuongMonotonicAttention` (`score_mode="general"`, its default memory layer), with the
    same arguments.

    Args:
        score_mode: The score before the bias: `"general"` (tensorflow-addons'), `"dot"` or
            `"concat"`. Defaults to `"general"`.
        mode: How `a_t` is computed. `"parallel"` (the default, as tensorflow-addons):
            the closed form with cumulative products in log space (`safe_cumprod`), fast but
            approximate when some `1 - p_t(s)` are tiny. `"recursive"`: the recursion above,
            exact, as an associative scan over the source (parallel too). `"hard"`: stop at
            the first position from the previous one where `e_t(s) > 0`; one-hot or empty
            alignments that never move backwards, for inference (set `layer.mode = "hard"`
            on a layer trained soft; it has no gradient).
        inference_mode: The mode used when the call is not training (`predict`, `evaluate`,
            decoding), e.g. `"hard"` for a layer trained `"parallel"`, as Raffel et al.
            decode. Defaults to `mode`.
        score_bias_init: Initial value of the bias `r`. Raffel et al. suggest a negative one
            (e.g. -4) so that attention starts by moving slowly. Defaults to 0.
        sigmoid_noise: Standard deviation of the noise added to `e_t(s)` during training,
            which pushes `p_t(s)` towards 0 or 1. Defaults to 0.
        use_scale: If `True`, a learned scalar `g` (initialised to 1) multiplies the score.
        units: Width of the `"concat"` score's hidden layer. Defaults to the query's size.
        attentional_units: If set, return `h̃_t = tanh(W_c [c_t; h_t])` with this many units
            instead of the context `c_t`.
        attentional_activation: The activation of `h̃_t`. Defaults to `"tanh"`.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout and the noise.
        kernel_initializer: Initializer of the kernels. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: The decoder states: `(batch_size, Tq, d_q)` for all steps at once (the layer
            runs the steps one after the other from `previous_alignment`), or
            `(batch_size, d_q)` for one step.
        value: The encoder states, `(batch_size, S, d_v)`.
        query_mask: Optional boolean mask `(batch_size, Tq)`; outputs and alignments at
            masked steps are zero.
        value_mask: Optional boolean mask `(batch_size, S)`: the process never stops on a
            masked position.
        memory: Optional `prepare(value, value_mask)`, in place of `value` and `value_mask`.
        initial_state: The layer's state before the first query step, `[a_{t-1}]`: the
            alignment `(batch_size, S)` the previous call returned as its state. Defaults to
            `get_initial_state()`, the one-hot at position 0. Masked query steps keep it as
            it was.
        previous_alignment: The same alignment given alone, `initial_state=[a]`.
        step: Unused; taken so that a decoder calls every Luong attention alike.
        training: Whether the noise and attention dropout are applied.
        return_attention_scores: If `True`, also return the alignments `(batch_size, Tq, S)`
            (for one step, `(batch_size, S)`).
        return_state: If `True`, also return the state after the last step, `[a]`: the next
            call's `initial_state`.

    Returns:
        The context `c_t` (or `h̃_t`), `(batch_size, Tq, d)` or `(batch_size, d)` for one
        step; then the alignments and the state, if asked for.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> value = np.random.rand(1, 6, 8).astype("float32")  # one source of 6 positions
    >>> query = np.random.rand(1, 4, 8).astype("float32")  # 4 decoding steps
    >>> attention = MonotonicAttention(mode="hard", score_bias_init=1.0)
    >>> context, alignments = attention(query, value, return_attention_scores=True)
    >>> alignments = ops.convert_to_numpy(alignments)[0]
    >>> bool(np.all((alignments == 0) | (alignments == 1)))  # one-hot or empty
    True
    >>> positions = alignments.argmax(-1)[alignments.sum(-1) == 1]
    >>> bool(np.all(np.diff(positions) >= 0))  # never backwards
    True

    Reference:
        Raffel, Luong, Liu, Weiss and Eck, "Online and Linear-Time Attention by Enforcing
        Monotonic Alignments", ICML 2017 (arXiv:1704.00784).
    """

    # The previous step's alignment, one value per source position.
    state_size = (None,)

    def __init__(
        self,
        score_mode="general",
        mode="parallel",
        score_bias_init=0.0,
        sigmoid_noise=0.0,
        inference_mode=None,
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
        check_one_of("mode", mode, MODES)
        if inference_mode is not None:
            check_one_of("inference_mode", inference_mode, MODES)
        score_bias_init = check_number("score_bias_init", score_bias_init)
        sigmoid_noise = check_number("sigmoid_noise", sigmoid_noise, minimum=0)
        self.mode = mode
        self.inference_mode = inference_mode
        self.score_bias_init = float(score_bias_init)
        self.sigmoid_noise = float(sigmoid_noise)
        if self.sigmoid_noise and self.seed_generator is None:
            self.seed_generator = keras.random.SeedGenerator(self.seed)

    def build(self, query_shape, value_shape):
        super().build(query_shape, value_shape)
        self.score_bias = self.add_weight(
            name="score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    def call(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        initial_state=None,
        previous_alignment=None,
        step=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        if previous_alignment is not None:
            if initial_state is not None:
                raise ValueError(
                    "Pass the previous alignment once: as previous_alignment= or as "
                    "initial_state=[alignment]. Received: both"
                )
            initial_state = [previous_alignment]
            source = value if value is not None else (memory or {}).get("value")
            source_length = None if source is None else source.shape[1]
            shape = tuple(previous_alignment.shape)
            if not shape_matches(shape, (None, source_length)):
                raise ValueError(
                    f"Expected previous_alignment of shape (batch_size, S={source_length}). "
                    f"Received: previous_alignment.shape={shape}"
                )
        return super().call(
            query,
            value,
            query_mask=query_mask,
            value_mask=value_mask,
            memory=memory,
            initial_state=initial_state,
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
            return_state=return_state,
        )

    def get_initial_state(self, batch_size, memory):
        """`[a_{-1}]`: all the weight on the first source position, `(batch_size, S)`."""
        return [self.initial_alignment(batch_size, ops.shape(memory["value"])[1])]

    def initial_alignment(self, batch_size, source_length):
        """`a_{-1}`: all the weight on the first source position, `(batch_size, S)`."""
        # Not `one_hot`: torch's refuses zero classes, and an empty source (S = 0) is valid.
        first = ops.cast(ops.equal(ops.arange(source_length), 0), "float32")
        return ops.broadcast_to(first[None, :], (batch_size, source_length))

    def _mode_for(self, training):
        """The mode of a call: `mode` in training, else `inference_mode` (if set), checked
        here too, since either may be set on the layer after it was made."""
        if training or self.inference_mode is None:
            return check_one_of("mode", self.mode, MODES)
        return check_one_of("inference_mode", self.inference_mode, MODES)

    def dropout_mask(self, batch_size, steps, source_length, training=True):
        """Everything random, drawn ahead for `steps` query steps (a random draw inside a
        compiled JAX loop would leak its seed's state): `(batch_size, steps, 2, S)`, the
        attention dropout mask (ones without dropout) then the standard normal noise of the
        scores (zeros without `sigmoid_noise`); `None` when nothing is random."""
        if not training or not (self.dropout or self.sigmoid_noise):
            return None
        shape = (batch_size, steps, source_length)
        drop = super().dropout_mask(batch_size, steps, source_length, training)
        drop = ops.ones(shape) if drop is None else drop
        noise = ops.zeros(shape)
        if self.sigmoid_noise:
            noise = keras.random.normal(shape, seed=self.seed_generator)
        return ops.stack([drop, noise], axis=2)

    def stop_probabilities(self, query, memory, training=None, noise=None):
        """`p_t(s)` `(B, T, S)` in float32 (0 or 1 in `"hard"` mode), zero on padding;
        `noise` `(B, T, S)`, drawn ahead, replaces the noise's random draw."""
        scores = ops.cast(self.score(query, memory["keys"]), "float32")
        scores = scores + ops.cast(self.score_bias, "float32")
        if training and self.sigmoid_noise:
            if noise is None:
                noise = keras.random.normal(ops.shape(scores), seed=self.seed_generator)
            scores = scores + self.sigmoid_noise * ops.cast(noise, "float32")
        mask = memory.get("mask")
        if mask is not None:
            scores = ops.where(mask[:, None, :], scores, MASKED_SCORE)
        if self._mode_for(training) == "hard":
            return ops.cast(scores > 0, "float32")
        return ops.sigmoid(scores)

    def step_call(self, query, memory, state, step=None, training=None, draws=None):
        dropout_mask, noise = None, None
        if draws is not None:  # (B, 2, S): see dropout_mask()
            dropout_mask, noise = draws[:, None, 0], draws[:, None, 1]
        (previous,) = state
        probabilities = self.stop_probabilities(query[:, None], memory, training, noise)
        alignment = monotonic_alignment(probabilities[:, 0], previous, self._mode_for(training))
        context = self.combine(alignment[:, None], memory["value"], training, dropout_mask)
        output = self.attentional_state(context[:, 0], query)
        return output, alignment, [alignment]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mode": self.mode,
                "inference_mode": self.inference_mode,
                "score_bias_init": self.score_bias_init,
                "sigmoid_noise": self.sigmoid_noise,
            }
        )
        return config


def exclusive_cumprod(x, axis=-1):
    """`[1, x_0, x_0 x_1, ...]` along the last axis."""
    product = ops.cumprod(x, axis=axis)
    ones = ops.ones_like(product[..., :1])
    return ops.concatenate([ones, product[..., :-1]], axis=-1)


def safe_cumprod(x):
    """Exclusive cumulative product in log space, `x` clipped to [tiny, 1] first (as
    tensorflow-addons' `safe_cumprod`), so that it neither underflows nor takes log(0)."""
    tiny = float(np.finfo("float32").tiny)
    logs = ops.log(ops.clip(x, tiny, 1.0))
    exclusive = ops.concatenate([ops.zeros_like(logs[..., :1]), logs[..., :-1]], axis=-1)
    return ops.exp(ops.cumsum(exclusive, axis=-1))


def monotonic_alignment(p, previous, mode):
    """One step of monotonic attention: `a_t` `(B, S)` from the stop probabilities `p`
    `(B, S)` and the previous alignment `a_{t-1}` `(B, S)` (float32)."""
    if mode == "recursive":
        # q(s) = (1 - p(s-1)) q(s-1) + a_{t-1}(s): the composition of affine maps
        # x -> m x + b is associative, so all prefixes come from one parallel scan.
        multipliers = ops.concatenate([ops.ones_like(p[:, :1]), 1.0 - p[:, :-1]], axis=1)
        _, q = affine_prefix_scan(multipliers, previous)
        return p * q
    if mode == "parallel":
        cumprod = safe_cumprod(1.0 - p)
        return p * cumprod * ops.cumsum(previous / ops.clip(cumprod, 1e-10, 1.0), axis=1)
    # hard: stop at the first position from the previous alignment's on where p = 1.
    p = p * ops.cumsum(previous, axis=1)
    return p * exclusive_cumprod(1.0 - p)


def affine_prefix_scan(multipliers, offsets):
    """The prefix compositions of the affine maps `x -> m_s x + b_s` along axis 1 of
    `(B, S)` multipliers and offsets: `(M_s, B_s)`, `B_s` the value after maps `0..s` from
    `x = 0`. Exact and parallel: where S is static, a Hillis-Steele scan of `ceil(log2 S)`
    rounds of static slices, each composing every position with the one `d` before it;
    Keras' `ops.associative_scan` where S is known only at run time. (On TensorFlow that
    branches on the length with a `tf.cond` whose two branches XLA compiles both, one of them
    with mismatched shapes, and its gathers broadcast to shapes XLA cannot differentiate in a
    loop.)"""

    def compose(first, second):
        (m1, b1), (m2, b2) = first, second
        return m1 * m2, m2 * b1 + b2

    length = multipliers.shape[1]
    if length is None:
        return ops.associative_scan(compose, (multipliers, offsets), axis=1)
    distance = 1
    while distance < length:
        # (M_{s-d}, B_{s-d}) then (M_s, B_s); the identity map (1, 0) before the first.
        before = (
            ops.concatenate(
                [ops.ones_like(multipliers[:, :distance]), multipliers[:, :-distance]], 1
            ),
            ops.concatenate([ops.zeros_like(offsets[:, :distance]), offsets[:, :-distance]], 1),
        )
        multipliers, offsets = compose(before, (multipliers, offsets))
        distance *= 2
    return multipliers, offsets


@register_alignment("hard-monotonic")
def make_hard_monotonic_attention(score_mode, **arguments):
    """Raffel et al.'s monotonic attention, trained on its expected alignment with noise and
    decoded hard: `LuongSeq2Seq(alignment="hard-monotonic")`'s attention."""
    return MonotonicAttention(
        mode="parallel",
        inference_mode="hard",
        sigmoid_noise=1.0,
        score_mode=score_mode,
        **arguments,
    )
