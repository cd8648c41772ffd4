"""Greedy decoding."""

import keras
from keras import ops

from keras_luong.backend.top_k import first_max_index
from keras_luong.samplers.base import Sampler


@keras.saving.register_keras_serializable(package="keras_luong")
class GreedySampler(Sampler):
    """Greedy decoding: the most probable token at every step.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> # Next-token probabilities given the last token (0 pad, 1 start, 2 end, 3 "a", 4 "b")
    >>> table = np.log(np.array([
    ...     [0.2, 0.2, 0.2, 0.2, 0.2],  # after padding
    ...     [1e-9, 1e-9, 1e-9, 0.6, 0.4],  # after start: "a" 0.6, "b" 0.4
    ...     [1e-9, 1e-9, 1.0, 1e-9, 1e-9],  # after end
    ...     [1e-9, 1e-9, 0.3, 0.4, 0.3],  # after "a": "a" again 0.4, end 0.3
    ...     [1e-9, 1e-9, 0.9, 0.05, 0.05],  # after "b": end 0.9
    ... ]), dtype="float32")
    >>> def next(prompt, cache, index):
    ...     logits = ops.take(table, ops.take(prompt, index - 1, axis=1), axis=0)
    ...     return logits, None, cache
    >>> prompt = np.array([[1, 0, 0, 0, 0]])  # the start token, then 4 positions to fill
    >>> ids = GreedySampler()(next, prompt, index=1, stop_token_ids=[2])
    >>> ops.convert_to_numpy(ids).tolist()  # "a" (0.6), then "a" again and again
    [[1, 3, 3, 3, 3]]

    In a model: `model.generate(source, max_length=30, sampler="greedy")`;
    `GreedySampler(min_length=3, banned_token_ids=(3,))` decodes at least three tokens before
    the end token, and never the unknown id 3.

    Args:
        min_length: A row's stop tokens cannot come before this many other tokens. Defaults
            to 0.
        banned_token_ids: Ids never generated. Defaults to `()`.
        temperature: Divides the logits (which changes nothing in greedy decoding). Defaults
            to 1.
        no_repeat_ngram_size: If `n > 0`, no row repeats an n-gram of its own (see
            `Sampler`). Defaults to 0.
    """

    def compute_probabilities(self, logits):
        """The logits themselves (in float32): their argmax is the softmax's, so the softmax
        over the vocabulary, a pass over every logit at every step, is skipped."""
        return ops.cast(logits, "float32")

    def get_next_token(self, probabilities):
        return first_max_index(probabilities)
