"""`score` and `translate(..., return_token_scores=True)`: each target's log-probability given
its source, against a hand loop of `next_token_logits` (numpy log-softmax) and against beam
search's own hypothesis scores."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, Ensemble, LuongSeq2Seq, TokenScores, Vocabulary

SOURCE = np.array([[4, 5, 6, 7], [8, 9, 0, 0], [5, 0, 0, 0]], "int32")


def tiny_model():
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(12, 9, units=8, embedding_dim=8)
    model((SOURCE, SOURCE % 9))
    rng = np.random.default_rng(0)  # spread-out logits: scores far apart
    model.projection.kernel.assign(rng.normal(0, 2, (8, 9)).astype("float32"))
    return model


def stepped_log_probabilities(model, source, target_out):
    """log p(target_out[t] | ...) by decoding step by step through the target (numpy
    log-softmax of `next_token_logits` over the ids decoding generates: not padding or the
    start token), 0 where `target_out` is padding."""
    memory, states, _ = model.start_decoding(ops.convert_to_tensor(source))
    token = np.full(len(source), model.start_token, "int32")
    scores = np.zeros(target_out.shape)
    for step in range(target_out.shape[1]):
        logits, _, states = model.next_token_logits(
            ops.convert_to_tensor(token), states, memory, step
        )[:3]
        logits = ops.convert_to_numpy(logits).astype("float64")[:, 2:]  # ids 2, 3, ...
        log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        picked = log_p[np.arange(len(source)), np.maximum(target_out[:, step] - 2, 0)]
        scores[:, step] = np.where(target_out[:, step] != 0, picked, 0.0)
        token = np.where(target_out[:, step] != 0, target_out[:, step], 0).astype("int32")
    return scores


def test_score_is_the_sum_of_each_steps_log_softmax():
    model = tiny_model()
    target = np.array([[3, 4, 5], [6, 0, 0], [0, 0, 0]], "int32")
    scores, tokens = model.score(SOURCE, target, return_token_scores=True)
    # The end token (2) after each row's ids; an empty target scores the end token alone.
    target_out = np.array([[3, 4, 5, 2], [6, 2, 0, 0], [2, 0, 0, 0]], "int32")
    expected = stepped_log_probabilities(model, SOURCE, target_out)
    np.testing.assert_allclose(tokens, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scores, expected.sum(1), rtol=1e-5)
    assert np.all(scores < 0) and len(set(np.round(scores, 3))) == 3
    # A row that ends with the end token already (as generate's ids do) scores the same.
    ended = np.array([[3, 4, 5, 2], [6, 2, 0, 0], [2, 0, 0, 0]], "int32")
    np.testing.assert_allclose(model.score(SOURCE, ended), scores, rtol=1e-6)


def test_score_does_not_depend_on_batching_or_extra_padding():
    model = tiny_model()
    target = np.array([[3, 4, 5], [6, 7, 0], [8, 0, 0]], "int32")
    scores = model.score(SOURCE, target)
    one_by_one = model.score(SOURCE, target, batch_size=1)
    padded = model.score(np.pad(SOURCE, [(0, 0), (0, 3)]), np.pad(target, [(0, 0), (0, 5)]))
    np.testing.assert_allclose(one_by_one, scores, rtol=1e-5)
    np.testing.assert_allclose(padded, scores, rtol=1e-5)


def ensemble():
    keras.utils.set_random_seed(1)
    other = LuongSeq2Seq(12, 9, units=8, embedding_dim=8)
    other((SOURCE, SOURCE % 9))
    return Ensemble([tiny_model(), other])


@pytest.mark.parametrize("build", [tiny_model, ensemble], ids=["model", "ensemble"])
def test_score_of_beam_hypotheses_is_beam_searchs_own_score(build):
    model = build()
    sampler = BeamSearchSampler(3, length_penalty=0.0, return_all_beams=True)
    ids, beam_scores = model.generate(SOURCE, max_length=6, sampler=sampler)
    beams = ops.convert_to_numpy(ids).reshape(-1, 6)
    scores, tokens = model.score(np.repeat(SOURCE, 3, axis=0), beams, return_token_scores=True)
    # A hypothesis that max_length cut (no end token) has no end token's score in its own.
    ended = (beams == model.end_token).any(1)
    scores = scores - np.where(ended, 0.0, tokens[:, 6])
    np.testing.assert_allclose(scores, ops.convert_to_numpy(beam_scores).ravel(), rtol=1e-4)
    assert 0 < ended.sum() < 9  # both kinds compared


def test_translate_gives_each_tokens_log_probability():
    model = tiny_model()
    source, target = Vocabulary("abcdefgh"), Vocabulary("vwxyz")
    texts = ["abcd", "ef", "hgfedcba", ""]
    ids = {**{s: i for i, s in enumerate(target.symbols, Vocabulary.RESERVED)}, "<unk>": 3}
    ended_kinds = set()
    for end_bias in (0.0, 0.2):  # every text's greedy output cut at 4 tokens, then ended at once
        model.projection.bias.assign(np.eye(9, dtype="float32")[model.end_token] * end_bias)
        translations, found = model.translate(
            texts, source, target, max_length=4, return_token_scores=True
        )
        assert translations == model.translate(texts, source, target, max_length=4)
        for text, translation, scored in zip(texts, translations, found, strict=True):
            assert isinstance(scored, TokenScores) and "".join(scored.tokens) == translation
            # The hand loop through the ids generated: the tokens, then the end token if any.
            ended = scored.end_score is not None
            out = [ids[t] for t in scored.tokens] + [model.end_token] * ended
            expected = stepped_log_probabilities(
                model, source.encode_batch([text]), np.array([out + [0]], "int32")
            )[0]
            np.testing.assert_allclose(scored.scores, expected[: len(scored.tokens)], atol=2e-5)
            if ended:
                np.testing.assert_allclose(scored.end_score, expected[len(out) - 1], atol=2e-5)
            ended_kinds.add(ended)
    assert ended_kinds == {True, False}
    model.projection.bias.assign(np.zeros(9, "float32"))
    # Every beam's: with the end token's, they sum to beam search's own score.
    sampler = BeamSearchSampler(3, length_penalty=0.0, return_all_beams=True)
    n_best, found = model.translate(
        texts, source, target, max_length=4, sampler=sampler, return_token_scores=True
    )
    for best, scored in zip(n_best, found, strict=True):
        assert ["".join(s.tokens) for s in scored] == [text for text, _ in best]
        totals = [s.scores.sum() + (s.end_score or 0.0) for s in scored]
        np.testing.assert_allclose(totals, [score for _, score in best], rtol=1e-4, atol=1e-5)
    # Beside the alignments, after them.
    _, aligned, again = model.translate(
        texts, source, target, max_length=4, sampler=sampler, return_alignments=True,
        return_token_scores=True,
    )  # fmt: skip
    assert [[a.target_tokens for a in row] for row in aligned] == [
        [s.tokens for s in row] for row in found
    ]
    for row, other in zip(found, again, strict=True):
        np.testing.assert_allclose(
            np.concatenate([s.scores for s in row]), np.concatenate([s.scores for s in other])
        )


def test_n_best_lists_hold_the_hypotheses_beam_search_reached():
    """Every token but the end id 2 and "z" (8) banned, two steps: beam 5 reaches three
    hypotheses ("", "z" and "zz"; `generate`'s other two score about -1e9), and the n-best
    lists, their token scores and alignments hold those three, each scored as `score` scores
    its ids (teacher forced)."""
    model = tiny_model()
    source, target = Vocabulary("abcdefgh"), Vocabulary("vwxyz")
    texts = ["abcd", "ef"]
    sampler = BeamSearchSampler(
        5, length_penalty=0.0, banned_token_ids=(3, 4, 5, 6, 7), return_all_beams=True
    )
    ids, raw = model.generate(source.encode_batch(texts), max_length=2, sampler=sampler)
    ids, raw = ops.convert_to_numpy(ids), ops.convert_to_numpy(raw)
    reached = raw > -1e8
    assert reached.sum(axis=1).tolist() == [3, 3]
    n_best, found, aligned = model.translate(
        texts, source, target, max_length=2, sampler=sampler, return_token_scores=True,
        return_alignments=True,
    )  # fmt: skip
    for row, (best, scored, alignments) in enumerate(zip(n_best, found, aligned, strict=True)):
        assert sorted(hypothesis for hypothesis, _ in best) == ["", "z", "zz"]
        assert [target.decode(i) for i in ids[row][reached[row]]] == [h for h, _ in best]
        assert len(scored) == len(alignments) == 3
        inputs = np.repeat(source.encode_batch(texts[row : row + 1]), 3, axis=0)
        expected, tokens = model.score(inputs, ids[row][reached[row]], return_token_scores=True)
        # "zz" was cut at 2 tokens: beam search's score has no end token's.
        cut = ~(ids[row][reached[row]] == model.end_token).any(axis=1)
        expected = expected - np.where(cut, tokens[:, 2], 0.0)
        np.testing.assert_allclose([score for _, score in best], expected, rtol=1e-4, atol=1e-5)


def test_score_refuses_bad_input():
    model = tiny_model()
    with pytest.raises(ValueError, match="one target per source: 3 sources"):
        model.score(SOURCE, np.array([[3]], "int32"))
    with pytest.raises(ValueError, match=r"followed by padding \(0\) alone"):
        model.score(SOURCE, np.array([[3, 0, 4], [3, 0, 0], [3, 0, 0]], "int32"))
    with pytest.raises(ValueError, match="target_ids"):
        model.score(SOURCE, np.full((3, 2), 9, "int32"))  # past the 9 target ids
    with pytest.raises(ValueError, match="batch_size"):
        model.score(SOURCE, SOURCE % 9, batch_size=0)
