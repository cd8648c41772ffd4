"""A parallel corpus prepared once on disk, for corpora of millions of pairs.

`load_parallel_text` and `SubwordVocabulary.encode` hold a corpus in Python lists, about
27 bytes a token: fine for Multi30k's 29,000 pairs, about 29 GB for WMT'14's 4.5 million.
`prepare_corpus` (or `python -m keras_luong.prepare`) reads the two text files a line at a
time, trains the subword vocabulary on a seeded sample, encodes a chunk at a time and writes
the ids of every sentence into one flat file per side, with their offsets and lengths beside
them, the layout `fairseq-preprocess --dataset-impl mmap` uses, in plain numpy files.
`PreparedCorpus` opens the folder and reads a pair's ids when they are asked for, so memory
holds the lengths (8 bytes a pair) and a batch; `BucketedBatches(corpus)` batches it from the
lengths alone.

    from keras_luong.data.batching import BucketedBatches
    from keras_luong.data.prepared import PreparedCorpus, prepare_corpus

    prepare_corpus("train.en.gz", "train.de.gz", "wmt14", vocabulary_size=32000, max_words=50)
    corpus = PreparedCorpus("wmt14")           # later runs open it in a second
    train = BucketedBatches(corpus, tokens_per_batch=4096)

The folder holds `source.ids` and `target.ids` (uint16 when the vocabulary has at most 65,536
ids, else int32), `*.offsets` (int64, one more than the pairs), `*.lengths` (uint16 or int32),
`vocabulary.json` and `corpus.json`, which records the counts and the options and is written
last: a folder without it is a preparation that did not finish.
"""

import itertools
import json
import math
import os
import threading
import time

import keras
import numpy as np

from keras_luong.checks import check_integer, check_path
from keras_luong.data.parallel_text import check_text_file, count_lines, iter_lines
from keras_luong.data.subword_vocabulary import SubwordVocabulary
from keras_luong.data.vocabulary import Vocabulary
from keras_luong.version import __version__

FORMAT = "keras-luong prepared corpus"
FORMAT_VERSION = 1
SIDES = ("source", "target")
INFO_FILE = "corpus.json"
VOCABULARY_FILE = "vocabulary.json"


