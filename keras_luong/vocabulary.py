"""Symbols to ids and back, for sequence-to-sequence data: characters or whitespace tokens
(`Vocabulary`) and subwords (`SubwordVocabulary`, BPE or unigram through SentencePiece)."""

import base64
import json

import numpy as np

from keras_luong.checks import check_integer, check_path, check_text, check_texts

SPLITS = ("characters", "whitespace")
SUBWORD_MODELS = ("bpe", "unigram")


class _Ids:
    """What every vocabulary shares: the four reserved ids, batches of ids, decoding up to the
    end id, and JSON saving. A subclass gives `__len__`, `tokenize`, `_symbol_ids`,
    `_join(ids)` and `get_config`."""

    PAD, START, END, OOV = 0, 1, 2, 3
    RESERVED = 4

    def encode(self, text, length=None, start=False, end=False):
        """The ids of `text` (optionally after a start id and before an end id), cut or padded
        with 0 to `length` if given.

        Args:
            text: A string.
            length: The number of ids returned, cut or padded with 0; `None` (the default)
                for as many as `text` gives.
            start: Whether the start id (1) comes first. Defaults to `False`.
            end: Whether the end id (2) comes last. Defaults to `False`.

        Returns:
            A list of int ids.
        """
        ids = self._symbol_ids(check_text("text", text))
        if length is not None:
            check_integer("length", length, minimum=0)
        ids = [self.START] * start + ids + [self.END] * end
        if length is None:
            return ids
        return ids[:length] + [self.PAD] * (length - len(ids))

    def encode_batch(self, texts, length=None, start=False, end=False):
        """`(len(texts), length)` int32 ids, padded with 0: `encode` of each text, in one
        array.

        Args:
            texts: A list of strings. An empty text is a row of padding, which a model reads
                as an empty source.
            length: The width of the array, each row cut or padded with 0; `None` (the
                default) for the longest row's (at least 1).
            start: Whether each row starts with the start id (1). Defaults to `False`.
            end: Whether each row ends with the end id (2). Defaults to `False`.

        Returns:
            An int32 numpy array `(len(texts), length)`.
        """
        texts = check_texts("texts", texts)
        rows = [self.encode(t, start=start, end=end) for t in texts]
        if length is None:
            length = max((len(r) for r in rows), default=1) or 1
        array = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            row = row[:length]
            array[i, : len(row)] = row
        return array

    def decode(self, ids):
        """The text of `ids` up to the first end id; padding and start ids are skipped.

        Args:
            ids: A sequence of int ids (a list, or one row of a numpy array).

        Returns:
            The string. An id outside the vocabulary raises a `ValueError`.
        """
        kept = []
        for i in ids:
            i = int(i)
            if i == self.END:
                break
            if i >= len(self) or i < 0:
                raise ValueError(
                    f"Invalid ids: this vocabulary has ids 0 to {len(self) - 1}. Received: id {i}"
                )
            if i not in (self.PAD, self.START):
                kept.append(i)
        return self._join(kept)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def save(self, path):
        """Writes the vocabulary as JSON (e.g. beside a `.keras` model; a model's own
        vocabularies go inside its `.keras` file, see `LuongSeq2Seq.set_vocabularies`).

        Args:
            path: The file to write.
        """
        with open(path, "w", encoding="utf-8") as f:
            json.dump(serialize(self), f, ensure_ascii=False)

    @classmethod
    def load(cls, path):
        """The vocabulary saved by `save`.

        Args:
            path: The file `save` wrote. A file that is not one (not JSON, or a damaged
                model inside it) gets a `ValueError` naming the file.

        Returns:
            The vocabulary, of the class that saved it.
        """
        path = check_path("path", path)
        with open(path, encoding="utf-8") as f:
            try:
                config = json.load(f)
                if not isinstance(config, dict):
                    raise ValueError(f"expected a JSON object, found {type(config).__name__}")
                if "class_name" not in config:  # written by keras-luong 0.1's Vocabulary.save
                    return cls.from_config(config)
                return deserialize(config)
            except (ValueError, TypeError, KeyError) as error:
                raise ValueError(
                    f"Cannot read a vocabulary from {path} (a file written by "
                    f"{cls.__name__}.save is expected): {error}"
                ) from None

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    __hash__ = None


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

    def _join(self, ids):
        symbols = [
            self.oov_token if i == self.OOV else self.symbols[i - self.RESERVED] for i in ids
        ]
        return ("" if self.split == "characters" else " ").join(symbols)

    def get_config(self):
        return {"symbols": self.symbols, "split": self.split, "oov_token": self.oov_token}


