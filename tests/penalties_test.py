"""The coverage penalty (keras_luong.samplers.penalties) in beam search against brute force in
float64, and in a compiled `generate` against teacher forcing."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, LuongSeq2Seq
from tests.sampler_models import (
    END,
    brute_force_with_penalties,
    prompts,
    reference_beam_search,
    run_with_attention,
)


@pytest.mark.parametrize(
    "coverage_penalty, length_penalty, form",
    [
        (0.0, 0.0, "gnmt"),  # no penalty: every form is the same
        (0.4, 0.0, "gnmt"),
        (2.0, 0.6, "gnmt"),
        (2.0, 0.6, "stepwise"),
        (2.0, 0.6, "summary"),
    ],
)
def test_full_width_beam_ranks_with_the_coverage_penalty(coverage_penalty, length_penalty, form):
    expected = [
        brute_force_with_penalties(t, coverage_penalty, length_penalty, form=form) for t in (3, 4)
    ]
    width = len(expected[0])
    sampler = BeamSearchSampler(
        width,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        return_all_beams=True,
        coverage_form=form,
    )
    ids, scores = (ops.convert_to_numpy(x) for x in run_with_attention(sampler))
    for example, hypotheses in enumerate(expected):
        np.testing.assert_allclose(scores[example], [h[0] for h in hypotheses], rtol=1e-5)
        for rank, (_, words) in enumerate(hypotheses):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)


@pytest.mark.parametrize("form", ["gnmt", "stepwise", "summary"])
@pytest.mark.parametrize("beams, beta, alpha", [(3, 2.0, 0.6), (2, 5.0, 1.0)])
def test_narrow_beam_follows_the_rule_of_its_coverage_form(form, beams, beta, alpha):
    """A beam that prunes as it goes keeps, at every step, the hypotheses its form ranks best:
    against a float64 beam search that applies the rule as the docstring states it."""
    sampler = BeamSearchSampler(
        beams, length_penalty=alpha, coverage_penalty=beta, coverage_form=form,
        return_all_beams=True,
    )  # fmt: skip
    ids, scores = (ops.convert_to_numpy(x) for x in run_with_attention(sampler))
    for example, first_token in enumerate((3, 4)):
        expected = reference_beam_search(first_token, beams, beta, alpha, form)
        np.testing.assert_allclose(scores[example], [h[0] for h in expected], rtol=1e-5)
        np.testing.assert_array_equal(ids[example, :, 2:], [h[1] for h in expected])


def test_the_forms_keep_different_hypotheses():
    """The reference beams differ between the forms on these weights: the test above has
    something to tell apart."""
    outcomes = {
        form: [reference_beam_search(t, 2, 5.0, 1.0, form) for t in (3, 4)]
        for form in ("gnmt", "stepwise", "summary")
    }
    words = {form: [[h[1] for h in beam] for beam in result] for form, result in outcomes.items()}
    assert words["gnmt"] != words["stepwise"]
    assert words["summary"] != words["stepwise"]


def test_coverage_penalty_changes_the_winner():
    """The hand-made weights are such that the penalty changes the best hypothesis, and
    a narrow beam (3, pruning as it goes) finds the brute-force winner."""
    for first_token in (3, 4):
        assert (
            brute_force_with_penalties(first_token)[0][1]
            != brute_force_with_penalties(first_token, 2.0)[0][1]
        )
    best = ops.convert_to_numpy(run_with_attention(BeamSearchSampler(3, coverage_penalty=2.0)))
    np.testing.assert_array_equal(
        best[:, 2:], [brute_force_with_penalties(t, 2.0)[0][1] for t in (3, 4)]
    )


def test_coverage_penalty_needs_the_attention():
    sampler = BeamSearchSampler(2, coverage_penalty=0.5)
    cache = (ops.zeros((2,), "float32"),)
    with pytest.raises(ValueError, match="'attention'"):
        sampler(lambda p, c, i: None, prompts(2), cache=cache, index=2, stop_token_ids=(END,))
    with pytest.raises(ValueError, match="coverage_penalty=-1"):
        BeamSearchSampler(coverage_penalty=-1)


def test_generate_scores_include_the_coverage_penalty():
    """`generate`'s beam scores equal the teacher-forced log-probability of each returned
    hypothesis plus beta times the log of its clipped attention sums."""
    keras.utils.set_random_seed(3)
    model = LuongSeq2Seq(9, 7, units=8, embedding_dim=4)
    source = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]], "int32")
    beta, max_length = 0.7, 5
    sampler = BeamSearchSampler(3, length_penalty=0, coverage_penalty=beta, return_all_beams=True)
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
