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

from keras_luong.data.vocabulary import Vocabulary

LOCALES = (
    "en_US", "en_GB", "fr", "de", "es", "it", "pt", "nl",
    "sv", "pl", "ru", "tr", "ja", "zh", "ko",
)  # fmt: skip
FORMATS = ("full", "long", "medium", "short")
# Two-digit years are only unambiguous inside one century window.
FIRST_YEAR, LAST_YEAR = 1950, 2049
PAD, START, END = Vocabulary.PAD, Vocabulary.START, Vocabulary.END
TARGET_CHARS = "0123456789-"
TARGET_LENGTH = len("YYYY-MM-DD") + 1  # and the end token
# Which source field each character of "YYYY-MM-DD" is read from.
TARGET_FIELDS = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2 + (None,)
_FIELD_OF_PATTERN = {"y": "year", "M": "month", "L": "month", "d": "day"}


def render(date, locale, format):
    """Formats `date` like `babel.dates.format_date(date, format, locale=locale)`, and returns
    `(text, spans)` with `spans[field] = (start, end)` for the year, month and day fields."""
    try:
        from babel import Locale
        from babel.dates import DateTimeFormat, format_date, get_date_format, tokenize_pattern
    except ImportError as error:
        raise ImportError(
            "The dates task renders dates with Babel: pip install 'keras-luong[datasets]'"
        ) from error

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
    """`(TARGET_LENGTH, source_length)` boolean matrix of the possible links: target character
    j may be aligned with any source position of the field it is read from (none for '-' and
    the end token)."""
    gold = np.zeros((TARGET_LENGTH, source_length), bool)
    for j, field in enumerate(TARGET_FIELDS):
        if field in spans:
            start, end = spans[field]
            gold[j, start : min(end, source_length)] = True
    return gold


def sure_alignment(source, target, spans, source_length):
    """`(TARGET_LENGTH, source_length)` boolean matrix of the sure links: where a field is
    written in digits, each target digit is surely aligned with the source digit it copies,
    the two right-aligned (the "4" of "2024" with the "4" of "24", the "5" of "05" with "5").
    Digits with nothing to copy ("20" of "2024" from "24", "0" of "05" from "5") and fields
    written in words ("March") have possible links only."""
    sure = np.zeros((TARGET_LENGTH, source_length), bool)
    for field, (start, end) in spans.items():
        piece = source[start:end]
        if not piece or any(c not in "0123456789" for c in piece):
            continue
        positions = [j for j, f in enumerate(TARGET_FIELDS) if f == field]
        for k in range(1, min(len(piece), len(positions)) + 1):
            j, s = positions[-k], end - k
            if target[j] == piece[-k] and s < source_length:
                sure[j, s] = True
    return sure


def encode(examples, source_vocabulary, source_length):
    """Arrays for `model.fit`: `source` `(N, source_length)`, `target_in` (start + ISO) and
    `target_out` (ISO + end), `(N, TARGET_LENGTH)`, and the gold alignments `(N, T, S)`:
    `gold`, the possible links, and `sure`, the sure ones (see `alignment_scores`)."""
    source = np.array(
        [source_vocabulary.encode(e["source"], source_length) for e in examples], "int32"
    )
    target = [TARGET_VOCABULARY.encode(e["target"], TARGET_LENGTH - 1) for e in examples]
    target_in = np.array([[START, *t] for t in target], "int32")
    target_out = np.array([[*t, END] for t in target], "int32")
    gold = np.stack([gold_alignment(e["spans"], source_length) for e in examples])
    sure = [sure_alignment(e["source"], e["target"], e["spans"], source_length) for e in examples]
    return {
        "source": source,
        "target_in": target_in,
        "target_out": target_out,
        "gold": gold,
        "sure": np.stack(sure),
    }


def load_data(num_examples=20000, seed=0, locales=LOCALES, formats=FORMATS, split=(0.8, 0.1)):
    """The dates task, split into `train`, `validation` and `test` dicts of arrays (see
    `encode`), with the `source_vocabulary`, the `target_vocabulary` and the raw `examples`
    of each split.

    Args:
        num_examples: The number of dates generated. Defaults to 20000.
        seed: The seed of the generator. Defaults to 0.
        locales: The locales the dates are written in (`LOCALES` by default).
        formats: The date formats used (`FORMATS` by default: `"full"`, `"long"`,
            `"medium"`, `"short"`).
        split: The training and validation shares; the test split gets the rest. Defaults
            to `(0.8, 0.1)`.

    Returns:
        A dict with `"train"`, `"validation"` and `"test"` (each `source`, `target_in`,
        `target_out`, `gold`, `sure` arrays and the `examples`), `"source_vocabulary"` and
        `"target_vocabulary"`.
    """
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


def alignment_scores(weights, gold, sure):
    """Alignment accuracy and alignment error rate of attention `weights` `(N, T, S)` against
    the possible links `gold` and the sure links `sure` (`load_data`'s arrays of those names).

    Each target character that has a gold field is linked to its strongest source position
    (one link per target word, as Luong et al. extract them): the links `A`. accuracy is the
    share of those links inside the field, `|A ∩ P| / |A|`. AER is Och and Ney's (2003), with
    sure links `S` inside the possible ones `P` (here `P` = `gold`):

    ```
    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)
    ```

    Attention whose strongest weight is on the copied digit wherever there is one, and inside
    the field elsewhere, scores 0; attention that misses every field scores 1.

    Args:
        weights: Attention weights `(N, T, S)`.
        gold: The possible links, booleans `(N, T, S)`.
        sure: The sure links, booleans `(N, T, S)`, each one also possible.

    Returns:
        `(accuracy, aer)`, two floats.
    """
    weights, gold, sure = np.asarray(weights), np.asarray(gold), np.asarray(sure)
    if np.any(sure & ~gold):
        raise ValueError("Every sure link must also be a possible link (sure ⊆ gold).")
    has_gold = gold.any(-1)
    links = np.argmax(weights, -1)[..., None]
    in_possible = np.take_along_axis(gold, links, -1)[..., 0] & has_gold
    in_sure = np.take_along_axis(sure, links, -1)[..., 0] & has_gold
    num_links = has_gold.sum()
    accuracy = in_possible.sum() / max(num_links, 1)
    aer = 1.0 - (in_sure.sum() + in_possible.sum()) / max(num_links + sure.sum(), 1)
    return float(accuracy), float(aer)
