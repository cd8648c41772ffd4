"""Symbols to ids and back, for sequence-to-sequence data: characters or whitespace tokens
(`Vocabulary`) and subwords (`SubwordVocabulary`, BPE or unigram through SentencePiece)."""

from keras_luong.data.token_ids import _Ids

SPLITS = ("characters", "whitespace")


class Vocabulary(_Ids):
    """Symbols (characters, or whitespace-separated tokens such as phonemes) to ids and back.

    Four ids are reserved: 0 padding, 1 start, 2 end and 3 out-of-vocabulary, which every
    symbol the vocabulary has not seen maps to (so `encode` never raises on new data); the
    symbols follow in sorted order. A pure-Python class rather than Keras' `StringLookup`,
    which runs on TensorFlow whatever the backend: this one needs nothing at run time and
    saves as JSON beside a `.keras` model (or inside it: `LuongSeq2Seq.set_vocabularies`).

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
    def from_corpus(cls, texts, split="characters", max_size=None, min_count=1, **kwargs):
        """The vocabulary of the symbols in `texts`.

        Args:
            texts: An iterable of strings.
            split: `"characters"` (the default) or `"whitespace"` (words).
            max_size: If given, keep at most this many symbols, the most frequent (ties
                broken by first appearance).
            min_count: Keep the symbols seen at least this many times. Defaults to 1.
            **kwargs: The constructor's other arguments (`oov_token`).

        Returns:
            A `Vocabulary`; the symbols left out are out of vocabulary (id 3).
        """
        counts = {}
        for text in texts:
            for symbol in _tokenize(text, split):
                counts[symbol] = counts.get(symbol, 0) + 1
        symbols = [s for s, n in counts.items() if n >= min_count]
        if max_size is not None:
            symbols = sorted(symbols, key=lambda s: -counts[s])[:max_size]
        return cls(symbols, split=split, **kwargs)

    def __len__(self):
        return len(self.symbols) + self.RESERVED

    def tokenize(self, text):
        """The symbols of `text`: its characters, or its whitespace-separated words.

        Args:
            text: A string.
        """
        return _tokenize(text, self.split)

    def _symbol_ids(self, text):
        return [self.index.get(s, self.OOV) for s in self.tokenize(text)]

    def _symbol(self, i):
        return self.oov_token if i == self.OOV else self.symbols[i - self.RESERVED]

    def _join(self, ids):
        return self._join_tokens([self._symbol(i) for i in ids])

    def _join_tokens(self, tokens):
        return ("" if self.split == "characters" else " ").join(tokens)

    def get_config(self):
        return {"symbols": self.symbols, "split": self.split, "oov_token": self.oov_token}


def _tokenize(text, split):
    return list(text) if split == "characters" else text.split()
