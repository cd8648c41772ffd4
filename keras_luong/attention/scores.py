"""The score modes of the Luong attention layers: one registry entry a mode.

An entry says which weights a mode creates, how it projects the keys once per source, and how it
scores a query against those keys. Global and local attention read the same table; a layer
class can add a mode of its own with the `score_mode` decorator.

| mode | weights | keys | score |
|---|---|---|---|
| `"dot"` | none | `h̄_s` | `h_t · h̄_s` |
| `"general"` | `key_kernel` (`W_a`) | `W_a h̄_s` | `h_t · (W_a h̄_s)` |
| `"concat"` | `query_kernel`, `key_kernel`, `score_kernel` | `W_k h̄_s` | see below |

where `"concat"` scores `v_a · tanh(W_q h_t + W_k h̄_s)`, `v_a` being its `score_kernel`.

(`GlobalAttention` adds `"location"`, `softmax(W_a h_t)`, which needs the whole source.)
"""

import inspect

from keras import ops

from keras_luong.backend.ops import batched_dot, project


class ScoreMode:
    """One score mode: its weights, its keys and its score.

    Args:
        score: `score(layer, query, keys)`: `query` `(B, T, d_q)`, `keys` `(B, S, d_k)` (every
            step scores the whole source) or `(B, T, W, d_k)` (a window per step); returns
            `(B, T, S)` or `(B, T, W)` scores. A score that also names `state`,
            `score(layer, query, keys, state)`, is given the attention's state before the
            step (the list `get_initial_state` starts; a layer with state scores one step at
            a time, `T = 1`).
        weights: Optional `weights(layer, query_dim, value_dim)`: a dict of kernel names and
            shapes, created in that order. A kernel named `key_kernel` projects the keys.
        query_side: Optional `query_side(layer, query)`: the same score with the key kernel
            moved onto the query (`h_t W_a^T`), for a layer that gathers new keys every step
            (local attention), so that it projects one query a step rather than every key.
    """

    def __init__(self, score, weights=None, query_side=None):
        self.score = score
        self.weights = weights
        self.query_side = query_side
        # A score that names a `state` argument reads the attention's state before the step
        # (a location-aware score reads the previous alignment).
        self.reads_state = "state" in inspect.signature(score).parameters


def score_mode(name, weights=None, query_side=None):
    """Marks a layer method `(self, query, keys) -> scores` as the score mode `name`.

    The class (a subclass of `BaseLuongAttention`) then accepts `score_mode=name`.

    Args:
        name: The score mode's name, for `score_mode=`.
        weights: Optional, as in `ScoreMode`.
        query_side: Optional, as in `ScoreMode`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention
    >>> from keras_luong.attention.scores import score_mode
    >>> class CosineAttention(GlobalAttention):
    ...     @score_mode("cosine")
    ...     def cosine_score(self, query, keys):
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

    def mark(method):
        method.score_mode = (name, ScoreMode(method, weights, query_side))
        return method

    return mark


def registry_of(cls):
    """The score modes of a layer class: its bases' entries, then those its own methods mark
    with `score_mode`, in the order they are defined."""
    table = {}
    for klass in reversed(cls.__mro__):
        table.update(getattr(klass, "own_score_modes", {}))
        for attribute in vars(klass).values():
            marked = getattr(attribute, "score_mode", None)
            if isinstance(marked, tuple):
                table[marked[0]] = marked[1]
    return table


def dot_score(layer, query, keys):
    """Luong's dot score `h_t · k_s`, for a score mode to build on.

    Args:
        layer: The attention layer (unused).
        query: The query `(B, T, d)`.
        keys: The keys `(B, S, d)`, or one window per step `(B, T, W, d)`.

    Returns:
        The scores `(B, T, S)` or `(B, T, W)`.
    """
    if len(keys.shape) == 4:
        return ops.einsum("btd,btwd->btw", query, keys)
    return batched_dot(query, keys)


def general_weights(layer, query_dim, value_dim):
    return {"key_kernel": (value_dim, query_dim)}


def general_query_side(layer, query):
    # `h_t · W_a h̄_s = (h_t W_a^T) · h̄_s`.
    return project(query, ops.transpose(layer.key_kernel))


def concat_weights(layer, query_dim, value_dim):
    units = layer.units or query_dim
    return {
        "query_kernel": (query_dim, units),
        "key_kernel": (value_dim, units),
        "score_kernel": (units,),
    }


def additive_score(layer, query, keys, vector, offset=None):
    """`vector · tanh(W_q h_t + keys (+ offset))`, `W_q` the layer's `query_kernel`: the
    additive score of `"concat"` and of Bahdanau's attention."""
    hidden = ops.expand_dims(project(query, layer.query_kernel), axis=2)
    keys = keys if len(keys.shape) == 4 else ops.expand_dims(keys, axis=1)
    hidden = hidden + keys
    if offset is not None:
        hidden = hidden + ops.cast(offset, hidden.dtype)
    return project(ops.tanh(hidden), vector)


def concat_score(layer, query, keys):
    return additive_score(layer, query, keys, layer.score_kernel)


# The modes every Luong attention layer has.
LUONG_SCORES = {
    "dot": ScoreMode(dot_score),
    # The keys are `W_a h̄_s` already (projected once per source), so the score is a dot.
    "general": ScoreMode(dot_score, general_weights, general_query_side),
    "concat": ScoreMode(concat_score, concat_weights),
}
