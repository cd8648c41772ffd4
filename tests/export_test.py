"""`export_generator`'s formats: each artifact run by its own runtime in a fresh process with
no Keras in it, giving `generate`'s ids for a batch with padding; and the refusals."""

import json
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_luong import BeamSearchSampler, LuongSeq2Seq, SubwordVocabulary, Vocabulary, samplers
from tests.corpora import ENGLISH, GERMAN
from tests.seq2seq_test import run_python
from tests.test_case import BACKEND, save_and_load

MAX_LENGTH = 6
# Rows of different lengths: the second and third are padded.
SOURCE = np.array([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0], [11, 0, 0, 0, 0]], "int32")


def spread_model():
    """A small model with spread-out logits: no near-ties for two runtimes' rounding to
    break differently."""
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(20, 25, units=8, embedding_dim=4)
    model((SOURCE, SOURCE))
    rng = np.random.default_rng(0)
    model.projection.kernel.assign(rng.normal(0, 1, (8, 25)).astype("float32"))
    return model


def export_onnx(model, tmp_path, decoding):
    """The model's ONNX file: written here on TensorFlow; from the other backends by the
    documented route, a `.keras` file loaded and exported on TensorFlow."""
    path = str(tmp_path / "generator.onnx")
    if BACKEND == "tensorflow":
        model.export_generator(path, MAX_LENGTH, format="onnx", **decoding)
        return path
    keras_path, _ = save_and_load(model, tmp_path)
    if not isinstance(decoding["sampler"], str):
        decoding = dict(decoding, sampler=samplers.serialize(decoding["sampler"]))
    script = f"""
        import keras
        from keras_luong import samplers
        model = keras.saving.load_model({keras_path!r})
        decoding = {decoding!r}
        if isinstance(decoding["sampler"], dict):
            decoding["sampler"] = samplers.deserialize(decoding["sampler"])
        model.export_generator({path!r}, {MAX_LENGTH}, format="onnx", **decoding)
        """
    run_python(textwrap.dedent(script), "tensorflow")
    return path


def run_onnx(path, tmp_path, source):
    """The ONNX file's outputs for `source`, run by onnxruntime alone."""
    np.save(tmp_path / "source.npy", source)
    script = f"""
        import sys, numpy as np, onnxruntime
        session = onnxruntime.InferenceSession({path!r})
        feed = {{session.get_inputs()[0].name: np.load({str(tmp_path / "source.npy")!r})}}
        outputs = session.run(None, feed)
        np.savez({str(tmp_path / "out.npz")!r}, *outputs)
        assert not {{"keras", "keras_luong", "tensorflow", "jax", "torch"}} & set(sys.modules)
        """
    run_python(textwrap.dedent(script), BACKEND)
    with np.load(tmp_path / "out.npz") as outputs:
        return [outputs[f"arr_{i}"] for i in range(len(outputs.files))]


@pytest.mark.parametrize(
    "decoding",
    [
        {"sampler": "greedy"},
        {"sampler": BeamSearchSampler(3, length_penalty=0.6)},
    ],
    ids=["greedy", "beam"],
)
def test_onnx_file_decodes_like_generate(tmp_path, decoding):
    model = spread_model()
    expected = model.generate(SOURCE, max_length=MAX_LENGTH, **decoding)
    [ids] = run_onnx(export_onnx(model, tmp_path, decoding), tmp_path, SOURCE)
    np.testing.assert_array_equal(ids, expected)
    # The batch and the source length stay dynamic: one row, shorter, as generate gives it.
    [one] = run_onnx(str(tmp_path / "generator.onnx"), tmp_path, SOURCE[1:2, :3])
    np.testing.assert_array_equal(
        one, model.generate(SOURCE[1:2, :3], max_length=MAX_LENGTH, **decoding)
    )


