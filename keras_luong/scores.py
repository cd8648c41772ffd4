"""The Luong score functions and the attention pipeline they share.

`BaseLuongAttention` owns what every Luong attention layer has in common: the table of score
modes (their weights, the keys projected once per source, the score), the per-source memory,
the masked softmax (in float32 when the compute dtype is lower), attention dropout, the query
mask, and the optional attentional hidden state `h̃ = tanh(W_c [c; h])`. `GlobalAttention` and
`LocalAttention` differ only in which source positions each query step looks at (their
`attend`); `GlobalAttention` adds the `"location"` score, which needs the whole source.
"""

import re

import keras
from keras import ops

from keras_luong.checks import (
    MASKED_SCORE,
    as_bool,
    check_batch,
    check_floating,
    check_integer,
    check_mask,
    check_rank,
    check_rate,
)

_SCORE_METHOD = re.compile(r"^_(\w+)_score$")


def score_modes_of(cls):
    """The score modes a layer class defines: one per `_<mode>_score` method, the base
    class's first, in the order they are defined."""
    modes = []
    for klass in reversed(cls.__mro__):
        for name in vars(klass):
            match = _SCORE_METHOD.match(name)
            if match and match.group(1) not in modes:
                modes.append(match.group(1))
    return tuple(modes)


