"""The callbacks (keras_luong.training.callbacks): BLEU and attention logged each epoch,
sigma narrowed."""

import os

import keras
import numpy as np
import pytest

from keras_luong import BleuCallback, LocalAttention, LuongSeq2Seq, SigmaSchedule
from keras_luong.data.vocabulary import Vocabulary
from keras_luong.evaluation import corpus_bleu
from keras_luong.training.losses import SequenceLoss
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


def test_alignment_statistics_of_known_alignments():
    """Hand-computed cases: attention that walks along the source, that sits on one word,
    that spreads evenly, and a reversed walk; padding never counts."""
    import numpy as np

    from keras_luong.training.callbacks import alignment_statistics

    source_mask = np.array([[True] * 4, [True, True, True, False]])
    target_mask = np.array([[True, True, True, False], [True, True, True, False]])
    walk = np.zeros((2, 4, 4), "float32")
    for t in range(3):
        walk[0, t, t] = walk[1, t, 2 - t] = 1.0  # row 1 walks backwards
    stats = alignment_statistics(walk, source_mask, target_mask)
    assert stats["entropy"] == pytest.approx(0.0)
    assert stats["diagonal"] == pytest.approx((1.0 - 1.0) / 2)  # +1 and -1
    # Row 0 moves from word 0 to word 2 of 4 (2 / 3), row 1 over all of its 3 (2 / 2).
    assert stats["span"] == pytest.approx((2 / 3 + 1.0) / 2)
    stuck = np.zeros((2, 4, 4), "float32")
    stuck[:, :, 1] = 1.0
    assert alignment_statistics(stuck, source_mask, target_mask) == pytest.approx(
        {"entropy": 0.0, "diagonal": 0.0, "span": 0.0}
    )
    uniform = source_mask[:, None, :] / source_mask.sum(1)[:, None, None]
    uniform = np.repeat(uniform, 4, axis=1)
    assert alignment_statistics(uniform, source_mask, target_mask) == pytest.approx(
        {"entropy": 1.0, "diagonal": 0.0, "span": 0.0}
    )
    # Half on one word, half on the next: H = log 2, over log 4 (row 0) and log 3 (row 1).
    half = np.zeros((2, 4, 4), "float32")
    for t in range(3):
        half[0, t, t : t + 2] = 0.5
        half[1, t, [0, 1]] = 0.5
    half[1, 2, [0, 1]] = 0.0
    half[1, 2, 2] = 1.0  # the last step moves: positions 0.5, 0.5, 2
    stats = alignment_statistics(half, source_mask, target_mask)
    entropies = [np.log(2) / np.log(4)] * 3 + [np.log(2) / np.log(3)] * 2 + [0.0]
    assert stats["entropy"] == pytest.approx(np.mean(entropies))
    row1 = np.corrcoef([0, 1, 2], [0.5, 0.5, 2.0])[0, 1]
    assert stats["diagonal"] == pytest.approx((1.0 + row1) / 2)
    # Centroids 0.5, 1.5, 2.5 of 4 words, and 0.5, 0.5, 2 of 3.
    assert stats["span"] == pytest.approx((2 / 3 + 1.5 / 2) / 2)
    with pytest.raises(ValueError, match="target_mask"):
        alignment_statistics(walk, source_mask, target_mask[:, :2])


def test_alignment_span_sees_a_walk_over_part_of_the_source():
    """A walk over the second half of the source is a perfect diagonal; only the span tells
    it from a walk over the whole. Weights that do not sum to one (local-p's Gaussian without
    renormalising) move by their centroid, and a step with no weight at all is left out."""
    import numpy as np

    from keras_luong.training.callbacks import alignment_statistics

    source_mask = np.ones((1, 9), bool)
    target_mask = np.ones((1, 5), bool)
    whole = np.zeros((1, 5, 9), "float32")
    band = np.zeros((1, 5, 9), "float32")
    for t in range(5):
        whole[0, t, 2 * t] = 1.0  # words 0, 2, 4, 6, 8
        band[0, t, 4 + t] = 1.0  # words 4 to 8
    assert alignment_statistics(whole, source_mask, target_mask)["diagonal"] == pytest.approx(1)
    assert alignment_statistics(band, source_mask, target_mask)["diagonal"] == pytest.approx(1)
    assert alignment_statistics(whole, source_mask, target_mask)["span"] == pytest.approx(1.0)
    assert alignment_statistics(band, source_mask, target_mask)["span"] == pytest.approx(4 / 8)
    # Shrunk weights: step t's mass 1 / (t + 1), spread over words 4 + t and 5 + t in 1 : 3,
    # so its centroid is 4.75 + t whatever the mass; the last step has no weight at all.
    shrunk = np.zeros((1, 5, 9), "float32")
    for t in range(4):
        shrunk[0, t, [4 + t, 5 + t]] = np.array([0.25, 0.75]) / (t + 1)
    stats = alignment_statistics(shrunk, source_mask, target_mask)
    assert stats["span"] == pytest.approx((7.75 - 4.75) / 8)


