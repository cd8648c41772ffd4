import hashlib

import numpy as np
import pytest

from keras_luong.datasets import cmudict


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
