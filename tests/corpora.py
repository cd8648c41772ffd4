"""A few English-German sentence pairs written for the tests (no Multi30k text: its licence
forbids shipping it), a writer of small corpus files, and a tiny model to fit on them."""

import gzip
import hashlib

import keras

from keras_luong import LuongSeq2Seq

ENGLISH = [
    "a dog runs on the grass .",
    "two men play football in a park .",
    "a woman in a red dress sings .",
    "a little girl climbs a tree .",
    "the children are playing in the water .",
    "a man rides a bicycle down the street .",
]


GERMAN = [
    "ein hund rennt auf dem gras .",
    "zwei männer spielen fußball in einem park .",
    "eine frau in einem roten kleid singt .",
    "ein kleines mädchen klettert auf einen baum .",
    "die kinder spielen im wasser .",
    "ein mann fährt mit dem fahrrad die straße hinunter .",
]


def write(path, lines, compress=False):
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
        return str(path) + ".gz"
    path.write_bytes(data)
    return str(path)


def sha256(lines):
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest()


def tiny_model(vocabulary):
    model = LuongSeq2Seq(len(vocabulary), len(vocabulary), units=8, embedding_dim=4)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
