"""`Ensemble`: members decoded as one, their step log-probabilities combined; its greedy ids
against a float64 reference written here, its beam scores against teacher forcing."""

import keras
import numpy as np
import pytest

from keras_luong import (
    BeamSearchSampler,
    BleuCallback,
    Ensemble,
    LuongSeq2Seq,
    Vocabulary,
    samplers,
)
from keras_luong.evaluation import corpus_bleu
from tests.seq2seq_test import check_export
from tests.test_case import save_and_load, to_numpy

V = 9
SOURCE = np.array([[3, 4, 5, 6], [7, 8, 0, 0], [5, 0, 0, 0]], "int32")
TARGET_IN = np.array([[1, 4, 5, 6], [1, 7, 8, 0], [1, 3, 0, 0]], "int32")


def member(seed, **arguments):
    keras.utils.set_random_seed(seed)
    arguments = {"units": 8, "embedding_dim": 6, **arguments}
    model = LuongSeq2Seq(V, V, **arguments)
    model((SOURCE, TARGET_IN))
    # Larger output weights than a fresh model's: distributions with clear preferences.
    kernel = model.projection.kernel
    kernel.assign(kernel * 20.0)
    return model


def members():
    return [
        member(0),
        member(1, alignment="local-m", score_mode="dot", decoder_cell="gru", units=6),
    ]


def log_softmax64(logits):
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def reference_greedy(models, weights, max_length, combine="log_probabilities"):
    """Greedy decoding written out: each member's own steps, their log-softmax combined in
    float64, padding and the start token never chosen, padding after the end token."""
    starts = [m.start_decoding(SOURCE, 1) for m in models]
    memories = [s[0] for s in starts]
    states = [list(s[1]) for s in starts]
    token = np.full((len(SOURCE),), 1, "int32")
    ids, ended = [], np.zeros(len(SOURCE), bool)
    for step in range(max_length):
        terms = []
        for index, model in enumerate(models):
            logits, _, states[index] = model.next_token_logits(
                token, states[index], memories[index], step
            )
            terms.append(log_softmax64(to_numpy(logits)))
        if combine == "log_probabilities":
            combined = sum(w * t for w, t in zip(weights, terms, strict=True))
        else:
            combined = np.log(sum(w * np.exp(t) for w, t in zip(weights, terms, strict=True)))
        combined[:, [0, 1]] = -np.inf
        token = combined.argmax(-1).astype("int32")
        ids.append(np.where(ended, 0, token))
        ended |= token == 2
    return np.stack(ids, 1)


def test_an_ensemble_of_one_is_the_model():
    model = member(0)
    ensemble = Ensemble([model])
    np.testing.assert_array_equal(
        ensemble.generate(SOURCE, max_length=6), model.generate(SOURCE, max_length=6)
    )
    beam = BeamSearchSampler(3, return_all_beams=True)
    ids, scores = ensemble.generate(SOURCE, max_length=6, sampler=beam)
    expected_ids, expected_scores = model.generate(SOURCE, max_length=6, sampler=beam)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-4)


@pytest.mark.parametrize("combine", ["log_probabilities", "probabilities"])
def test_greedy_ensemble_of_two_equals_the_float64_reference(combine):
    """Members of different architecture (biLSTM with global attention; GRU decoder with
    local-m attention and other units), weighted 3:1, with padded sources."""
    models = members()
    ensemble = Ensemble(models, weights=[3, 1], combine=combine)
    assert ensemble.member_weights == (0.75, 0.25)
    ids = ensemble.generate(SOURCE, max_length=7, stop_token_ids=(2,))
    np.testing.assert_array_equal(ids, reference_greedy(models, (0.75, 0.25), 7, combine))
    # Not what either member says alone (else the check above could not fail).
    alone = [m.generate(SOURCE, max_length=7) for m in models]
    assert any(not np.array_equal(ids, a) for a in alone)


