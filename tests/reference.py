"""numpy references of the paper's equations, computed in float64 from a layer's weights."""

import keras
import numpy as np

from tests.test_case import weights_by_name


def masked_softmax(scores, mask):
    """Softmax over the last axis restricted to `mask`; all-zero rows where nothing is valid."""
    scores = np.where(mask, scores, -np.inf)
    peak = np.max(scores, axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    e = np.where(mask, np.exp(scores - peak), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def luong_scores(layer, query, value):
    """Luong's scores, `(B, T, S)`, from the paper's equations and the layer's weights."""
    w = {k: v.astype("float64") for k, v in weights_by_name(layer).items()}
    q, h = query.astype("float64"), value.astype("float64")
    if layer.score_mode == "dot":
        scores = np.einsum("btd,bsd->bts", q, h)
    elif layer.score_mode == "general":
        scores = np.einsum("btd,bsd->bts", q, h @ w["key_kernel"])
    elif layer.score_mode == "concat":
        hidden = (q @ w["query_kernel"])[:, :, None, :] + (h @ w["key_kernel"])[:, None, :, :]
        scores = np.tanh(hidden) @ w["score_kernel"]
    else:
        scores = (q @ w["location_kernel"])[..., : h.shape[1]]
    if layer.use_scale:
        scores = scores * w["scale"]
    return scores


def attentional_state(layer, context, query):
    """`tanh(W_c [c; h])` (or the layer's other activation, `linear` for tensorflow-addons'
    layer) when the layer has `attentional_units`, else the context."""
    if not layer.attentional_units:
        return context
    kernel = weights_by_name(layer)["attentional_kernel"].astype("float64")
    activation = {"tanh": np.tanh, "linear": lambda x: x}[
        keras.activations.serialize(layer.attentional_activation)
    ]
    return activation(np.concatenate([context, query], axis=-1) @ kernel)
