"""The Multi30k loader (keras_luong.datasets.multi30k): files read from a path or downloaded and
checked against their checksums; no Multi30k text ships in the package."""

import os

import keras
import pytest

from keras_luong.datasets import multi30k
from tests.corpora import ENGLISH, GERMAN, sha256, write
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the Multi30k loader (no backend)")


def _fake_multi30k(tmp_path, monkeypatch, compress=True):
    """A folder laid out as the official files, with our own sentences; the sha256 table
    patched to their hashes."""
    hashes = {}
    splits = {"train": (0, 4), "validation": (4, 5), "test2016": (5, 6)}
    for split, (start, stop) in splits.items():
        for tokenized in (True, False):
            for language, lines in (("en", ENGLISH), ("de", GERMAN)):
                chosen = lines[start:stop]
                if not tokenized:
                    chosen = [line.capitalize() for line in chosen]
                name = multi30k.file_name(split, language, tokenized)
                write(tmp_path / name, chosen, compress)
                hashes[name] = sha256(chosen)
    monkeypatch.setattr(multi30k, "SHA256", hashes)
    return splits


def test_load_data_from_a_path_checks_every_file(tmp_path, monkeypatch):
    splits = _fake_multi30k(tmp_path, monkeypatch)
    data = multi30k.load_data(path=str(tmp_path))
    for split, (start, stop) in splits.items():
        assert data[split] == (ENGLISH[start:stop], GERMAN[start:stop])
    raw = multi30k.load_data(path=str(tmp_path), tokenized=False, source_language="de",
                             target_language="en")  # fmt: skip
    assert raw["train"][0][0] == "Ein hund rennt auf dem gras ."
    # A damaged file is named with both hashes.
    write(tmp_path / "val.lc.norm.tok.de", ["something else"], compress=True)
    with pytest.raises(ValueError, match=r"val\.lc\.norm\.tok\.de\.gz does not hold the official"):
        multi30k.load_data(path=str(tmp_path))
    os.remove(tmp_path / "val.lc.norm.tok.de.gz")
    with pytest.raises(ValueError, match=r"val\.lc\.norm\.tok\.de \(or .*\.gz\) is missing"):
        multi30k.load_data(path=str(tmp_path))


def test_load_data_downloads_the_official_files(tmp_path, monkeypatch):
    _fake_multi30k(tmp_path, monkeypatch, compress=False)
    fetched = []

    def get_file(fname, origin, cache_subdir):
        fetched.append((fname, origin, cache_subdir))
        local = tmp_path / fname
        if fname.endswith(".gz"):  # the raw files are published compressed
            write(local.with_suffix(""), (tmp_path / fname[:-3]).read_text().splitlines(), True)
        return str(local)

    monkeypatch.setattr(keras.utils, "get_file", get_file)
    data = multi30k.load_data()
    assert data["validation"] == (ENGLISH[4:5], GERMAN[4:5])
    root = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/"
    assert ("val.lc.norm.tok.de", root + "tok/val.lc.norm.tok.de", "datasets/multi30k") in fetched
    multi30k.load_data(tokenized=False)
    assert ("train.en.gz", root + "raw/train.en.gz", "datasets/multi30k") in fetched


def test_load_data_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="source_language='fr'"):
        multi30k.load_data(path=str(tmp_path), source_language="fr")
    with pytest.raises(ValueError, match="two different languages"):
        multi30k.load_data(path=str(tmp_path), source_language="de")
    with pytest.raises(ValueError, match=r"path='.*nowhere'"):
        multi30k.load_data(path=str(tmp_path / "nowhere"))


def test_no_multi30k_text_in_the_package():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    banned = {"train.en", "train.de", "val.en", "val.de", "test_2016_flickr.en"}
    for folder, _, files in os.walk(root):
        if any(part.startswith(".") for part in folder[len(root) :].split(os.sep)):
            continue  # .venv, .cache, .git
        for name in files:
            assert name.removesuffix(".gz") not in banned, os.path.join(folder, name)
            assert ".lc.norm.tok." not in name, os.path.join(folder, name)
