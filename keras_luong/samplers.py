"""Greedy and beam search decoding in keras-hub's `Sampler` call convention, in `keras.ops`
only (keras-hub is not needed; its samplers are accepted too), and the look-up of a sampler by
name: `get("beam")`, `serialize(sampler)`, `deserialize(config)`, as `keras_hub.samplers`
has."""

import sys

import keras
from keras import ops, tree

from keras_luong.checks import MASKED_SCORE, check_integer


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

    Subclasses override `get_next_token(probabilities)` (greedy, sampling) or the whole
    `__call__` (beam search).

    Args:
        temperature: Divides the logits before the softmax. Defaults to 1.
        no_repeat_ngram_size: If `n > 0`, a row never repeats an n-gram of its own: a token
            that would complete an n-gram already in the row (the prompt included) gets zero
            probability (OpenNMT's `block_ngram_repeat`, fairseq's `no_repeat_ngram_size`).
            Defaults to 0 (no blocking).

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

    def __init__(self, temperature=1.0, no_repeat_ngram_size=0):
        if isinstance(temperature, bool) or not temperature > 0:
            raise ValueError(
                "Invalid value for argument temperature. Expected a number > 0. "
                f"Received: temperature={temperature!r}"
            )
        self.temperature = float(temperature)
        self.no_repeat_ngram_size = check_integer(
            "no_repeat_ngram_size", no_repeat_ngram_size, minimum=0
        )

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
    ):
        index = ops.cast(index, "int32")
        mask = ops.zeros_like(prompt, "bool") if mask is None else ops.cast(mask, "bool")
        cache = () if cache is None else cache
        stop_token_ids = tuple(stop_token_ids or ())

        def cond(prompt, cache, index, mask):
            if not stop_token_ids:
                return ops.convert_to_tensor(True)
            ended = ops.logical_and(_is_any(prompt, stop_token_ids), ops.logical_not(mask))
            return ops.logical_not(ops.all(ops.any(ended, axis=-1)))

        def body(prompt, cache, index, mask):
            logits, _, cache = next(prompt, cache, index)
            logits = self.block_repeats(ops.cast(logits, "float32"), prompt, index)
            token = self.get_next_token(self.compute_probabilities(logits))
            token = ops.cast(token, prompt.dtype)
            token = ops.where(mask[:, index], prompt[:, index], token)
            prompt = ops.slice_update(prompt, [0, index], token[:, None])
            return prompt, cache, index + 1, mask

        prompt, *_ = ops.while_loop(
            cond,
            body,
            (prompt, cache, index, mask),
            maximum_iterations=ops.shape(prompt)[1] - index,
        )
        return prompt

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
        return {"temperature": self.temperature, "no_repeat_ngram_size": self.no_repeat_ngram_size}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


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

    In a model: `model.generate(source, max_length=30, sampler="greedy")`.
    """

    def compute_probabilities(self, logits):
        """The logits themselves (in float32): their argmax is the softmax's, and the softmax
        over the vocabulary is a measurable share of a greedy step (benchmarks/
        decoding_vs_tfa.py)."""
        return ops.cast(logits, "float32")

    def get_next_token(self, probabilities):
        # The first index of the maximum, as `argmax`, by a max and a min-index: XLA's CPU
        # argmax (a two-operand reduction) is the slower (see `_top_k_indices`).
        return _top_k_indices(probabilities, 1)[:, 0]


@keras.saving.register_keras_serializable(package="keras_luong")
class BeamSearchSampler(Sampler):
    """Beam search with end tokens, a length penalty and the n best hypotheses.

    keras-hub's `BeamSampler` keeps extending hypotheses that have ended and ranks by the
    raw sum of log-probabilities. This one, as GNMT and tensorflow-addons'
    `BeamSearchDecoder` do, freezes a hypothesis when it emits one of `stop_token_ids` (it
    stays in the beam, extended with padding `0` at no cost, so its score stops changing) and
    ranks every hypothesis, at every step and at the end, by

    ```
    score(Y) = log p(Y | X) / lp(Y),    lp(Y) = ((5 + |Y|) / 6) ** length_penalty
    ```

    (Wu et al., 2016), with `|Y|` the number of generated tokens, the end token included. The
    loop is one `ops.while_loop`, so it compiles on JAX and TensorFlow, and stops as soon as
    every hypothesis has ended.

    Args:
        num_beams: Number of hypotheses kept per example. Defaults to 5.
        length_penalty: `alpha` above; 0 ranks by the sum of log-probabilities, larger
            values favour longer hypotheses. Defaults to 0.
        min_length: The end token cannot come before this many other tokens. Defaults to 0.
        return_all_beams: Return every hypothesis, best first, with its score:
            `(prompts (batch, num_beams, length), scores (batch, num_beams))`. Defaults to
            `False`: the best prompt `(batch, length)` alone.
        temperature: Divides the logits. Defaults to 1.
        coverage_penalty: `beta` of GNMT's coverage penalty (below). Defaults to 0 (none).
        no_repeat_ngram_size: If `n > 0`, no hypothesis repeats an n-gram of its own (see
            `Sampler`). Defaults to 0.

    With `coverage_penalty=beta > 0`, a hypothesis that has ended is ranked by

    ```
    score(Y) + beta · Σ_s log(min(Σ_t a_t(s), 1))
    ```

    with `a_t(s)` its attention weights, summed over its steps: source positions attended
    to less than once in total lower the score. As in tensorflow-addons' `BeamSearchDecoder`
    (`coverage_penalty_weight`), it applies at every step to the hypotheses that have ended,
    and positions with no attention at all (padding) add nothing; the final ranking applies
    it to every hypothesis. It needs the attention weights: `next` keeps them in its cache,
    a dict with an `"attention"` entry `(batch, S)` (`LuongSeq2Seq.generate` does this when
    the sampler has `needs_attention`).

    It is called as every `Sampler` is (keras-hub's convention): `next(prompt, cache, index)
    -> (logits, hidden_states, cache)`, the `prompt` to fill from `index` on, the `cache`
    (repeated and reordered with the beams), the `mask` of prompt positions to keep and the
    `stop_token_ids`.

    Example:

    The greedy choice "a" (0.6) leads to a sequence that never ends; beam search keeps "b"
    (0.4) beside it and finds "b", end (0.4 × 0.9 = 0.36), better than anything after "a":

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
    >>> sampler = BeamSearchSampler(num_beams=2, return_all_beams=True)
    >>> ids, scores = sampler(next, prompt, index=1, stop_token_ids=[2])
    >>> ops.convert_to_numpy(ids).tolist()  # best first; padding after the end token
    [[[1, 4, 2, 0, 0], [1, 3, 3, 3, 3]]]
    >>> print(np.exp(ops.convert_to_numpy(scores)).round(3))  # 0.6 × 0.4 × 0.4 × 0.4
    [[0.36  0.038]]

    In a model: `model.generate(source, max_length=30, sampler=BeamSearchSampler(5, 0.6))`.

    Reference:
        Wu et al., "Google's Neural Machine Translation System", 2016 (arXiv:1609.08144),
        section 7.
    """

    def __init__(
        self,
        num_beams=5,
        length_penalty=0.0,
        min_length=0,
        return_all_beams=False,
        temperature=1.0,
        coverage_penalty=0.0,
        no_repeat_ngram_size=0,
    ):
        num_beams = check_integer("num_beams", num_beams)
        min_length = check_integer("min_length", min_length, minimum=0)
        if isinstance(length_penalty, bool) or not length_penalty >= 0:
            raise ValueError(
                "Invalid value for argument length_penalty. Expected a number >= 0. "
                f"Received: length_penalty={length_penalty!r}"
            )
        if isinstance(coverage_penalty, bool) or not coverage_penalty >= 0:
            raise ValueError(
                "Invalid value for argument coverage_penalty. Expected a number >= 0. "
                f"Received: coverage_penalty={coverage_penalty!r}"
            )
        super().__init__(temperature=temperature, no_repeat_ngram_size=no_repeat_ngram_size)
        self.coverage_penalty = float(coverage_penalty)
        self.num_beams = int(num_beams)
        self.return_all_beams = bool(return_all_beams)
        self.length_penalty = float(length_penalty)
        self.min_length = int(min_length)

    @property
    def needs_attention(self):
        """Whether `next` must keep the step's attention weights in `cache["attention"]`."""
        return self.coverage_penalty > 0

    def coverage(self, attention_sums):
        """GNMT's coverage penalty `beta · Σ_s log(min(sum_s, 1))` of attention sums
        `(rows, S)`, positions that got no attention at all left out (tensorflow-addons')."""
        sums = ops.where(ops.equal(attention_sums, 0.0), 1.0, attention_sums)
        return self.coverage_penalty * ops.sum(ops.log(ops.minimum(sums, 1.0)), axis=-1)

    def length_normalize(self, log_probs, lengths):
        """`log_probs / ((5 + lengths) / 6) ** length_penalty`."""
        if not self.length_penalty:
            return log_probs
        lengths = ops.cast(lengths, "float32")
        return log_probs / ops.power((5.0 + lengths) / 6.0, self.length_penalty)

    def too_short(self, lengths, vocabulary, stop_token_ids):
        """The stop tokens of the hypotheses shorter than `min_length`, a boolean
        `(rows, vocabulary)` (or `None` when there is no such ban)."""
        if not (stop_token_ids and self.min_length):
            return None
        is_stop = _is_any(ops.arange(vocabulary, dtype="int32"), stop_token_ids)
        return ops.logical_and(ops.less(lengths, self.min_length)[:, None], is_stop[None])

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
    ):
        beams = self.num_beams
        batch_size = ops.shape(prompt)[0]
        index = ops.cast(index, "int32")
        mask = ops.zeros_like(prompt, "bool") if mask is None else ops.cast(mask, "bool")
        has_cache = cache is not None
        cache = cache if has_cache else ()
        stop_token_ids = tuple(stop_token_ids or ())

        def create_beams(x):
            return ops.repeat(x, beams, axis=0)

        prompt, mask = create_beams(prompt), create_beams(mask)
        cache = tree.map_structure(create_beams, cache)
        # Only the first copy of each example is live at first, so that the beams differ.
        log_probs = ops.tile(
            ops.convert_to_tensor([0.0] + [MASKED_SCORE] * (beams - 1), "float32"), [batch_size]
        )
        finished = ops.zeros((batch_size * beams,), "bool")
        lengths = ops.zeros((batch_size * beams,), "int32")
        if self.needs_attention:
            if not (isinstance(cache, dict) and "attention" in cache):
                raise ValueError(
                    "BeamSearchSampler(coverage_penalty>0) needs the attention weights: a "
                    "cache dict with an 'attention' entry (batch, S) that `next` updates. "
                    f"Received: cache={type(cache).__name__}"
                )
            attention_sums = ops.zeros_like(ops.cast(cache["attention"], "float32"))
        else:
            attention_sums = ops.zeros((batch_size * beams, 1), "float32")

        def cond(prompt, cache, index, mask, log_probs, finished, lengths, attention_sums):
            if not stop_token_ids:
                return ops.convert_to_tensor(True)
            return ops.logical_not(ops.all(finished))

        def body(prompt, cache, index, mask, log_probs, finished, lengths, attention_sums):
            logits, _, cache = next(prompt, cache, index)
            logits = self.apply_temperature(logits)
            vocabulary = ops.shape(logits)[-1]
            ids = ops.arange(vocabulary, dtype="int32")
            # A finished hypothesis has one continuation, padding, at no cost: its logits
            # become 0 for padding and MASKED_SCORE elsewhere, whose log-softmax is itself.
            frozen = ops.where(ops.equal(ids, 0), 0.0, MASKED_SCORE)
            logits = ops.where(finished[:, None], frozen[None], logits)
            # log p(token) = logits - normalizer. The candidates' scores are computed from
            # the logits and one number per row (no log-softmax tensor, no candidates
            # tensor): on torch each elementwise op over `rows * vocabulary` is one pass.
            normalizer = ops.logsumexp(logits, axis=-1)
            # The bans come after the normalizer (a banned token's mass is lost), and never
            # touch a finished hypothesis: its one continuation is padding.
            running = ops.logical_not(finished)
            logits = self.block_repeats(logits, prompt, index, active=running)
            too_short = self.too_short(lengths, vocabulary, stop_token_ids)
            if too_short is not None:
                too_short = ops.logical_and(too_short, running[:, None])
                logits = ops.where(too_short, MASKED_SCORE, logits)
            offset = log_probs - normalizer  # candidates = logits + offset
            candidate_lengths = lengths + ops.cast(running, "int32")
            # scores = length_normalize(candidates) (+ the coverage penalty of the ended).
            row_score = self.length_normalize(offset, candidate_lengths)
            if self.needs_attention:
                # This step's attention counts for the hypotheses still running; those that
                # have ended are ranked with their penalty (tensorflow-addons' rule).
                step_attention = ops.cast(cache["attention"], "float32")
                attention_sums = attention_sums + ops.where(finished[:, None], 0.0, step_attention)
                row_score = row_score + ops.where(finished, self.coverage(attention_sums), 0.0)
            scores = self.length_normalize(logits, candidate_lengths[:, None]) + row_score[:, None]

            def per_example(x):
                return ops.reshape(x, (-1, beams * vocabulary))

            chosen = _top_k_indices(per_example(scores), beams)  # (batch, beams), best first
            source_beam = chosen // vocabulary
            source_row = ops.reshape(source_beam + ops.arange(batch_size)[:, None] * beams, [-1])
            chosen_logits = ops.reshape(ops.take_along_axis(per_example(logits), chosen, 1), [-1])
            log_probs = chosen_logits + ops.take(offset, source_row, axis=0)
            next_token = ops.reshape(chosen % vocabulary, [-1])

            def gather_beams(x):
                x = ops.reshape(x, (-1, beams, *ops.shape(x)[1:]))
                indices = ops.reshape(source_beam, (-1, beams) + (1,) * (len(x.shape) - 2))
                x = ops.take_along_axis(x, indices, axis=1)
                return ops.reshape(x, (-1, *ops.shape(x)[2:]))

            prompt = gather_beams(prompt)
            cache = tree.map_structure(gather_beams, cache) if has_cache else cache
            finished = gather_beams(finished)
            lengths = gather_beams(candidate_lengths)
            attention_sums = gather_beams(attention_sums)

            next_token = ops.cast(next_token, prompt.dtype)
            next_token = ops.where(mask[:, index], prompt[:, index], next_token)
            finished = ops.logical_or(finished, _is_any(next_token, stop_token_ids))
            prompt = ops.slice_update(prompt, [0, index], next_token[:, None])
            return prompt, cache, index + 1, mask, log_probs, finished, lengths, attention_sums

        prompt, _, _, _, log_probs, _, lengths, attention_sums = ops.while_loop(
            cond,
            body,
            (prompt, cache, index, mask, log_probs, finished, lengths, attention_sums),
            maximum_iterations=ops.shape(prompt)[1] - index,
        )
        # Each step leaves the beams best first, ranked by the score they end with; with a
        # coverage penalty, the final ranking applies it to every hypothesis.
        prompts = ops.reshape(prompt, (-1, beams, ops.shape(prompt)[-1]))
        scores = ops.reshape(self.length_normalize(log_probs, lengths), (-1, beams))
        if self.needs_attention:
            scores = scores + ops.reshape(self.coverage(attention_sums), (-1, beams))
            order = _top_k_indices(scores, beams)
            prompts = ops.take_along_axis(prompts, order[..., None], axis=1)
            scores = ops.take_along_axis(scores, order, axis=1)
        if self.return_all_beams:
            return prompts, scores
        return prompts[:, 0]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_beams": self.num_beams,
                "length_penalty": self.length_penalty,
                "min_length": self.min_length,
                "return_all_beams": self.return_all_beams,
                "coverage_penalty": self.coverage_penalty,
            }
        )
        return config


# The samplers `get` knows by name, built with their defaults.
_BY_NAME = {"greedy": GreedySampler, "beam": BeamSearchSampler}


def is_sampler(sampler):
    """Whether `sampler` is keras-luong's or keras-hub's (keras-hub is not imported for this:
    if it is not imported yet, no object can be one of its samplers)."""
    if isinstance(sampler, Sampler):
        return True
    keras_hub = sys.modules.get("keras_hub")
    return keras_hub is not None and isinstance(sampler, keras_hub.samplers.Sampler)


def get(identifier):
    """A sampler from a name, a config or a sampler.

    `"greedy"` and `"beam"` are keras-luong's `GreedySampler()` and `BeamSearchSampler()` with
    their defaults; any other name is looked up in `keras_hub.samplers` (`"top_k"`, `"top_p"`,
    ..., when keras-hub is installed). A dict is a config from `serialize`. A sampler
    object (keras-luong's or keras-hub's) is returned as it is.

    Example:

    >>> get("beam").num_beams
    5
    >>> config = serialize(BeamSearchSampler(num_beams=3))  # a dict, JSON-safe
    >>> sampler = get(config)
    >>> type(sampler).__name__, sampler.num_beams
    ('BeamSearchSampler', 3)
    """
    if is_sampler(identifier):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _BY_NAME:
            return _BY_NAME[identifier]()
        try:
            import keras_hub
        except ImportError:
            keras_hub = None
        if keras_hub is not None:
            try:
                sampler = keras_hub.samplers.get(identifier)
            except ValueError:
                sampler = None
            if is_sampler(sampler):  # keras-hub hands an unknown name back as it is
                return sampler
    raise ValueError(
        f"Invalid value for argument sampler. Expected one of {tuple(_BY_NAME)}, the name of "
        "a keras_hub sampler, a sampler config, or a keras_luong or keras_hub Sampler. "
        f"Received: sampler={identifier!r}"
    )


def serialize(sampler):
    """A sampler's config, for `deserialize` (or `get`)."""
    return keras.saving.serialize_keras_object(sampler)


def deserialize(config):
    """The sampler a `serialize` config describes."""
    sampler = keras.saving.deserialize_keras_object(config)
    if not is_sampler(sampler):
        raise ValueError(
            f"Invalid sampler config: it describes a {type(sampler).__name__}, not a sampler. "
            f"Received: config={config!r}"
        )
    return sampler


def pad_after_end(ids, stop_token_ids):
    """Zeros every position after the first stop token of each row of `ids` (samplers such
    as keras-hub's greedy one stop when every row has ended, not row by row)."""
    stops = ops.cast(_is_any(ids, stop_token_ids), "int32")
    ended_before = ops.greater(ops.cumsum(stops, axis=-1) - stops, 0)
    return ops.where(ended_before, ops.zeros_like(ids), ids)


def repeated_ngram_tokens(prompt, index, n, logits):
    """Which tokens would repeat an n-gram: a boolean `(rows, vocabulary)` (the shape of
    `logits`), true for token `w` of row `r` when `prompt[r, index-n+1:index] + [w]` equals
    `prompt[r, j:j+n]` for some `j + n <= index`. `index` may be a tensor. (The samplers
    apply the ban directly, `mask_repeated_ngrams`; this is its mask.)"""
    masked = mask_repeated_ngrams(ops.zeros_like(logits, "float32"), prompt, index, n)
    return ops.equal(masked, MASKED_SCORE)


def mask_repeated_ngrams(logits, prompt, index, n, active=None):
    """`logits` `(rows, vocabulary)` with `MASKED_SCORE` on the tokens that
    `repeated_ngram_tokens` marks, in the rows where `active` (a boolean `(rows,)`) is true.

    Written into the logits by one scatter of `rows × (length - n + 1)` entries, without a
    `(rows, vocabulary)` mask: on torch each op over the whole vocabulary is one more pass,
    and XLA updates the logits in place. Every entry writes a value that does not depend on
    the order of duplicates: in a row with a repeat, each entry writes `MASKED_SCORE` to a
    token to ban (its own, or the row's first banned one); in a row without, each writes a
    logit back to its own place. Fixed shapes, so it compiles; `index` may be a tensor."""
    matches = _ngram_matches(prompt, index, n)
    if matches is None:
        return logits
    same, token = matches
    if active is not None:
        same = ops.logical_and(same, ops.cast(active, "bool")[:, None])
    any_repeat = ops.any(same, axis=1, keepdims=True)
    first = ops.argmax(ops.cast(same, "int32"), axis=1)[:, None]
    first_banned = ops.take_along_axis(token, ops.cast(first, "int32"), axis=1)
    target = ops.where(same, token, ops.where(any_repeat, first_banned, token))
    values = ops.where(any_repeat, MASKED_SCORE, ops.take_along_axis(logits, target, axis=1))
    rows, starts = ops.shape(target)[0], ops.shape(target)[1]
    row = ops.repeat(ops.arange(rows, dtype="int32")[:, None], starts, axis=1)
    indices = ops.reshape(ops.stack([row, target], axis=-1), (-1, 2))
    return ops.scatter_update(logits, indices, ops.reshape(ops.cast(values, logits.dtype), [-1]))


def _ngram_matches(prompt, index, n):
    """`(same, token)`, both `(rows, J)` for the `J = length - n + 1` n-grams
    `prompt[:, j:j+n]`: whether the n-gram ends before `index` and its first `n - 1` tokens
    are the `n - 1` before `index`, and its last token (int32). `None` when no n-gram fits."""
    rows, length = ops.shape(prompt)[0], ops.shape(prompt)[1]
    starts = length - n + 1
    if starts <= 0:
        return None
    windows = [ops.slice(prompt, [0, k], [rows, starts]) for k in range(n)]  # n x (rows, J)
    # The n - 1 tokens before `index` (clipped at 0: no n-gram fits before position n - 1).
    last = ops.take(prompt, ops.clip(index - n + 1 + ops.arange(n - 1), 0, length - 1), axis=1)
    same = ops.ones((rows, starts), "bool")
    for k in range(n - 1):
        same = ops.logical_and(same, ops.equal(windows[k], last[:, k : k + 1]))
    # An n-gram that ends before `index`, once the row holds n - 1 tokens before it.
    complete = ops.logical_and(ops.arange(starts) + n <= index, ops.greater_equal(index, n - 1))
    same = ops.logical_and(same, complete[None])
    return same, ops.cast(windows[n - 1], "int32")


def _is_any(x, values):
    """`x` equals one of `values` (all `False` when there are none)."""
    result = ops.zeros_like(x, "bool")
    for value in values:
        result = ops.logical_or(result, ops.equal(x, value))
    return result


def _top_k_indices(x, k):
    """The indices of the `k` largest entries of each row of `x` `(rows, size)`, largest
    first (the first index on ties), without `ops.top_k`: JAX exports `top_k` as a StableHLO
    composite that TensorFlow's SavedModel reader cannot load, and XLA's CPU `argmax` (a
    two-operand reduction) is slow. `k`, the beam width, is small.

    A row of a beam step holds `num_beams * vocabulary` scores, and each round of max and
    min-index reads all of them. So the row is cut into blocks of about `sqrt(size / k)`
    entries: one pass takes each block's maximum, the `k` best blocks are found among those
    maxima, and the `k` best entries among the `k * block` entries of those blocks. The `k`
    best entries of a row lie in the `k` blocks whose best entries rank highest (ties
    broken by the lower index in both stages), so this is exact, and reads the row once
    rather than `2k` times."""
    size = x.shape[-1]
    block = _block_size(size, k)
    if block is None:
        return _top_k_rounds(x, k, ops.arange(size, dtype="int32")[None], size)
    blocks = -(-size // block)
    if blocks * block != size:
        x = ops.pad(x, [[0, 0], [0, blocks * block - size]], constant_values=float("-inf"))
    grouped = ops.reshape(x, (-1, blocks, block))
    best_blocks = _top_k_rounds(
        ops.max(grouped, axis=-1), k, ops.arange(blocks, dtype="int32")[None], blocks
    )
    candidates = ops.take_along_axis(grouped, best_blocks[..., None], axis=1)  # (rows, k, block)
    positions = best_blocks[..., None] * block + ops.arange(block, dtype="int32")[None, None]
    rows = ops.shape(candidates)[0]
    return _top_k_rounds(
        ops.reshape(candidates, (rows, k * block)),
        k,
        ops.reshape(positions, (rows, k * block)),
        blocks * block,
    )


def _block_size(size, k):
    """The block length for `_top_k_indices` (a divisor of `size` near `sqrt(size / k)` when
    there is one, so no padding is needed), or `None` when blocks would not save reads."""
    if size is None or size < 64 * k:
        return None
    target = max(1, round((size / k) ** 0.5))
    for block in range(target, max(1, target // 2) - 1, -1):
        if size % block == 0:
            return block
    return target


def _top_k_rounds(x, k, positions, sentinel):
    """`k` rounds of max, then the smallest of `positions` (int32, broadcast to `x`) among
    the entries equal to it: the positions of the `k` largest entries, largest first.
    `sentinel` is larger than every position."""
    indices = []
    for i in range(k):
        largest = ops.max(x, axis=-1, keepdims=True)
        best = ops.min(ops.where(ops.equal(x, largest), positions, sentinel), axis=-1)
        indices.append(best)
        if i < k - 1:  # the entry found is out of the next rounds
            x = ops.where(ops.equal(positions, best[:, None]), float("-inf"), x)
    return ops.stack(indices, axis=1)