class PreparedCorpus:
    """The sentence pairs of a folder written by `prepare_corpus`, read from disk on demand.

    `corpus[i]` is pair `i`'s `(source_ids, target_ids)`, int32 arrays without start, end or
    padding ids, as `BucketedBatches` takes them; the ids and offsets stay on disk and are
    read when asked for (positioned reads of just those bytes), and the lengths
    (`source_lengths`, `target_lengths`, 8 bytes a pair) are in memory.
    A folder that is incomplete (its `corpus.json` missing, a file shorter than recorded) or
    written by another format version gets a `ValueError` saying so. The object pickles by
    its path, so `BucketedBatches(..., workers=4, use_multiprocessing=True)` reopens it in
    each worker.

    Args:
        directory: The folder `prepare_corpus` wrote.

    Attributes:
        info: What `corpus.json` records: pair and token counts, the files it was made from,
            the options, the pairs dropped as too long.
        vocabulary: The vocabulary the ids are of.
    """

    def __init__(self, directory):
        directory = check_path("directory", directory)
        path = os.path.join(directory, INFO_FILE)
        expected = "a folder written by prepare_corpus (python -m keras_luong.prepare)"
        if not os.path.isfile(path):
            raise ValueError(
                f"Invalid value for argument directory. Expected {expected}. Received: "
                f"directory={directory!r}, which has no {INFO_FILE} (a preparation that did "
                "not finish, or another folder)"
            )
        try:
            with open(path, encoding="utf-8") as f:
                info = json.load(f)
        except ValueError as error:
            raise ValueError(f"Cannot read {path} ({expected}): {error}") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise ValueError(
                f"Invalid value for argument directory. Expected {expected}. "
                f"Received: {path}, which is not a prepared corpus's record"
            )
        if info.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"The corpus in {directory} has format version {info.get('format_version')} "
                f"(keras-luong {info.get('keras_luong_version')}); this keras-luong reads "
                f"version {FORMAT_VERSION}: prepare it again"
            )
        self.directory, self.info = directory, info
        self._open()

    def _open(self):
        pairs, dtype = self.info["pairs"], np.dtype(self.info["ids_dtype"])
        self._files, self._lengths = {}, {}
        for side in SIDES:
            self._files[side] = (
                self._file(f"{side}.offsets", np.dtype("int64"), pairs + 1),
                self._file(f"{side}.ids", dtype, self.info[side]["tokens"]),
            )
            lengths = self._file(f"{side}.lengths", np.dtype(self.info["lengths_dtype"]), pairs)
            self._lengths[side] = np.fromfile(lengths, self.info["lengths_dtype"]).astype("int32")
            lengths.close()
        self._dtype, self._lock, self._vocabulary = dtype, threading.Lock(), None

    def _file(self, name, dtype, count):
        """`name` opened for reading, once its size is checked against the record."""
        path = os.path.join(self.directory, name)
        size = os.path.getsize(path) if os.path.isfile(path) else None
        if size != count * dtype.itemsize:
            raise ValueError(
                f"The prepared corpus in {self.directory} is incomplete or damaged: {name} "
                f"has {size} bytes, {count * dtype.itemsize} expected. Prepare it again"
            )
        return open(path, "rb", buffering=0)

    def __len__(self):
        return self.info["pairs"]

    def __getitem__(self, index):
        index = check_integer("index", int(index), minimum=0, maximum=len(self) - 1)
        return tuple(self._sentence(side, index) for side in SIDES)

    def _sentence(self, side, index):
        # Positioned reads rather than a memory map: only the bytes asked for are read, and
        # resident memory does not grow with the pages an epoch has touched (a map's
        # read-ahead brought the whole id files into resident memory within 1,000 batches).
        offsets, ids = self._files[side]
        start, end = np.frombuffer(self._read(offsets, 16, 8 * index), "int64")
        size = self._dtype.itemsize
        data = self._read(ids, int(end - start) * size, int(start) * size)
        return np.frombuffer(data, self._dtype).astype("int32")

    def _read(self, file, count, offset):
        if hasattr(os, "pread"):
            return os.pread(file.fileno(), count, offset)
        with self._lock:  # no pread (Windows): seek and read, one thread at a time
            file.seek(offset)
            return file.read(count)

    @property
    def source_lengths(self):
        """Each source sentence's number of ids, an int32 array."""
        return self._lengths["source"]

    @property
    def target_lengths(self):
        """Each target sentence's number of ids, an int32 array."""
        return self._lengths["target"]

    @property
    def vocabulary(self):
        if self._vocabulary is None:
            path = os.path.join(self.directory, VOCABULARY_FILE)
            self._vocabulary = SubwordVocabulary.load(path)
        return self._vocabulary

    def __getstate__(self):
        return {"directory": self.directory, "info": self.info}

    def __setstate__(self, state):
        self.directory, self.info = state["directory"], state["info"]
        self._open()

    def __repr__(self):
        return (
            f"<PreparedCorpus {self.directory!r}: {len(self):,} pairs, "
            f"{self.info['source']['tokens']:,} + {self.info['target']['tokens']:,} ids>"
        )


