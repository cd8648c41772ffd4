import keras
from keras import ops

from keras_luong.attention.alignments import register_alignment
from keras_luong.attention.base import BaseLuongAttention
from keras_luong.attention.names import check_current_name, current_config
from keras_luong.attention.protocol import Attended
from keras_luong.attention.windows import gather_window, gaussian
from keras_luong.backend.ops import project
from keras_luong.checks import check_integer, check_number, check_one_of, check_step

# The alignments of local attention; a model's `alignment` is one of these or "global".
LOCAL_ALIGNMENTS = ("local-m", "local-p")


@keras.saving.register_keras_serializable(package="keras_luong")
class LocalAttention(BaseLuongAttention):
    """Luong local attention: each decoding step attends to a window of `2D + 1` source states.

    The window is centred on an aligned position `p_t` (0-based):

    ```
    local-m:  p_t = t
    local-p:  p_t = (S_i - 1) · sigmoid(v_p · tanh(W_p h_t))
    window:  s in [floor(p_t) - D, floor(p_t) + D] ∩ [0, S_i - 1]
    a_t(s) = softmax_window(score(h_t, h̄_s)) · exp(-(s - p_t)² / (2σ²))   (local-p)
    a_t(s) = softmax_window(score(h_t, h̄_s))                              (local-m)
    c_t    = Σ_s a_t(s) h̄_s
    ```

    where `S_i` is the true length of source `i` (from the value mask) and `σ = D / 2` unless
    given. As in the paper and Luong's own code, the Gaussian weights are not renormalised
    (`renormalize=True` does). Only the window's `2D + 1` states are gathered and scored, so
    the work per decoding step is O(D), whatever the source length. A window wholly outside
    the source gives a zero context and zero weights.

    Positions count from each source's first valid position, so a source padded on the left
    (`keras.utils.pad_sequences`' default) is aligned like the same source padded on the
    right; the positions returned are indices into the padded source. The valid positions are
    taken to be one run (a masked position inside it still gets zero weight). An empty source
    (S = 0) gives a zero context, like a source with every position masked.

    Args:
        alignment: `"local-m"` or `"local-p"` (the default).
        window: The half-width `D` of the window. Defaults to 10.
        sigma: The standard deviation of the local-p Gaussian. Defaults to `window / 2`.
        initial_sigma: Optional, local-p only: the Gaussian's standard deviation at the start
            of training. The layer then holds σ in a non-trainable variable (`sigma_variable`,
            saved with the weights), started at `initial_sigma`, which
            `keras_luong.SigmaSchedule` narrows to `sigma` epoch by epoch: a wide
            Gaussian in a wide window first, close to global attention, which locks on over
            the whole source, then the paper's narrow one. Without the callback σ stays at
            `initial_sigma`.
        renormalize: If `True`, local-p weights are renormalised to sum to one after the
            Gaussian. Defaults to `False`, the paper's choice.
        position_units: Width of `W_p` in local-p. Defaults to the query's size.
        score_mode: One of `"dot"`, `"general"`, `"concat"` (`"location"` has no meaning for
            a moving window). Defaults to `"general"`.
        units: Width of the `"concat"` score's hidden layer. Defaults to the query's size.
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the scores.
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
        query: The decoder states: `(batch_size, Tq, d_q)` for steps `step .. step + Tq - 1`,
            or `(batch_size, d_q)` for the single step `step`.
        value: The encoder states, `(batch_size, S, d_v)`.
        query_mask: Optional boolean mask `(batch_size, Tq)` (or `(batch_size,)`); outputs at
            masked steps are zero. Taken from the query's Keras mask if not given.
        value_mask: Optional boolean mask `(batch_size, S)`; masked positions get zero weight
            and set each source's length `S_i`. Taken from the value's Keras mask if not given.
        memory: Optional `prepare(value, value_mask)`, computed once per source, in place of
            `value` and `value_mask`.
        step: The decoding step of the (first) query: an integer, a scalar tensor or a
            `(batch_size,)` tensor, `>= 0`. Defaults to 0 for a rank-3 query; local-m needs it
            for a rank-2 query.
        training: Whether attention dropout is applied.
        initial_state: Unused: local attention keeps no state from step to step (see
            `BaseLuongAttention`); taken so that every attention is called alike.
        return_state: If `True`, also return the state after the last step (an empty list).
        return_attention_scores: If `True`, also return the weights as `(batch_size, Tq, S)`,
            zero outside each window (built only on request).
        return_positions: If `True`, also return the aligned positions `p_t`, `(batch_size, Tq)`.

    Returns:
        The context `c_t` (or `h̃_t`), `(batch_size, Tq, d)` or `(batch_size, d)` for a rank-2
        query; then the weights and the positions if asked for, in that order.

    Example:

    >>> import numpy as np
    >>> encoder_states = np.random.rand(2, 30, 16).astype("float32")
    >>> decoder_states = np.random.rand(2, 5, 16).astype("float32")
    >>> attention = LocalAttention(alignment="local-p", window=4, score_mode="dot")
    >>> context, weights, positions = attention(
    ...     decoder_states, encoder_states,
    ...     return_attention_scores=True, return_positions=True,
    ... )
    >>> tuple(context.shape), tuple(weights.shape), tuple(positions.shape)
    ((2, 5, 16), (2, 5, 30), (2, 5))

    Reference:
        Luong, Pham and Manning, "Effective Approaches to Attention-based Neural Machine
        Translation", EMNLP 2015 (arXiv:1508.04025), section 3.2.
    """

    def __init__(
        self,
        alignment="local-p",
        window=10,
        sigma=None,
        renormalize=False,
        position_units=None,
        initial_sigma=None,
        score_mode="general",
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
        check_current_name("alignment", alignment)
        check_one_of("alignment", alignment, LOCAL_ALIGNMENTS)
        if score_mode == "location":
            raise ValueError(
                "The 'location' score is defined over the whole source, not a moving window; "
                "use GlobalAttention for it or another score_mode. "
                f"Received: score_mode={score_mode!r}"
            )
        window = check_integer("window", window, minimum=0)
        if sigma is not None:
            check_number("sigma", sigma, minimum=0, exclusive=True)
        if initial_sigma is not None:
            if alignment != "local-p":
                raise ValueError(
                    "initial_sigma narrows local-p's Gaussian; local-m has none. "
                    f"Received: alignment={alignment!r}, initial_sigma={initial_sigma!r}"
                )
            initial_sigma = check_number("initial_sigma", initial_sigma, minimum=0, exclusive=True)
        if alignment == "local-p" and sigma is None and window == 0:
            raise ValueError(
                "local-p with window=0 has sigma = window / 2 = 0; pass a positive sigma. "
                f"Received: window={window!r}, sigma={sigma!r}"
            )
        check_integer("position_units", position_units, allow_none=True)
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
        self.alignment = alignment
        self.window = window
        self.sigma = sigma
        self.renormalize = renormalize
        self.position_units = position_units
        self.initial_sigma = initial_sigma
        self.sigma_variable = None

    @property
    def final_sigma(self):
        """The Gaussian's standard deviation once trained: `sigma`, or `window / 2`."""
        return float(self.sigma) if self.sigma is not None else self.window / 2

    def window_variance(self, dtype):
        """σ² of the Gaussian now, a float or (narrowed) a tensor of `dtype`."""
        if self.sigma_variable is None:
            return self.final_sigma**2
        return ops.square(ops.cast(self.sigma_variable, dtype))

    def build(self, query_shape, value_shape):
        super().build(query_shape, value_shape)
        if self.alignment == "local-p":
            units = self.position_units or query_shape[-1]
            self.position_kernel = self.add_weight(
                name="position_kernel",
                shape=(query_shape[-1], units),
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )
            self.position_vector = self.add_weight(
                name="position_vector",
                shape=(units,),
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )
            if self.initial_sigma is not None:
                self.sigma_variable = self.add_weight(
                    name="sigma",
                    shape=(),
                    initializer=keras.initializers.Constant(self.initial_sigma),
                    dtype="float32",
                    trainable=False,
                )

    def prepare(self, value, value_mask=None):
        """The per-source memory of `BaseLuongAttention.prepare`, plus what the window gather
        needs: each source's length `S_i` (int32 `(B,)`, from the mask; an integer so that a
        mixed-precision layer's input casting cannot round it), its first valid position,
        the value flattened to `(B * S, d_v)` and the mask to `(B * S,)`. A flat `take` is
        the cheapest gather on every backend once the flattening is paid, and it is paid once
        per source here (eager JAX copies the value to reshape it). The keys are not
        projected here (see `project_keys`), so the cost per step does not grow with S. The
        flat tables index the batch, so a memory for several hypotheses per source (beam
        search) is prepared from the repeated value."""
        memory = super().prepare(value, value_mask)
        value = memory["value"]
        batch, source_length = ops.shape(value)[0], ops.shape(value)[1]
        if "mask" in memory:
            mask = memory["mask"]
            memory["lengths"] = ops.sum(ops.cast(mask, "int32"), axis=1)
            # The first valid position: 0 for right padding, S - S_i for left padding.
            positions = ops.arange(source_length, dtype="int32")[None, :]
            memory["starts"] = ops.min(ops.where(mask, positions, source_length), axis=1)
            memory["flat_mask"] = ops.reshape(mask, (-1,))
        else:
            memory["lengths"] = ops.full((batch,), source_length, dtype="int32")
        memory["flat_value"] = ops.reshape(value, (-1, value.shape[-1]))
        return memory

    def project_keys(self, value):
        """The states themselves: local attention projects a window's keys once it is
        gathered (`window_keys`), `2D + 1` positions a step, rather than all S positions of
        a source, so that its cost does not grow with S."""
        return value

    def window_keys(self, window):
        """The keys of gathered windows `(B, T, 2D + 1, d_v)`: projected by the score mode's
        `key_kernel` if it has one (`"concat"`), except where the mode can move that kernel
        onto the query instead (`"general"`: `h_t W_a^T`, see `window_query`)."""
        if self.key_kernel is None or self._score_entry.query_side is not None:
            return window
        return project(window, self.key_kernel)

    def window_query(self, query):
        """The query scored against the windows: `h_t W_a^T` for `"general"`, one projection a
        step rather than one per window position; else the query itself."""
        query_side = self._score_entry.query_side
        return query if query_side is None else query_side(self, query)

    def _candidates(self, source_length):
        return 2 * self.window + 1

    def aligned_positions(self, query, lengths, step=None, starts=None):
        """`p_t` as float32 `(B, T)`, for a query `(B, T, d_q)` and source lengths `(B,)`;
        counted from each source's first valid position `starts` `(B,)` (0 if not given)."""
        batch, steps = ops.shape(query)[0], ops.shape(query)[1]
        if self.alignment == "local-m":
            start = ops.reshape(ops.cast(0 if step is None else step, "float32"), (-1, 1))
            positions = ops.broadcast_to(start + ops.arange(steps, dtype="float32"), (batch, steps))
        else:
            hidden = ops.tanh(project(query, self.position_kernel))
            logit = ops.cast(project(hidden, self.position_vector), "float32")
            positions = ops.expand_dims(lengths - 1.0, -1) * ops.sigmoid(logit)
        if starts is None:
            return positions
        return positions + ops.expand_dims(ops.cast(starts, "float32"), -1)

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
        value, lengths = memory["value"], ops.cast(memory["lengths"], "float32")
        if value.shape[0] == 0 or value.shape[1] == 0:
            return self._attend_nothing(query, value, state, return_attention_scores)
        positions = self.aligned_positions(query, lengths, step, memory.get("starts"))
        window, index, inside, value_window = gather_window(memory, positions, self.window)
        keys_window = self.window_keys(value_window)
        weights = self.masked_softmax(self.score(self.window_query(query), keys_window), inside)
        if self.alignment == "local-p":
            weights = gaussian(weights, window, positions, self.window_variance(weights.dtype))
            if self.renormalize:
                total = ops.sum(weights, axis=-1, keepdims=True)
                weights = weights / ops.where(total > 0, total, ops.ones_like(total))

        context = self.combine(weights, value_window, training, draws)
        output = self.attentional_state(context, query)
        if not return_attention_scores:
            return Attended(output, None, positions, state)
        # Scattered to (B, T, S) only on request, for plotting and comparison.
        weights = ops.einsum(
            "btw,btws->bts", weights, ops.one_hot(index, ops.shape(value)[1], dtype=weights.dtype)
        )
        return Attended(output, weights, positions, state)

    def _attend_nothing(self, query, value, state, return_attention_scores):
        """An empty source (S = 0) or batch (B = 0): nothing to gather from. A zero context,
        like a source whose every position is masked, and zero weights."""
        batch, steps = ops.shape(query)[0], ops.shape(query)[1]
        context = ops.zeros((batch, steps, value.shape[-1]), dtype=query.dtype)
        weights = None
        if return_attention_scores:
            weights = ops.zeros((batch, steps, value.shape[1]), "float32")
        positions = ops.zeros((batch, steps))
        return Attended(self.attentional_state(context, query), weights, positions, state)

    def call(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        initial_state=None,
        step=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
        return_positions=False,
    ):
        step = check_step(step)
        if self.alignment == "local-m" and step is None and len(query.shape) == 2:
            raise ValueError(
                "local-m aligns step t with source position t, so a one-step (rank-2) "
                "query needs its step index. Received: step=None"
            )
        attended = self.attend_call(
            query,
            value=value,
            query_mask=query_mask,
            value_mask=value_mask,
            memory=memory,
            initial_state=initial_state,
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        outputs = self.call_outputs(attended, return_attention_scores, return_state)
        if not return_positions:
            return outputs
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        return (*outputs, attended.positions)

    def compute_output_spec(self, query, value=None, return_positions=False, **kwargs):
        outputs = super().compute_output_spec(query, value, **kwargs)
        if not return_positions:
            return outputs
        positions = keras.KerasTensor(tuple(query.shape[:-1]), "float32")
        return (*outputs, positions) if isinstance(outputs, tuple) else (outputs, positions)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "alignment": self.alignment,
                "window": self.window,
                "sigma": self.sigma,
                "renormalize": self.renormalize,
                "position_units": self.position_units,
                "initial_sigma": self.initial_sigma,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = current_config(config)
        # Files from keras-luong 0.1.0 store the unused max_source_length of the base class.
        if config.get("max_source_length", "absent") is None:
            del config["max_source_length"]
        return cls(**config)


def _local(alignment):
    def make_local_attention(score_mode, window, **arguments):
        return LocalAttention(
            alignment=alignment, window=window, score_mode=score_mode, **arguments
        )

    make_local_attention.__doc__ = f"`LuongSeq2Seq(alignment={alignment!r})`'s attention."
    return make_local_attention


for _alignment in LOCAL_ALIGNMENTS:
    register_alignment(_alignment, _local(_alignment))
