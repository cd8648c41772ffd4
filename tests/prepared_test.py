"""A corpus prepared on disk (keras_luong.data.prepared, python -m keras_luong.prepare):
every pair's ids read back exactly, incomplete or foreign folders refused, and the same batches
from disk as from lists."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from keras_luong import SubwordVocabulary, Vocabulary
from keras_luong.data.batching import BucketedBatches
from keras_luong.data.prepared import PreparedCorpus, prepare_corpus
from keras_luong.prepare import main
from tests.corpora import ENGLISH, GERMAN, write
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("corpora prepared on disk (numpy, no backend)")

# Empty lines, non-ASCII text, a line longer than SentencePiece's 4192 bytes and more pairs
# than one chunk of 4.
SOURCES = ENGLISH * 3 + ["", "ünïcödé → ≠ text", " ".join(ENGLISH * 25)]
TARGETS = GERMAN * 3 + ["ein leerer satz", "", " ".join(GERMAN * 25)]


@pytest.fixture
def files(tmp_path):
    return write(tmp_path / "train.en", SOURCES), write(tmp_path / "train.de", TARGETS, True)


def prepare(files, directory, **kwargs):
    kwargs = {"vocabulary_size": 60, "chunk_size": 4, "verbose": 0, **kwargs}
    return prepare_corpus(*files, directory, **kwargs)


def test_every_pair_reads_back_as_the_vocabulary_encodes_it(files, tmp_path):
    corpus = prepare(files, tmp_path / "corpus")
    vocabulary = corpus.vocabulary
    assert isinstance(vocabulary, SubwordVocabulary) and len(vocabulary) == 60
    assert len(corpus) == len(SOURCES)
    for i, (source, target) in enumerate(zip(SOURCES, TARGETS, strict=True)):
        read_source, read_target = corpus[i]
        assert read_source.dtype == read_target.dtype == np.int32
        assert read_source.tolist() == vocabulary.encode(source)
        assert read_target.tolist() == vocabulary.encode(target)
    assert len(SOURCES[-1].encode()) > 4192 and corpus.info["source"]["longest"] > 500
    assert corpus[len(SOURCES) - 3][0].size == 0 and corpus[len(SOURCES) - 2][1].size == 0
    np.testing.assert_array_equal(
        corpus.source_lengths, [len(vocabulary.encode(s)) for s in SOURCES]
    )
    np.testing.assert_array_equal(
        corpus.target_lengths, [len(vocabulary.encode(t)) for t in TARGETS]
    )
    info = corpus.info
    assert info["pairs"] == len(SOURCES) and info["dropped"] == {"over_max_words": 0}
    assert info["source"]["tokens"] == corpus.source_lengths.sum()
    assert info["target"]["longest"] == corpus.target_lengths.max()
    # On disk: 2 bytes an id (uint16), 8 bytes an offset and 2 a length per pair and side.
    assert info["ids_dtype"] == info["lengths_dtype"] == "uint16"
    tokens = info["source"]["tokens"] + info["target"]["tokens"]
    sizes = {
        name: os.path.getsize(tmp_path / "corpus" / name)
        for name in os.listdir(tmp_path / "corpus")
    }
    assert sizes["source.ids"] + sizes["target.ids"] == 2 * tokens
    assert sizes["source.offsets"] == sizes["target.offsets"] == 8 * (len(SOURCES) + 1)
    assert sizes["source.lengths"] == 2 * len(SOURCES)


def test_the_vocabulary_sample_is_seeded_and_both_sides(files, tmp_path):
    # A sample of 2 sentences: one pair, both sides; the same seed draws the same pair.
    first = prepare(files, tmp_path / "a", vocabulary_size=30, sample_size=2, seed=4)
    again = prepare(files, tmp_path / "b", vocabulary_size=30, sample_size=2, seed=4)
    assert first.vocabulary == again.vocabulary
    pieces = "".join(first.vocabulary.symbols).replace("▁", "")
    pair = next(i for i in range(len(SOURCES)) if set(pieces) <= set(SOURCES[i] + TARGETS[i]))
    assert set(pieces) & set(SOURCES[pair]) and set(pieces) & set(TARGETS[pair])


def test_max_words_leaves_out_long_pairs_and_counts_them(files, tmp_path):
    vocabulary = Vocabulary.from_corpus(SOURCES + TARGETS)
    corpus = prepare(files, tmp_path / "corpus", vocabulary=vocabulary, max_words=7)
    kept = [
        (s, t)
        for s, t in zip(SOURCES, TARGETS, strict=True)
        if len(s.split()) <= 7 and len(t.split()) <= 7
    ]
    assert len(corpus) == len(kept) < len(SOURCES)
    assert corpus.info["dropped"] == {"over_max_words": len(SOURCES) - len(kept)}
    for i, (s, t) in enumerate(kept):
        assert [x.tolist() for x in corpus[i]] == [vocabulary.encode(s), vocabulary.encode(t)]


def test_a_saved_vocabulary_is_used_as_given(files, tmp_path):
    vocabulary = Vocabulary.from_corpus(SOURCES + TARGETS, split="whitespace")
    vocabulary.save(tmp_path / "vocabulary.json")
    corpus = prepare(files, tmp_path / "corpus", vocabulary=str(tmp_path / "vocabulary.json"))
    assert corpus.vocabulary == vocabulary
    assert corpus[1][0].tolist() == vocabulary.encode(SOURCES[1])


def test_incomplete_damaged_or_foreign_folders_are_refused(files, tmp_path):
    directory = tmp_path / "corpus"
    prepare(files, directory)
    with pytest.raises(ValueError, match="holds a prepared corpus already"):
        prepare(files, directory)
    assert len(prepare(files, directory, overwrite=True)) == len(SOURCES)

    info = json.loads((directory / "corpus.json").read_text())
    (directory / "corpus.json").write_text(json.dumps({**info, "format_version": 0}))
    with pytest.raises(ValueError, match="format version 0.*prepare it again"):
        PreparedCorpus(directory)
    (directory / "corpus.json").write_text(json.dumps(info))
    ids = (directory / "target.ids").read_bytes()
    (directory / "target.ids").write_bytes(ids[:-2])
    with pytest.raises(ValueError, match="incomplete or damaged: target.ids has"):
        PreparedCorpus(directory)
    (directory / "corpus.json").unlink()
    with pytest.raises(ValueError, match="has no corpus.json .a preparation that did not finish"):
        PreparedCorpus(directory)
    (directory / "corpus.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a prepared corpus"):
        PreparedCorpus(directory)


def test_bad_files_and_arguments_are_refused(files, tmp_path):
    short = write(tmp_path / "short.de", TARGETS[:-1])
    with pytest.raises(ValueError, match=f"{len(SOURCES)} lines in .*, {len(SOURCES) - 1} in"):
        prepare((files[0], short), tmp_path / "a")
    latin = tmp_path / "latin.de"
    latin.write_bytes(b"ok\nnot utf-8 \xe9\n" + b"x\n" * (len(SOURCES) - 2))
    with pytest.raises(ValueError, match="not UTF-8 text: line 2, byte 10"):
        prepare((files[0], str(latin)), tmp_path / "b")
    with pytest.raises(ValueError, match="max_words=1, which leaves none"):
        prepare(files, tmp_path / "c", max_words=1)
    with pytest.raises(ValueError, match="argument vocabulary.*Received: vocabulary=3"):
        prepare(files, tmp_path / "d", vocabulary=3)
    with pytest.raises(ValueError, match="argument chunk_size"):
        prepare(files, tmp_path / "e", chunk_size=0)
    with pytest.raises(ValueError, match="argument target_ids. Expected None"):
        BucketedBatches(prepare(files, tmp_path / "f"), [[4]])
    with pytest.raises(ValueError, match="target_ids=None"):
        BucketedBatches([[4]])


def test_bucketed_batches_from_disk_equal_those_from_lists(files, tmp_path):
    corpus = prepare(files, tmp_path / "corpus")
    sources = [corpus[i][0] for i in range(len(corpus))]
    targets = [corpus[i][1] for i in range(len(corpus))]
    options = {"tokens_per_batch": 24, "bucket_width": 4, "seed": 5, "batch_multiple": 2}
    from_disk = BucketedBatches(corpus, **options).shard(1, 2)
    from_lists = BucketedBatches(sources, targets, **options).shard(1, 2)
    for _ in range(2):
        assert len(from_disk) == len(from_lists) > 1
        for index in range(len(from_disk)):
            (source, target_in), target_out = from_disk[index]
            (expected_source, expected_in), expected_out = from_lists[index]
            np.testing.assert_array_equal(source, expected_source)
            np.testing.assert_array_equal(target_in, expected_in)
            np.testing.assert_array_equal(target_out, expected_out)
        from_disk.on_epoch_end()
        from_lists.on_epoch_end()
    real = corpus.target_lengths.sum() + len(corpus)
    assert from_disk.target_tokens() == from_lists.target_tokens() == real
    assert from_disk.padding_share() == from_lists.padding_share()


def test_a_corpus_pickles_by_its_path(files, tmp_path):
    corpus = prepare(files, tmp_path / "corpus")
    data = pickle.dumps(corpus)
    assert len(data) < 2000  # the path and the record, not the ids
    again = pickle.loads(data)
    for i in range(len(corpus)):
        assert [x.tolist() for x in again[i]] == [x.tolist() for x in corpus[i]]


def test_the_command_line_prepares_the_same_corpus(files, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "--vocabulary-size" in capsys.readouterr().out
    argv = ["--source", files[0], "--target", files[1], "--vocabulary-size", "60"]
    assert main([*argv, "--out", str(tmp_path / "cli"), "--chunk-size", "4"]) == 0
    out = capsys.readouterr().out
    assert f"{len(SOURCES)} pairs kept (0 over max_words)" in out and "tokens/s" in out
    direct = prepare(files, tmp_path / "direct")
    cli = PreparedCorpus(tmp_path / "cli")
    assert cli.vocabulary == direct.vocabulary
    for i in range(len(cli)):
        assert [x.tolist() for x in cli[i]] == [x.tolist() for x in direct[i]]
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 2
    assert "holds a prepared corpus already" in capsys.readouterr().err


def test_python_m_prepare_answers_help_without_keras_and_prepares(files, tmp_path):
    """The real command line: `--help` answers without importing Keras (at once, where
    Keras' import takes seconds), and a run prepares the corpus the function does."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-X", "importtime", "-m", "keras_luong.prepare"]
    shown = subprocess.run(
        [*command, "--help"], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert shown.returncode == 0 and "--vocabulary-size" in shown.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in shown.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "keras_luong" in imported and "argparse" in imported
    assert not {"keras", "numpy"} & imported
    argv = ["--source", str(files[0]), "--target", str(files[1]), "--vocabulary-size", "60"]
    argv.append("--quiet")
    run = subprocess.run(
        [*command[:1], "-m", "keras_luong.prepare", *argv, "--out", str(tmp_path / "cli")],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    direct = prepare(files, tmp_path / "direct")
    cli = PreparedCorpus(tmp_path / "cli")
    assert cli.vocabulary == direct.vocabulary and len(cli) == len(direct) == len(SOURCES)
    for i in range(len(cli)):
        assert [x.tolist() for x in cli[i]] == [x.tolist() for x in direct[i]]
