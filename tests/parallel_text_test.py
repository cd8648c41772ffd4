"""Parallel text files (keras_luong.data.parallel_text): aligned lines read from plain or gzip
files, and files that are missing, unequal, not gzip or not UTF-8 named in the error."""

import gzip

import pytest

from keras_luong.data.parallel_text import load_parallel_text
from tests.corpora import ENGLISH, GERMAN, write
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("reading parallel text files (no backend)")


def test_parallel_text_files_name_what_is_wrong(tmp_path):
    import pathlib

    from keras_luong.data.parallel_text import load_parallel_text

    source, target = tmp_path / "a.en", tmp_path / "a.de"
    source.write_text("one\ntwo\n", encoding="utf-8")
    target.write_text("eins\nzwei\n", encoding="utf-8")
    assert load_parallel_text(pathlib.Path(source), target) == (["one", "two"], ["eins", "zwei"])
    fake_gzip = tmp_path / "b.en.gz"
    fake_gzip.write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(ValueError, match="b.en.gz is named .gz but is not gzip"):
        load_parallel_text(fake_gzip, target)
    latin = tmp_path / "c.de"
    latin.write_bytes("f\u00fcr\nzwei\n".encode("latin-1"))
    with pytest.raises(ValueError, match="c.de is not UTF-8"):
        load_parallel_text(source, latin)
    real_gzip = tmp_path / "d.en.gz"
    with gzip.open(real_gzip, "wt", encoding="utf-8") as f:
        f.write("one\ntwo\n")
    assert load_parallel_text(str(real_gzip), str(target))[0] == ["one", "two"]
    truncated = tmp_path / "e.en.gz"
    truncated.write_bytes(real_gzip.read_bytes()[:-6])
    with pytest.raises(ValueError, match="e.en.gz ends before its gzip stream does"):
        load_parallel_text(truncated, target)
    with pytest.raises(TypeError, match="Expected a path"):
        load_parallel_text(3, target)


@pytest.mark.parametrize("compress", [False, True])
def test_load_parallel_text_reads_aligned_lines(tmp_path, compress):
    source = write(tmp_path / "corpus.en", ENGLISH, compress)
    target = write(tmp_path / "corpus.de", [g + "\r" for g in GERMAN], compress)
    english, german = load_parallel_text(source, target)
    assert english == ENGLISH and german == GERMAN  # the \r of Windows line ends dropped


def test_load_parallel_text_refuses_unequal_or_missing_files(tmp_path):
    source = write(tmp_path / "a.en", ENGLISH)
    target = write(tmp_path / "a.de", GERMAN[:-1])
    with pytest.raises(ValueError, match=r"6 lines in .*a\.en, 5 in .*a\.de"):
        load_parallel_text(source, target)
    with pytest.raises(ValueError, match=r"target_file=.*missing\.de"):
        load_parallel_text(source, str(tmp_path / "missing.de"))