class SubwordVocabulary(_Ids):
    """Subword units (byte-pair encoding or a unigram language model) to ids and back, with
    SentencePiece (Kudo and Richardson, 2018): a C++ library with Python wheels and no
    framework dependency, so it runs the same under every Keras backend.

    A text is split into the units of a model trained on a corpus (`train`): frequent words
    stay whole, rare ones are spelled in pieces, so a few thousand ids cover any text with no
    out-of-vocabulary words. `decode` joins the pieces back into words. The ids are laid out
    as `Vocabulary`'s: 0 padding, 1 start, 2 end, 3 unknown (a character never seen in
    training), the units from 4. The trained model is held in memory and saved inside the
    JSON (`save`, or inside a `.keras` file through `LuongSeq2Seq.set_vocabularies`).

    Needs `sentencepiece` (`pip install keras-luong[translate]`).

    Args:
        model: The serialized SentencePiece model (bytes), as `train` makes it.
        oov_token: What `decode` writes for the unknown id. Defaults to `"<unk>"`.

    Example:

    >>> texts = ["the dog runs .", "the dogs run .", "a cat sleeps .", "the cats sleep ."] * 5
    >>> subwords = SubwordVocabulary.train(texts, vocabulary_size=40)
    >>> len(subwords)
    40
    >>> subwords.tokenize("the cats run .")
    ['▁the', '▁cats', '▁run', '▁.']
    >>> subwords.tokenize("the catdogs")  # an unseen word, in pieces
    ['▁the', '▁cat', 'dog', 's']
    >>> ids = subwords.encode_batch(["the catdogs sleep ."], end=True)
    >>> subwords.decode(ids[0])
    'the catdogs sleep .'
    """

    def __init__(self, model, oov_token="<unk>"):
        spm = _sentencepiece()
        if isinstance(model, str):
            try:
                model = base64.b64decode(model, validate=True)
            except ValueError:
                raise ValueError(
                    "Invalid value for argument model. Expected a serialized SentencePiece "
                    "model as bytes or base64 text. Received: text that is not base64"
                ) from None
        if not isinstance(model, bytes):
            raise ValueError(
                "Invalid value for argument model. Expected a serialized SentencePiece model "
                f"(bytes, or base64 text). Received: model of type {type(model).__name__}"
            )
        self.model = model
        self.oov_token = oov_token
        try:
            self.processor = spm.SentencePieceProcessor(model_proto=model)
        except RuntimeError:
            raise ValueError(
                "Invalid value for argument model. Expected a serialized SentencePiece model, "
                f"as SubwordVocabulary.train makes it. Received: {len(model)} bytes that "
                "SentencePiece cannot read (a damaged or truncated model)"
            ) from None
        reserved = [self.processor.pad_id(), self.processor.bos_id(),
                    self.processor.eos_id(), self.processor.unk_id()]  # fmt: skip
        if reserved != [self.PAD, self.START, self.END, self.OOV]:
            raise ValueError(
                "Expected a SentencePiece model with pad, start (bos), end (eos) and unknown "
                "ids 0, 1, 2, 3, as SubwordVocabulary.train makes it. Received: a model with "
                f"ids {reserved}"
            )

    @classmethod
    def train(
        cls,
        texts,
        vocabulary_size=8000,
        model_type="bpe",
        character_coverage=1.0,
        max_sentences=None,
        seed=0,
        num_threads=1,
        **kwargs,
    ):
        """Trains a subword model on `texts` (an iterable of strings; for one vocabulary of
        both languages, pass the sentences of both sides).

        Args:
            texts: The training text, one sentence per string.
            vocabulary_size: The number of ids, the four reserved ones included.
            model_type: `"bpe"` (byte-pair encoding, Sennrich et al. 2016) or `"unigram"`
                (Kudo 2018).
            character_coverage: The share of characters the units must cover (1.0: every
                character seen; lower values send the rarest to the unknown id).
            max_sentences: Train on a random sample of this many sentences (all if `None`).
            seed: The seed of that sample.
            num_threads: SentencePiece's training threads. Defaults to 1.
            **kwargs: The `oov_token`.

        The text is taken as it is (no Unicode normalisation), with one exception:
        SentencePiece splits on spaces, so `decode(encode(text))` gives back any text made of
        characters seen in training with its leading and trailing spaces dropped and each
        run of spaces as one space (tabs and newlines are characters like any other).
        Sentences of any length are used (SentencePiece's own limit, 4192 bytes, is raised to
        the longest sentence).
        """
        import io

        spm = _sentencepiece()
        if model_type not in SUBWORD_MODELS:
            raise ValueError(
                f"Invalid value for argument model_type. Expected one of {SUBWORD_MODELS}. "
                f"Received: model_type={model_type!r}"
            )
        check_integer("vocabulary_size", vocabulary_size, minimum=cls.RESERVED + 1)
        check_integer("max_sentences", max_sentences, allow_none=True)
        check_integer("num_threads", num_threads)
        unknown = sorted(set(kwargs) - {"oov_token"})
        if unknown:
            raise ValueError(
                f"Unrecognized keyword arguments passed to SubwordVocabulary.train: {unknown}. "
                "Expected vocabulary_size, model_type, character_coverage, max_sentences, "
                "seed, num_threads and oov_token"
            )
        texts = [t for t in check_texts("texts", list_of(texts)) if t.strip()]
        if max_sentences is not None and len(texts) > max_sentences:
            chosen = np.random.default_rng(seed).choice(len(texts), max_sentences, replace=False)
            texts = [texts[i] for i in sorted(chosen)]
        if not texts:
            raise ValueError("Invalid value for argument texts. Received: no non-empty text")
        longest = max(len(t.encode("utf-8")) for t in texts)
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts),
                model_writer=model,
                vocab_size=vocabulary_size,
                model_type=model_type,
                character_coverage=character_coverage,
                normalization_rule_name="identity",
                pad_id=cls.PAD,
                bos_id=cls.START,
                eos_id=cls.END,
                unk_id=cls.OOV,
                unk_surface=kwargs.get("oov_token", "<unk>"),
                hard_vocab_limit=True,
                max_sentence_length=max(4192, longest + 1),
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as error:  # e.g. more units asked for than the text can give
            raise ValueError(
                f"Cannot train a subword model of vocabulary_size={vocabulary_size} on "
                f"{len(texts)} sentences: {error}"
            ) from None
        return cls(model.getvalue(), **kwargs)

    def __len__(self):
        return self.processor.get_piece_size()

    @property
    def symbols(self):
        """The units, in id order from id 4."""
        return [self.processor.id_to_piece(i) for i in range(self.RESERVED, len(self))]

    def tokenize(self, text):
        """The units of `text`, `▁` marking the start of a word.

        Args:
            text: A string.
        """
        return self.processor.encode(text, out_type=str)

    def _symbol_ids(self, text):
        return self.processor.encode(text)

    def _join(self, ids):
        return self.processor.decode(ids)

    def get_config(self):
        return {"model": base64.b64encode(self.model).decode("ascii"), "oov_token": self.oov_token}


def serialize(vocabulary):
    """`{"class_name": ..., "config": ...}` of a vocabulary, for JSON."""
    return {"class_name": type(vocabulary).__name__, "config": vocabulary.get_config()}


def deserialize(config):
    """The vocabulary `serialize` described."""
    classes = {"Vocabulary": Vocabulary, "SubwordVocabulary": SubwordVocabulary}
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in classes:
        raise ValueError(
            f"Expected a serialized vocabulary with class_name one of {tuple(classes)}. "
            f"Received: {config!r:.200}"
        )
    return classes[name].from_config(config["config"])


def list_of(texts):
    """An iterable of texts as a list (a generator of lines, say); a single string, bytes or
    `None` stay as they are, for `check_texts` to refuse."""
    if texts is None or isinstance(texts, (str, bytes, list, tuple)):
        return texts
    try:
        return list(texts)
    except TypeError:
        return texts


def _tokenize(text, split):
    return list(text) if split == "characters" else text.split()


def _sentencepiece():
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(
            "SubwordVocabulary needs the sentencepiece package: "
            "pip install keras-luong[translate] (or pip install sentencepiece)"
        ) from None
    return sentencepiece
