"""A model's vocabularies, kept on it and saved in its `.keras` file's assets, so that a loaded
model translates strings."""

import json
import os

from keras_luong.data import token_ids


class VocabularyAssetsMixin:
    """`set_vocabularies`, and the `.keras` asset hooks that save and load the vocabularies. The
    model provides `source_vocabulary_size` and `target_vocabulary_size`."""

    def set_vocabularies(self, source_vocabulary, target_vocabulary):
        """Keeps the two vocabularies on the model (as its `source_vocabulary` and
        `target_vocabulary` attributes): `translate` and `BleuCallback` use them by default,
        and `model.save` writes them into the `.keras` file, so `keras.saving.load_model`
        gives back a model that translates strings.

        Args:
            source_vocabulary: A `keras_luong.Vocabulary` or `SubwordVocabulary` of
                `source_vocabulary_size` ids.
            target_vocabulary: Likewise, of `target_vocabulary_size` ids (the same object
                for a shared vocabulary).
        """
        check_vocabulary_size("source", source_vocabulary, self.source_vocabulary_size)
        check_vocabulary_size("target", target_vocabulary, self.target_vocabulary_size)
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary

    def save_assets(self, dir_path):
        """Writes the model's vocabularies, if it has them, into the `.keras` file's assets."""
        for side in ("source", "target"):
            value = getattr(self, f"{side}_vocabulary", None)
            if value is not None:
                with open(f"{dir_path}/{side}_vocabulary.json", "w", encoding="utf-8") as f:
                    json.dump(token_ids.serialize(value), f, ensure_ascii=False)

    def load_assets(self, dir_path):
        for side in ("source", "target"):
            path = f"{dir_path}/{side}_vocabulary.json"
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    setattr(self, f"{side}_vocabulary", token_ids.deserialize(json.load(f)))


def check_vocabulary_size(side, vocabulary, size):
    if len(vocabulary) != size:
        raise ValueError(
            f"The {side} vocabulary does not match the model: it has "
            f"{len(vocabulary)} ids, the model's {side}_vocabulary_size is {size}. "
            f"Received: {side}_vocabulary of size {len(vocabulary)}"
        )