def test_beam_scores_are_the_combined_log_probabilities_of_the_hypotheses():
    """Every n-best hypothesis's score (length penalty 0) is the sum of its tokens'
    log-probabilities under the ensemble's combination, renormalised, taken by teacher forcing
    (`Ensemble.call`) in float64."""
    ensemble = Ensemble(members())
    beam = BeamSearchSampler(3, length_penalty=0, return_all_beams=True)
    ids, scores = ensemble.generate(SOURCE, max_length=6, sampler=beam)
    for row in range(len(SOURCE)):
        for hypothesis in range(3):
            tokens = ids[row, hypothesis]
            length = int(np.argmax(tokens == 2)) + 1 if 2 in tokens else len(tokens)
            target_in = np.array([[1, *tokens[: length - 1]]], "int32")
            combined = to_numpy(ensemble((SOURCE[row : row + 1], target_in)))[0]
            combined[:, [0, 1]] = -np.inf  # never generated
            log_probabilities = log_softmax64(combined)
            expected = sum(log_probabilities[t, tokens[t]] for t in range(length))
            np.testing.assert_allclose(scores[row, hypothesis], expected, atol=2e-3)


def test_attention_is_the_members_weighted_mean_and_translate_reads_texts():
    models = members()
    ensemble = Ensemble(models, weights=[1, 3])
    logits, weights = ensemble((SOURCE, TARGET_IN), return_attention_scores=True)
    parts = [to_numpy(m((SOURCE, TARGET_IN), return_attention_scores=True)[1]) for m in models]
    np.testing.assert_allclose(to_numpy(weights), 0.25 * parts[0] + 0.75 * parts[1], atol=1e-6)
    words = Vocabulary(["a", "b", "c", "d", "e"], split="whitespace")
    assert len(words) == V
    models[0].set_vocabularies(words, words)
    texts = ["a b c", "d e"]
    ids = words.encode_batch(texts)
    expected = [words.decode(row) for row in ensemble.generate(ids, max_length=5)]
    assert ensemble.translate(texts, max_length=5) == expected
    # BleuCallback scores an ensemble as a model: against the ensemble's own translations as
    # references, its BLEU is theirs (100 unless they are empty).
    bleu = BleuCallback(texts, expected, max_length=5)
    bleu.set_model(ensemble)
    assert bleu.score().score == corpus_bleu(expected, expected)


def test_bad_members_are_refused():
    model = member(0)
    with pytest.raises(ValueError, match="non-empty list"):
        Ensemble([])
    with pytest.raises(ValueError, match="non-empty list"):
        Ensemble(model)
    other = LuongSeq2Seq(V, V + 3, units=8, embedding_dim=6)
    other((SOURCE, TARGET_IN))
    with pytest.raises(ValueError, match=rf"target_vocabulary_size={V} for member 0 and {V + 3}"):
        Ensemble([model, other])
    with pytest.raises(ValueError, match="member 1 .*is not built"):
        Ensemble([model, LuongSeq2Seq(V, V, units=8)])
    with pytest.raises(ValueError, match="generation contract"):
        Ensemble([model, keras.Sequential([keras.layers.Dense(2)])])
    second = member(1)
    model.set_vocabularies(*[Vocabulary(list("abcde"), split="whitespace")] * 2)
    second.set_vocabularies(*[Vocabulary(list("vwxyz"), split="whitespace")] * 2)
    with pytest.raises(ValueError, match="members 0 and 1 have different source vocabularies"):
        Ensemble([model, second])
    with pytest.raises(ValueError, match=r"weights=\[1, -1\]"):
        Ensemble([model, model], weights=[1, -1])
    with pytest.raises(ValueError, match="combine='mean'"):
        Ensemble([model], combine="mean")


def test_an_ensemble_saves_loads_and_exports_its_decoding(tmp_path):
    """A `.keras` round trip gives the same combination; the exported SavedModel, run by
    TensorFlow alone, decodes with beam search as the ensemble does."""
    ensemble = Ensemble(members(), weights=[2, 1])
    _, restored = save_and_load(ensemble, tmp_path)
    assert restored.member_weights == ensemble.member_weights
    np.testing.assert_allclose(
        to_numpy(restored((SOURCE, TARGET_IN))), to_numpy(ensemble((SOURCE, TARGET_IN))), atol=1e-6
    )
    check_export(ensemble, SOURCE, tmp_path, {"sampler": samplers.serialize(BeamSearchSampler(3))})
