"""The BLEU callback (keras_luong.callbacks): BLEU logged each epoch, for checkpoints to monitor."""

import os

import keras
import pytest

from keras_luong.callbacks import BleuCallback
from keras_luong.evaluation import corpus_bleu
from keras_luong.vocabulary import Vocabulary
from tests.corpora import ENGLISH, GERMAN, tiny_model


def test_bleu_callback_logs_for_checkpoints(tmp_path):
    words = Vocabulary.from_corpus(ENGLISH + GERMAN, split="whitespace")
    model = tiny_model(words)
    model.set_vocabularies(words, words)
    source = words.encode_batch(ENGLISH)
    target_in = words.encode_batch(GERMAN, start=True)
    target_out = words.encode_batch(GERMAN, end=True)
    bleu = BleuCallback(ENGLISH, GERMAN, max_length=12, frequency=2, verbose=0)
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "best.keras"), monitor="val_bleu", mode="max", save_best_only=True
    )
    # Epoch 1 has no score (frequency 2): Keras' checkpoint says so and saves nothing.
    with pytest.warns(UserWarning, match="only with val_bleu available"):
        history = model.fit(
            (source, target_in), target_out, epochs=3, verbose=0, callbacks=[bleu, checkpoint]
        )
    # Scored on epochs 2 and 3 (the last), as validation_freq logs.
    assert len(history.history["val_bleu"]) == 2
    hypotheses = model.translate(ENGLISH, max_length=12)
    expected = corpus_bleu(hypotheses, GERMAN)
    assert history.history["val_bleu"][-1] == pytest.approx(expected)
    # The length ratio beside it: the output's words over the references'.
    words_out = sum(len(h.split()) for h in hypotheses)
    ratio = words_out / sum(len(r.split()) for r in GERMAN)
    assert history.history["val_bleu_length_ratio"][-1] == pytest.approx(ratio)
    assert os.path.exists(tmp_path / "best.keras")
    with pytest.raises(ValueError, match="6 sources and 5 references"):
        BleuCallback(ENGLISH, GERMAN[:5], max_length=4)
    with pytest.raises(ValueError, match="frequency=0"):
        BleuCallback(ENGLISH, GERMAN, max_length=4, frequency=0)
