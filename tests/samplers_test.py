import contextlib

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, GreedySampler
from keras_luong.samplers import pad_after_end
from tests.sampler_models import END, STEPS, SUM_WEIGHT, TABLE, brute_force, prompts, run


@pytest.mark.parametrize(
    "length_penalty, min_length", [(0.0, 0), (1.0, 0), (2.0, 0), (0.0, 2), (0.6, 1)]
)
def test_full_width_beam_is_exhaustive(length_penalty, min_length):
    """With a beam wider than the number of hypotheses, beam search ranks every hypothesis,
    ended at different steps or not at all, exactly as brute force does."""
    expected = [brute_force(t, length_penalty, min_length) for t in (3, 4)]
    width = len(expected[0])
    sampler = BeamSearchSampler(
        width, length_penalty=length_penalty, min_length=min_length, return_all_beams=True
    )
    ids, scores = (ops.convert_to_numpy(x) for x in run(sampler))
    assert ids.shape == (2, width, STEPS + 2) and scores.shape == (2, width)
    for example, hypotheses in enumerate(expected):
        np.testing.assert_allclose(scores[example], [h[0] for h in hypotheses], rtol=1e-5)
        for rank, (_, words) in enumerate(hypotheses):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)
    best = ops.convert_to_numpy(
        run(BeamSearchSampler(width, length_penalty=length_penalty, min_length=min_length))
    )
    np.testing.assert_array_equal(best[:, 2:], [h[0][1] for h in expected])


def test_length_penalty_changes_the_winner():
    """The hand-made model is chosen so that the ranking depends on alpha: a check that
    the test above compares different rankings, not one ranking five times."""
    for first_token in (3, 4):
        winners = [brute_force(first_token, alpha)[0][1] for alpha in (0.0, 2.0)]
        assert winners[0] != winners[1]


def test_finished_hypotheses_are_frozen():
    """After its end token a hypothesis holds only padding, and its score stays the one it
    ended with (the brute-force test checks the values; this one the padding)."""
    ids, _ = run(BeamSearchSampler(4, return_all_beams=True))
    ids = ops.convert_to_numpy(ids)[..., 2:]
    ended = np.cumsum(ids == END, axis=-1) - (ids == END) > 0
    assert ended.any()
    assert np.all(ids[ended] == 0)


def test_beam_of_one_is_greedy():
    beam = ops.convert_to_numpy(run(BeamSearchSampler(1), batch=6))
    greedy = ops.convert_to_numpy(run(GreedySampler(), batch=6))
    # Greedy stops when every row has ended; the generator pads what follows the end.
    greedy = ops.convert_to_numpy(pad_after_end(ops.convert_to_tensor(greedy), (END,)))
    np.testing.assert_array_equal(beam, greedy)


