"""Dates written the way CLDR's locales write them, to translate into ISO `YYYY-MM-DD`.

Each source is a date formatted by Babel (`babel.dates`, the Unicode CLDR data) in one of
several locales and one of the `full`, `long`, `medium` and `short` formats, so the task has
real field orders (day-month-year, month-day-year, year-month-day), month names in several
scripts, and two-digit years. Each target character comes with its gold alignment: the source
span of the year, month or day field it is read from, so attention can be scored.

    from keras_luong.datasets import dates
    data = dates.load_data(num_examples=20000, seed=0)
    source, target_in, target_out = data["train"]["source"], ...

Everything is deterministic given the seed, and needs no network.
"""

import datetime

import numpy as np

LOCALES = (
    "en_US", "en_GB", "fr", "de", "es", "it", "pt", "nl",
    "sv", "pl", "ru", "tr", "ja", "zh", "ko",
)  # fmt: skip
FORMATS = ("full", "long", "medium", "short")
# Two-digit years are only unambiguous inside one century window.
FIRST_YEAR, LAST_YEAR = 1950, 2049
PAD, START, END = 0, 1, 2
TARGET_CHARS = "0123456789-"
TARGET_LENGTH = len("YYYY-MM-DD") + 1  # and the end token
# Which source field each character of "YYYY-MM-DD" is read from.
TARGET_FIELDS = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2 + (None,)
_FIELD_OF_PATTERN = {"y": "year", "M": "month", "L": "month", "d": "day"}


def render(date, locale, format):
    """Formats `date` like `babel.dates.format_date(date, format, locale=locale)`, and returns
    `(text, spans)` with `spans[field] = (start, end)` for the year, month and day fields."""
    from babel import Locale
    from babel.dates import DateTimeFormat, format_date, get_date_format, tokenize_pattern

    fields = DateTimeFormat(date, Locale.parse(locale))
    text, spans = "", {}
    for kind, value in tokenize_pattern(get_date_format(format, locale=locale).pattern):
        if kind == "chars":
            piece = value
        else:
            char, count = value
            piece = fields[char * count]
            if char in _FIELD_OF_PATTERN:
                spans[_FIELD_OF_PATTERN[char]] = (len(text), len(text) + len(piece))
        text += piece
    if text != format_date(date, format, locale=locale):
        raise AssertionError(f"field-by-field rendering differs for {locale} {format}: {text!r}")
    return text, spans


class Vocabulary:
    """Characters to ids: 0 padding, 1 start, 2 end, then the characters in sorted order."""

    def __init__(self, characters):
        self.characters = sorted(set(characters))
        self.index = {c: i + 3 for i, c in enumerate(self.characters)}

    def __len__(self):
        return len(self.characters) + 3

    def encode(self, text, length):
        ids = [self.index[c] for c in text][:length]
        return ids + [PAD] * (length - len(ids))

    def decode(self, ids):
        text = []
        for i in ids:
            i = int(i)
            if i == END:
                break
            if i >= 3:
                text.append(self.characters[i - 3])
        return "".join(text)


TARGET_VOCABULARY = Vocabulary(TARGET_CHARS)


def generate(num_examples, seed=0, locales=LOCALES, formats=FORMATS):
    """`num_examples` random (date, locale, format) triples rendered: a list of dicts with
    `source` text, `target` ISO text and the field `spans`."""
    rng = np.random.default_rng(seed)
    first = datetime.date(FIRST_YEAR, 1, 1).toordinal()
    last = datetime.date(LAST_YEAR, 12, 31).toordinal()
    examples = []
    for ordinal, locale, format in zip(
        rng.integers(first, last + 1, num_examples),
        rng.choice(len(locales), num_examples),
        rng.choice(len(formats), num_examples),
        strict=True,
    ):
        date = datetime.date.fromordinal(int(ordinal))
        text, spans = render(date, locales[locale], formats[format])
        examples.append(
            {
                "source": text,
                "target": date.isoformat(),
                "spans": spans,
                "locale": locales[locale],
                "format": formats[format],
            }
        )
    return examples


def gold_alignment(spans, source_length):
    """`(TARGET_LENGTH, source_length)` boolean matrix: target character j is aligned with the
    source positions of the field it is read from (none for '-' and the end token)."""
    gold = np.zeros((TARGET_LENGTH, source_length), bool)
    for j, field in enumerate(TARGET_FIELDS):
        if field in spans:
            start, end = spans[field]
            gold[j, start : min(end, source_length)] = True
    return gold


def encode(examples, source_vocabulary, source_length):
    """Arrays for `model.fit`: `source` `(N, source_length)`, `target_in` (start + ISO) and
    `target_out` (ISO + end), `(N, TARGET_LENGTH)`, and `gold` alignments `(N, T, S)`."""
    source = np.array(
        [source_vocabulary.encode(e["source"], source_length) for e in examples], "int32"
    )
    target = [TARGET_VOCABULARY.encode(e["target"], TARGET_LENGTH - 1) for e in examples]
    target_in = np.array([[START, *t] for t in target], "int32")
    target_out = np.array([[*t, END] for t in target], "int32")
    gold = np.stack([gold_alignment(e["spans"], source_length) for e in examples])
    return {
        "source": source,
        "target_in": target_in,
        "target_out": target_out,
        "gold": gold,
    }


def load_data(num_examples=20000, seed=0, locales=LOCALES, formats=FORMATS, split=(0.8, 0.1)):
    """The dates task, split into `train`, `validation` and `test` dicts of arrays (see
    `encode`), with the `source_vocabulary`, the `target_vocabulary` and the raw `examples`
    of each split."""
    examples = generate(num_examples, seed, locales, formats)
    source_vocabulary = Vocabulary("".join(e["source"] for e in examples))
    source_length = max(len(e["source"]) for e in examples)
    n_train = int(split[0] * num_examples)
    n_validation = int(split[1] * num_examples)
    parts = {
        "train": examples[:n_train],
        "validation": examples[n_train : n_train + n_validation],
        "test": examples[n_train + n_validation :],
    }
    data = {name: encode(part, source_vocabulary, source_length) for name, part in parts.items()}
    for name, part in parts.items():
        data[name]["examples"] = part
    data["source_vocabulary"] = source_vocabulary
    data["target_vocabulary"] = TARGET_VOCABULARY
    return data


def alignment_scores(weights, gold):
    """Alignment accuracy and AER of attention `weights` `(N, T, S)` against `gold` spans.

    accuracy: the share of target characters with a gold field whose strongest weight falls
    inside that field. AER (Och and Ney, 2003, with sure = possible = gold): each target
    character is linked to its argmax position, `AER = 1 - 2|A ∩ G| / (|A| + |G|)`."""
    weights = np.asarray(weights)
    has_gold = gold.any(-1)
    links = np.argmax(weights, -1)
    hit = np.take_along_axis(gold, links[..., None], -1)[..., 0] & has_gold
    accuracy = hit.sum() / max(has_gold.sum(), 1)
    predicted = has_gold.sum()  # one link per target character that has a gold field
    aer = 1.0 - 2.0 * hit.sum() / max(predicted + gold.sum(), 1)
    return float(accuracy), float(aer)
