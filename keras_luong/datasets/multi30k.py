"""Multi30k task 1, English–German (Elliott et al. 2016): parallel text from a path or the web.

The standard small translation benchmark of image captions: 29,000 training pairs, 1,014
validation pairs and 1,000 test pairs (`test_2016_flickr`, "test2016"), about 13 tokens a
sentence. Its licence (non-commercial research and education, derived from Flickr30K) forbids
shipping it, so it is not in this package: `load_data()` downloads the official files of the
`multi30k/dataset` repository into the Keras cache (`~/.keras/datasets/multi30k`, or
`$KERAS_HOME`), or reads a local copy with `path=`. Every file is checked against the sha256 of
its text.

    from keras_luong.datasets import multi30k
    data = multi30k.load_data()                 # or load_data(path="/data/multi30k")
    english, german = data["train"]             # two lists of 29,000 strings

`tokenized=True` (the default) gives the official preprocessing: lowercased, punctuation
normalised and Moses-tokenized, the text the published BLEU scores are computed on;
`tokenized=False` gives the raw sentences (original case, untokenized).

Cite Elliott, Frank, Sima'an and Specia, "Multi30K: Multilingual English-German Image
Descriptions", 5th Workshop on Vision and Language, 2016.
"""

import hashlib
import os

from keras_luong.data.parallel_text import (
    lines_of,
    paired,
    read_bytes,
)

SPLITS = {"train": "train", "validation": "val", "test2016": "test_2016_flickr"}
LANGUAGES = ("en", "de")
ORIGIN = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/"
# sha256 of each file's uncompressed text.
SHA256 = {
    "test_2016_flickr.de": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "test_2016_flickr.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test_2016_flickr.lc.norm.tok.de": (
        "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4"
    ),
    "test_2016_flickr.lc.norm.tok.en": (
        "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2"
    ),
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.lc.norm.tok.de": "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
    "train.lc.norm.tok.en": "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
    "val.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.lc.norm.tok.de": "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
    "val.lc.norm.tok.en": "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
}


def file_name(split, language, tokenized=True):
    """The official name of a split's file, e.g. `train.lc.norm.tok.en` or `val.de`."""
    return f"{SPLITS[split]}{'.lc.norm.tok' if tokenized else ''}.{language}"


def load_data(path=None, tokenized=True, source_language="en", target_language="de"):
    """The train, validation and test2016 pairs.

    Args:
        path: A folder holding the official files (each plain or gzip-compressed as
            `<name>.gz`). `None` downloads the ones needed into the Keras cache (once).
        tokenized: The official lowercased, tokenized text (`True`, the default) or the raw
            sentences (`False`).
        source_language: `"en"` (the default) or `"de"`.
        target_language: `"de"` (the default) or `"en"`.

    Returns:
        A dict `{"train": (sources, targets), "validation": ..., "test2016": ...}` of lists of
        strings, line `i` of `sources` translated by line `i` of `targets`.

    Raises:
        ValueError: A file is missing from `path`, its text does not match its sha256, or
            the two sides of a split have different numbers of lines.
    """
    for name, value in (("source_language", source_language),
                        ("target_language", target_language)):  # fmt: skip
        if value not in LANGUAGES:
            raise ValueError(
                f"Invalid value for argument {name}. Expected one of {LANGUAGES}. "
                f"Received: {name}={value!r}"
            )
    if source_language == target_language:
        raise ValueError(
            "Expected two different languages. Received: "
            f"source_language={source_language!r}, target_language={target_language!r}"
        )
    if path is not None and not os.path.isdir(path):
        raise ValueError(
            f"Invalid value for argument path. Expected a folder holding the Multi30k files. "
            f"Received: path={path!r}"
        )
    data = {}
    for split in SPLITS:
        sides = []
        for language in (source_language, target_language):
            name = file_name(split, language, tokenized)
            local = _local_file(path, name) if path is not None else _download(name)
            sides.append(_read_checked(local, name))
        data[split] = paired(*sides, *(file_name(split, x, tokenized) for x in
                                        (source_language, target_language)))  # fmt: skip
    return data


def _local_file(folder, name):
    for candidate in (name, name + ".gz"):
        file = os.path.join(folder, candidate)
        if os.path.isfile(file):
            return file
    raise ValueError(
        f"The Multi30k file {name} (or {name}.gz) is missing from path={folder!r}. The "
        f"official files are in data/task1/raw and data/task1/tok of the multi30k/dataset "
        f"repository; load_data(path=None) downloads them."
    )


def _download(name):
    import keras

    # The raw files are published gzip-compressed, the tokenized ones as plain text.
    tokenized = ".lc.norm.tok." in name
    remote = name if tokenized else name + ".gz"
    origin = ORIGIN + ("tok/" if tokenized else "raw/") + remote
    return keras.utils.get_file(remote, origin=origin, cache_subdir="datasets/multi30k")


def _read_checked(file, name):
    content = read_bytes(file)
    digest = hashlib.sha256(content).hexdigest()
    if digest != SHA256[name]:
        raise ValueError(
            f"The Multi30k file {file} does not hold the official {name}: its text has "
            f"sha256 {digest}, expected {SHA256[name]}. Delete it (a download is then "
            f"fetched again) or point path= at the official files."
        )
    return lines_of(content.decode("utf-8"))
