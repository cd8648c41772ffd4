"""What every vocabulary shares: the reserved ids, batches of ids, decoding up to the end id,
and JSON saving (`Vocabulary` and `SubwordVocabulary` build on it)."""

import json

import numpy as np
from keras import ops

from keras_luong.checks import check_integer, check_path, check_text, check_texts

# The vocabulary classes by name, for `deserialize` (each subclass of `_Ids` joins).
VOCABULARIES = {}


class _Ids:
    """What every vocabulary shares: the four reserved ids, batches of ids, decoding up to the
    end id, and JSON saving. A subclass gives `__len__`, `tokenize`, `_symbol_ids`,
    `_symbol(id)` (an id's token as `tokenize` writes it), `_join(ids)`, `_join_tokens(tokens)`
    (the text of tokens as `_symbol` writes them) and `get_config`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        VOCABULARIES[cls.__name__] = cls

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
        check_integer("length", length, minimum=0, allow_none=True)
        rows = [self.encode(t, start=start, end=end) for t in texts]
        if length is None:
            length = max((len(r) for r in rows), default=1) or 1
        array = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            row = row[:length]
            array[i, : len(row)] = row
        return array

    def decode(self, ids, unknowns=None):
        """The text of `ids` up to the first end id; padding and start ids are skipped.

        Args:
            ids: A sequence of int ids (a list, or one row of a numpy array).
            unknowns: Strings written in place of the unknown ids (3), one for each in
                order (`translate(..., replace_unk=True)` gives the source words the
                attention points at); `None` (the default) writes `oov_token`.

        Returns:
            The string. An id outside the vocabulary raises a `ValueError`.
        """
        ids = list(ids)
        kept = [int(ids[t]) for t in self._kept_positions(ids)]
        if unknowns is None:
            return self._join(kept)
        unknowns = list(unknowns)
        if len(unknowns) != kept.count(self.OOV):
            raise ValueError(
                f"Invalid value for argument unknowns. Expected one string for each of the "
                f"{kept.count(self.OOV)} unknown ids. Received: {len(unknowns)} strings"
            )
        if not unknowns:
            return self._join(kept)
        unknowns = iter(unknowns)
        return self._join_tokens(
            [next(unknowns) if i == self.OOV else self._symbol(i) for i in kept]
        )

    def _kept_positions(self, ids):
        """The positions in `ids` of the ids `decode` writes: before the first end id, not
        padding or the start id. An id outside the vocabulary raises a `ValueError`."""
        kept = []
        for position, i in enumerate(ids):
            i = int(i)
            if i == self.END:
                break
            if i >= len(self) or i < 0:
                raise ValueError(
                    f"Invalid ids: this vocabulary has ids 0 to {len(self) - 1}. Received: id {i}"
                )
            if i not in (self.PAD, self.START):
                kept.append(position)
        return kept

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


def list_of(texts):
    """An iterable of texts as a list (a generator of lines, say); a single string, bytes or
    `None` stay as they are, for `check_texts` to refuse."""
    if texts is None or isinstance(texts, (str, bytes, list, tuple)):
        return texts
    try:
        return list(texts)
    except TypeError:
        return texts


def serialize(vocabulary):
    """`{"class_name": ..., "config": ...}` of a vocabulary, for JSON."""
    return {"class_name": type(vocabulary).__name__, "config": vocabulary.get_config()}


def deserialize(config):
    """The vocabulary `serialize` described."""
    classes = VOCABULARIES
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in classes:
        raise ValueError(
            f"Expected a serialized vocabulary with class_name one of {tuple(classes)}. "
            f"Received: {config!r:.200}"
        )
    return classes[name].from_config(config["config"])


def known_ids(ids, vocabulary_size):
    """`ids` with any id outside `[0, vocabulary_size)` replaced by the unknown id (3, as the
    vocabularies lay ids out). Ids are checked before a model runs wherever their values are
    known; inside a compiled function they are not, and an embedding lookup out of range
    would give NaN (JAX) or a backend error: the unknown word is what such an id means."""
    unknown = _Ids.OOV if vocabulary_size > _Ids.OOV else 0
    inside = ops.logical_and(ops.greater_equal(ids, 0), ops.less(ids, vocabulary_size))
    return ops.where(inside, ids, ops.cast(unknown, ids.dtype))
