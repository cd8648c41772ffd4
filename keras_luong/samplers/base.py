"""The base of keras-luong's samplers: the decoding loop in keras-hub's call convention."""

from keras import ops

from keras_luong.backend.loops import unrolling
from keras_luong.backend.ops import write_column
from keras_luong.checks import MASKED_SCORE, check_integer, check_number
from keras_luong.samplers.ngrams import mask_repeated_ngrams


class Sampler:
    """The base of keras-luong's samplers: a loop that fills a `prompt` from `index` on, one
    position per call of `next`, until every row has emitted one of `stop_token_ids` or the
    prompt is full.

    The call convention is keras-hub's (`keras_hub.samplers.Sampler`), so the two kinds are
    interchangeable in `LuongSeq2Seq.generate`:

    ```
    sampler(next, prompt, cache=None, index=0, mask=None, stop_token_ids=None)
    next(prompt, cache, index) -> (logits, hidden_states, cache)
    ```

    Subclasses override `get_next_token(probabilities)` (greedy), `next_token(logits, cache,
    index)` (sampling, which reads its uniform numbers from the cache) or the whole `__call__`
    (beam search).

    **What a sampler reads besides the logits** it names in `needs` (a tuple; empty here and
    for keras-hub's samplers, which need not have it). Generation then keeps each named entry
    in the cache, which becomes a dict: `{"states": <the decoder's states>, name: ...}`,
    updated by `next` at every step and repeated and reordered with the beams like the
    states. Generation provides `"attention"`: the step's attention weights `(rows, S)`,
    float32 (zeros before the first step), which a coverage penalty reads. A name generation
    does not provide is a `ValueError` when the generator is built.

    **A sampler that returns its cache** (`returns_cache`, true for this loop and beam
    search) gives `(outputs, cache)` when called with `return_cache=True`: the cache after
    the last step, its rows those of the outputs. Generation then records the alignments
    inside the loop (`generate(..., return_attention_scores=True)`, `translate(...,
    return_alignments=True)`); other samplers' outputs are decoded once more, with teacher
    forcing, for them. A subclass that overrides `__call__` without that argument sets
    `returns_cache = False`.

    Args:
        temperature: Divides the logits before the softmax. Defaults to 1.
        no_repeat_ngram_size: If `n > 0`, a row never repeats an n-gram of its own: a token
            that would complete an n-gram already in the row (the prompt included) gets zero
            probability (OpenNMT's `block_ngram_repeat`, fairseq's `no_repeat_ngram_size`).
            Defaults to 0 (no blocking).
        min_length: A row's stop tokens cannot come before this many other tokens it
            generated (OpenNMT-py's `-min_length`, fairseq's `--min-len`). Defaults to 0.
        banned_token_ids: Ids never generated, a tuple: the unknown id 3 of keras-luong's
            vocabularies for OpenNMT-py's `-ban_unk_token`. Defaults to `()`.

    Example:

    A sampler that picks the most probable token other than the out-of-vocabulary id 3:

    >>> import numpy as np
    >>> from keras import ops
    >>> class NoUnknownSampler(Sampler):
    ...     def get_next_token(self, probabilities):
    ...         unknown = ops.arange(ops.shape(probabilities)[-1]) == 3
    ...         return ops.argmax(ops.where(unknown, 0.0, probabilities), axis=-1)
    >>> def next(prompt, cache, index):  # token 3 most probable, then 5, whatever came before
    ...     logits = ops.log(ops.convert_to_tensor([[0.05, 0.05, 0.05, 0.5, 0.05, 0.3]]))
    ...     return logits, None, cache
    >>> ids = NoUnknownSampler()(next, np.array([[1, 0, 0]]), index=1)
    >>> ops.convert_to_numpy(ids).tolist()
    [[1, 5, 5]]
    """

    # What the sampler reads from the cache besides the decoder's states (see above).
    needs = ()
    # Whether `__call__` takes `return_cache` (see above).
    returns_cache = True

    def __init__(self, temperature=1.0, no_repeat_ngram_size=0, min_length=0, banned_token_ids=()):
        self.temperature = check_number("temperature", temperature, minimum=0, exclusive=True)
        self.no_repeat_ngram_size = check_integer(
            "no_repeat_ngram_size", no_repeat_ngram_size, minimum=0
        )
        self.min_length = int(check_integer("min_length", min_length, minimum=0))
        if isinstance(banned_token_ids, (str, bytes)) or not hasattr(banned_token_ids, "__iter__"):
            raise ValueError(
                "Invalid value for argument banned_token_ids. Expected a tuple of token ids. "
                f"Received: banned_token_ids={banned_token_ids!r}"
            )
        self.banned_token_ids = tuple(
            int(check_integer("banned_token_ids", i, minimum=0)) for i in banned_token_ids
        )

    def bans(self, vocabulary, lengths, stop_token_ids):
        """The tokens a row may not generate now, a boolean `(rows, vocabulary)` (`rows` 1
        for a scalar `lengths`), or `None` when there is none: `banned_token_ids`, and the stop
        tokens of a row that has generated fewer than `min_length` tokens (`lengths`, int32)."""
        ids = ops.arange(vocabulary, dtype="int32")
        banned = None
        if self.banned_token_ids:
            banned = is_any(ids, self.banned_token_ids)[None]
        if stop_token_ids and self.min_length:
            short = ops.reshape(ops.less(lengths, self.min_length), (-1, 1))
            too_short = ops.logical_and(short, is_any(ids, stop_token_ids)[None])
            banned = too_short if banned is None else ops.logical_or(banned, too_short)
        return banned

    def block_repeats(self, logits, prompt, index, active=None):
        """`logits` `(rows, vocabulary)` with `MASKED_SCORE` on every token that would repeat
        an n-gram of its row of `prompt` at position `index` (unchanged when
        `no_repeat_ngram_size` is 0, and in the rows where the boolean `active` is false)."""
        if not self.no_repeat_ngram_size:
            return logits
        return mask_repeated_ngrams(logits, prompt, index, self.no_repeat_ngram_size, active)

    def __call__(
        self,
        next,
        prompt,
        cache=None,
        index=0,
        mask=None,
        stop_token_ids=None,
        hidden_states=None,
        model=None,
        return_cache=False,
    ):
        steps = ops.shape(prompt)[1] - index
        index = ops.cast(index, "int32")
        mask = ops.zeros_like(prompt, "bool") if mask is None else ops.cast(mask, "bool")
        cache = () if cache is None else cache
        stop_token_ids = tuple(stop_token_ids or ())

        def cond(prompt, cache, index, mask):
            if not stop_token_ids:
                return ops.convert_to_tensor(True)
            ended = ops.logical_and(is_any(prompt, stop_token_ids), ops.logical_not(mask))
            return ops.logical_not(ops.all(ops.any(ended, axis=-1)))

        start = index

        def body(prompt, cache, index, mask):
            logits, _, cache = next(prompt, cache, index)
            logits = self.block_repeats(ops.cast(logits, "float32"), prompt, index)
            banned = self.bans(ops.shape(logits)[-1], index - start, stop_token_ids)
            if banned is not None:
                logits = ops.where(banned, MASKED_SCORE, logits)
            token = ops.cast(self.next_token(logits, cache, index), prompt.dtype)
            token = ops.where(mask[:, index], prompt[:, index], token)
            prompt = write_column(prompt, index, token)
            return prompt, cache, index + 1, mask

        prompt, cache, *_ = decoding_loop(cond, body, (prompt, cache, index, mask), steps)
        return (prompt, cache) if return_cache else prompt

    def next_token(self, logits, cache, index):
        """The token of each row at position `index` from its `logits` `(rows, vocabulary)`
        (float32, the bans applied) and the `cache` after this step: by default
        `get_next_token(compute_probabilities(logits))`."""
        return self.get_next_token(self.compute_probabilities(logits))

    def compute_probabilities(self, logits):
        """The softmax of `logits / temperature`, in float32 whatever the policy."""
        return ops.softmax(self.apply_temperature(logits), axis=-1)

    def apply_temperature(self, logits):
        """`logits / temperature` in float32 (no division at temperature 1: on torch, where
        nothing fuses, each elementwise op is one more pass over `rows * vocabulary`)."""
        logits = ops.cast(logits, "float32")
        return logits if self.temperature == 1.0 else logits / self.temperature

    def get_next_token(self, probabilities):
        """The next token of each row from its probabilities `(batch, vocabulary)`."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_next_token")

    def get_config(self):
        return {
            "temperature": self.temperature,
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "min_length": self.min_length,
            "banned_token_ids": list(self.banned_token_ids),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def decoding_loop(cond, body, loop_vars, steps):
    """`ops.while_loop(cond, body, loop_vars, maximum_iterations=steps)`; within
    `loops.unrolled` (traced for `torch.export` or LiteRT), `body` applied `steps` times,
    with no early exit (a Python integer there: the prompt's length and the start index are
    static).

    Both give the same ids: a sampler's step leaves a row that has ended as it is (it must
    already, for the rows that end before the others), and the generator pads every position
    after a stop token."""
    if not unrolling():
        return ops.while_loop(cond, body, loop_vars, maximum_iterations=steps)
    if not isinstance(steps, int):
        raise ValueError(
            "A loop of fixed steps needs a prompt of static length and a Python integer "
            f"index. Received: steps={steps!r}"
        )
    for _ in range(steps):
        loop_vars = body(*loop_vars)
    return loop_vars


def pad_after_end(ids, stop_token_ids):
    """Zeros every position after the first stop token of each row of `ids` (samplers such
    as keras-hub's greedy one stop when every row has ended, not row by row)."""
    stops = ops.cast(is_any(ids, stop_token_ids), "int32")
    ended_before = ops.greater(ops.cumsum(stops, axis=-1) - stops, 0)
    return ops.where(ended_before, ops.zeros_like(ids), ids)


def is_any(x, values):
    """`x` equals one of `values` (all `False` when there are none)."""
    result = ops.zeros_like(x, "bool")
    for value in values:
        result = ops.logical_or(result, ops.equal(x, value))
    return result
