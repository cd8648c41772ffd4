"""The attention pipeline every Luong layer shares, and the protocol of attention with state.

`BaseLuongAttention` owns what every Luong attention layer has in common: the score modes (read
from the registry in `scores.py`), the per-source memory, the masked softmax (in float32 when
the compute dtype is lower), attention dropout, the query mask, and the optional attentional
hidden state `h̃ = tanh(W_c [c; h])`. `GlobalAttention` and `LocalAttention` differ only in
which source positions each query step looks at (their `attend`). How every layer is called,
and the state an attention may keep from step to step, are in `attention_protocol.py`.
"""

import keras
from keras import ops

from keras_luong.attention import scores
from keras_luong.attention.names import check_current_name, current_config
from keras_luong.attention.protocol import AttentionProtocol
from keras_luong.backend.ops import project
from keras_luong.checks import (
    MASKED_SCORE,
    check_floating,
    check_integer,
    check_mask,
    check_rank,
    check_rate,
)


class BaseLuongAttention(AttentionProtocol, keras.layers.Layer):
    """Base class of the Luong attention layers: the shared score-mask-softmax pipeline.

    A subclass without state implements `attend(query, memory, state, query_mask, step,
    training, return_attention_scores, draws)`, which decides which source positions each
    query step attends to, for all steps at once; a subclass with state implements one step,
    `step_call` (see `keras_luong.attention.protocol`), and this class loops over the steps.
    This class prepares the per-source memory, scores a query against keys, normalises the
    scores over the valid positions and combines values.

    The score modes are the registry of `keras_luong.attention.scores` (`"dot"`, `"general"`,
    `"concat"`; `GlobalAttention` adds `"location"`). Global attention projects the keys once
    per source (`prepare`); local attention projects only the windows it gathers, and for
    `"general"` the query instead (`h_t W_a^T`), so that its cost does not grow with the
    source length. A subclass adds a score mode with one method marked by
    `keras_luong.attention.scores.score_mode` (see its example).

    **Attention with state.** An attention may keep a state from one decoding step to the next
    (`MonotonicAttention` keeps its previous alignment, `LocationSensitiveAttention` too). It
    declares the sizes in `state_size` (`None` for one value per source position; states are
    float32), makes the first state with `get_initial_state(batch_size, memory)`, and takes
    the state before the first query step as `initial_state=` (returned after the last step
    with `return_state=True`). Luong's global
    and local attention keep no state. `InputFeedingCell`, `LuongDecoder` and generation carry
    whatever state the attention declares after the RNN's, and beam search reorders it like
    any other state.

    Args:
        score_mode: How a decoder state `h_t` is scored against an encoder state `h̄_s`:
            one of `score_modes`. Defaults to `"general"`.
        units: Width of the hidden layer of the `"concat"` score. Defaults to the query's last
            dimension. Only used by `"concat"`.
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the scores.
        attentional_units: If set, the layer returns the attentional hidden state
            `tanh(W_c [c_t; h_t])` of this width instead of the context `c_t`.
        attentional_activation: The activation of the attentional hidden state. Defaults to
            `"tanh"`, the paper's; `None` gives tensorflow-addons' `AttentionWrapper`'s linear
            attention layer.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout.
        kernel_initializer: Initializer of every kernel. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of every kernel.

    Example:

    Monotonic attention keeps its previous alignment as its state: one step at a time from
    `get_initial_state`, it gives what it gives for all steps at once.

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention, MonotonicAttention
    >>> GlobalAttention.state_size, MonotonicAttention.state_size
    ((), (None,))
    >>> query = np.random.rand(2, 3, 4).astype("float32")  # 3 decoding steps
    >>> value = np.random.rand(2, 5, 4).astype("float32")  # 5 source positions
    >>> attention = MonotonicAttention(mode="recursive")
    >>> together = ops.convert_to_numpy(attention(query, value))
    >>> memory = attention.prepare(value)
    >>> state = attention.get_initial_state(2, memory)  # [a_{-1}]: one-hot on position 0
    >>> for t in range(3):
    ...     output, state = attention(
    ...         query[:, t], memory=memory, initial_state=state, return_state=True
    ...     )
    ...     assert np.allclose(ops.convert_to_numpy(output), together[:, t], atol=1e-6)
    >>> tuple(state[0].shape)
    (2, 5)
    """

    own_score_modes = scores.LUONG_SCORES

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.score_table = scores.registry_of(cls)
        cls.score_modes = tuple(cls.score_table)

    def __init__(
        self,
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
        super().__init__(**kwargs)
        check_current_name("score_mode", score_mode)
        if score_mode not in self.score_modes:
            raise ValueError(
                "Invalid value for argument score_mode. "
                f"Expected one of {self.score_modes}. Received: score_mode={score_mode!r}"
            )
        check_integer("units", units, allow_none=True)
        check_integer("attentional_units", attentional_units, allow_none=True)
        check_rate("dropout", dropout)
        self.score_mode = score_mode
        self.units = units
        self.use_scale = use_scale
        self.attentional_units = attentional_units
        self.attentional_activation = keras.activations.get(attentional_activation)
        self.dropout = dropout
        self.seed = seed
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.seed_generator = keras.random.SeedGenerator(seed) if dropout > 0 else None
        self.supports_masking = True

    @property
    def _score_entry(self):
        """The registry entry of this layer's `score_mode`
        (`keras_luong.attention.scores.ScoreMode`)."""
        return self.score_table[self.score_mode]

    def build(self, query_shape, value_shape):
        check_rank("query", query_shape, (2, 3))
        check_rank("value", value_shape, (3,))
        query_dim, value_dim = query_shape[-1], value_shape[-1]
        if query_dim is None or value_dim is None:
            raise ValueError(
                "The last dimension of query and value must be known. "
                f"Received: query.shape={tuple(query_shape)}, value.shape={tuple(value_shape)}"
            )
        if self.score_mode == "dot" and query_dim != value_dim:
            raise ValueError(
                "The 'dot' score needs the query and value to have the same last dimension; "
                "use score_mode='general' to score states of different sizes. "
                f"Received: query.shape={tuple(query_shape)}, value.shape={tuple(value_shape)}"
            )
        self._check_source_length(value_shape[1])
        # The score mode's weights, in the order its entry lists them (the order a .keras file
        # stores them in).
        self.key_kernel = None
        make_weights = self._score_entry.weights
        shapes = make_weights(self, query_dim, value_dim) if make_weights else {}
        for name, shape in shapes.items():
            setattr(self, name, self._add_kernel(name, shape))
        self.scale = (
            self.add_weight(name="scale", shape=(), initializer="ones") if self.use_scale else None
        )
        self.attentional_kernel = None
        if self.attentional_units:
            self.attentional_kernel = self._add_kernel(
                "attentional_kernel", (value_dim + query_dim, self.attentional_units)
            )

    def _add_kernel(self, name, shape):
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )

    # -- the per-source memory ----------------------------------------------------------------

    def prepare(self, value, value_mask=None):
        """Everything about one source that does not depend on the query, computed once.

        Returns a dict of tensors (the "memory"): the `value` `(B, S, d_v)` as a tensor of
        the layer's compute dtype, its `mask` `(B, S)` if given, and whatever the layer
        scores against (the keys `W_a h̄_s` of `"general"`, `W_k h̄_s` of `"concat"`, the
        windows' gather tables of local attention). Pass it as `memory=` to score many
        decoding steps against one source without recomputing any of it; it is a plain
        structure, so it can be closed over by a loop.

        A memory is laid out per source (local attention's gather tables index the flattened
        batch), so to attend to one source from several hypotheses at once (beam search),
        repeat the value and its mask per hypothesis first, then prepare the repeated value.

        Args:
            value: The encoder states `(B, S, d_v)`.
            value_mask: Optional boolean `(B, S)`, `False` on padding.
        """
        check_rank("value", value.shape, (3,))
        if not self.built:
            raise ValueError(
                f"{self.name} has no weights yet, so it cannot prepare a memory: call it once, "
                "or build it with layer.build(query_shape, value_shape), first. "
                f"Received: value.shape={tuple(value.shape)}"
            )
        check_floating("value", value)
        self._check_source_length(value.shape[1])
        # A tensor of the compute dtype, as the layer's call would make it: a numpy array or
        # float64 value left in the memory would be converted again (O(S)) at every call.
        value = ops.convert_to_tensor(value, dtype=self.compute_dtype)
        mask = check_mask("value_mask", value_mask, value.shape[:2])
        memory = {}
        if mask is not None:
            # Whatever a padded position holds (even NaN or inf) must not reach the output or
            # the gradient: a weight of zero times NaN is NaN, so the states themselves are
            # zeroed.
            value = ops.where(ops.expand_dims(mask, -1), value, ops.zeros_like(value))
            memory["mask"] = mask
        memory["value"] = value
        memory["keys"] = self.project_keys(value)
        return memory

    def project_keys(self, value):
        """The keys the score mode scores against, once per source: `value @ key_kernel`
        where the mode has a `key_kernel` (`W_a h̄_s` for `"general"`, `W_k h̄_s` for
        `"concat"`), else the states themselves."""
        return value if self.key_kernel is None else project(value, self.key_kernel)

    # -- the pieces subclasses put together -------------------------------------------------

    def score(self, query, keys, state=None):
        """Scores `query` `(B, T, d_q)` against `keys`: `(B, S, d_k)`, shared by all steps, gives
        `(B, T, S)`; `(B, T, W, d_k)`, a window per step, gives `(B, T, W)`. `state`, the
        attention's state before the step, reaches a score mode that reads it."""
        if keras.backend.standardize_dtype(query.dtype) == "float16":
            # A dot product of float16 states overflows float16's range (65504) long before
            # the float32 softmax: score in float32.
            query, keys = ops.cast(query, "float32"), ops.cast(keys, "float32")
        entry = self._score_entry
        if entry.reads_state:
            scores_ = entry.score(self, query, keys, state=state)
        else:
            scores_ = entry.score(self, query, keys)
        if self.scale is not None:
            scores_ = scores_ * ops.cast(self.scale, scores_.dtype)
        return scores_

    def masked_softmax(self, scores, mask=None):
        """Softmax over the last axis, restricted to `mask`; computed in float32 when the
        compute dtype is lower. Masked positions get exactly zero weight and a row with no
        valid position gets all zeros (with finite gradients)."""
        if keras.backend.standardize_dtype(scores.dtype) in ("float16", "bfloat16"):
            scores = ops.cast(scores, "float32")
        if scores.shape[-1] == 1:
            # A single candidate takes all the weight (and Keras warns on a size-1 softmax).
            weights = ops.ones_like(scores)
        else:
            if mask is not None:
                scores = ops.where(mask, scores, ops.cast(MASKED_SCORE, scores.dtype))
            weights = ops.softmax(scores, axis=-1)
        return weights if mask is None else weights * ops.cast(mask, weights.dtype)

    def combine(self, weights, value, training=None, dropout_mask=None):
        """Applies attention dropout and returns the weighted sum of `value`: `(B, T, S)` weights
        with `(B, S, d)` values, or `(B, T, W)` weights with `(B, T, W, d)` windows.
        `dropout_mask`, drawn ahead by `dropout_mask()`, replaces the random draw."""
        weights = ops.cast(weights, value.dtype)
        if training and self.dropout > 0:
            if dropout_mask is None:
                weights = keras.random.dropout(weights, self.dropout, seed=self.seed_generator)
            else:
                weights = weights * ops.cast(dropout_mask, weights.dtype)
        if len(value.shape) == 4:
            return ops.einsum("btw,btwd->btd", weights, value)
        return ops.matmul(weights, value)

    def attentional_state(self, context, query):
        """`h̃_t = tanh(W_c [c_t; h_t])` (or another `attentional_activation`), or `c_t` itself
        when `attentional_units` is unset."""
        if not self.attentional_units:
            return context
        return self.attentional_activation(
            project(ops.concatenate([context, query], axis=-1), self.attentional_kernel)
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
        """Attends a query `(B, T, d_q)` to a prepared memory from the attention's `state`
        before the first step; returns an `Attended`. An attention with state keeps it
        unchanged at steps where `query_mask` `(B, T)` is False. `draws` `(B, T, ...)`, drawn
        ahead by `dropout_mask()`, replace the random draws.

        Here: an attention with state runs its `step_call` over the steps (`attend_steps`);
        one without state overrides this to attend to all steps at once."""
        if self.state_size:
            return self.attend_steps(query, memory, state, query_mask, step, training, draws)
        raise NotImplementedError(
            f"{type(self).__name__} implements attend(), or declares a state_size and "
            "implements step_call()"
        )

    def _candidates(self, source_length):
        """How many source positions one query step scores: `S` here, the window's `2D + 1`
        in local attention."""
        return source_length

    def dropout_mask(self, batch_size, steps, source_length, training=True):
        """Attention dropout drawn ahead for `steps` query steps: `(batch_size, steps, W)`
        of 0 and `1 / (1 - dropout)`, `W = _candidates(source_length)`; `None` when nothing
        is dropped (not training, or no dropout). `draw_ahead` puts it in the memory."""
        if not training or not self.dropout:
            return None
        shape = (batch_size, steps, self._candidates(source_length))
        return keras.random.dropout(ops.ones(shape), self.dropout, seed=self.seed_generator)

    def _check_source_length(self, source_length):
        """Refuses a source the layer cannot attend to (a no-op here; `GlobalAttention`'s
        `"location"` score has a longest source)."""

    @property
    def longest_source(self):
        """The most source positions the layer attends over, or `None` (any number)."""
        return None

    @classmethod
    def from_config(cls, config):
        return super().from_config(current_config(config))  # keras-luong 0.3's spellings

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score_mode": self.score_mode,
                "units": self.units,
                "use_scale": self.use_scale,
                "attentional_units": self.attentional_units,
                "attentional_activation": keras.activations.serialize(self.attentional_activation),
                "dropout": self.dropout,
                "seed": self.seed,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config


BaseLuongAttention.score_table = scores.registry_of(BaseLuongAttention)
BaseLuongAttention.score_modes = tuple(BaseLuongAttention.score_table)
