import datetime

import numpy as np
import pytest
from babel.dates import format_date

from keras_luong.datasets import dates
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the dates data set (no backend)")

DAY = datetime.date(2023, 3, 7)


@pytest.mark.parametrize(
    "locale, format, year, month, day",
    [
        ("en_US", "full", "2023", "March", "7"),
        ("en_US", "short", "23", "3", "7"),
        ("de", "long", "2023", "März", "7"),
        ("ru", "long", "2023", "марта", "7"),
        ("ja", "long", "2023", "3", "7"),
        ("sv", "short", "2023", "03", "07"),
    ],
)
def test_render_matches_babel_and_finds_the_fields(locale, format, year, month, day):
    text, spans = dates.render(DAY, locale, format)
    assert text == format_date(DAY, format, locale=locale)
    assert [text[slice(*spans[f])] for f in ("year", "month", "day")] == [year, month, day]


def test_every_locale_and_format_renders_with_all_three_fields():
    for locale in dates.LOCALES:
        for format in dates.FORMATS:
            _, spans = dates.render(datetime.date(1999, 12, 31), locale, format)
            assert set(spans) == {"year", "month", "day"}, (locale, format)


def test_load_data_is_deterministic_and_consistent():
    data = dates.load_data(300, seed=3)
    again = dates.load_data(300, seed=3)
    other = dates.load_data(300, seed=4)
    np.testing.assert_array_equal(data["train"]["source"], again["train"]["source"])
    assert not np.array_equal(data["train"]["target_out"], other["train"]["target_out"])
    assert [len(data[s]["source"]) for s in ("train", "validation", "test")] == [240, 30, 30]
    vocabulary = data["source_vocabulary"]
    for split in ("train", "test"):
        part = data[split]
        for i, example in enumerate(part["examples"]):
            assert vocabulary.decode(part["source"][i]) == example["source"]
            assert dates.TARGET_VOCABULARY.decode(part["target_out"][i]) == example["target"]
            assert part["target_in"][i, 0] == dates.START
            np.testing.assert_array_equal(part["target_in"][i, 1:], part["target_out"][i, :-1])
            assert datetime.date.fromisoformat(example["target"]).year in range(1950, 2050)
            # The gold alignment of the month digits covers exactly the month field.
            start, end = example["spans"]["month"]
            np.testing.assert_array_equal(np.flatnonzero(part["gold"][i, 5]), np.arange(start, end))
            assert not part["gold"][i, 4].any() and not part["gold"][i, 10].any()


def test_sure_links_copy_digits_right_aligned():
    text, spans = dates.render(datetime.date(2024, 1, 5), "en_US", "short")
    assert text == "1/5/24"
    sure = dates.sure_alignment(text, "2024-01-05", spans, len(text))
    # "24" -> the "24" of 2024; "1" -> the "1" of "01"; "5" -> the "5" of "05".
    assert sorted(zip(*np.nonzero(sure), strict=True)) == [(2, 4), (3, 5), (6, 0), (9, 2)]
    text, spans = dates.render(datetime.date(2024, 1, 5), "en_US", "long")
    assert text == "January 5, 2024"
    sure = dates.sure_alignment(text, "2024-01-05", spans, len(text))
    # The month is a word: its digits have possible links only.
    assert sorted(zip(*np.nonzero(sure), strict=True)) == [
        (0, 11),
        (1, 12),
        (2, 13),
        (3, 14),
        (9, 8),
    ]


def test_alignment_scores_by_hand():
    gold = np.zeros((1, 3, 4), bool)
    gold[0, 0, 0:2] = True  # target 0 reads source 0..1
    gold[0, 1, 3] = True  # target 1 reads source 3; target 2 has no gold field
    sure = np.zeros_like(gold)
    sure[0, 0, 1] = True  # target 0 copies source 1
    weights = np.array([[[0.1, 0.7, 0.1, 0.1], [0.6, 0.1, 0.1, 0.2], [1, 0, 0, 0]]])
    accuracy, aer = dates.alignment_scores(weights, gold, sure)
    assert accuracy == 0.5
    # A = {(0, 1), (1, 0)}: |A ∩ S| = 1, |A ∩ P| = 1, |A| = 2, |S| = 1.
    assert aer == pytest.approx(1 - (1 + 1) / (2 + 1))
    # Target 0 inside its field but off the copied digit: |A ∩ S| = 0.
    weights[0, 0] = [0.7, 0.1, 0.1, 0.1]
    assert dates.alignment_scores(weights, gold, sure)[1] == pytest.approx(1 - 1 / 3)


def test_perfect_attention_scores_zero_and_uniform_attention_scores_high():
    data = dates.load_data(200, seed=5)["test"]
    gold, sure = data["gold"], data["sure"]
    assert sure.any() and not np.any(sure & ~gold)
    # Perfect: all the weight on the sure link where there is one, else spread over the field.
    perfect = np.where(sure.any(-1, keepdims=True), sure, gold).astype("float32")
    perfect[~gold.any(-1)] = 1.0  # '-' and the end token: anything
    assert dates.alignment_scores(perfect, gold, sure) == (1.0, 0.0)
    source_mask = data["source"] != 0
    uniform = np.broadcast_to(source_mask[:, None, :], gold.shape).astype("float32")
    accuracy, aer = dates.alignment_scores(uniform, gold, sure)
    assert aer > 0.7 and accuracy < 0.4


def test_sure_links_must_be_possible():
    gold = np.zeros((1, 2, 3), bool)
    sure = gold.copy()
    sure[0, 0, 0] = True
    with pytest.raises(ValueError, match="sure"):
        dates.alignment_scores(np.ones((1, 2, 3)), gold, sure)
