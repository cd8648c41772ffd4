"""N-gram blocking (keras_luong.samplers.ngrams) against brute force, alone, in greedy and beam
search, and in a compiled `generate`."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq
from keras_luong.checks import MASKED_SCORE
from keras_luong.samplers import mask_repeated_ngrams, repeated_ngram_tokens
from tests.sampler_models import (
    END,
    STEPS,
    SUM_WEIGHT,
    TABLE,
    brute_force_with_penalties,
    has_repeat,
    new_repeat,
    prompts,
    run_with_attention,
)


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
    expected = [brute_force_with_penalties(t, no_repeat=n) for t in (3, 4)]
    sampler = BeamSearchSampler(40, length_penalty=0, no_repeat_ngram_size=n, return_all_beams=True)
    ids, scores = (ops.convert_to_numpy(x) for x in run_with_attention(sampler))
    for example, hypotheses in enumerate(expected):
        valid = len(hypotheses)
        assert 0 < valid < 40
        np.testing.assert_allclose(scores[example, :valid], [h[0] for h in hypotheses], rtol=1e-5)
        for rank, (_, words) in enumerate(hypotheses):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)
        assert np.all(scores[example, valid:] < -1e8)  # every other continuation was banned


def test_greedy_never_repeats_an_ngram():
    """Greedy with bigram blocking, against the model's argmax over the allowed tokens."""
    ids = ops.convert_to_numpy(run_with_attention(GreedySampler(no_repeat_ngram_size=2), batch=6))
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
