import collections
import math

import pytest

from keras_luong.evaluation import (
    bleu_signature,
    corpus_bleu,
    corpus_chrf,
    edit_distance,
    phoneme_error_rate,
    word_error_rate,
)
from tests.corpora import ENGLISH, GERMAN
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("BLEU, chrF and error rates (no backend)")


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


def reference_bleu(hypotheses, references, order=4):
    """BLEU by its definition: clipped n-gram precisions over the corpus, their geometric
    mean, times the brevity penalty exp(1 - r / c) when c < r."""
    matches, totals = [0] * order, [0] * order
    hypothesis_length = reference_length = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        h, r = hypothesis.split(), reference.split()
        hypothesis_length += len(h)
        reference_length += len(r)
        for n in range(1, order + 1):
            h_grams = collections.Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            r_grams = collections.Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, r_grams[g]) for g, c in h_grams.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    precision = math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)
    penalty = min(1.0, math.exp(1 - reference_length / hypothesis_length))
    return 100 * penalty * precision


def test_bleu_against_hand_counted_ngrams():
    # One sentence: 5/6 unigrams, 3/5 bigrams, 2/4 trigrams, 1/3 4-grams, equal lengths.
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"]) == pytest.approx(
        expected
    )
    assert expected == pytest.approx(53.7284965911771)
    # A corpus: counts are summed over sentences before the precisions, and the hypotheses
    # (9 + 4 tokens) are shorter than the references (9 + 6): brevity penalty exp(1 - 15/13).
    hypotheses = ["a man rides a bike down the street .", "two dogs play ."]
    references = ["a man rides a bicycle down the street .", "two dogs play in snow ."]
    # (matches, totals) by hand: "bike" misses 1 unigram, 2 bigrams, 3 trigrams and 4 4-grams
    # of the first sentence; the second matches 4/4, 2/3, 1/2 and 0/1.
    counts = {1: (8 + 4, 13), 2: (6 + 2, 11), 3: (4 + 1, 9), 4: (2 + 0, 7)}
    by_hand = 100 * math.exp(1 - 15 / 13) * math.prod(m / t for m, t in counts.values()) ** 0.25
    assert by_hand == pytest.approx(48.98737, abs=1e-5)
    assert corpus_bleu(hypotheses, references) == pytest.approx(by_hand)
    assert reference_bleu(hypotheses, references) == pytest.approx(by_hand)


def test_bleu_properties_and_tokenization():
    assert corpus_bleu(ENGLISH, ENGLISH) == pytest.approx(100)
    assert corpus_bleu(["x y z w"], ["a b c d"]) == 0
    # With several references a sentence's n-grams are clipped to the most in any one of them.
    assert corpus_bleu(["the cat sat on the mat"], [["the cat sat on a mat", "on the mat"]]) > (
        corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    )
    # 13a (the default, for raw text) splits punctuation off; tok:none splits on spaces only.
    assert corpus_bleu(["a dog runs."], ["a dog runs ."]) == pytest.approx(100)
    assert corpus_bleu(["a dog runs."], ["a dog runs ."], tokenize="none") < 100
    assert corpus_bleu(["A Dog runs ."], ["a dog runs ."], lowercase=True) == pytest.approx(100)
    # The signature's defaults are corpus_bleu's: quoting it beside a default score is right.
    assert "tok:13a|" in bleu_signature() and "case:mixed" in bleu_signature()
    assert "tok:none|" in bleu_signature("none") and "case:lc" in bleu_signature(lowercase=True)
    with pytest.raises(ValueError, match="tokenize='moses'"):
        corpus_bleu(["a"], ["a"], tokenize="moses")
    with pytest.raises(ValueError, match="2 hypotheses and 1 references"):
        corpus_bleu(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="references\\[1\\]=7 of type int"):
        corpus_bleu(["a", "b"], ["a", 7])


def test_chrf_properties():
    assert corpus_chrf(GERMAN, GERMAN) == pytest.approx(100)
    assert corpus_chrf(["xyz"], ["abc"]) == 0
    near, far = (
        corpus_chrf(["ein hund rennt"], ["ein hund rennt ."]),
        corpus_chrf(["ein mann"], ["ein hund rennt ."]),
    )
    assert 0 < far < near < 100


def test_bleu_details_carry_the_brevity_penalty_and_the_length_ratio():
    """Hand-counted: 9 output words against 12 reference words."""
    hypotheses = ["a b c d", "e f g h i"]
    references = ["a b c d x y", "e f g h i z"]
    details = corpus_bleu(hypotheses, references, return_details=True)
    assert details.hypothesis_length == 9 and details.reference_length == 12
    assert details.length_ratio == pytest.approx(9 / 12)
    assert details.brevity_penalty == pytest.approx(math.exp(1 - 12 / 9))
    assert details.score == pytest.approx(corpus_bleu(hypotheses, references))
    assert details.precisions == pytest.approx([100.0] * 4)  # every n-gram of the output matches
    assert details.score == pytest.approx(100 * math.exp(1 - 12 / 9), rel=1e-4)
    longer = corpus_bleu(["a b c d x y q q"], ["a b c d x y"], return_details=True)
    assert longer.brevity_penalty == 1.0 and longer.length_ratio == pytest.approx(8 / 6)
