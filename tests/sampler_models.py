"""A hand-made next-token model for the sampler tests, and brute force over its hypotheses.

Its logits depend on the step, the previous token and, through the cache, on the sum of all
earlier tokens, so a sampler that reorders its cache wrongly gets other scores. The second
form also keeps attention weights over a source of 4 positions (the last one padding) in the
cache, as `LuongSeq2Seq.generate` keeps them, for the coverage penalty.
"""

import itertools

import numpy as np
from keras import ops

# A hand-made next-token model over 6 ids: 0 padding and 1 start (never generated), 2 the end,
# 3..5 words. Its logits depend on the step, the previous token and, through the cache, on the
# sum of all earlier tokens, so a sampler that reorders its cache wrongly gets other scores.
VOCABULARY, END, STEPS = 6, 2, 3
RNG = np.random.default_rng(18)  # one where the length penalty changes the winner
TABLE = RNG.normal(0, 1.5, (STEPS + 1, VOCABULARY, VOCABULARY)).astype("float32")
TABLE[..., :2] = -1e9
SUM_WEIGHT = RNG.normal(0, 0.5, VOCABULARY).astype("float32")
SUM_WEIGHT[:2] = 0
WORDS = (END, 3, 4, 5)


def next_fn(prompt, cache, index):
    (running_sum,) = cache
    previous = ops.take(prompt, index - 1, axis=1)
    step_table = ops.take(ops.convert_to_tensor(TABLE), index - 1, axis=0)
    logits = ops.take(step_table, previous, axis=0)
    logits = logits + running_sum[:, None] * ops.convert_to_tensor(SUM_WEIGHT)[None]
    return logits, None, (running_sum + ops.cast(previous, "float32"),)


def prompts(batch):
    """A start token then `STEPS` positions to fill, for `batch` examples whose first
    tokens differ (so that the examples' beams must not mix)."""
    prompt = np.zeros((batch, STEPS + 2), "int32")
    prompt[:, 0] = 1
    prompt[:, 1] = np.arange(batch) % 3 + 3
    return prompt


def run(sampler, batch=2):
    prompt = prompts(batch)
    cache = (ops.zeros((batch,), "float32"),)
    return sampler(next_fn, prompt, cache=cache, index=2, stop_token_ids=(END,))


def brute_force(first_token, length_penalty=0.0, min_length=0):
    """Every hypothesis after `[1, first_token]` with its score, best first, in float64."""
    hypotheses = []
    for length in range(1, STEPS + 1):
        for words in itertools.product(WORDS, repeat=length):
            ended = END in words
            if ended and words.index(END) != length - 1:
                continue  # nothing follows the end token
            if not ended and length < STEPS:
                continue  # an unfinished hypothesis runs to the maximum length
            if ended and length - 1 < min_length:
                continue
            # As next_fn: step s reads TABLE[s + 1, previous] and the sum of the tokens
            # before `previous`; an end token banned by min_length is excluded above.
            log_prob, previous, running = 0.0, first_token, 0.0
            for step, token in enumerate(words):
                logits = (TABLE[step + 1, previous] + running * SUM_WEIGHT).astype("float64")
                log_probs = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
                log_prob += log_probs[token]
                running += previous
                previous = token
            score = log_prob / ((5 + length) / 6) ** length_penalty
            hypotheses.append((score, list(words) + [0] * (STEPS - length)))
    return sorted(hypotheses, key=lambda h: -h[0])


SOURCE = 4
ATTENTION_RNG = np.random.default_rng(5)
ATTENTION = ATTENTION_RNG.normal(0, 2.0, (STEPS + 1, TABLE.shape[1], SOURCE))
ATTENTION[..., -1] = -np.inf  # the padding position
ATTENTION = np.exp(ATTENTION - ATTENTION.max(-1, keepdims=True))
ATTENTION = (ATTENTION / ATTENTION.sum(-1, keepdims=True)).astype("float32")


def next_with_attention(prompt, cache, index):
    (running_sum,) = cache["states"]
    previous = ops.take(prompt, index - 1, axis=1)
    step_table = ops.take(ops.convert_to_tensor(TABLE), index - 1, axis=0)
    logits = ops.take(step_table, previous, axis=0)
    logits = logits + running_sum[:, None] * ops.convert_to_tensor(SUM_WEIGHT)[None]
    attention = ops.take(ops.take(ops.convert_to_tensor(ATTENTION), index - 1, axis=0), previous, 0)
    states = (running_sum + ops.cast(previous, "float32"),)
    return logits, None, {"states": states, "attention": attention}


