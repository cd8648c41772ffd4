"""`translate(..., return_alignments=True, replace_unk=True, phrase_table=...)`: each
translation's alignment is the attention of the steps that generated it (against a hand loop
of `next_token_logits` forced through its ids), its links the argmax of those weights, and
replace-unk writes the source word of that argmax (or its phrase-table entry)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import (
    Alignment,
    BeamSearchSampler,
    GreedySampler,
    LuongSeq2Seq,
    RandomSampler,
    Vocabulary,
)
from keras_luong.generation.word_alignments import generated_alignments
from tests.corpora import ENGLISH, GERMAN

# Source words the source vocabulary does not hold ("blaue", "katze") are still copied as
# written: replace-unk reads the source text's tokens, not its ids.
TEXTS = ["ein hund rennt auf dem gras .", "eine blaue katze singt", "zwei männer", ""]


@pytest.fixture(scope="module")
def model():
    """A small word-level model whose weights come from numpy (the same on every backend),
    with the unknown target id likely enough to appear between known words."""
    source = Vocabulary.from_corpus(GERMAN, split="whitespace")
    target = Vocabulary.from_corpus(ENGLISH, split="whitespace", max_size=12)
    model = LuongSeq2Seq(len(source), len(target), units=8, embedding_dim=8)
    model.set_vocabularies(source, target)
    model((source.encode_batch(TEXTS[:1]), target.encode_batch(ENGLISH[:1])))
    rng = np.random.default_rng(3)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.8, variable.shape).astype("float32"))
    bias = np.zeros(len(target), "float32")
    bias[Vocabulary.END], bias[Vocabulary.OOV] = -1.5, 1.5
    model.projection.bias.assign(bias)
    return model


def forced_attention(model, text, target_ids):
    """The attention weights `(T, S)` of each step of decoding `text` with `target_ids` fed
    back one by one (the start token first): a hand loop over `next_token_logits`."""
    source = model.source_vocabulary.encode_batch([text])
    memory, states, _ = model.start_decoding(ops.convert_to_tensor(source))
    token, weights = model.start_token, []
    for step, next_id in enumerate(target_ids):
        _, _, states, attention = model.next_token_logits(
            ops.convert_to_tensor(np.array([token], "int32")), states, memory, step,
            return_attention_scores=True,
        )  # fmt: skip
        weights.append(ops.convert_to_numpy(attention)[0])
        token = next_id
    return np.array(weights, "float32").reshape(len(target_ids), source.shape[1])


def check_alignment(model, text, translation, found):
    ids = model.target_vocabulary.encode(translation)
    words = text.split()
    assert isinstance(found, Alignment)
    assert found.source_tokens == words
    assert found.target_tokens == translation.split()
    expected = forced_attention(model, text, ids)[:, : len(words)]
    np.testing.assert_allclose(found.weights, expected, atol=2e-6)
    if words:  # global attention: each step's weights sum to 1 over the source's words
        np.testing.assert_allclose(found.weights.sum(axis=1), 1.0, atol=1e-5)
    links = [(int(np.argmax(row)), t) for t, row in enumerate(expected)] if words else []
    assert found.links == links
    assert found.pharaoh() == " ".join(f"{i}-{j}" for i, j in links)


def test_alignments_are_the_attention_of_the_greedy_steps(model):
    translations, alignments = model.translate(TEXTS, return_alignments=True)
    assert translations == model.translate(TEXTS)  # the same text as without alignments
    for text, translation, found in zip(TEXTS, translations, alignments, strict=True):
        check_alignment(model, text, translation, found)
    assert sum(len(a.links) for a in alignments) > 10


def test_every_beam_has_the_alignment_of_its_own_tokens(model):
    sampler = BeamSearchSampler(3, return_all_beams=True)
    n_best, alignments = model.translate(TEXTS[:3], sampler=sampler, return_alignments=True)
    assert n_best == model.translate(TEXTS[:3], sampler=sampler)
    for text, best, aligned in zip(TEXTS, n_best, alignments, strict=False):
        assert len(aligned) == 3 and len({t for t, _ in best}) == 3  # three distinct beams
        for (translation, _), found in zip(best, aligned, strict=True):
            check_alignment(model, text, translation, found)


def test_replace_unk_copies_the_source_word_of_the_attentions_argmax(model, tmp_path):
    plain, alignments = model.translate(TEXTS, return_alignments=True)
    table = {"hund": "dog", "blaue": "blue", "männer": "men"}
    expected, copied, looked_up = [], 0, 0
    for text, translation in zip(TEXTS, plain, strict=True):
        weights = forced_attention(model, text, model.target_vocabulary.encode(translation))
        words = []
        for word, row in zip(translation.split(), weights, strict=True):
            if word == "<unk>" and text:
                source_word = text.split()[int(np.argmax(row[: len(text.split())]))]
                word = table.get(source_word, source_word)
                looked_up += source_word in table
                copied += source_word not in table
            words.append(word)
        expected.append(" ".join(words))
    replaced = model.translate(TEXTS, replace_unk=True, phrase_table=table)
    assert replaced == expected
    assert copied and looked_up  # both kinds of replacement happened
    assert replaced[3] == plain[3]  # an empty source: nothing to copy
    # The table from a file (OpenNMT-py's `source|||target` lines), the first entry counting.
    path = tmp_path / "table.txt"
    lines = [f"{k}|||{v}" for k, v in table.items()] + ["hund|||hound", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    assert model.translate(TEXTS, replace_unk=True, phrase_table=str(path)) == expected
    # Without a table, the source word itself; the alignments are those of the ids.
    copies, copied_alignments = model.translate(TEXTS, replace_unk=True, return_alignments=True)
    assert copies == model.translate(TEXTS, replace_unk=True, phrase_table={})
    assert [a.links for a in copied_alignments] == [a.links for a in alignments]


class ForcedGreedySampler(GreedySampler):
    """Greedy decoding whose alignments come from the teacher-forced pass, as those of a
    sampler that does not return its cache (keras-hub's) do."""

    returns_cache = False


@pytest.mark.parametrize(
    "sampler",
    [
        GreedySampler(),
        RandomSampler(temperature=2.0, seed=4),
        BeamSearchSampler(3, return_all_beams=True, coverage_penalty=0.3),
    ],
    ids=["greedy", "sampling", "all beams"],
)
def test_the_weights_recorded_in_the_loop_are_the_teacher_forced_ones(model, sampler, monkeypatch):
    source = model.source_vocabulary.encode_batch(TEXTS[:3])
    # Rows end at the frequent unknown id too, at different steps.
    settings = dict(sampler=sampler, stop_token_ids=(Vocabulary.END, Vocabulary.OOV))
    plain = model.generate(source, 9, **settings)

    def not_called(*args):
        raise AssertionError("the outputs were decoded again with teacher forcing")

    monkeypatch.setattr("keras_luong.generation.translation.generated_alignments", not_called)
    outputs, weights = model.generate(source, 9, return_attention_scores=True, **settings)
    keras.tree.map_structure(np.testing.assert_array_equal, outputs, plain)
    ids = outputs[0] if isinstance(outputs, tuple) else outputs
    np.testing.assert_allclose(weights, generated_alignments(model, source, ids, 9), atol=2e-6)
    assert np.any(ids == 0) and np.all(weights[ids == 0] == 0)  # none after a stop token
    assert np.any(weights[ids != 0] > 0.1)


def test_a_sampler_that_does_not_return_its_cache_is_aligned_by_teacher_forcing(model):
    forced = ForcedGreedySampler()
    translations, alignments = model.translate(TEXTS, sampler=forced, return_alignments=True)
    assert translations == model.translate(TEXTS)
    for text, translation, found in zip(TEXTS, translations, alignments, strict=True):
        check_alignment(model, text, translation, found)
    source = model.source_vocabulary.encode_batch(TEXTS)
    ids, weights = model.generate(source, 9, sampler=forced, return_attention_scores=True)
    recorded = model.generate(source, 9, return_attention_scores=True)
    np.testing.assert_array_equal(ids, recorded[0])
    np.testing.assert_allclose(weights, recorded[1], atol=2e-6)


def test_bad_phrase_tables_are_refused(model, tmp_path):
    with pytest.raises(ValueError, match="read with replace_unk=True"):
        model.translate(TEXTS, phrase_table={"hund": "dog"})
    with pytest.raises(ValueError, match="phrase_table: no such file"):
        model.translate(TEXTS, replace_unk=True, phrase_table=str(tmp_path / "none.txt"))
    path = tmp_path / "bad.txt"
    path.write_text("hund|||dog\nkatze cat\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 of .* is not 'source|||target'"):
        model.translate(TEXTS, replace_unk=True, phrase_table=str(path))
    with pytest.raises(ValueError, match="Expected a dict of source tokens"):
        model.translate(TEXTS, replace_unk=True, phrase_table={"hund": 3})
