"""Beam search with frozen finished hypotheses, the GNMT length and coverage penalties and
the n best."""

import keras
from keras import ops, tree

from keras_luong.backend.loops import take_along_rows, take_rows
from keras_luong.backend.ops import write_column
from keras_luong.backend.top_k import top_k_indices
from keras_luong.checks import MASKED_SCORE, check_integer, check_number, check_one_of
from keras_luong.samplers import penalties
from keras_luong.samplers.base import Sampler, decoding_loop, is_any


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
            values favour longer hypotheses. Defaults to 1.0, the best of the values measured
            on Multi30k (see the translation page); tensorflow-addons' default was 0.
        min_length: The end token cannot come before this many other tokens. Defaults to 0.
        return_all_beams: Return every hypothesis, best first, with its score:
            `(prompts (batch, num_beams, length), scores (batch, num_beams))`. Defaults to
            `False`: the best prompt `(batch, length)` alone.
        temperature: Divides the logits. Defaults to 1.
        coverage_penalty: `beta` of the coverage penalty (below). Defaults to 0 (none).
        coverage_form: How the coverage penalty applies: `"gnmt"` (tensorflow-addons'
            rule, the default), `"stepwise"` (GNMT's term on every hypothesis at every step)
            or `"summary"` (OpenNMT-py's summary penalty, on every hypothesis at every step).
        no_repeat_ngram_size: If `n > 0`, no hypothesis repeats an n-gram of its own (see
            `Sampler`). Defaults to 0.
        banned_token_ids: Ids never generated (see `Sampler`). Defaults to `()`.

    With `coverage_penalty=beta > 0`, a hypothesis that has ended is ranked by

    ```
    score(Y) + beta · Σ_s log(min(Σ_t a_t(s), 1))
    ```

    with `a_t(s)` its attention weights, summed over its steps: source positions attended
    to less than once in total lower the score. As in tensorflow-addons' `BeamSearchDecoder`
    (`coverage_penalty_weight`), it applies at every step to the hypotheses that have ended,
    and positions with no attention at all (padding) add nothing; the final ranking applies
    it to every hypothesis. An unfinished hypothesis is thus never penalised while the same
    hypothesis ended is, so on long sentences the search tends to run on; with
    `coverage_form="stepwise"` the term applies at every step to every hypothesis, running
    or ended, as OpenNMT-py's `-stepwise_penalty` does, so ending costs nothing against
    continuing. `coverage_form="summary"` ranks, at every step, by

    ```
    score(Y) - beta · Σ_s (max(Σ_t a_t(s), 1) - 1)
    ```

    (OpenNMT-py's summary penalty): attending to a source position more than once in total
    lowers the score. It needs the attention weights: `next` keeps them in its cache,
    a dict with an `"attention"` entry `(batch, S)` (`LuongSeq2Seq.generate` does this when
    the sampler's `needs` names `"attention"`).

    It is called as every `Sampler` is (keras-hub's convention): `next(prompt, cache, index)
    -> (logits, hidden_states, cache)`, the `prompt` to fill from `index` on, the `cache`
    (repeated and reordered with the beams), the `mask` of prompt positions to keep and the
    `stop_token_ids`. Where the mask is set (a forced prefix: `generate(..., prefix=...)`),
    every hypothesis continues with the prompt's token at log-probability 0, whatever the
    bans.

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
    >>> # length_penalty=0: the scores are the sums of log-probabilities
    >>> sampler = BeamSearchSampler(num_beams=2, length_penalty=0, return_all_beams=True)
    >>> ids, scores = sampler(next, prompt, index=1, stop_token_ids=[2])
    >>> ops.convert_to_numpy(ids).tolist()  # best first; padding after the end token
    [[[1, 4, 2, 0, 0], [1, 3, 3, 3, 3]]]
    >>> print(np.exp(ops.convert_to_numpy(scores)).round(3))  # 0.6 × 0.4 × 0.4 × 0.4
    [[0.36  0.038]]

    In a model: `model.generate(source, max_length=30, sampler=BeamSearchSampler(5))`.

    Reference:
        Wu et al., "Google's Neural Machine Translation System", 2016 (arXiv:1609.08144),
        section 7.
    """

    def __init__(
        self,
        num_beams=5,
        length_penalty=1.0,
        min_length=0,
        return_all_beams=False,
        temperature=1.0,
        coverage_penalty=0.0,
        no_repeat_ngram_size=0,
        coverage_form="gnmt",
        banned_token_ids=(),
    ):
        num_beams = check_integer("num_beams", num_beams)
        length_penalty = check_number("length_penalty", length_penalty, minimum=0)
        coverage_penalty = check_number("coverage_penalty", coverage_penalty, minimum=0)
        super().__init__(
            temperature=temperature,
            no_repeat_ngram_size=no_repeat_ngram_size,
            min_length=min_length,
            banned_token_ids=banned_token_ids,
        )
        self.coverage_penalty = coverage_penalty
        self.coverage_form = check_one_of(
            "coverage_form", coverage_form, tuple(penalties.COVERAGE_FORMS)
        )
        self.num_beams = int(num_beams)
        self.return_all_beams = bool(return_all_beams)
        self.length_penalty = float(length_penalty)

    @property
    def needs(self):
        """`("attention",)` with a coverage penalty (it reads each step's attention weights
        from `cache["attention"]`), else nothing: see `Sampler.needs`."""
        return ("attention",) if self.coverage_penalty > 0 else ()

    def coverage(self, attention_sums):
        """The coverage term of attention sums `(rows, S)` added to a score: GNMT's
        `beta · Σ_s log(min(sum_s, 1))` (positions that got no attention at all left out, as
        tensorflow-addons does), or the summary penalty (see `coverage_form`)."""
        term, _ = penalties.COVERAGE_FORMS[self.coverage_form]
        return term(attention_sums, self.coverage_penalty)

    def length_normalize(self, log_probs, lengths):
        """`log_probs / ((5 + lengths) / 6) ** length_penalty`."""
        return penalties.length_normalize(log_probs, lengths, self.length_penalty)

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
        beams = self.num_beams
        batch_size = ops.shape(prompt)[0]
        steps = ops.shape(prompt)[1] - index
        index = ops.cast(index, "int32")
        start = index
        # Positions the prompt gives (a forced prefix): the same for every beam of a row.
        given = mask is not None
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
        if "attention" in self.needs:
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
            # log p(token) = logits - normalizer. The candidates' scores are computed from
            # the logits and one number per row (no log-softmax tensor, no candidates
            # tensor): on torch each elementwise op over `rows * vocabulary` is one pass.
            # A finished hypothesis has one continuation, padding, at no cost: its logits
            # become 0 for padding and MASKED_SCORE elsewhere, whose log-softmax is itself
            # (normalizer 0, set rather than computed: torch's CPU `exp` of a masked score
            # takes a slow path, 15-50x its time).
            # A hypothesis whose prompt gives this position's token continues with it at
            # log-probability 0: normalizer 0 too (see the forced choice below).
            forced = mask[:, index] if given else None
            held = ops.logical_or(finished, forced) if given else finished
            normalizer = ops.where(held, 0.0, ops.logsumexp(logits, axis=-1))
            # The bans come after the normalizer (a banned token's mass is lost), and before
            # the freeze, which leaves a finished hypothesis its one continuation whatever
            # they ban. Every running hypothesis has generated `index - start` tokens, so
            # the bans are one row for all, applied in one pass over `rows * vocabulary`
            # where a row each, with the ended rows spared, took three (on torch, where
            # each op is such a pass: `python -m benchmarks.speed decoding_controls`).
            logits = self.block_repeats(logits, prompt, index)
            banned = self.bans(vocabulary, index - start, stop_token_ids)
            if banned is not None:
                logits = ops.where(banned, MASKED_SCORE, logits)
            frozen = ops.where(ops.equal(ids, 0), 0.0, MASKED_SCORE)
            logits = ops.where(finished[:, None], frozen[None], logits)
            running = ops.logical_not(finished)
            offset = log_probs - normalizer  # candidates = logits + offset
            candidate_lengths = lengths + ops.cast(running, "int32")
            # scores = length_normalize(candidates) (+ the coverage penalty of the ended).
            row_score = self.length_normalize(offset, candidate_lengths)
            if "attention" in self.needs:
                # This step's attention counts for the hypotheses still running. With the
                # "gnmt" form only those that have ended are ranked with their penalty
                # (tensorflow-addons' rule); the stepwise forms rank every hypothesis with it.
                step_attention = ops.cast(cache["attention"], "float32")
                attention_sums = attention_sums + ops.where(finished[:, None], 0.0, step_attention)
                penalty = self.coverage(attention_sums)
                if not penalties.COVERAGE_FORMS[self.coverage_form][1]:
                    penalty = ops.where(finished, penalty, 0.0)
                row_score = row_score + penalty
            scores = self.length_normalize(logits, candidate_lengths[:, None]) + row_score[:, None]

            def per_example(x):
                return ops.reshape(x, (-1, beams * vocabulary))

            chosen = top_k_indices(per_example(scores), beams)  # (batch, beams), best first
            if given:
                # Where the prompt gives the token, each hypothesis has one continuation,
                # that token (padding once it has ended), scored `row_score`: the beams are
                # chosen among those alone, best first, whatever the bans, so the prefix is
                # kept. Chosen after the top-k rather than by masking the logits, which on
                # torch costs passes over `rows * vocabulary` and a slow `exp` of the masked
                # scores in `logsumexp` (`python -m benchmarks.speed decoding_controls`).
                order = top_k_indices(ops.reshape(row_score, (-1, beams)), beams)
                token = ops.where(finished, 0, ops.cast(prompt[:, index], "int32"))
                token = take_along_rows(ops.reshape(token, (-1, beams)), order)
                forced_rows = ops.reshape(forced, (-1, beams))
                chosen = ops.where(forced_rows, order * vocabulary + token, chosen)
            first_rows = ops.arange(batch_size, dtype="int32")[:, None] * beams
            source_row = ops.reshape(chosen // vocabulary + first_rows, [-1])
            next_token = ops.reshape(chosen % vocabulary, [-1])
            chosen_logits = ops.reshape(take_along_rows(per_example(logits), chosen), [-1])
            if given:  # the given token's log-probability is 0
                chosen_logits = ops.where(ops.reshape(forced_rows, [-1]), 0.0, chosen_logits)
            log_probs = chosen_logits + take_rows(offset, source_row)

            def gather_beams(x):
                # Each new row is its source row's: one gather.
                return take_rows(x, source_row)

            prompt = gather_beams(prompt)
            cache = tree.map_structure(gather_beams, cache) if has_cache else cache
            finished = gather_beams(finished)
            lengths = gather_beams(candidate_lengths)
            attention_sums = gather_beams(attention_sums)

            next_token = ops.cast(next_token, prompt.dtype)
            finished = ops.logical_or(finished, is_any(next_token, stop_token_ids))
            prompt = write_column(prompt, index, next_token)
            return prompt, cache, index + 1, mask, log_probs, finished, lengths, attention_sums

        prompt, cache, _, _, log_probs, _, lengths, attention_sums = decoding_loop(
            cond,
            body,
            (prompt, cache, index, mask, log_probs, finished, lengths, attention_sums),
            steps,
        )

        # Each step leaves the beams best first, ranked by the score they end with; with a
        # coverage penalty, the final ranking applies it to every hypothesis.
        def per_hypothesis(x):
            return ops.reshape(x, (-1, beams, *x.shape[1:]))

        prompts = per_hypothesis(prompt)
        # With `return_cache`, the cache is returned as the outputs are: `(batch, beams,
        # ...)` with every hypothesis, `(batch, ...)` for the best.
        cache = tree.map_structure(per_hypothesis, cache) if return_cache else None
        scores = ops.reshape(self.length_normalize(log_probs, lengths), (-1, beams))
        if "attention" in self.needs:
            scores = scores + ops.reshape(self.coverage(attention_sums), (-1, beams))
            order = top_k_indices(scores, beams)
            prompts = take_along_rows(prompts, order)
            scores = take_along_rows(scores, order)
            if return_cache:
                cache = tree.map_structure(lambda x: take_along_rows(x, order), cache)
        if self.return_all_beams:
            return ((prompts, scores), cache) if return_cache else (prompts, scores)
        if return_cache:
            return prompts[:, 0], tree.map_structure(lambda x: x[:, 0], cache)
        return prompts[:, 0]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_beams": self.num_beams,
                "length_penalty": self.length_penalty,
                "return_all_beams": self.return_all_beams,
                "coverage_penalty": self.coverage_penalty,
                "coverage_form": self.coverage_form,
            }
        )
        return config