class BaseLuongAttention(keras.layers.Layer):
    """Base class of the Luong attention layers: the shared score-mask-softmax pipeline.

    Subclasses implement `attend(query, memory, step, training, return_attention_scores,
    dropout_mask)`, which decides which source positions each query step attends to; this
    class prepares the per-source memory, scores a query against keys, normalises the scores
    over the valid positions and combines values.

    The score modes are one table, read by both attention layers:

    | mode | weights (`_<mode>_weights`) | keys (`project_keys`) | score (`_<mode>_score`) |
    |---|---|---|---|
    | `"dot"` | none | `h̄_s` | `h_t · h̄_s` |
    | `"general"` | `key_kernel` (`W_a`) | `W_a h̄_s` | `h_t · (W_a h̄_s)` |
    | `"concat"` | `query_kernel`, `key_kernel`, `score_kernel` | `W_k h̄_s` | see below |

    where `"concat"` scores `v_a · tanh(W_q h_t + W_k h̄_s)`, `v_a` being its `score_kernel`.
    Global attention projects the keys once per source (`prepare`); local attention projects
    only the windows it gathers, and for `"general"` the query instead (`h_t W_a^T`), so that
    its cost does not grow with the source length.

    (`GlobalAttention` adds `"location"`.) A subclass adds a score mode by defining one method,
    `_<mode>_score(self, query, keys)`: `query` is `(B, T, d_q)`, `keys` `(B, S, d_k)` (every
    step scores the whole source) or `(B, T, W, d_k)` (a window per step), and it returns
    `(B, T, S)` or `(B, T, W)` scores. It may define `_<mode>_weights(self, query_dim,
    value_dim)`, a dict of kernel names and shapes; a kernel named `key_kernel` projects the
    keys.

    Args:
        score_mode: How a decoder state `h_t` is scored against an encoder state `h̄_s`:
            one of `score_modes` (the table above). Defaults to `"general"`.
        units: Width of the hidden layer of the `"concat"` score. Defaults to the query's
            last dimension. Only used by `"concat"`.
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

    A cosine score, added to global attention with one method:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention
    >>> class CosineAttention(GlobalAttention):
    ...     def _cosine_score(self, query, keys):
    ...         unit = lambda x: x / ops.norm(x, axis=-1, keepdims=True)
    ...         return ops.einsum("btd,bsd->bts", unit(query), unit(keys))
    >>> CosineAttention.score_modes
    ('dot', 'general', 'concat', 'location', 'cosine')
    >>> query = np.array([[[1.0, 0.0]]], dtype="float32")  # one step
    >>> value = np.array([[[2.0, 0.0], [0.0, 3.0]]], dtype="float32")  # two positions
    >>> _, weights = CosineAttention(score_mode="cosine")(
    ...     query, value, return_attention_scores=True
    ... )
    >>> weights = ops.convert_to_numpy(weights)[0, 0]  # softmax of the cosines (1, 0)
    >>> np.allclose(weights, np.exp([1, 0]) / np.exp([1, 0]).sum())
    True
    """

    # Whether the layer needs the previous step's alignment (`previous_alignment=`), which a
    # decoder then carries in its states (MonotonicAttention).
    carries_alignment = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.score_modes = score_modes_of(cls)

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
        self.check_source_length(value_shape[1])
        # The score mode's weights, in the order its table entry lists them (the order a
        # .keras file stores them in).
        self.key_kernel = None
        make_weights = getattr(self, f"_{self.score_mode}_weights", None)
        shapes = make_weights(query_dim, value_dim) if make_weights else {}
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
        """
        check_rank("value", value.shape, (3,))
        if not self.built:
            raise ValueError(
                f"{self.name} has no weights yet, so it cannot prepare a memory: call it once, "
                "or build it with layer.build(query_shape, value_shape), first. "
                f"Received: value.shape={tuple(value.shape)}"
            )
        check_floating("value", value)
        self.check_source_length(value.shape[1])
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

    def score(self, query, keys):
        """Scores `query` `(B, T, d_q)` against `keys`: `(B, S, d_k)`, shared by all steps, gives
        `(B, T, S)`; `(B, T, W, d_k)`, a window per step, gives `(B, T, W)`."""
        if keras.backend.standardize_dtype(query.dtype) == "float16":
            # A dot product of float16 states overflows float16's range (65504) long before
            # the float32 softmax: score in float32.
            query, keys = ops.cast(query, "float32"), ops.cast(keys, "float32")
        scores = getattr(self, f"_{self.score_mode}_score")(query, keys)
        if self.scale is not None:
            scores = scores * ops.cast(self.scale, scores.dtype)
        return scores

    def _dot_score(self, query, keys):
        if len(keys.shape) == 4:
            return ops.einsum("btd,btwd->btw", query, keys)
        return ops.einsum("btd,bsd->bts", query, keys)

    def _general_weights(self, query_dim, value_dim):
        return {"key_kernel": (value_dim, query_dim)}

    def _general_score(self, query, keys):
        # The keys are `W_a h̄_s` already (projected once per source).
        return self._dot_score(query, keys)

    def _concat_weights(self, query_dim, value_dim):
        units = self.units or query_dim
        return {
            "query_kernel": (query_dim, units),
            "key_kernel": (value_dim, units),
            "score_kernel": (units,),
        }

    def _concat_score(self, query, keys):
        hidden = ops.expand_dims(project(query, self.query_kernel), axis=2)
        keys = keys if len(keys.shape) == 4 else ops.expand_dims(keys, axis=1)
        return project(ops.tanh(hidden + keys), self.score_kernel)

    def normalize(self, scores, mask=None):
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
        `dropout_mask`, a slice of `dropout_mask()`, replaces the random draw (a loop draws
        the masks of all its steps before it starts, as Keras' RNN does for its cells)."""
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
        step=None,
        training=None,
        return_attention_scores=False,
        dropout_mask=None,
    ):
        """Attends a query `(B, T, d_q)` to a prepared memory. Returns `(output, weights,
        positions)`: the output `(B, T, d)`, the weights `(B, T, S)` (only when asked for,
        else `None`) and the aligned positions `(B, T)` (`None` where the layer has none).
        `dropout_mask` `(B, T, W)`, drawn ahead by `dropout_mask()`, replaces the dropout's
        random draw."""
        raise NotImplementedError

    def candidates(self, source_length):
        """How many source positions one query step scores: `S` here, the window's `2D + 1`
        in local attention."""
        return source_length

    def dropout_mask(self, batch_size, steps, source_length, training=True):
        """Attention dropout drawn ahead for `steps` query steps: `(batch_size, steps, W)`
        of 0 and `1 / (1 - dropout)`, `W = candidates(source_length)`; `None` when nothing
        is dropped (not training, or no dropout). A loop (the decoder) draws it before it
        starts and passes step `t`'s slice as the `dropout_mask` call argument: a random draw
        inside a compiled JAX loop would leak its seed's state out of the loop."""
        if not training or not self.dropout:
            return None
        shape = (batch_size, steps, self.candidates(source_length))
        return keras.random.dropout(ops.ones(shape), self.dropout, seed=self.seed_generator)

    # -- the call -----------------------------------------------------------------------------

    def call(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        step=None,
        training=None,
        return_attention_scores=False,
        dropout_mask=None,
    ):
        output, weights, _ = self.attend_call(
            query,
            value,
            query_mask,
            value_mask,
            memory,
            step,
            training,
            return_attention_scores,
            dropout_mask,
        )
        return (output, weights) if return_attention_scores else output

    def attend_call(
        self,
        query,
        value,
        query_mask,
        value_mask,
        memory,
        step,
        training,
        return_weights,
        dropout_mask=None,
    ):
        """The call of every Luong layer: memory, query standardised to `(B, T, d_q)`,
        `attend`, the query mask applied, a one-step query's time axis removed again."""
        if memory is None:
            if value is None:
                raise ValueError(
                    "Pass the encoder states as value=, or a prepared memory as "
                    "memory=layer.prepare(value, value_mask). Received: value=None, memory=None"
                )
            memory = self.prepare(value, value_mask)
        check_rank("query", query.shape, (2, 3))
        check_floating("query", query)
        check_batch(query.shape[0], memory["value"].shape[0])
        one_step = len(query.shape) == 2
        if one_step:
            query = ops.expand_dims(query, axis=1)
            if query_mask is not None:
                query_mask = ops.expand_dims(as_bool(query_mask), axis=1)
            if dropout_mask is not None:
                dropout_mask = ops.expand_dims(dropout_mask, axis=1)
        query_mask = check_mask("query_mask", query_mask, query.shape[:2])
        if query_mask is not None:
            # Masked steps are computed from zeros, so that nothing they hold (NaN included)
            # reaches the outputs or the gradients.
            keep = ops.expand_dims(query_mask, -1)
            query = ops.where(keep, query, ops.zeros_like(query))
        output, weights, positions = self.attend(
            query,
            memory,
            step=step,
            training=training,
            return_attention_scores=return_weights,
            dropout_mask=dropout_mask,
        )
        if query_mask is not None:
            output = ops.where(keep, output, ops.zeros_like(output))
            if weights is not None:
                weights = ops.where(keep, weights, ops.zeros_like(weights))
        if one_step:
            output = ops.squeeze(output, axis=1)
            weights = None if weights is None else ops.squeeze(weights, axis=1)
            positions = None if positions is None else ops.squeeze(positions, axis=1)
        return output, weights, positions

    def compute_output_shape(self, query_shape, value_shape):
        """The output's shape: the query's, with the last axis the size of `c_t` (the
        value's) or of `h̃_t` (`attentional_units`)."""
        return (*query_shape[:-1], self.attentional_units or value_shape[-1])

    def compute_output_spec(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        step=None,
        training=None,
        return_attention_scores=False,
        dropout_mask=None,
    ):
        value_shape = (memory["value"] if value is None else value).shape
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, value_shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return output
        return output, keras.KerasTensor((*query.shape[:-1], value_shape[1]), "float32")

    def check_source_length(self, source_length):
        """Refuses a source the layer cannot attend to (a no-op here; `GlobalAttention`'s
        `"location"` score has a longest source)."""

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


BaseLuongAttention.score_modes = score_modes_of(BaseLuongAttention)


def project(x, kernel):
    """`x @ kernel` over the last axis of `x` (a kernel of rank 2, or 1 for a dot product),
    as one 2-D matmul between two reshapes. Not `ops.matmul` on `x` itself: on TensorFlow a
    matmul of rank 3 by rank 2 is a `tensordot`, whose gradient inside a loop does not compile
    with XLA (its transpose permutation is carried from the forward loop and is no longer a
    constant); nor an einsum with an ellipsis, which TensorFlow without XLA runs ~10x slower."""
    kernel = ops.cast(kernel, x.dtype)  # float32 where float16 scores are computed in float32
    vector = len(kernel.shape) == 1
    if vector:
        kernel = ops.expand_dims(kernel, -1)
    leading = ops.shape(x)[:-1]
    y = ops.matmul(ops.reshape(x, (-1, kernel.shape[0])), kernel)
    return ops.reshape(y, leading) if vector else ops.reshape(y, (*leading, kernel.shape[1]))
