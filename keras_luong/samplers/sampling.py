"""Sampling: each token drawn from the model's distribution, at a temperature, within its top-k
tokens or its top-p nucleus, seeded."""

import keras
from keras import ops

from keras_luong.backend.top_k import kth_largest
from keras_luong.checks import MASKED_SCORE, check_integer, check_number
from keras_luong.samplers.base import Sampler


@keras.saving.register_keras_serializable(package="keras_luong")
class RandomSampler(Sampler):
    """Sampling: each token drawn from the softmax of the logits over `temperature`, within
    the `top_k` most probable tokens and the smallest set of them whose probability reaches
    `top_p` (the nucleus of Holtzman et al., 2020), as back-translation and diverse outputs
    use (fairseq's `--sampling --sampling-topk --sampling-topp`).

    Each token is drawn by the inverse of the distribution's cumulative sum at a uniform
    number: in `generate` and `translate`, NumPy's generator of `seed` draws them for the
    whole call, one per row and position, so a seed gives the same ids on every backend and
    at every call (`seed=None`: new ids at every call). keras-hub's samplers of the same names
    need keras-hub (and TensorFlow); this one runs on greedy decoding's loop, compiled like it.

    Args:
        top_k: Draw among the `top_k` most probable tokens only (all those tied with the
            `top_k`-th too); 0 (the default) for every token.
        top_p: Draw among the most probable tokens whose probabilities, added up from the
            largest, first reach `top_p` (all those tied with the last too); 1 (the
            default) for every token.
        temperature: Divides the logits before the softmax: below 1 sharper, above 1 flatter.
            Defaults to 1.
        seed: The seed of the uniform numbers, an integer; `None` (the default) for new ones
            at every call.
        min_length: A row's stop tokens cannot come before this many other tokens. Defaults
            to 0.
        banned_token_ids: Ids never generated. Defaults to `()`.
        no_repeat_ngram_size: If `n > 0`, no row repeats an n-gram of its own (see
            `Sampler`). Defaults to 0.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> logits = ops.log(ops.convert_to_tensor([[0.0, 0.0, 0.1, 0.2, 0.3, 0.4]]))
    >>> def next(prompt, cache, index):  # the same distribution at every step
    ...     return logits, None, cache
    >>> noise = np.array([[1.0, 0.05, 0.25, 0.65, 1.0]], "float32")  # one uniform a position
    >>> sampler = RandomSampler()
    >>> ids = sampler(next, np.array([[1, 0, 0, 0, 0]]), cache={"noise": noise}, index=1)
    >>> ops.convert_to_numpy(ids).tolist()  # cumulative 0.1, 0.3, 0.6, 1.0: ids 2, 3, 4, 5
    [[1, 2, 3, 5, 5]]
    >>> ids = RandomSampler(top_k=2)(next, np.array([[1, 0, 0]]), cache={"noise": noise},
    ...                              index=1)
    >>> ops.convert_to_numpy(ids).tolist()  # among ids 4 and 5 (3/7 and 4/7)
    [[1, 4, 4]]
    """

    # The uniform numbers, `(rows, positions)` in (0, 1], that generation draws per call.
    needs = ("noise",)

    def __init__(
        self,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        seed=None,
        min_length=0,
        banned_token_ids=(),
        no_repeat_ngram_size=0,
    ):
        super().__init__(
            temperature=temperature,
            no_repeat_ngram_size=no_repeat_ngram_size,
            min_length=min_length,
            banned_token_ids=banned_token_ids,
        )
        self.top_k = int(check_integer("top_k", top_k, minimum=0))
        self.top_p = check_number("top_p", top_p, minimum=0, exclusive=True)
        if self.top_p > 1:
            raise ValueError(
                f"Invalid value for argument top_p. Expected a number in (0, 1]. Received: "
                f"top_p={top_p!r}"
            )
        self.seed = check_integer("seed", seed, minimum=0, allow_none=True)

    def __call__(self, next, prompt, cache=None, index=0, **kwargs):
        if not isinstance(cache, dict) or "noise" not in cache:
            raise ValueError(
                "Invalid value for argument cache. RandomSampler reads its uniform numbers, "
                "(rows, positions) in (0, 1], from cache['noise'], which generate and "
                "translate provide. Received: cache of type "
                f"{type(cache).__name__}{' without noise' if isinstance(cache, dict) else ''}"
            )
        return super().__call__(next, prompt, cache=cache, index=index, **kwargs)

    def next_token(self, logits, cache, index):
        logits = self.apply_temperature(logits)
        if self.top_k and self.top_k < logits.shape[-1]:
            kth = kth_largest(logits, self.top_k)
            logits = ops.where(ops.less(logits, kth), MASKED_SCORE, logits)
        probabilities = ops.softmax(logits, axis=-1)
        if self.top_p < 1:
            least = nucleus_threshold(probabilities, self.top_p)
            probabilities = ops.where(ops.less(probabilities, least), 0.0, probabilities)
        cumulative = ops.cumsum(probabilities, axis=-1)
        uniform = ops.cast(cache["noise"], "float32")[:, index]
        # The first token whose cumulative probability reaches u × the total: the number of
        # tokens below it (u > 0, so a token of probability 0 is never the one).
        threshold = uniform[:, None] * cumulative[:, -1:]
        return ops.sum(ops.cast(ops.less(cumulative, threshold), "int32"), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"top_k": self.top_k, "top_p": self.top_p, "seed": self.seed})
        return config


# Halvings of the search for the nucleus' least probability: its error is 2^-30 of the row's
# largest probability, far below float32's spacing around the probabilities it separates.
NUCLEUS_HALVINGS = 30


def nucleus_threshold(probabilities, top_p):
    """The least probability of each row's nucleus `(rows, 1)`: the largest `t` whose
    probabilities `>= t` add up to `top_p` or more, found by halving `[0, max]` rather than by
    sorting the row (a masked sum over the row per halving; XLA's sort on a CPU took 54x
    greedy decoding's time at 8,000 ids)."""
    low = ops.zeros_like(probabilities[:, :1])
    high = ops.max(probabilities, axis=-1, keepdims=True)
    for _ in range(NUCLEUS_HALVINGS):
        middle = (low + high) / 2
        mass = ops.sum(ops.where(probabilities >= middle, probabilities, 0.0), axis=-1)
        enough = ops.greater_equal(mass, top_p)[:, None]
        low, high = ops.where(enough, middle, low), ops.where(enough, high, middle)
    return low


def uniform_noise(rng, rows, positions):
    """`(rows, positions)` float32 uniform numbers in (0, 1] from the NumPy generator `rng`."""
    return (1.0 - rng.random((rows, positions), dtype="float32")).astype("float32")
