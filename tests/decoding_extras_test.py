"""Coverage penalty and n-gram blocking, against brute force in float64.

The hand-made next-token model of samplers_test.py, with attention weights over a source
of 4 positions (the last one padding) that depend on the step and the previous token, kept
in the cache as `LuongSeq2Seq.generate` keeps them.
"""

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq
from keras_luong.checks import MASKED_SCORE
from keras_luong.samplers import mask_repeated_ngrams, repeated_ngram_tokens
from tests.samplers_test import END, STEPS, SUM_WEIGHT, TABLE, WORDS, prompts

SOURCE = 4
ATTENTION_RNG = np.random.default_rng(5)
ATTENTION = ATTENTION_RNG.normal(0, 2.0, (STEPS + 1, TABLE.shape[1], SOURCE))
ATTENTION[..., -1] = -np.inf  # the padding position
ATTENTION = np.exp(ATTENTION - ATTENTION.max(-1, keepdims=True))
ATTENTION = (ATTENTION / ATTENTION.sum(-1, keepdims=True)).astype("float32")


def next_fn(prompt, cache, index):
    (running_sum,) = cache["states"]
    previous = ops.take(prompt, index - 1, axis=1)
    step_table = ops.take(ops.convert_to_tensor(TABLE), index - 1, axis=0)
    logits = ops.take(step_table, previous, axis=0)
    logits = logits + running_sum[:, None] * ops.convert_to_tensor(SUM_WEIGHT)[None]
    attention = ops.take(ops.take(ops.convert_to_tensor(ATTENTION), index - 1, axis=0), previous, 0)
    states = (running_sum + ops.cast(previous, "float32"),)
    return logits, None, {"states": states, "attention": attention}


def run(sampler, batch=2):
    cache = {
        "states": (ops.zeros((batch,), "float32"),),
        "attention": ops.zeros((batch, SOURCE), "float32"),
    }
    return sampler(next_fn, prompts(batch), cache=cache, index=2, stop_token_ids=(END,))


def has_repeat(tokens, n):
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def brute_force(first_token, coverage_penalty=0.0, length_penalty=0.0, no_repeat=0):
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


# --- coverage penalty


@pytest.mark.parametrize("coverage_penalty, length_penalty", [(0.0, 0.0), (0.4, 0.0), (2.0, 0.6)])
def test_full_width_beam_ranks_with_the_coverage_penalty(coverage_penalty, length_penalty):
    expected = [brute_force(t, coverage_penalty, length_penalty) for t in (3, 4)]
    width = len(expected[0])
    sampler = BeamSearchSampler(
        width,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        return_all_beams=True,
    )
    ids, scores = (ops.convert_to_numpy(x) for x in run(sampler))
    for example, hypotheses in enumerate(expected):
        np.testing.assert_allclose(scores[example], [h[0] for h in hypotheses], rtol=1e-5)
        for rank, (_, words) in enumerate(hypotheses):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)


def test_coverage_penalty_changes_the_winner():
    """The hand-made weights are such that the penalty changes the best hypothesis, and
    a narrow beam (3, pruning as it goes) finds the brute-force winner."""
    for first_token in (3, 4):
        assert brute_force(first_token)[0][1] != brute_force(first_token, 2.0)[0][1]
    best = ops.convert_to_numpy(run(BeamSearchSampler(3, coverage_penalty=2.0)))
    np.testing.assert_array_equal(best[:, 2:], [brute_force(t, 2.0)[0][1] for t in (3, 4)])


def test_coverage_penalty_needs_the_attention():
    sampler = BeamSearchSampler(2, coverage_penalty=0.5)
    cache = (ops.zeros((2,), "float32"),)
    with pytest.raises(ValueError, match="'attention'"):
        sampler(lambda p, c, i: None, prompts(2), cache=cache, index=2, stop_token_ids=(END,))
    with pytest.raises(ValueError, match="coverage_penalty=-1"):
        BeamSearchSampler(coverage_penalty=-1)


# --- n-gram blocking


def new_repeat(before, token, n):
    """Whether `before + [token]` ends with an n-gram that `before` already holds."""
    if len(before) < n - 1:
        return False
    gram = tuple(before[len(before) - n + 1 :] + [token]) if n > 1 else (token,)
    return gram in {tuple(before[i : i + n]) for i in range(len(before) - n + 1)}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_repeated_ngram_tokens_against_brute_force(n):
    rng = np.random.default_rng(n)
    prompt = rng.integers(0, 4, (40, 7)).astype("int32")
    total = 0
    for index in range(8):
        banned = ops.convert_to_numpy(repeated_ngram_tokens(prompt, index, n, ops.zeros((40, 5))))
        expected = [
            [new_repeat(list(prompt[row, :index]), token, n) for token in range(5)]
            for row in range(40)
        ]
        np.testing.assert_array_equal(banned, expected, err_msg=f"{index=}")
        total += banned.sum()
    assert total > 10  # the comparison had banned tokens to get right


