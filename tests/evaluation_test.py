import pytest

from keras_luong.evaluation import edit_distance, phoneme_error_rate, word_error_rate


@pytest.mark.parametrize(
    "a, b, distance",
    [
        ("", "", 0),
        ("abc", "", 3),
        ("", "ab", 2),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        (["K", "AE", "T"], ["K", "AA", "T", "S"], 2),
    ],
)
def test_edit_distance_by_hand(a, b, distance):
    assert edit_distance(a, b) == distance
    assert edit_distance(b, a) == distance


def test_word_and_phoneme_error_rates_by_hand():
    references = [
        [["T", "AH", "M", "EY", "T", "OW"], ["T", "AH", "M", "AA", "T", "OW"]],
        [["K", "AE", "T"]],
        [["D", "AO", "G"]],
    ]
    hypotheses = [
        ["T", "AH", "M", "AA", "T", "OW"],  # the second reference: right
        ["K", "AE"],  # one deletion
        ["D", "AA", "G", "Z"],  # one substitution, one insertion
    ]
    assert word_error_rate(hypotheses, references) == pytest.approx(2 / 3)
    # (0 + 1 + 2) errors over the closest references' lengths (6 + 3 + 3).
    assert phoneme_error_rate(hypotheses, references) == pytest.approx(3 / 12)


def test_the_closest_reference_sets_the_length():
    references = [[["A", "B", "C", "D"], ["A", "B"]]]
    # "A B C" is 1 edit from both; the first of the closest (length 4) counts.
    assert phoneme_error_rate([["A", "B", "C"]], references) == pytest.approx(1 / 4)
    assert phoneme_error_rate([["A"]], references) == pytest.approx(1 / 2)


@pytest.mark.parametrize("references", [[[]], ["K AE T"]], ids=["empty", "a string"])
def test_each_word_needs_a_list_of_references(references):
    with pytest.raises(ValueError, match="non-empty list of token sequences"):
        word_error_rate([["K", "AE", "T"]], references)


def test_one_reference_list_per_hypothesis():
    with pytest.raises(ValueError, match="2 hypotheses and 1 reference lists"):
        phoneme_error_rate([["A"], ["B"]], [[["A"]]])
