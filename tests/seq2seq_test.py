import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.datasets import dates
from tests.test_case import BACKEND, assert_allclose, fit_lowers_loss, save_and_load

DATA = dates.load_data(400, seed=0)
SOURCE, TARGET_IN, TARGET_OUT = (
    DATA["train"][k][:16] for k in ("source", "target_in", "target_out")
)
VARIANTS = {
    "global-feeding": {"alignment": "global", "score_mode": "general"},
    "local-m-concat": {"alignment": "monotonic", "score_mode": "concat", "window": 3},
    "local-p-stacked": {"alignment": "predictive", "decoder_layers": 2, "input_feeding": False},
}


def make_model(**kwargs):
    model = LuongSeq2Seq(
        len(DATA["source_vocabulary"]), len(DATA["target_vocabulary"]),
        units=16, embedding_dim=8, **kwargs,
    )  # fmt: skip
    model((SOURCE[:2], TARGET_IN[:2]))
    return model


def teacher_forced_argmax(model, source, generated):
    start = np.full((len(generated), 1), model.start_token, "int32")
    logits = model.predict((source, np.concatenate([start, generated[:, :-1]], 1)), verbose=0)
    logits[..., [0, model.start_token]] = -np.inf  # never generated
    return np.argmax(logits, -1)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_greedy_decoding_equals_argmax_of_teacher_forcing(variant):
    model = make_model(**VARIANTS[variant])
    # The decoding loop is compiled (XLA on TensorFlow, jit on JAX); torch stays eager.
    assert model.generator(dates.TARGET_LENGTH).jit_compile == (BACKEND != "torch")
    generated = model.generate(SOURCE, max_length=dates.TARGET_LENGTH)
    assert generated.shape == (16, dates.TARGET_LENGTH)
    np.testing.assert_array_equal(generated, teacher_forced_argmax(model, SOURCE, generated))


def test_generate_returns_the_alignments_of_its_output():
    model = make_model(alignment="predictive", window=3)
    generated, weights = model.generate(
        SOURCE, max_length=dates.TARGET_LENGTH, return_attention_scores=True
    )
    np.testing.assert_array_equal(generated, model.generate(SOURCE, dates.TARGET_LENGTH))
    assert weights.shape == (16, dates.TARGET_LENGTH, SOURCE.shape[1])
    # Zero on source padding; local-p weights are a softmax times a Gaussian, so in (0, 1].
    assert np.all(weights[SOURCE[:, None, :].repeat(dates.TARGET_LENGTH, 1) == 0] == 0)
    assert np.all((weights.sum(-1) > 0) & (weights.sum(-1) <= 1 + 1e-5))


def test_beam_search_of_one_is_greedy_and_of_full_width_is_exact():
    model = make_model()
    greedy = model.generate(SOURCE, max_length=dates.TARGET_LENGTH)
    np.testing.assert_array_equal(
        model.generate(SOURCE, max_length=dates.TARGET_LENGTH, sampler="beam", num_beams=1),
        greedy,
    )
    # Two steps with as many beams as allowed tokens: beam search is exhaustive, so it must
    # find the most likely pair of tokens, which brute force over every pair finds too.
    vocabulary = model.target_vocabulary_size
    allowed = [i for i in range(vocabulary) if i not in (0, model.start_token)]
    beam = model.generate(SOURCE, max_length=2, sampler="beam", num_beams=len(allowed))
    pairs = np.array([(a, b) for a in allowed for b in allowed], "int32")
    source = np.repeat(SOURCE, len(pairs), axis=0)
    tokens = np.tile(pairs, (len(SOURCE), 1))
    start = np.full((len(tokens), 1), model.start_token, "int32")
    logits = model.predict((source, np.concatenate([start, tokens[:, :1]], 1)), verbose=0)
    logits[..., [0, model.start_token]] = -np.inf
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    scores = np.take_along_axis(log_probs, tokens[..., None], -1)[..., 0].sum(-1)
    best = pairs[np.argmax(scores.reshape(len(SOURCE), len(pairs)), -1)]
    np.testing.assert_array_equal(beam, best)


def test_translate_takes_and_gives_strings():
    model = make_model()
    texts = [e["source"] for e in DATA["train"]["examples"][:3]]
    translated = model.translate(
        texts, DATA["source_vocabulary"], DATA["target_vocabulary"], dates.TARGET_LENGTH
    )
    length = max(len(t) for t in texts)
    source = np.array([DATA["source_vocabulary"].encode(t, length) for t in texts], "int32")
    expected = model.generate(source, max_length=dates.TARGET_LENGTH)
    assert translated == [DATA["target_vocabulary"].decode(ids) for ids in expected]
    assert all(set(t) <= set(dates.TARGET_CHARS) for t in translated)


def test_fit_lowers_the_loss():
    model = make_model(alignment="predictive", window=4)
    before, after = fit_lowers_loss(model, (SOURCE, TARGET_IN), TARGET_OUT, learning_rate=1.0)
    assert np.isfinite(after) and after < before - 1e-3


def test_keras_file_round_trip(tmp_path):
    model = make_model(alignment="monotonic", window=2, decoder_layers=2)
    _, loaded = save_and_load(model, tmp_path)
    assert_allclose(
        loaded.predict((SOURCE, TARGET_IN), verbose=0),
        model.predict((SOURCE, TARGET_IN), verbose=0),
    )
    np.testing.assert_array_equal(
        loaded.generate(SOURCE, max_length=dates.TARGET_LENGTH),
        model.generate(SOURCE, max_length=dates.TARGET_LENGTH),
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [({"alignment": "local"}, "alignment='local'"), ({"units": 15}, "units=15")],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LuongSeq2Seq(10, 10, **kwargs)


def test_exported_saved_model_translates_like_keras(tmp_path):
    """The SavedModel, loaded by TensorFlow alone in a fresh process, decodes like Keras."""
    model = make_model()
    expected = model.generate(SOURCE, max_length=dates.TARGET_LENGTH)
    export_dir = str(tmp_path / "saved_model")
    if BACKEND == "torch":
        # torch cannot export: save .keras, load and export it on TensorFlow.
        keras_path, _ = save_and_load(model, tmp_path)
        export_on_tensorflow(keras_path, export_dir)
    else:
        model.export_generator(export_dir, max_length=dates.TARGET_LENGTH)
    np.save(tmp_path / "source.npy", SOURCE)
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, tensorflow as tf
        exported = tf.saved_model.load({export_dir!r})
        out = exported.serve(tf.constant(np.load({str(tmp_path / "source.npy")!r})))
        np.save({str(tmp_path / "out.npy")!r}, out.numpy())
        assert "keras_luong" not in sys.modules
        """
    )
    run_python(script, "tensorflow")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def export_on_tensorflow(keras_path, export_dir):
    script = textwrap.dedent(
        f"""
        import keras, keras_luong
        model = keras.saving.load_model({keras_path!r})
        model.export_generator({export_dir!r}, max_length={dates.TARGET_LENGTH})
        """
    )
    run_python(script, "tensorflow")


def run_python(script, backend):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        pytest.fail(result.stderr[-4000:])
