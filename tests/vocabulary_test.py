import numpy as np
import pytest

from keras_luong import SubwordVocabulary, Vocabulary
from tests.corpora import ENGLISH, GERMAN
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("vocabularies (numpy and SentencePiece, no backend)")


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
    np.testing.assert_array_equal(vocabulary.encode_batch(["abc"], length=2), [[4, 5]])
    with pytest.raises(ValueError, match="length=-1"):
        vocabulary.encode_batch(["a"], length=-1)


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


def test_subwords_round_trip_and_reserved_ids(tmp_path):
    texts = (ENGLISH + GERMAN) * 3
    subwords = SubwordVocabulary.train(texts, vocabulary_size=120)
    assert len(subwords) == 120
    for text in ENGLISH + GERMAN + ["ein mann spielt fußball ."]:
        ids = subwords.encode(text)
        assert min(ids) >= SubwordVocabulary.RESERVED
        assert subwords.decode(ids) == text
        assert "".join(subwords.tokenize(text)).replace("▁", " ").strip() == text
    # Start, end and padding ids as Vocabulary lays them out.
    ids = subwords.encode_batch(["a dog runs .", "a man"], start=True, end=True)
    assert ids[:, 0].tolist() == [1, 1] and ids[0, -1] == 2 and ids[1, -1] == 0
    assert subwords.decode(ids[1]) == "a man"
    # A character never seen is the unknown id 3, written as the oov token.
    assert SubwordVocabulary.OOV in subwords.encode("a ©")
    assert subwords.decode(subwords.encode("a ©")) == "a <unk>"
    subwords.save(tmp_path / "subwords.json")
    loaded = Vocabulary.load(tmp_path / "subwords.json")
    assert loaded == subwords and loaded.encode("ein hund") == subwords.encode("ein hund")


def test_subwords_split_rare_words_into_known_units():
    subwords = SubwordVocabulary.train(GERMAN * 5, vocabulary_size=50, model_type="unigram")
    pieces = subwords.tokenize("ein fahrradhund")
    assert len(pieces) > 2 and SubwordVocabulary.OOV not in subwords.encode("ein fahrradhund")
    assert subwords.decode(subwords.encode("ein fahrradhund")) == "ein fahrradhund"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: SubwordVocabulary.train(ENGLISH, model_type="wordpiece"), "'wordpiece'"),
        (lambda: SubwordVocabulary.train(ENGLISH, vocabulary_size=4), "vocabulary_size=4"),
        (lambda: SubwordVocabulary.train(ENGLISH, vocabulary_size=10**5), "=100000"),
        (lambda: SubwordVocabulary.train(["", " "]), "no non-empty text"),
        (lambda: SubwordVocabulary(12), "Expected a serialized SentencePiece model"),
        (lambda: SubwordVocabulary(b"not a model"), "11 bytes that SentencePiece cannot read"),
        (lambda: SubwordVocabulary("%%%"), "text that is not base64"),
        (lambda: SubwordVocabulary.train(ENGLISH, num_threads=0), "num_threads=0"),
        (lambda: SubwordVocabulary.train(ENGLISH, threads=2), r"arguments .*\['threads'\]"),
    ],
)
def test_subwords_refuse_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_subwords_train_on_two_threads_like_one():
    one = SubwordVocabulary.train(ENGLISH + GERMAN, vocabulary_size=60)
    two = SubwordVocabulary.train(ENGLISH + GERMAN, vocabulary_size=60, num_threads=2)
    assert two.symbols == one.symbols


def test_subword_round_trip_keeps_the_text_up_to_spaces():
    """As the docstring says: leading and trailing spaces go, runs of spaces become one; the
    rest of the text comes back exactly."""
    subwords = SubwordVocabulary.train(ENGLISH + GERMAN, vocabulary_size=60)
    for text in ENGLISH + GERMAN:
        assert subwords.decode(subwords.encode(text)) == text
        padded = "  " + text.replace(" ", "   ") + " "
        assert subwords.decode(subwords.encode(padded)) == text


def test_subwords_train_on_sentences_longer_than_sentencepieces_limit():
    """A sentence over SentencePiece's 4192 bytes is trained on, not dropped: its rare
    characters get units of their own."""
    long_line = " ".join(["qüx"] * 1500)  # 6000 UTF-8 bytes
    assert len(long_line.encode("utf-8")) > 4192
    subwords = SubwordVocabulary.train(ENGLISH + [long_line], vocabulary_size=60)
    assert subwords.processor.unk_id() not in subwords.encode("qüx")
    assert "ü" in "".join(subwords.symbols)


def test_vocabulary_files_that_are_not_vocabularies_name_the_file(tmp_path):
    subwords = SubwordVocabulary.train(ENGLISH, vocabulary_size=40)
    path = tmp_path / "subwords.json"
    subwords.save(path)
    assert SubwordVocabulary.load(path) == subwords
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match="Cannot read a vocabulary from .*subwords.json"):
        SubwordVocabulary.load(path)
    damaged = text.replace(subwords.get_config()["model"], subwords.get_config()["model"][:80])
    path.write_text(damaged, encoding="utf-8")
    with pytest.raises(ValueError, match="subwords.json .*SentencePiece cannot read"):
        SubwordVocabulary.load(str(path))
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="expected a JSON object, found list"):
        Vocabulary.load(path)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        Vocabulary.load(tmp_path / "missing.json")
    with pytest.raises(TypeError, match="Expected a path"):
        Vocabulary.load(3)


def test_word_vocabulary_size_limits():
    texts = ["a b a c a b", "d"]
    vocabulary = Vocabulary.from_corpus(texts, split="whitespace", max_size=2)
    assert vocabulary.symbols == ["a", "b"]  # the two most frequent: a (3), b (2)
    assert Vocabulary.from_corpus(texts, split="whitespace", min_count=2).symbols == ["a", "b"]
    assert vocabulary.encode("a c d") == [4, 3, 3]


def test_decode_writes_given_strings_for_the_unknown_ids_in_order():
    words = Vocabulary(["a", "house"], split="whitespace")
    ids = [4, 3, 5, 3, 2, 3]  # a <unk> house <unk>, end: the last is after the end
    assert words.decode(ids) == "a <unk> house <unk>"
    assert words.decode(ids, unknowns=["big", "Haus"]) == "a big house Haus"
    assert words._symbol(3) == "<unk>" and words._symbol(5) == "house"
    with pytest.raises(ValueError, match="one string for each of the 2 unknown ids"):
        words.decode(ids, unknowns=["big"])
    letters = Vocabulary("ab")
    assert letters.decode([4, 3, 5], unknowns=["ü"]) == "aüb"


def test_subwords_write_given_strings_for_the_unknown_ids_as_pieces():
    subwords = SubwordVocabulary.train(GERMAN * 5, vocabulary_size=50, model_type="unigram")
    ids = subwords.encode("ein hund")
    pieces = [subwords._symbol(i) for i in ids]
    assert pieces == subwords.tokenize("ein hund") and pieces[0].startswith("\u2581")
    # An unknown id between the pieces, written as a source piece: a word of its own when
    # the piece starts one, joined to the word before when it does not.
    spliced = [*ids[:1], SubwordVocabulary.OOV, *ids[1:]]
    assert subwords.decode(spliced, unknowns=["\u2581Katze"]) == "ein Katze hund"
    assert subwords.decode(spliced, unknowns=["s"]) == "eins hund"
    assert subwords.decode(ids, unknowns=[]) == "ein hund"