def test_alignment_span_is_not_moved_by_a_few_tokens_that_attend_elsewhere():
    """The span is the median slope's walk, not the centroids' range: a first token on the
    source's first word ahead of a walk over its second half is still a walk over half of
    it, where the range (0 to 8 of 9 words) would say the whole. A jump from one end to the
    other counts as a walk over the whole source, and no more."""
    import numpy as np

    from keras_luong.training.callbacks import alignment_statistics

    source_mask = np.ones((1, 9), bool)
    target_mask = np.ones((1, 5), bool)
    outlier = np.zeros((1, 5, 9), "float32")
    outlier[0, 0, 0] = 1.0
    for t in range(1, 5):
        outlier[0, t, 4 + t] = 1.0  # words 5 to 8, one a step
    # Slopes 5, 3, 7/3, 2 (with step 0) and six of 1 (without): median 1, over 4 steps of 8.
    assert alignment_statistics(outlier, source_mask, target_mask)["span"] == pytest.approx(0.5)
    jump = np.zeros((1, 4, 9), "float32")
    jump[0, :2, 0] = jump[0, 2:, 8] = 1.0
    # Slopes 0, 4, 8/3, 8, 4, 0: median 10/3, times 3 steps is 10 words of 8: at most 1.
    stats = alignment_statistics(jump, source_mask, np.ones((1, 4), bool))
    assert stats["span"] == pytest.approx(1.0)


def test_attention_callback_logs_the_models_alignment_statistics():
    """The logged numbers are `alignment_statistics` of the model's own teacher-forced
    alignments on the pairs, after the epoch's training."""
    import numpy as np

    from keras_luong import AttentionCallback
    from keras_luong.training.callbacks import alignment_statistics

    words = Vocabulary.from_corpus(ENGLISH + GERMAN, split="whitespace")
    keras.utils.set_random_seed(1)
    model = tiny_model(words)
    source = words.encode_batch(ENGLISH)
    target_in = words.encode_batch(GERMAN, start=True)
    target_out = words.encode_batch(GERMAN, end=True)
    attention = AttentionCallback(source[:4], target_in[:4], batch_size=3)
    history = model.fit((source, target_in), target_out, epochs=2, verbose=0, callbacks=[attention])
    _, weights = model((source[:4], target_in[:4]), return_attention_scores=True)
    expected = alignment_statistics(
        keras.ops.convert_to_numpy(weights), source[:4] != 0, target_in[:4] != 0
    )
    assert len(history.history["val_attention_entropy"]) == 2
    # The callback's batches of 3 and 1 round differently in float32 from one batch of 4, and
    # the correlation of an untrained model's nearly even alignments magnifies that (TensorFlow
    # measured a relative 1.6e-5): a relative 1e-3, far below what any mistake would move.
    logged = history.history
    assert logged["val_attention_entropy"][-1] == pytest.approx(expected["entropy"], rel=1e-4)
    assert logged["val_attention_diagonal"][-1] == pytest.approx(expected["diagonal"], rel=1e-3)
    assert logged["val_attention_span"][-1] == pytest.approx(expected["span"], rel=1e-3)
    assert len(logged["val_attention_span"]) == 2
    # ...and tells the epochs apart: the alignments of before the last epoch's training fail it.
    assert logged["val_attention_diagonal"][0] != pytest.approx(expected["diagonal"], rel=1e-3)
    assert 0.9 < expected["entropy"] <= 1  # an untrained model attends nearly evenly
    with pytest.raises(ValueError, match="target_in"):
        AttentionCallback(source, target_in[:2])
    with pytest.raises(ValueError, match="source"):
        AttentionCallback(np.zeros((0, 3), "int32"), target_in[:0])


def annealed_model(**kwargs):
    return LuongSeq2Seq(
        12, 12, units=8, embedding_dim=4, alignment="local-p", window=6,
        attention_arguments={"initial_sigma": 8.0, "sigma": 2.0}, **kwargs,
    )  # fmt: skip


ANNEALED_SOURCE = np.array([[4, 5, 6, 7, 8, 9], [7, 8, 9, 10, 0, 0]])
ANNEALED_TARGET_IN = np.array([[1, 4, 5, 6, 7], [1, 7, 8, 9, 0]])
ANNEALED_TARGET_OUT = np.array([[4, 5, 6, 7, 2], [7, 8, 9, 2, 0]])


def test_sigma_schedule_narrows_sigma_geometrically_and_the_train_step_reads_it():
    model = annealed_model()
    # A zero learning rate: the weights stay, so each epoch's training loss is the loss of
    # the model at that epoch's sigma.
    model.compile(keras.optimizers.SGD(0.0), SequenceLoss())
    schedule = SigmaSchedule(epochs=2)
    data = ((ANNEALED_SOURCE, ANNEALED_TARGET_IN), ANNEALED_TARGET_OUT)
    history = model.fit(*data, epochs=4, verbose=0, callbacks=[schedule])
    # 8 · (2 / 8) ** (e / 2): 8, 4, then 2 from the second epoch on.
    assert schedule.history == [8.0, 4.0, 2.0, 2.0]
    attention = model.decoder.cell.attention
    losses = []
    for sigma in schedule.history:
        attention.sigma_variable.assign(sigma)
        losses.append(model.evaluate(*data, verbose=0))
    np.testing.assert_allclose(history.history["loss"], losses, rtol=1e-5)
    assert losses[0] != pytest.approx(losses[2])  # sigma matters to these pairs


def test_sigma_schedule_refuses_what_it_cannot_narrow():
    with pytest.raises(ValueError, match="epochs=0"):
        SigmaSchedule(epochs=0)
    with pytest.raises(ValueError, match="argument layers"):
        SigmaSchedule(layers=[LocalAttention()])  # no initial_sigma
    model = LuongSeq2Seq(12, 12, units=8, embedding_dim=4, alignment="local-p")
    model.compile("adam", SequenceLoss())
    with pytest.raises(ValueError, match="found no LocalAttention layer built with initial_sigma"):
        model.fit(
            (ANNEALED_SOURCE, ANNEALED_TARGET_IN), ANNEALED_TARGET_OUT, epochs=1, verbose=0,
            callbacks=[SigmaSchedule()],
        )  # fmt: skip