def prepare_corpus(
    source_file,
    target_file,
    directory,
    vocabulary_size=8000,
    vocabulary=None,
    model_type="bpe",
    sample_size=1_000_000,
    max_words=None,
    chunk_size=100_000,
    seed=0,
    num_threads=None,
    overwrite=False,
    verbose=1,
):
    """Prepares the parallel text of two aligned files (plain, or gzip if named `.gz`) in
    `directory` for training, and returns it as a `PreparedCorpus`.

    Memory is bounded by the vocabulary's sample and one chunk, not by the corpus: the files
    are read a line at a time (three times: to count, to sample, to encode).

    Args:
        source_file: The source side, one sentence a line (UTF-8).
        target_file: The target side, line `i` the translation of the source's line `i`.
        directory: The folder to write (created if needed).
        vocabulary_size: The size of the subword vocabulary trained on both sides (one
            vocabulary for source and target, as the translation recipe uses). Defaults
            to 8000.
        vocabulary: A `SubwordVocabulary` or `Vocabulary` (or the path of one saved with
            `save`) to encode with instead of training one: for a validation set, or a corpus
            that must share a model's vocabulary.
        model_type: The subword model trained, `"bpe"` or `"unigram"`.
        sample_size: The number of sentences (half of them source, half target, from pairs
            drawn with `seed`) the vocabulary is trained on. Defaults to 1,000,000, which keeps
            SentencePiece's training under about 3 GB; the whole corpus if it is smaller.
        max_words: Pairs with more whitespace-separated words than this on either side are
            left out and counted in `info["dropped"]` (the paper leaves out pairs over 50
            words). `None` (the default): every pair is kept.
        chunk_size: Pairs encoded at a time. Defaults to 100,000.
        seed: Seed of the vocabulary's sample. Defaults to 0.
        num_threads: SentencePiece's threads for training and encoding. Defaults to the
            number of CPUs.
        overwrite: Replace a prepared corpus already in `directory`. Defaults to `False`.
        verbose: 0 prints nothing, 1 (the default) a progress bar with the counts and rates.
    """
    started = time.time()
    source_file = check_text_file("source_file", source_file)
    target_file = check_text_file("target_file", target_file)
    directory = check_path("directory", directory)
    check_integer("vocabulary_size", vocabulary_size, minimum=SubwordVocabulary.RESERVED + 1)
    check_integer("sample_size", sample_size)
    check_integer("max_words", max_words, allow_none=True)
    check_integer("chunk_size", chunk_size)
    check_integer("seed", seed, minimum=0)
    num_threads = check_integer("num_threads", num_threads or os.cpu_count() or 1)
    vocabulary = _vocabulary_argument(vocabulary)
    info_path = os.path.join(directory, INFO_FILE)
    if os.path.exists(info_path):
        if not overwrite:
            raise ValueError(
                f"Invalid value for argument directory. Received: directory={directory!r}, "
                "which holds a prepared corpus already: pass overwrite=True (--overwrite) to "
                "replace it"
            )
        os.remove(info_path)  # from here on the folder is incomplete until the new record
    os.makedirs(directory, exist_ok=True)
    say = print if verbose else lambda *args: None

    pairs, target_lines = count_lines(source_file), count_lines(target_file)
    if target_lines != pairs:
        raise ValueError(
            "Expected the same number of lines on both sides. Received: "
            f"{pairs} lines in {source_file}, {target_lines} in {target_file}"
        )
    if not pairs:
        raise ValueError(
            f"Invalid value for argument source_file. Received: {source_file!r}, which has no lines"
        )
    say(f"{pairs:,} pairs in {source_file} and {target_file}")
    if vocabulary is None:
        vocabulary = _train_vocabulary(
            source_file,
            target_file,
            pairs,
            vocabulary_size,
            model_type,
            sample_size,
            seed,
            num_threads,
            say,
        )
    vocabulary.save(os.path.join(directory, VOCABULARY_FILE))
    ids_dtype = "uint16" if len(vocabulary) <= 1 << 16 else "int32"

    say(f"Encoding with {len(vocabulary):,} ids ({ids_dtype}), {chunk_size:,} pairs a chunk")
    encoding = time.time()
    progress = keras.utils.Progbar(
        pairs, verbose=verbose, unit_name="pair", stateful_metrics=["kept", "tokens", "tokens/s"]
    )
    lengths = {side: [] for side in SIDES}
    kept = tokens = read = 0
    files = {side: open(os.path.join(directory, f"{side}.ids"), "wb") for side in SIDES}
    try:
        lines = zip(iter_lines(source_file), iter_lines(target_file), strict=True)
        while chunk := list(itertools.islice(lines, chunk_size)):
            read += len(chunk)
            if max_words is not None:
                chunk = [
                    pair
                    for pair in chunk
                    if max(len(pair[0].split()), len(pair[1].split())) <= max_words
                ]
            kept += len(chunk)
            columns = list(zip(*chunk, strict=True)) or [(), ()]
            for side, texts in zip(SIDES, columns, strict=True):
                sentences = _encode(vocabulary, list(texts), num_threads)
                counts = np.fromiter(map(len, sentences), "int32", count=len(sentences))
                flat = np.fromiter(
                    itertools.chain.from_iterable(sentences), ids_dtype, count=int(counts.sum())
                )
                flat.tofile(files[side])
                lengths[side].append(counts)
                tokens += flat.size
            rate = tokens / max(time.time() - encoding, 1e-9)
            progress.update(read, [("kept", kept), ("tokens", tokens), ("tokens/s", rate)])
    finally:
        for f in files.values():
            f.close()
    if not kept:
        raise ValueError(
            f"Invalid value for argument max_words. Received: max_words={max_words}"
            f", which leaves none of the {pairs:,} pairs"
        )

    lengths = {side: np.concatenate(lengths[side]) for side in SIDES}
    counts = {side: {"tokens": int(lengths[side].sum()), "longest": int(lengths[side].max())}
              for side in SIDES}  # fmt: skip
    longest = max(count["longest"] for count in counts.values())
    lengths_dtype = "uint16" if longest < 1 << 16 else "int32"
    for side in SIDES:
        lengths[side].astype(lengths_dtype).tofile(os.path.join(directory, f"{side}.lengths"))
        offsets = np.zeros((kept + 1,), "int64")
        np.cumsum(lengths[side], out=offsets[1:])
        offsets.tofile(os.path.join(directory, f"{side}.offsets"))
    info = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "keras_luong_version": __version__,
        "source_file": os.path.abspath(source_file),
        "target_file": os.path.abspath(target_file),
        "pairs": kept,
        "dropped": {"over_max_words": pairs - kept},
        "ids_dtype": ids_dtype,
        "lengths_dtype": lengths_dtype,
        "vocabulary": {"class_name": type(vocabulary).__name__, "size": len(vocabulary)},
        "options": {
            "vocabulary_size": vocabulary_size,
            "model_type": model_type,
            "sample_size": sample_size,
            "max_words": max_words,
            "chunk_size": chunk_size,
            "seed": seed,
        },
        "seconds": round(time.time() - started, 1),
        **counts,
    }
    with open(info_path + ".partial", "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    os.replace(info_path + ".partial", info_path)
    say(
        f"{kept:,} pairs kept ({pairs - kept:,} over max_words), {info['source']['tokens']:,} "
        f"source and {info['target']['tokens']:,} target ids, in {info['seconds']} s"
    )
    return PreparedCorpus(directory)


def _vocabulary_argument(vocabulary):
    if vocabulary is None or isinstance(vocabulary, (SubwordVocabulary, Vocabulary)):
        return vocabulary
    if isinstance(vocabulary, (str, os.PathLike)):
        return SubwordVocabulary.load(vocabulary)
    raise ValueError(
        "Invalid value for argument vocabulary. Expected a SubwordVocabulary, a Vocabulary or "
        f"the path of one saved with save(). Received: vocabulary={vocabulary!r:.100}"
    )


def _train_vocabulary(
    source_file, target_file, pairs, size, model_type, sample_size, seed, num_threads, say
):
    """A subword vocabulary trained on `sample_size` sentences: both sides of
    `ceil(sample_size / 2)` pairs drawn with `seed`."""
    drawn = min(pairs, math.ceil(sample_size / 2))
    chosen = np.zeros((pairs,), bool)
    chosen[np.random.default_rng(seed).choice(pairs, drawn, replace=False)] = True
    sample = []
    for file in (source_file, target_file):
        sample += [line for line, take in zip(iter_lines(file), chosen, strict=True) if take]
    started = time.time()
    say(f"Training a {model_type} vocabulary of {size:,} on {len(sample):,} sentences")
    vocabulary = SubwordVocabulary.train(
        sample, vocabulary_size=size, model_type=model_type, num_threads=num_threads
    )
    say(f"Vocabulary trained in {time.time() - started:.1f} s")
    return vocabulary


def _encode(vocabulary, texts, num_threads):
    if isinstance(vocabulary, SubwordVocabulary):
        return vocabulary.processor.encode(texts, num_threads=num_threads)
    return [vocabulary.encode(text) for text in texts]
