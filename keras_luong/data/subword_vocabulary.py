"""Subwords to ids and back: `SubwordVocabulary`, BPE or unigram through SentencePiece."""

import base64

import numpy as np

from keras_luong.checks import check_integer, check_texts
from keras_luong.data.token_ids import _Ids, list_of

SUBWORD_MODELS = ("bpe", "unigram")


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

    def _symbol(self, i):
        return self.oov_token if i == self.OOV else self.processor.id_to_piece(i)

    def _join(self, ids):
        return self.processor.decode(ids)

    def _join_tokens(self, tokens):
        # Pieces joined as SentencePiece joins them: `▁` starts a word.
        return "".join(tokens).replace("\u2581", " ").lstrip(" ")

    def get_config(self):
        return {"model": base64.b64encode(self.model).decode("ascii"), "oov_token": self.oov_token}


def _sentencepiece():
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(
            "SubwordVocabulary needs the sentencepiece package: "
            "pip install keras-luong[translate] (or pip install sentencepiece)"
        ) from None
    return sentencepiece