@pytest.mark.parametrize("n", [1, 2, 3])
def test_mask_repeated_ngrams_against_brute_force(n):
    """The scatter into the logits bans exactly the brute-force tokens in the active rows
    and leaves every other logit as it was, with many duplicate n-grams per row (4 token
    values): the order in which duplicates are written must not matter."""
    rng = np.random.default_rng(10 + n)
    prompt = rng.integers(0, 4, (40, 7)).astype("int32")
    logits = rng.normal(size=(40, 5)).astype("float32")
    active = rng.random(40) < 0.7
    total = 0
    for index in range(8):
        masked = ops.convert_to_numpy(mask_repeated_ngrams(logits, prompt, index, n, active))
        banned = np.array(
            [
                [active[row] and new_repeat(list(prompt[row, :index]), t, n) for t in range(5)]
                for row in range(40)
            ]
        )
        np.testing.assert_array_equal(masked, np.where(banned, MASKED_SCORE, logits), f"{index=}")
        total += banned.sum()
    assert total > 10  # the comparison had banned tokens to get right


@pytest.mark.parametrize("n", [1, 2])
def test_full_width_beam_never_repeats_an_ngram(n):
    expected = [brute_force(t, no_repeat=n) for t in (3, 4)]
    sampler = BeamSearchSampler(40, no_repeat_ngram_size=n, return_all_beams=True)
    ids, scores = (ops.convert_to_numpy(x) for x in run(sampler))
    for example, hypotheses in enumerate(expected):
        valid = len(hypotheses)
        assert 0 < valid < 40
        np.testing.assert_allclose(scores[example, :valid], [h[0] for h in hypotheses], rtol=1e-5)
        for rank, (_, words) in enumerate(hypotheses):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)
        assert np.all(scores[example, valid:] < -1e8)  # every other continuation was banned


def test_greedy_never_repeats_an_ngram():
    """Greedy with bigram blocking, against the model's argmax over the allowed tokens."""
    ids = ops.convert_to_numpy(run(GreedySampler(no_repeat_ngram_size=2), batch=6))
    prompt = prompts(6)
    for row in range(6):
        tokens, running = list(prompt[row, :2]), 0.0
        for step in range(STEPS):
            logits = TABLE[step + 1, tokens[-1]] + running * SUM_WEIGHT
            allowed = [t for t in range(len(logits)) if not new_repeat(tokens, t, 2)]
            expected = max(allowed, key=lambda t: logits[t])
            assert ids[row, step + 2] == expected
            if expected == END:
                break
            running += tokens[-1]
            tokens.append(expected)
        assert not has_repeat([t for t in ids[row] if t], 2)


def test_samplers_configs_keep_the_new_options():
    sampler = BeamSearchSampler(3, coverage_penalty=0.2, no_repeat_ngram_size=3)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert (restored.coverage_penalty, restored.no_repeat_ngram_size) == (0.2, 3)
    greedy = GreedySampler.from_config(GreedySampler(no_repeat_ngram_size=2).get_config())
    assert greedy.no_repeat_ngram_size == 2
    with pytest.raises(ValueError, match="no_repeat_ngram_size=-1"):
        GreedySampler(no_repeat_ngram_size=-1)


# --- in a model, compiled on JAX and TensorFlow


def test_generate_scores_include_the_coverage_penalty():
    """`generate`'s beam scores equal the teacher-forced log-probability of each returned
    hypothesis plus beta times the log of its clipped attention sums."""
    keras.utils.set_random_seed(3)
    model = LuongSeq2Seq(9, 7, units=8, embedding_dim=4)
    source = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]], "int32")
    beta, max_length = 0.7, 5
    sampler = BeamSearchSampler(3, coverage_penalty=beta, return_all_beams=True)
    ids, scores = model.generate(source, max_length, sampler=sampler)
    for beam in range(3):
        hypothesis = ids[:, beam]
        target_in = np.concatenate([np.ones((2, 1), "int32"), hypothesis[:, :-1]], axis=1)
        logits, weights = model((source, target_in), return_attention_scores=True)
        # generate never emits padding (0) or the start token (1): they are masked first.
        logits = ops.convert_to_numpy(logits).astype("float64")
        logits[..., :2] = -np.inf
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        weights = ops.convert_to_numpy(weights).astype("float64")
        for row in range(2):
            tokens = list(hypothesis[row])
            length = tokens.index(2) + 1 if 2 in tokens else max_length
            log_prob = sum(log_probs[row, t, tokens[t]] for t in range(length))
            coverage = weights[row, :length].sum(0)
            penalty = beta * np.log(np.minimum(coverage[coverage > 0], 1.0)).sum()
            np.testing.assert_allclose(scores[row, beam], log_prob + penalty, rtol=2e-4, atol=2e-4)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first


def test_generate_blocks_repeated_ngrams():
    """In a compiled `generate`: without blocking the untrained model repeats bigrams; with
    `no_repeat_ngram_size=2` no output does (the start token included)."""
    keras.utils.set_random_seed(4)
    model = LuongSeq2Seq(9, 6, units=8, embedding_dim=4)  # words 3, 4, 5 and the end, 2
    source = np.array([[3, 4, 5, 6, 7, 8, 3, 4]] * 3, "int32")
    for kind, options in ((GreedySampler, {}), (BeamSearchSampler, {"num_beams": 3})):
        plain = model.generate(source, 8, sampler=kind(**options), stop_token_ids=None)
        assert any(has_repeat([1, *row], 2) for row in plain.tolist())
        blocked = kind(**options, no_repeat_ngram_size=2)
        ids = model.generate(source, 8, sampler=blocked, stop_token_ids=None)
        assert not any(has_repeat([1, *row], 2) for row in ids.tolist()), ids
