import datetime

import numpy as np
import pytest
from babel.dates import format_date

from keras_luong.datasets import dates

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


def test_alignment_scores_by_hand():
    gold = np.zeros((1, 3, 4), bool)
    gold[0, 0, 0:2] = True  # target 0 reads source 0..1
    gold[0, 1, 3] = True  # target 1 reads source 3; target 2 has no gold field
    weights = np.array([[[0.1, 0.7, 0.1, 0.1], [0.6, 0.1, 0.1, 0.2], [1, 0, 0, 0]]])
    accuracy, aer = dates.alignment_scores(weights, gold)
    assert accuracy == 0.5
    # |A| = 2 links, |G| = 3 gold links, |A ∩ G| = 1.
    assert aer == pytest.approx(1 - 2 * 1 / (2 + 3))