def test_onnx_file_returns_every_beam_with_its_score(tmp_path):
    """n-best: a sampler that returns all beams gives their ids and scores, as generate does,
    with n-gram blocking written into the logits inside the loop."""
    model = spread_model()
    sampler = BeamSearchSampler(3, return_all_beams=True, no_repeat_ngram_size=1)
    expected_ids, expected_scores = model.generate(SOURCE, max_length=MAX_LENGTH, sampler=sampler)
    path = export_onnx(model, tmp_path, {"sampler": sampler})
    ids, scores = run_onnx(path, tmp_path, SOURCE)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-5)
    for row in ids.reshape(-1, MAX_LENGTH):  # the ban at work: no token twice in a beam
        assert len(row[row > 0]) == len(set(row[row > 0]))


@pytest.mark.parametrize(
    "format, message",
    [
        ("litert", "TensorList"),
        ("torch", "torch.export cannot hold the decoding loop"),
        ("openvino", "not supported by export_generator"),
        ("tflite", r"expected one of \['onnx', 'tf_saved_model'\]"),
    ],
)
def test_formats_the_loop_cannot_go_to_are_refused(tmp_path, format, message):
    with pytest.raises(ValueError, match=f"{message}.*Received: format='{format}'"):
        spread_model().export_generator(str(tmp_path / "out"), MAX_LENGTH, format=format)


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow writes both formats")
def test_a_format_this_backend_cannot_write_says_where_to_export():
    formats = ["onnx"] + (["tf_saved_model"] if BACKEND == "torch" else [])
    for format in formats:
        with pytest.raises(ValueError, match="load it with KERAS_BACKEND=tensorflow") as info:
            spread_model().export_generator("unused", MAX_LENGTH, format=format)
        assert f"Received: format={format!r} on {BACKEND}" in str(info.value)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="ONNX is written from TensorFlow")
