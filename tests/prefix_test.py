"""`generate(..., prefix=...)`: every output begins with its prefix, and the continuation is
the sampler's from there, against a hand loop of `next_token_logits` forced through the
prefix (greedy), and beam search's hypotheses all begin with it."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq, RandomSampler

SOURCE = np.array([[4, 5, 6, 7], [8, 9, 0, 0], [10, 0, 0, 0]], "int32")
PREFIX = np.array([[6, 6, 3], [7, 0, 0], [0, 0, 0]], "int32")  # the last row: no prefix


def tiny_model():
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(12, 9, units=8, embedding_dim=8)
    model((SOURCE, SOURCE % 9))
    model.projection.bias.assign(np.array([0, 0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.0, 0.8], "float32"))
    return model


def forced_greedy(model, source, prefix, max_length):
    """Greedy decoding by hand: the prefix's ids fed first, then the argmax of each step's
    logits over the ids decoding generates (2 and up), stopping at the end id 2."""
    memory, states, _ = model.start_decoding(ops.convert_to_tensor(source))
    token = np.full(len(source), model.start_token, "int32")
    ids = np.zeros((len(source), max_length), "int32")
    ended = np.zeros(len(source), bool)
    for step in range(max_length):
        logits, _, states = model.next_token_logits(
            ops.convert_to_tensor(token), states, memory, step
        )[:3]
        best = 2 + np.argmax(ops.convert_to_numpy(logits)[:, 2:], axis=-1)
        forced = prefix[:, step] if step < prefix.shape[1] else np.zeros(len(source), "int32")
        token = np.where(forced != 0, forced, best).astype("int32")
        ids[:, step] = np.where(ended, 0, token)
        ended |= token == 2
    return ids


def test_greedy_continues_from_the_prefix_as_a_hand_loop_does():
    model = tiny_model()
    ids = model.generate(SOURCE, max_length=7, prefix=PREFIX)
    np.testing.assert_array_equal(ids, forced_greedy(model, SOURCE, PREFIX, 7))
    np.testing.assert_array_equal(ids[0, :3], [6, 6, 3])
    assert ids[1, 0] == 7
    # No prefix in a row: that row's greedy output.
    np.testing.assert_array_equal(ids[2], model.generate(SOURCE, max_length=7)[2])
    # Not what the row decodes without a prefix (so the prefix was forced).
    assert (ids[0, :3] != model.generate(SOURCE[:1], max_length=7)[0, :3]).any()


@pytest.mark.parametrize(
    "sampler",
    [BeamSearchSampler(3, return_all_beams=True), RandomSampler(seed=0)],
    ids=["beam", "random"],
)
def test_every_hypothesis_begins_with_its_prefix(sampler):
    model = tiny_model()
    outputs = model.generate(SOURCE, max_length=7, prefix=PREFIX, sampler=sampler)
    ids = outputs[0] if isinstance(outputs, tuple) else outputs[:, None]
    for row, prefix in enumerate(PREFIX):
        given = prefix[prefix != 0]
        np.testing.assert_array_equal(ids[row, :, : len(given)], np.tile(given, (ids.shape[1], 1)))
    if isinstance(outputs, tuple):  # the beams differ after the prefix, best first
        assert len({tuple(beam) for beam in ids[0]}) == 3
        assert np.all(np.diff(ops.convert_to_numpy(outputs[1]), axis=1) <= 0)


def test_prefix_refuses_bad_input():
    model = tiny_model()
    with pytest.raises(ValueError, match="one row for each of the 3 sources"):
        model.generate(SOURCE, max_length=5, prefix=PREFIX[:2])
    with pytest.raises(ValueError, match=r"followed by padding \(0\) alone"):
        model.generate(SOURCE, max_length=5, prefix=np.array([[0, 4], [4, 0], [0, 0]]))
    with pytest.raises(ValueError, match="after the start token"):
        model.generate(SOURCE, max_length=5, prefix=np.array([[1, 4], [4, 0], [0, 0]]))
    with pytest.raises(ValueError, match="at most max_length=2"):
        model.generate(SOURCE, max_length=2, prefix=PREFIX)
    with pytest.raises(ValueError, match="prefix"):
        model.generate(SOURCE, max_length=5, prefix=np.full((3, 1), 9))  # past 9 target ids


def test_beam_scores_count_the_tokens_after_the_prefix():
    """Each hypothesis's score (no length penalty) is the teacher-forced sum of its tokens'
    log-probabilities after the prefix (`score`'s token scores): the prefix's tokens count
    0, every other token its log-softmax."""
    model = tiny_model()
    sampler = BeamSearchSampler(3, length_penalty=0.0, return_all_beams=True)
    ids, scores = model.generate(SOURCE, max_length=7, prefix=PREFIX, sampler=sampler)
    scores = ops.convert_to_numpy(scores)
    for beam in range(3):
        _, tokens = model.score(SOURCE, ids[:, beam], return_token_scores=True)
        given = (PREFIX != 0).sum(axis=1)
        after = np.arange(tokens.shape[1]) >= given[:, None]
        generated = np.pad(ids[:, beam], ((0, 0), (0, 1))) != 0
        expected = np.where(after & generated, tokens, 0.0).sum(axis=1)
        np.testing.assert_allclose(scores[:, beam], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beams", [1, 3], ids=["greedy", "beam"])
def test_a_prefix_is_kept_whatever_the_bans(beams):
    """The prefix's first row gives the unknown id 3, which the sampler bans: the output
    still begins with the prefix, and 3 comes nowhere after it."""
    model = tiny_model()
    make = GreedySampler if beams == 1 else lambda **k: BeamSearchSampler(beams, **k)
    sampler = make(banned_token_ids=(3,), min_length=4)
    ids = model.generate(SOURCE, max_length=7, prefix=PREFIX, sampler=sampler)
    np.testing.assert_array_equal(ids[0, :3], [6, 6, 3])
    assert ids[1, 0] == 7
    assert not (ids[:, 3:] == 3).any() and not (ids[1:] == 3).any()
    # min_length still holds after the prefix: no end token among the first 4 ids.
    assert not (ids[:, :4] == 2).any()
