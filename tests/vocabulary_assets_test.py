"""Vocabularies saved inside a model's `.keras` file (keras_luong.data.vocabulary_assets) and read
back with it."""

import keras
import pytest

from keras_luong import LuongSeq2Seq, SubwordVocabulary, Vocabulary
from tests.corpora import ENGLISH, GERMAN


def test_vocabularies_saved_inside_the_model(tmp_path):
    subwords = SubwordVocabulary.train(ENGLISH + GERMAN, vocabulary_size=100)
    words = Vocabulary.from_corpus(GERMAN, split="whitespace")
    model = LuongSeq2Seq(len(subwords), len(words), units=8, embedding_dim=4)
    with pytest.raises(ValueError, match="source_vocabulary=None"):
        model.translate(ENGLISH[:2], max_length=5)
    with pytest.raises(ValueError, match="target vocabulary does not match"):
        model.set_vocabularies(subwords, subwords)
    model.set_vocabularies(subwords, words)
    before = model.translate(ENGLISH[:3], max_length=6)
    assert before == [
        words.decode(ids) for ids in model.generate(subwords.encode_batch(ENGLISH[:3]), 6)
    ]
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.source_vocabulary == subwords and loaded.target_vocabulary == words
    assert loaded.translate(ENGLISH[:3], max_length=6) == before
    # max_length left out: 1.5 × the longest source's tokens + 10.
    default = int(1.5 * len(subwords.encode(ENGLISH[0]))) + 10
    expected = loaded.generate(subwords.encode_batch(ENGLISH[:1]), default)
    assert loaded.translate(ENGLISH[:1]) == [words.decode(expected[0])]
    # A model saved without vocabularies loads without them.
    plain = LuongSeq2Seq(len(subwords), len(words), units=8, embedding_dim=4)
    plain.generate(subwords.encode_batch(ENGLISH[:1]), 2)
    plain.save(tmp_path / "plain.keras")
    reloaded = keras.saving.load_model(tmp_path / "plain.keras")
    assert getattr(reloaded, "source_vocabulary", None) is None