def test_onnx_refuses_a_keras_hub_sampler(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    with pytest.raises(ValueError, match="sampler=GreedySampler"):
        spread_model().export_generator(
            str(tmp_path / "g.onnx"),
            MAX_LENGTH,
            format="onnx",
            sampler=keras_hub.samplers.GreedySampler(),
        )


@pytest.mark.skipif(BACKEND != "tensorflow", reason="ONNX is written from TensorFlow")
def test_onnx_without_its_converter_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # an import of it fails
    with pytest.raises(ImportError, match=r"pip install 'keras-luong\[export\]'"):
        spread_model().export_generator(str(tmp_path / "g.onnx"), MAX_LENGTH, format="onnx")


# Texts for the text SavedModel: seen words, an empty text, and symbols never seen.
TEXTS = [ENGLISH[0], ENGLISH[3], "", "a dog ü ☃ sings", ENGLISH[1]]


def subword_model():
    """A small model with one SentencePiece vocabulary for both sides and spread-out logits
    (the end id less likely, so the translations have words)."""
    vocabulary = SubwordVocabulary.train(ENGLISH * 4 + GERMAN * 4, vocabulary_size=60)
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(60, 60, units=8, embedding_dim=4)
    model.set_vocabularies(vocabulary, vocabulary)
    ids = vocabulary.encode_batch(ENGLISH[:2])
    model((ids, ids))
    rng = np.random.default_rng(0)
    model.projection.kernel.assign(rng.normal(0, 1, (8, 60)).astype("float32"))
    model.projection.bias.assign(np.eye(60, dtype="float32")[2] * -2.0)
    return model


def export_text(model, tmp_path, sampler):
    """The text SavedModel: written on this backend (TensorFlow, JAX), or from torch by the
    documented route, a `.keras` file loaded and exported on TensorFlow."""
    path = str(tmp_path / "translator")
    if BACKEND != "torch":
        model.export_generator(path, MAX_LENGTH, text=True, sampler=sampler)
        return path
    keras_path, _ = save_and_load(model, tmp_path)
    script = f"""
        import keras
        from keras_luong import samplers
        model = keras.saving.load_model({keras_path!r})
        sampler = samplers.deserialize({samplers.serialize(samplers.get(sampler))!r})
        model.export_generator({path!r}, {MAX_LENGTH}, text=True, sampler=sampler)
        """
    run_python(textwrap.dedent(script), "tensorflow")
    return path


def run_text_saved_model(path, tmp_path, texts, source):
    """The SavedModel's default signature on `texts` and its `serve` signature on the ids
    `source`, run by TensorFlow and TensorFlow Text alone: `{"translations": nested lists of
    str, "scores": ..., "ids": ...}`."""
    out = str(tmp_path / "out.json")
    np.save(tmp_path / "source.npy", source)
    script = f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # the tokenizer's ops
        translator = tf.saved_model.load({path!r})
        result = translator.signatures["serving_default"](texts=tf.constant({texts!r}))
        result = {{k: v.numpy().tolist() for k, v in result.items()}}
        result["translations"] = json.loads(json.dumps(
            result["translations"], default=lambda b: b.decode("utf-8")))
        import numpy as np
        source = tf.constant(np.load({str(tmp_path / "source.npy")!r}))
        result["ids"] = translator.signatures["serve"](source=source)["ids"].numpy().tolist()
        json.dump(result, open({out!r}, "w"))
        assert not {{"keras_luong", "keras_hub", "sentencepiece"}} & set(sys.modules)
        """
    run_python(textwrap.dedent(script), "tensorflow")
    with open(out, encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize(
    "sampler", ["greedy", BeamSearchSampler(3, length_penalty=0.6)], ids=["greedy", "beam"]
)
def test_text_saved_model_translates_like_translate(tmp_path, sampler):
    """Strings in, strings out, with the SentencePiece model inside: translate's outputs for
    the same texts, unseen symbols and an empty text included."""
    model = subword_model()
    expected = model.translate(TEXTS, max_length=MAX_LENGTH, sampler=sampler)
    assert sum(bool(t) for t in expected) >= 3  # the outputs compared have words
    source = model.source_vocabulary.encode_batch(TEXTS)
    path = export_text(model, tmp_path, sampler)
    result = run_text_saved_model(path, tmp_path, TEXTS, source)
    assert result["translations"] == expected
    # Its `serve` signature takes ids, as an ids export does.
    expected_ids = model.generate(source, max_length=MAX_LENGTH, sampler=sampler)
    np.testing.assert_array_equal(result["ids"], expected_ids)
    # The batch stays dynamic: one text, as translate gives it.
    one = run_text_saved_model(path, tmp_path, TEXTS[1:2], source[1:2])
    assert one["translations"] == expected[1:2]


def test_text_saved_model_returns_every_beam_with_its_score(tmp_path):
    model = subword_model()
    sampler = BeamSearchSampler(3, return_all_beams=True)
    expected = model.translate(TEXTS, max_length=MAX_LENGTH, sampler=sampler)
    source = model.source_vocabulary.encode_batch(TEXTS)
    result = run_text_saved_model(export_text(model, tmp_path, sampler), tmp_path, TEXTS, source)
    assert result["translations"] == [[text for text, _ in best] for best in expected]
    np.testing.assert_allclose(
        result["scores"], [[score for _, score in best] for best in expected], atol=1e-5
    )
    expected_ids, _ = model.generate(source, max_length=MAX_LENGTH, sampler=sampler)
    np.testing.assert_array_equal(result["ids"], expected_ids)


def test_text_export_refuses_what_it_cannot_write(tmp_path):
    model = subword_model()
    with pytest.raises(ValueError, match="SavedModel only.*text=True with format='onnx'"):
        model.export_generator(str(tmp_path / "t.onnx"), MAX_LENGTH, format="onnx", text=True)
    with pytest.raises(ValueError, match="Received: text='yes'"):
        model.export_generator(str(tmp_path / "t"), MAX_LENGTH, text="yes")
    bare = spread_model()
    with pytest.raises(ValueError, match="no source vocabulary.*set_vocabularies"):
        bare.export_generator(str(tmp_path / "t"), MAX_LENGTH, text=True)
    words = Vocabulary([str(i) for i in range(16)])
    bare.set_vocabularies(words, Vocabulary([str(i) for i in range(21)]))
    with pytest.raises(ValueError, match="source vocabulary of type Vocabulary"):
        bare.export_generator(str(tmp_path / "t"), MAX_LENGTH, text=True)
