import numpy as np
import pytest

from keras_luong.vocabulary import Vocabulary


def test_characters_round_trip_with_reserved_ids():
    vocabulary = Vocabulary.from_corpus(["cab", "abc"])
    assert vocabulary.symbols == ["a", "b", "c"] and len(vocabulary) == 7
    assert vocabulary.encode("cab") == [6, 4, 5]
    assert vocabulary.encode("cab", length=5, start=True, end=True) == [1, 6, 4, 5, 2]
    assert vocabulary.encode("cab", length=2) == [6, 4]
    assert vocabulary.decode([6, 4, 5, 2, 6]) == "cab"  # stops at the end id
    assert vocabulary.decode([1, 6, 0, 4]) == "ca"  # start and padding are skipped


def test_unseen_symbols_map_to_the_oov_id():
    phonemes = Vocabulary.from_corpus(["K AE T", "D AO G"], split="whitespace")
    assert phonemes.symbols == ["AE", "AO", "D", "G", "K", "T"]
    ids = phonemes.encode_batch(["K AE T", "G OW T"], length=5, end=True)
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, [[8, 4, 9, 2, 0], [7, 3, 9, 2, 0]])
    assert phonemes.decode(ids[1]) == "G <unk> T"
    assert Vocabulary.from_corpus(["ab"]).encode("axb") == [4, 3, 5]


def test_encode_batch_pads_to_the_longest():
    vocabulary = Vocabulary("abc")
    np.testing.assert_array_equal(
        vocabulary.encode_batch(["a", "abc", ""]), [[4, 0, 0], [4, 5, 6], [0, 0, 0]]
    )


def test_saved_beside_a_model_as_json(tmp_path):
    vocabulary = Vocabulary.from_corpus(["Ünïcode text"], oov_token="?")
    vocabulary.save(tmp_path / "vocabulary.json")
    loaded = Vocabulary.load(tmp_path / "vocabulary.json")
    assert loaded.get_config() == vocabulary.get_config()
    assert loaded.encode("text ü") == vocabulary.encode("text ü")
    assert loaded.decode(loaded.encode("Üz")) == "Ü?"


def test_invalid_split():
    with pytest.raises(ValueError, match="split='words'"):
        Vocabulary("abc", split="words")


def test_decode_refuses_an_id_it_does_not_have():
    vocabulary = Vocabulary.from_corpus(["ab"])  # ids 0-5
    assert vocabulary.decode([4, 5, 2, 9]) == "ab"  # nothing is read after the end id
    with pytest.raises(ValueError, match="ids 0 to 5. Received: id 6"):
        vocabulary.decode([4, 6])