def test_config_round_trip():
    sampler = BeamSearchSampler(3, length_penalty=0.6, min_length=2, return_all_beams=True)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert isinstance(restored, BeamSearchSampler)
    assert restored.get_config() == sampler.get_config()
    assert (restored.num_beams, restored.length_penalty, restored.min_length) == (3, 0.6, 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_beams": 0}, "num_beams=0"),
        ({"num_beams": 2.5}, "num_beams=2.5"),
        ({"length_penalty": -1}, "length_penalty=-1"),
        ({"min_length": -2}, "min_length=-2"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BeamSearchSampler(**kwargs)


def test_registered_names():
    for sampler in (BeamSearchSampler, GreedySampler):
        name = keras.saving.get_registered_name(sampler)
        assert name == f"keras_luong>{sampler.__name__}"


def test_greedy_takes_the_most_probable_token_row_by_row():
    """Greedy against the hand-made model's own argmax, step by step in numpy."""
    ids = ops.convert_to_numpy(run(GreedySampler(), batch=6))
    prompt = prompts(6)
    for row in range(6):
        previous, running = prompt[row, 1], 0.0
        for step in range(STEPS):
            expected = np.argmax(TABLE[step + 1, previous] + running * SUM_WEIGHT)
            assert ids[row, step + 2] == expected
            if expected == END:
                break
            running += previous
            previous = expected


def test_greedy_takes_the_first_of_tied_tokens():
    """Ties go to the lowest id on every backend (numpy's argmax), wherever they fall in a
    large vocabulary."""
    rng = np.random.default_rng(0)
    logits = rng.integers(0, 3, (5, 4001)).astype("float32")  # many ties of the maximum
    logits[1, 0] = logits[2, 4000] = 9.0
    sampler = GreedySampler()
    got = ops.convert_to_numpy(sampler.get_next_token(sampler.compute_probabilities(logits)))
    np.testing.assert_array_equal(got, np.argmax(logits, axis=-1))
    assert got[1] == 0 and got[2] == 4000 and got[0] == np.flatnonzero(logits[0] == 2)[0]


def test_keras_hub_samplers_agree():
    """keras-hub's samplers share the call convention: its greedy one decodes as ours."""
    keras_hub = pytest.importorskip("keras_hub")
    ours = ops.convert_to_numpy(run(GreedySampler(), batch=6))
    theirs = ops.convert_to_numpy(run(keras_hub.samplers.GreedySampler(), batch=6))
    np.testing.assert_array_equal(ours, theirs)


def test_temperature_is_checked():
    with pytest.raises(ValueError, match="temperature=0"):
        GreedySampler(temperature=0)


@pytest.mark.parametrize("unrolled", [False, True], ids=["loop", "unrolled"])
@pytest.mark.parametrize("size", [7, 320, 4001, 40000])
@pytest.mark.parametrize("k", [1, 5])
def test_top_k_indices_match_a_stable_sort(size, k, unrolled):
    """The blocked top-k (rows of more than 64 k entries, as a beam step's `beams *
    vocabulary` scores are) against numpy's stable sort: the k largest, largest first, the
    lower index first on ties. Few distinct values, so ties fall across block borders; 4001
    is prime (the last block is padded); one row has a single finite maximum in a sea of the
    masked score; one is `-inf` but for its first entry (a beam with no hypothesis yet), so
    that the entries found must not be found again. The same within `loops.unrolled` (traced
    for torch.export), whose gathers are taken from flat rows."""
    from keras_luong.backend.loops import unrolled as unrolled_loops
    from keras_luong.backend.top_k import top_k_indices as _top_k_indices

    rng = np.random.default_rng(size + k)
    x = rng.integers(0, 4, (5, size)).astype("float32")
    x[1] = -1e9
    x[1, size // 2] = 0.0
    x[2, -1] = 10.0  # the best entry in the last (padded) block
    x[3] = -np.inf
    x[3, 0] = 1.0
    with unrolled_loops() if unrolled else contextlib.nullcontext():
        got = ops.convert_to_numpy(_top_k_indices(ops.convert_to_tensor(x), k))
    np.testing.assert_array_equal(got, np.argsort(-x, axis=1, kind="stable")[:, :k])


def test_samplers_configs_keep_the_new_options():
    sampler = BeamSearchSampler(
        3, coverage_penalty=0.2, no_repeat_ngram_size=3, coverage_form="stepwise"
    )
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert (restored.coverage_penalty, restored.no_repeat_ngram_size) == (0.2, 3)
    assert restored.coverage_form == "stepwise"
    config = BeamSearchSampler(3).get_config()
    del config["coverage_form"]  # a config saved before the option: tensorflow-addons' form
    assert BeamSearchSampler.from_config(config).coverage_form == "gnmt"
    with pytest.raises(ValueError, match="coverage_form='wu'"):
        BeamSearchSampler(coverage_form="wu")
    greedy = GreedySampler.from_config(GreedySampler(no_repeat_ngram_size=2).get_config())
    assert greedy.no_repeat_ngram_size == 2
    with pytest.raises(ValueError, match="no_repeat_ngram_size=-1"):
        GreedySampler(no_repeat_ngram_size=-1)


def test_samplers_say_what_they_need_and_generation_refuses_what_it_cannot_give():
    """`needs` names the cache entries a sampler reads beside the states: beam search with a
    coverage penalty needs the attention, greedy search nothing; a need generation does not
    provide is refused when the generator is made, before anything is traced."""
    from keras_luong import LuongSeq2Seq

    assert GreedySampler().needs == ()
    assert BeamSearchSampler(2).needs == ()
    covering = BeamSearchSampler(2, coverage_penalty=0.2)
    assert covering.needs == ("attention",)

    class NeedsAnAlignmentMap(GreedySampler):
        needs = ("alignment_map",)

    model = LuongSeq2Seq(9, 9, units=8, embedding_dim=4)
    source = np.array([[3, 4, 5]], "int32")
    with pytest.raises(ValueError, match=r"needs \['alignment_map'\], which generation"):
        model.generate(source, 4, sampler=NeedsAnAlignmentMap())
    assert len(model.generators) == 0  # nothing kept


@pytest.mark.parametrize("min_length, banned", [(2, ()), (0, (3,)), (2, (3, 5))])
def test_greedy_min_length_and_banned_ids_against_numpy(min_length, banned):
    """`GreedySampler(min_length=, banned_token_ids=)`: the hand-made model's argmax step by
    step in numpy, with the end token masked before `min_length` generated tokens and the
    banned ids masked always."""
    sampler = GreedySampler(min_length=min_length, banned_token_ids=banned)
    ids = ops.convert_to_numpy(run(sampler, batch=6))
    prompt = prompts(6)
    for row in range(6):
        previous, running = prompt[row, 1], 0.0
        for step in range(STEPS):
            logits = (TABLE[step + 1, previous] + running * SUM_WEIGHT).astype("float64")
            logits[list(banned)] = -np.inf
            if step < min_length:
                logits[END] = -np.inf
            expected = np.argmax(logits)
            assert ids[row, step + 2] == expected
            if expected == END:
                break
            running += previous
            previous = expected
    assert not np.isin(ids[:, 2:], banned).any()


@pytest.mark.parametrize("banned", [(3,), (4, 5)])
def test_full_width_beam_with_banned_ids_ranks_the_others_as_brute_force(banned):
    """Banned ids never appear, and the hypotheses without them keep brute force's order and
    scores (a banned token's probability mass is not given to the others)."""
    for first, example in ((3, 0), (4, 1)):
        expected = [h for h in brute_force(first) if not set(h[1]) & set(banned)]
        width = len(brute_force(first))
        sampler = BeamSearchSampler(
            width, length_penalty=0, banned_token_ids=banned, return_all_beams=True
        )
        ids, scores = (ops.convert_to_numpy(x) for x in run(sampler))
        for rank, (score, words) in enumerate(expected):
            np.testing.assert_array_equal(ids[example, rank, 2:], words)
            np.testing.assert_allclose(scores[example, rank], score, rtol=1e-5)
        assert not np.isin(ids[example, : len(expected), 2:], banned).any()


def test_min_length_and_banned_ids_round_trip_and_are_checked():
    for kind in (GreedySampler, BeamSearchSampler):
        sampler = kind(min_length=2, banned_token_ids=(3, 4))
        restored = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(sampler)
        )
        assert (restored.min_length, restored.banned_token_ids) == (2, (3, 4))
        with pytest.raises(ValueError, match="banned_token_ids=-1"):
            kind(banned_token_ids=(3, -1))
        with pytest.raises(ValueError, match="banned_token_ids=3"):
            kind(banned_token_ids=3)
        with pytest.raises(ValueError, match="min_length=-1"):
            kind(min_length=-1)
