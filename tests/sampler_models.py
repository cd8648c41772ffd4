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


def brute_force_with_penalties(first_token, coverage_penalty=0.0, length_penalty=0.0, no_repeat=0):
    """Every hypothesis after `[1, first_token]` with its final score, best first (float64):
    `log p / lp + beta * sum_s log(min(sum_t a_t(s), 1))`, positions with no attention left
    out; hypotheses that repeat an n-gram (the prompt included) left out with `no_repeat`."""
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
            covered = coverage[coverage > 0]
            penalty = coverage_penalty * np.log(np.minimum(covered, 1.0)).sum()
            score = log_prob / ((5 + length) / 6) ** length_penalty + penalty
            hypotheses.append((score, list(words) + [0] * (STEPS - length)))
    return sorted(hypotheses, key=lambda h: -h[0])


def new_repeat(before, token, n):
    """Whether `before + [token]` ends with an n-gram that `before` already holds."""
    if len(before) < n - 1:
        return False
    gram = tuple(before[len(before) - n + 1 :] + [token]) if n > 1 else (token,)
    return gram in {tuple(before[i : i + n]) for i in range(len(before) - n + 1)}
