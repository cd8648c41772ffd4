"""Symbols to ids and back, for sequence-to-sequence data."""

import json

import numpy as np

SPLITS = ("characters", "whitespace")


class Vocabulary:
    """Symbols (characters, or whitespace-separated tokens such as phonemes) to ids and back.

    Four ids are reserved: 0 padding, 1 start, 2 end and 3 out-of-vocabulary, which every
    symbol the vocabulary has not seen maps to (so `encode` never raises on new data); the
    symbols follow in sorted order. A pure-Python class rather than Keras' `StringLookup`,
    which runs on TensorFlow whatever the backend: this one needs nothing at run time and
    saves as JSON beside a `.keras` model.

    Args:
        symbols: The known symbols (duplicates are dropped).
        split: `"characters"` (a text is its characters) or `"whitespace"` (a text is its
            whitespace-separated tokens). Decoding joins with `""` or `" "` accordingly.
        oov_token: What `decode` writes for the out-of-vocabulary id. Defaults to `"<unk>"`.

    Example:

    >>> phonemes = Vocabulary.from_corpus(["K AE T", "D AO G"], split="whitespace")
    >>> phonemes.symbols
    ['AE', 'AO', 'D', 'G', 'K', 'T']
    >>> ids = phonemes.encode_batch(["K AE T", "G OW T"], length=5, end=True)
    >>> ids.tolist()  # OW is out of vocabulary (3); 2 ends each, 0 pads
    [[8, 4, 9, 2, 0], [7, 3, 9, 2, 0]]
    >>> phonemes.decode(ids[1])
    'G <unk> T'
    """

    PAD, START, END, OOV = 0, 1, 2, 3
    RESERVED = 4

    def __init__(self, symbols, split="characters", oov_token="<unk>"):
        if split not in SPLITS:
            raise ValueError(
                f"Invalid value for argument split. Expected one of {SPLITS}. "
                f"Received: split={split!r}"
            )
        self.symbols = sorted(set(symbols))
        self.split = split
        self.oov_token = oov_token
        self.index = {s: i + self.RESERVED for i, s in enumerate(self.symbols)}

    @classmethod
    def from_corpus(cls, texts, split="characters", **kwargs):
        """The vocabulary of every symbol in `texts` (an iterable of strings)."""
        symbols = set()
        for text in texts:
            symbols.update(_tokenize(text, split))
        return cls(symbols, split=split, **kwargs)

    def __len__(self):
        return len(self.symbols) + self.RESERVED

    def tokenize(self, text):
        return _tokenize(text, self.split)

    def encode(self, text, length=None, start=False, end=False):
        """The ids of `text` (optionally after a start id and before an end id), cut or padded
        with 0 to `length` if given."""
        ids = [self.index.get(s, self.OOV) for s in self.tokenize(text)]
        ids = [self.START] * start + ids + [self.END] * end
        if length is None:
            return ids
        return ids[:length] + [self.PAD] * (length - len(ids))

    def encode_batch(self, texts, length=None, start=False, end=False):
        """`(len(texts), length)` int32 ids, padded with 0 (`length` defaults to the longest,
        and is at least 1: an empty text is a row of padding, which a model reads as an
        empty source)."""
        if isinstance(texts, (str, bytes)):
            raise ValueError(
                "Invalid value for argument texts. Expected a list of strings (wrap a single "
                f"text in a list). Received: texts={texts!r}"
            )
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    "Invalid value for argument texts. Expected a list of strings. "
                    f"Received: texts[{i}]={text!r} of type {type(text).__name__}"
                )
        rows = [self.encode(t, start=start, end=end) for t in texts]
        if length is None:
            length = max((len(r) for r in rows), default=1) or 1
        array = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            row = row[:length]
            array[i, : len(row)] = row
        return array

    def decode(self, ids):
        """The text of `ids` up to the first end id; padding and start ids are skipped."""
        symbols = []
        for i in ids:
            i = int(i)
            if i == self.END:
                break
            if i == self.OOV:
                symbols.append(self.oov_token)
            elif i >= len(self) or i < 0:
                raise ValueError(
                    f"Invalid ids: this vocabulary has ids 0 to {len(self) - 1}. Received: id {i}"
                )
            elif i >= self.RESERVED:
                symbols.append(self.symbols[i - self.RESERVED])
        return ("" if self.split == "characters" else " ").join(symbols)

    def get_config(self):
        return {"symbols": self.symbols, "split": self.split, "oov_token": self.oov_token}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def save(self, path):
        """Writes the configuration as JSON (e.g. beside a `.keras` model)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.get_config(), f, ensure_ascii=False)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls.from_config(json.load(f))


def _tokenize(text, split):
    return list(text) if split == "characters" else text.split()
