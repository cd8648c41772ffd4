"""`RandomSampler`: seeded sampling with temperature, top-k and top-p, by property and by a
chi-square test of its first tokens' frequencies against the softmax of the model's own
first-step logits (computed here from `next_token_logits`, apart from the sampler)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import LuongSeq2Seq, RandomSampler, samplers
from tests.test_case import BACKEND

SOURCE = np.array([[4, 5, 6, 7]], "int32")
DRAWS = 4000
# The chi-square distribution's 0.999 quantile at 1 to 6 degrees of freedom: a statistic
# above it rejects the expected frequencies at the 0.1% level.
CHI2_999 = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 6: 22.458}


def tiny_model():
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(12, 9, units=8, embedding_dim=8)
    model((SOURCE, SOURCE % 9))
    # Spread-out logits: distinct probabilities, from 0.03 to 0.4 at temperature 1.
    model.projection.bias.assign(np.array([0, 0, 1.5, 0.5, -0.5, 1.0, -1.0, 0.0, 2.0], "float32"))
    return model


def first_step_probabilities(model, temperature=1.0):
    """The softmax of the first step's logits over temperature, over the ids decoding
    generates (2 to 8; padding and the start token never are)."""
    memory, states, _ = model.start_decoding(ops.convert_to_tensor(SOURCE))
    start = ops.convert_to_tensor(np.array([model.start_token], "int32"))
    logits = ops.convert_to_numpy(model.next_token_logits(start, states, memory, 0)[0])[0]
    logits = logits[2:].astype("float64") / temperature
    p = np.exp(logits - logits.max())
    return p / p.sum()


def first_tokens(model, sampler):
    ids = model.generate(np.repeat(SOURCE, DRAWS, 0), max_length=1, sampler=sampler)
    return ids[:, 0]


def chi_square(tokens, expected):
    """The statistic of `tokens` (ids 2..8) against the probabilities `expected` over those
    ids, and its degrees of freedom, over the ids of non-zero probability."""
    counts = np.bincount(tokens - 2, minlength=len(expected))
    kept = expected > 0
    assert counts[~kept].sum() == 0  # never a token of probability 0
    e = DRAWS * expected[kept]
    return float(((counts[kept] - e) ** 2 / e).sum()), int(kept.sum()) - 1


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_first_tokens_follow_the_softmax_at_the_temperature(temperature):
    model = tiny_model()
    expected = first_step_probabilities(model, temperature)
    tokens = first_tokens(model, RandomSampler(temperature=temperature, seed=0))
    statistic, dof = chi_square(tokens, expected)
    assert statistic < CHI2_999[dof]
    # The test can fail: the same draws against another temperature's probabilities.
    other = first_step_probabilities(model, 1.25 * temperature)
    assert chi_square(tokens, other)[0] > CHI2_999[dof]


def test_top_k_draws_among_the_k_most_probable_in_proportion():
    model = tiny_model()
    p = first_step_probabilities(model)
    top = np.argsort(-p)[:3]
    expected = np.where(np.isin(np.arange(len(p)), top), p, 0.0)
    tokens = first_tokens(model, RandomSampler(top_k=3, seed=1))
    assert set(np.unique(tokens) - 2) == set(top)
    statistic, dof = chi_square(tokens, expected / expected.sum())
    assert dof == 2 and statistic < CHI2_999[dof]


def test_top_p_draws_from_the_nucleus_in_proportion():
    model = tiny_model()
    p = first_step_probabilities(model)
    order = np.argsort(-p)
    before = np.cumsum(p[order]) - p[order]
    nucleus = order[before < 0.6]  # the fewest most probable ids reaching 0.6
    assert 1 < len(nucleus) < len(p)
    expected = np.where(np.isin(np.arange(len(p)), nucleus), p, 0.0)
    tokens = first_tokens(model, RandomSampler(top_p=0.6, seed=2))
    assert set(np.unique(tokens) - 2) == set(nucleus)
    statistic, dof = chi_square(tokens, expected / expected.sum())
    assert statistic < CHI2_999[dof]


def test_a_seed_repeats_whatever_the_batch_size_and_seeds_differ():
    model = tiny_model()
    source = np.array([[4, 5, 6, 7], [8, 9, 0, 0], [10, 0, 0, 0]] * 4, "int32")
    ids = model.generate(source, max_length=8, sampler=RandomSampler(seed=7))
    again = model.generate(source, max_length=8, sampler=RandomSampler(seed=7), batch_size=5)
    other = model.generate(source, max_length=8, sampler=RandomSampler(seed=8))
    np.testing.assert_array_equal(ids, again)
    assert (ids != other).any()
    # Rows of the same source differ: each row draws its own numbers.
    assert len({tuple(row) for row in ids[0::3]}) > 1


def test_bans_and_min_length_hold_while_sampling():
    model = tiny_model()
    sampler = RandomSampler(seed=3, min_length=3, banned_token_ids=(3, 5))
    ids = model.generate(np.repeat(SOURCE, 200, 0), max_length=6, sampler=sampler)
    assert not np.isin(ids, [3, 5]).any()
    ends = [list(row).index(2) for row in ids if 2 in row]
    assert ends and min(ends) >= 3  # no end token before 3 other tokens


def test_random_sampler_config_name_and_bad_input(tmp_path):
    sampler = RandomSampler(top_k=4, top_p=0.9, temperature=0.7, seed=11)
    again = samplers.get(samplers.serialize(sampler))
    assert isinstance(again, RandomSampler) and again.get_config() == sampler.get_config()
    assert isinstance(samplers.get("random"), RandomSampler)
    for kwargs, name in [({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"),
                         ({"top_k": -1}, "top_k"), ({"seed": -1}, "seed"),
                         ({"temperature": 0.0}, "temperature")]:  # fmt: skip
        with pytest.raises(ValueError, match=name):
            RandomSampler(**kwargs)
    with pytest.raises(ValueError, match=r"cache\['noise'\]"):
        sampler(lambda prompt, cache, index: (None, None, cache), np.array([[1, 0]]), index=1)
    # A format of the source alone (a SavedModel takes the noise: export_test).
    format, name = ("torch", "model.pt2") if BACKEND == "torch" else ("litert", "model.tflite")
    if BACKEND != "jax":  # JAX writes SavedModels alone
        with pytest.raises(ValueError, match="takes the source alone.*'tf_saved_model'"):
            tiny_model().export_generator(
                str(tmp_path / name), 4, format=format, source_length=4, sampler=sampler
            )


def test_kth_largest_and_the_nucleus_threshold_agree_with_sorting():
    """The two selections top-k and top-p sampling make without sorting, against NumPy's
    sort on rows of 1,000 entries (wide enough for the blocked top-k), ties included."""
    from keras_luong.backend.top_k import kth_largest
    from keras_luong.samplers.sampling import nucleus_threshold

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 1000)).astype("float32") * 3
    logits[1, :40] = logits[1].max() + 1.0  # ties at the top
    for k in (1, 10, 50):
        kth = ops.convert_to_numpy(kth_largest(ops.convert_to_tensor(logits), k))
        np.testing.assert_array_equal(kth[:, 0], -np.sort(-logits, axis=1)[:, k - 1])
    probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    for top_p in (0.3, 0.9, 0.999):
        least = ops.convert_to_numpy(
            nucleus_threshold(ops.convert_to_tensor(probabilities), top_p)
        )[:, 0]
        largest_first = -np.sort(-probabilities, axis=1)
        before = np.cumsum(largest_first, axis=1) - largest_first
        expected = np.where(before < top_p, largest_first, 2.0).min(axis=1)
        # The same tokens kept: none between the threshold found and the nucleus' least.
        np.testing.assert_array_equal(
            probabilities >= least[:, None], probabilities >= expected[:, None]
        )
        assert np.all(least <= expected) and np.all(expected - least < 1e-6)
