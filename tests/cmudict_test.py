import functools
import hashlib

import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.datasets import cmudict
from keras_luong.evaluation import phoneme_error_rate, word_error_rate
from tests.test_case import fit_lowers_loss


@pytest.fixture(scope="module")
def data():
    return cmudict.load_data(validation_size=500, seed=0, max_train_words=3000)


def test_the_vendored_split_has_the_published_counts():
    train, test = cmudict.read_split("train"), cmudict.read_split("test")
    assert (len(train), len(test)) == (113438, 12753)
    assert len({w for w, _ in train}) == 106837 and len({w for w, _ in test}) == 12000
    assert not {w for w, _ in train} & {w for w, _ in test}
    phonemes = {p for _, pron in train for p in pron.split()}
    assert len(phonemes) == 39 and all(not p[-1].isdigit() for p in phonemes)
    assert ("AACHEN", "AA K AH N") in train[:3]


def test_a_damaged_file_is_refused(monkeypatch):
    monkeypatch.setitem(cmudict.SHA1, "test", hashlib.sha1(b"other").hexdigest())
    with pytest.raises(ValueError, match="damaged"):
        cmudict.read_split("test")


def test_references_are_grouped(data):
    test = data["test"]
    assert len(test["words"]) == len(test["references"]) == len(test["source"]) == 12000
    assert sum(len(refs) - 1 for refs in test["references"]) == 12753 - 12000
    several = [i for i, refs in enumerate(test["references"]) if len(refs) > 1]
    entries = cmudict.read_split("test")
    i = several[0]
    word = test["words"][i]
    assert test["references"][i] == [p for w, p in entries if w == word]


def test_validation_is_held_out_deterministically(data):
    again = cmudict.load_data(validation_size=500, seed=0, max_train_words=3000)
    other = cmudict.load_data(validation_size=500, seed=1, max_train_words=3000)
    assert data["validation"]["words"] == again["validation"]["words"]
    assert data["validation"]["words"] != other["validation"]["words"]
    assert len(data["validation"]["words"]) == 500
    assert not set(data["validation"]["words"]) & set(data["train"]["words"])
    assert len(set(data["train"]["words"])) == 3000


def test_arrays_decode_to_the_entries(data):
    train, letters, phonemes = data["train"], data["letter_vocabulary"], data["phoneme_vocabulary"]
    assert (len(letters), len(phonemes)) == (27 + 4, 39 + 4)
    assert train["source"].shape[1] == 22 and train["target_in"].shape[1] == 21
    for i in (0, 7, len(train["words"]) - 1):
        assert letters.decode(train["source"][i]) == train["words"][i]
        assert phonemes.decode(train["target_out"][i]) == train["pronunciations"][i]
        assert train["target_in"][i, 0] == phonemes.START
        # Teacher forcing: the input is the output one step late, without the end token.
        shifted = train["target_out"][i, :-1]
        np.testing.assert_array_equal(
            train["target_in"][i, 1:], np.where(shifted == phonemes.END, 0, shifted)
        )
    test = data["test"]
    assert letters.decode(test["source"][5]) == test["words"][5]


def levenshtein(a, b):
    """The recursive definition, memoised: an oracle for the row-by-row implementation."""

    @functools.cache
    def d(i, j):
        if min(i, j) == 0:
            return max(i, j)
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


def test_a_tiny_model_trains_and_its_output_scores_as_counted_by_hand(data):
    letters, phonemes = data["letter_vocabulary"], data["phoneme_vocabulary"]
    train, validation = data["train"], data["validation"]
    model = LuongSeq2Seq(
        len(letters), len(phonemes), units=16, embedding_dim=8,
        start_token=phonemes.START, end_token=phonemes.END,
    )  # fmt: skip
    batch = (train["source"][:64], train["target_in"][:64])
    before, after = fit_lowers_loss(model, batch, train["target_out"][:64], learning_rate=1.0)
    assert np.isfinite(after) and after < before
    generated = model.generate(validation["source"][:24], data["target_length"])
    hypotheses = [phonemes.decode(ids).split() for ids in generated]
    references = [[r.split() for r in refs] for refs in validation["references"][:24]]
    wrong = sum(h not in refs for h, refs in zip(hypotheses, references, strict=True))
    assert word_error_rate(hypotheses, references) == pytest.approx(wrong / 24)
    errors = length = 0
    for h, refs in zip(hypotheses, references, strict=True):
        distances = [levenshtein(tuple(h), tuple(r)) for r in refs]
        errors += min(distances)
        length += len(refs[int(np.argmin(distances))])
    assert phoneme_error_rate(hypotheses, references) == pytest.approx(errors / length)