def run_with_attention(sampler, batch=2):
    cache = {
        "states": (ops.zeros((batch,), "float32"),),
        "attention": ops.zeros((batch, SOURCE), "float32"),
    }
    return sampler(next_with_attention, prompts(batch), cache=cache, index=2, stop_token_ids=(END,))


def has_repeat(tokens, n):
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def coverage_term(coverage, beta, form="gnmt"):
    """The coverage term added to a score, in float64: GNMT's `beta * sum_s log(min(c_s, 1))`
    over positions with some attention, or the summary `-beta * sum_s (max(c_s, 1) - 1)`."""
    if form == "summary":
        return -beta * (np.maximum(coverage, 1.0) - 1.0).sum()
    covered = coverage[coverage > 0]
    return beta * np.log(np.minimum(covered, 1.0)).sum()


def step_log_probs(step, previous, running):
    """The hand-made model's log-probabilities at `step` (float64)."""
    logits = (TABLE[step + 1, previous] + running * SUM_WEIGHT).astype("float64")
    return logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())


def reference_beam_search(first_token, beams, beta, alpha, form):
    """Beam search over the hand-made model in float64, by the rule `BeamSearchSampler`
    states: at every step each candidate is ranked by `log p / lp` plus the coverage term of
    its attention sums, for every hypothesis with the stepwise forms and for the ended ones
    only with "gnmt"; an ended hypothesis continues with padding at no cost; the final
    ranking adds the term to every hypothesis. Returns `(score, words)`, best first."""
    # A hypothesis: (log p, words, ended, coverage, running sum, previous token).
    hypotheses = [(0.0, [], False, np.zeros(SOURCE), 0.0, first_token)]
    for step in range(STEPS):
        candidates = []
        for log_prob, words, ended, coverage, running, previous in hypotheses:
            if ended:
                score = log_prob / ((5 + len(words)) / 6) ** alpha
                score += coverage_term(coverage, beta, form)
                candidates.append((score, (log_prob, words, True, coverage, running, previous)))
                continue
            log_probs = step_log_probs(step, previous, running)
            new_coverage = coverage + ATTENTION[step + 1, previous]
            for token in WORDS:
                total = log_prob + log_probs[token]
                score = total / ((5 + len(words) + 1) / 6) ** alpha
                if form != "gnmt":
                    score += coverage_term(new_coverage, beta, form)
                state = (total, words + [token], token == END, new_coverage, running + previous)
                candidates.append((score, (*state, token)))
        candidates.sort(key=lambda c: -c[0])
        hypotheses = [c[1] for c in candidates[:beams]]
    final = []
    for log_prob, words, _, coverage, _, _ in hypotheses:
        score = log_prob / ((5 + len(words)) / 6) ** alpha + coverage_term(coverage, beta, form)
        final.append((score, words + [0] * (STEPS - len(words))))
    return sorted(final, key=lambda h: -h[0])


def brute_force_with_penalties(
    first_token, coverage_penalty=0.0, length_penalty=0.0, no_repeat=0, form="gnmt"
):
    """Every hypothesis after `[1, first_token]` with its final score, best first (float64):
    `log p / lp` plus the coverage term of its attention sums (`coverage_term`); hypotheses
    that repeat an n-gram (the prompt included) left out with `no_repeat`."""
    hypotheses = []
    for length in range(1, STEPS + 1):
        for words in itertools.product(WORDS, repeat=length):
            ended = END in words
            if (ended and words.index(END) != length - 1) or (not ended and length < STEPS):
                continue
            if no_repeat and has_repeat([1, first_token, *words], no_repeat):
                continue
            log_prob, previous, running = 0.0, first_token, 0.0
            coverage = np.zeros(SOURCE)
            for step, token in enumerate(words):
                logits = (TABLE[step + 1, previous] + running * SUM_WEIGHT).astype("float64")
                log_probs = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
                log_prob += log_probs[token]
                coverage += ATTENTION[step + 1, previous]
                running += previous
                previous = token
            penalty = coverage_term(coverage, coverage_penalty, form)
            score = log_prob / ((5 + length) / 6) ** length_penalty + penalty
            hypotheses.append((score, list(words) + [0] * (STEPS - length)))
    return sorted(hypotheses, key=lambda h: -h[0])


def new_repeat(before, token, n):
    """Whether `before + [token]` ends with an n-gram that `before` already holds."""
    if len(before) < n - 1:
        return False
    gram = tuple(before[len(before) - n + 1 :] + [token]) if n > 1 else (token,)
    return gram in {tuple(before[i : i + n]) for i in range(len(before) - n + 1)}
