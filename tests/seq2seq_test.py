import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_luong import (
    BeamSearchSampler,
    LuongSeq2Seq,
    samplers,
)
from keras_luong.data.vocabulary import Vocabulary
from keras_luong.datasets import dates
from keras_luong.generation.generator import Seq2SeqGenerator
from tests.test_case import (
    BACKEND,
    TestCase,
    assert_allclose,
    export_variant,
    fit_lowers_loss,
    save_and_load,
    to_numpy,
)

TEST_DATA = os.path.join(os.path.dirname(__file__), "data")

DATA = dates.load_data(400, seed=0)
SOURCE, TARGET_IN, TARGET_OUT = (
    DATA["train"][k][:16] for k in ("source", "target_in", "target_out")
)
VARIANTS = {
    "global-feeding": {"alignment": "global", "score_mode": "general"},
    # The projection reads the LSTM's h_t (AttentionWrapper's output_attention=False).
    "local-m-cell-output": {
        "alignment": "local-m",
        "score_mode": "concat",
        "window": 3,
        "output_attention": False,
    },
    "local-p-stacked": {"alignment": "local-p", "decoder_layers": 2, "input_feeding": False},
    # Bahdanau, Cho and Bengio's decoder: attend with s_{t-1}, project the deep output.
    "bahdanau-timing": {"attention_timing": "bahdanau", "score_mode": "additive"},
}


def make_model(**kwargs):
    model = LuongSeq2Seq(
        len(DATA["source_vocabulary"]), len(DATA["target_vocabulary"]),
        units=16, embedding_dim=8, **kwargs,
    )  # fmt: skip
    model((SOURCE[:2], TARGET_IN[:2]))
    return model


def teacher_forced_log_probs(model, source, generated):
    """Log-probabilities `(B, T, V)` of every next token given the generated prefix, with
    padding and the start token excluded as the generator excludes them."""
    start = np.full((len(generated), 1), model.start_token, "int32")
    logits = model.predict((source, np.concatenate([start, generated[:, :-1]], 1)), verbose=0)
    logits = logits.astype("float64")
    logits[..., [0, model.start_token]] = -np.inf  # never generated
    logits -= logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def ending_early(model, bias=0.0):
    """Raises the end token's logit bias of an untrained model until at least a quarter of
    the test sources end before `TARGET_LENGTH - 1` tokens, so that stopping is exercised."""
    kernel, biases = model.projection.get_weights()
    while True:
        biases[model.end_token] = bias
        model.projection.set_weights([kernel, biases])
        generated = model.generate(SOURCE, dates.TARGET_LENGTH)
        ended = (generated[:, : dates.TARGET_LENGTH - 2] == model.end_token).any(1)
        if ended.mean() >= 0.25:
            return model
        bias += 0.5


def up_to_the_end(generated, end_token):
    """Mask of the positions up to and including each row's first end token."""
    is_end = generated == end_token
    return np.cumsum(is_end, axis=1) - is_end == 0


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_greedy_decoding_equals_argmax_of_teacher_forcing(variant):
    model = ending_early(make_model(**VARIANTS[variant]))
    # The decoding loop is compiled (XLA on TensorFlow, jit on JAX); torch stays eager.
    assert model.generator(dates.TARGET_LENGTH).jit_compile == (BACKEND != "torch")
    generated = model.generate(SOURCE, max_length=dates.TARGET_LENGTH)
    assert generated.shape == (16, dates.TARGET_LENGTH)
    argmax = np.argmax(teacher_forced_log_probs(model, SOURCE, generated), -1)
    kept = up_to_the_end(generated, model.end_token)
    np.testing.assert_array_equal(generated[kept], argmax[kept])
    # Generation stops at the end token: what follows is padding.
    assert (~kept).any() and np.all(generated[~kept] == 0)
    # Without stop tokens it runs max_length steps; the two agree up to the end.
    unstopped = model.generate(SOURCE, max_length=dates.TARGET_LENGTH, stop_token_ids=None)
    np.testing.assert_array_equal(unstopped[kept], generated[kept])
    assert np.all(unstopped != 0)


def test_generate_returns_the_alignments_of_its_output():
    model = ending_early(make_model(alignment="local-p", window=3))
    generated, weights = model.generate(
        SOURCE, max_length=dates.TARGET_LENGTH, return_attention_scores=True
    )
    np.testing.assert_array_equal(generated, model.generate(SOURCE, dates.TARGET_LENGTH))
    assert weights.shape == (16, dates.TARGET_LENGTH, SOURCE.shape[1])
    # Zero on source padding and after the end; local-p weights are a softmax times a
    # Gaussian, so in (0, 1] on the steps that generated a token.
    assert np.all(weights[SOURCE[:, None, :].repeat(dates.TARGET_LENGTH, 1) == 0] == 0)
    kept = up_to_the_end(generated, model.end_token)
    assert np.all(weights[~kept] == 0)
    assert np.all((weights[kept].sum(-1) > 0) & (weights[kept].sum(-1) <= 1 + 1e-5))


def test_beam_search_of_one_is_greedy_and_of_full_width_is_exact():
    # Seeded: beam search ranks log-softmax scores where greedy takes the argmax of the logits,
    # so two logits within rounding of each other could split them; this model has none.
    keras.utils.set_random_seed(0)
    model = make_model()
    greedy = model.generate(SOURCE, max_length=dates.TARGET_LENGTH)
    np.testing.assert_array_equal(
        model.generate(SOURCE, max_length=dates.TARGET_LENGTH, sampler=BeamSearchSampler(1)),
        greedy,
    )
    # Two steps with as many beams as allowed tokens: every first token stays in the beam,
    # so beam search must find the most likely hypothesis, which brute force finds too: every
    # pair of tokens, or the end token alone.
    vocabulary = model.target_vocabulary_size
    allowed = [i for i in range(vocabulary) if i not in (0, model.start_token)]
    beam = model.generate(SOURCE, max_length=2, sampler=BeamSearchSampler(len(allowed)))
    hypotheses = [(a, b) for a in allowed if a != model.end_token for b in allowed]
    hypotheses = np.array(hypotheses + [(model.end_token, 0)], "int32")
    source = np.repeat(SOURCE, len(hypotheses), axis=0)
    tokens = np.tile(hypotheses, (len(SOURCE), 1))
    log_probs = teacher_forced_log_probs(model, source, tokens)
    scores = np.take_along_axis(log_probs, tokens[..., None], -1)[..., 0]
    scores = np.where(tokens == 0, 0.0, scores).sum(-1)
    best = hypotheses[np.argmax(scores.reshape(len(SOURCE), len(hypotheses)), -1)]
    np.testing.assert_array_equal(beam, best)


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_n_best_hypotheses_with_their_scores_and_alignments(length_penalty):
    model = make_model()
    (ids, scores), weights = model.generate(
        SOURCE[:4],
        max_length=6,
        sampler=BeamSearchSampler(3, length_penalty=length_penalty, return_all_beams=True),
        return_attention_scores=True,
    )
    assert ids.shape == (4, 3, 6) and scores.shape == (4, 3)
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    best = model.generate(
        SOURCE[:4], max_length=6, sampler=BeamSearchSampler(3, length_penalty=length_penalty)
    )
    np.testing.assert_array_equal(ids[:, 0], best)
    # Each score is the hypothesis' teacher-forced log-probability up to its end token,
    # divided by GNMT's length penalty.
    flat = ids.reshape(12, 6)
    log_probs = teacher_forced_log_probs(model, np.repeat(SOURCE[:4], 3, 0), flat)
    kept = up_to_the_end(flat, model.end_token) & (flat != 0)
    token_log_probs = np.take_along_axis(log_probs, flat[..., None], -1)[..., 0]
    expected = np.where(kept, token_log_probs, 0).sum(-1)
    expected = expected / ((5 + kept.sum(-1)) / 6) ** length_penalty
    np.testing.assert_allclose(scores.reshape(12), expected, rtol=1e-4, atol=1e-4)
    # The alignments are those of teacher forcing over each hypothesis.
    assert weights.shape == (4, 3, 6, SOURCE.shape[1])
    start = np.full((12, 1), model.start_token, "int32")
    target_in = np.where(flat == 0, 0, np.concatenate([start, flat[:, :-1]], 1))
    _, expected_weights = model(
        (np.repeat(SOURCE[:4], 3, 0), target_in), return_attention_scores=True
    )
    assert_allclose(weights.reshape(12, 6, -1), expected_weights)


def test_generate_reuses_its_compiled_function(monkeypatch):
    """A second call with the same settings runs the cached generator without tracing
    again (on torch, which runs eagerly, it calls it once more)."""
    traces = []
    original = Seq2SeqGenerator.call
    monkeypatch.setattr(
        Seq2SeqGenerator, "call", lambda self, source: traces.append(1) or original(self, source)
    )
    model = make_model()
    layers, weights = len(model.layers), len(model.weights)
    first = model.generate(SOURCE, max_length=5, sampler=BeamSearchSampler(2))
    count = len(traces)
    second = model.generate(SOURCE, max_length=5, sampler=BeamSearchSampler(2))
    np.testing.assert_array_equal(first, second)
    assert len(traces) == (count + 1 if BACKEND == "torch" else count)
    assert model.generator(5, BeamSearchSampler(2)) is model.generator(5, BeamSearchSampler(2))
    # Other settings get their own generator; none of them is part of the model.
    assert model.generator(5, BeamSearchSampler(3)) is not model.generator(5, BeamSearchSampler(2))
    assert (len(model.layers), len(model.weights)) == (layers, weights)


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
    # An untrained model may emit the out-of-vocabulary id, which decodes as "<unk>".
    assert all(set(t.replace("<unk>", "")) <= set(dates.TARGET_CHARS) for t in translated)


def test_translate_maps_unseen_characters_to_the_oov_id():
    model = make_model()
    vocabulary = DATA["source_vocabulary"]
    texts = ["☃ 12 ☃", "Ω"]  # not in the dates vocabulary
    translated = model.translate(texts, vocabulary, DATA["target_vocabulary"], 5)
    source = np.array([[3, 3, 3, 3, 3, 3], [3, 0, 0, 0, 0, 0]], "int32")
    source[0, 1:5] = vocabulary.encode(" 12 ")
    expected = model.generate(source, max_length=5)
    assert translated == [DATA["target_vocabulary"].decode(ids) for ids in expected]


def test_fit_lowers_the_loss():
    model = make_model(alignment="local-p", window=4)
    before, after = fit_lowers_loss(model, (SOURCE, TARGET_IN), TARGET_OUT, learning_rate=1.0)
    assert np.isfinite(after) and after < before - 1e-3


def test_keras_file_round_trip(tmp_path):
    model = make_model(alignment="local-m", window=2, decoder_layers=2, output_attention=False)
    _, loaded = save_and_load(model, tmp_path)
    assert loaded.get_config()["output_attention"] is False
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


@pytest.mark.parametrize(
    "decoding",
    [
        {"sampler": "greedy"},
        # From JAX and torch, beam search in a SavedModel is checked by the ensemble's export.
        pytest.param(
            {"sampler": samplers.serialize(BeamSearchSampler(3, length_penalty=0.6))},
            marks=export_variant,
        ),
    ],
    ids=["greedy", "beam"],
)
def test_exported_saved_model_translates_like_keras(tmp_path, decoding):
    """The SavedModel, loaded by TensorFlow alone in a fresh process, decodes like Keras."""
    check_export(make_model(), SOURCE, tmp_path, decoding)


@export_variant
def test_exported_bahdanau_decoder_translates_like_keras(tmp_path):
    model = make_model(attention_timing="bahdanau", alignment="local-p", window=3)
    check_export(model, SOURCE, tmp_path, {"sampler": samplers.serialize(BeamSearchSampler(3))})


@export_variant
def test_exported_beam_search_over_a_large_vocabulary(tmp_path):
    """Beam search over 3 x 301 candidates picks its best in blocks (the last one padded):
    the SavedModel exported from the backend decodes as the backend does."""
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(40, 301, units=16, embedding_dim=8)
    rng = np.random.default_rng(0)
    source = rng.integers(3, 40, (4, 7)).astype("int32")
    model((source, source))
    # Spread-out logits: no near-ties for the two runtimes' rounding to break differently.
    model.projection.kernel.assign(rng.normal(0, 1, (16, 301)).astype("float32"))
    decoding = {"sampler": samplers.serialize(BeamSearchSampler(3, length_penalty=0.6))}
    check_export(model, source, tmp_path, decoding)


@export_variant
def test_exported_ngram_blocking(tmp_path):
    """`no_repeat_ngram_size` writes its bans into the logits by a scatter inside the loop:
    the SavedModel decodes as the backend does, and the ban is at work (unblocked, this model
    repeats tokens; blocked, no row holds a token twice)."""
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(40, 30, units=16, embedding_dim=8)
    rng = np.random.default_rng(1)
    source = rng.integers(3, 40, (4, 7)).astype("int32")
    model((source, source % 30))
    model.projection.kernel.assign(rng.normal(0, 1, (16, 30)).astype("float32"))
    sampler = BeamSearchSampler(3, no_repeat_ngram_size=1)
    unblocked = model.generate(source, max_length=dates.TARGET_LENGTH, sampler="beam")
    blocked = model.generate(source, max_length=dates.TARGET_LENGTH, sampler=sampler)

    def repeats(ids):
        return sum(len(row[row > 0]) - len(set(row[row > 0])) for row in ids)

    assert repeats(unblocked) > 0
    assert repeats(blocked) == 0
    check_export(model, source, tmp_path, {"sampler": samplers.serialize(sampler)})


def check_export(model, source, tmp_path, decoding):
    expected = model.generate(source, max_length=dates.TARGET_LENGTH, **decoding)
    export_dir = str(tmp_path / "saved_model")
    if BACKEND == "torch":
        # torch cannot export: save .keras, load and export it on TensorFlow.
        keras_path, _ = save_and_load(model, tmp_path)
        export_on_tensorflow(keras_path, export_dir, decoding)
    else:
        model.export_generator(export_dir, max_length=dates.TARGET_LENGTH, **decoding)
    np.save(tmp_path / "source.npy", source)
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, tensorflow as tf
        exported = tf.saved_model.load({export_dir!r})
        out = exported.serve(tf.constant(np.load({str(tmp_path / "source.npy")!r})))
        np.save({str(tmp_path / "out.npy")!r}, out.numpy())
        assert "keras_luong" not in sys.modules and "keras_hub" not in sys.modules
        """
    )
    run_python(script, "tensorflow")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def export_on_tensorflow(keras_path, export_dir, decoding):
    script = textwrap.dedent(
        f"""
        import keras, keras_luong
        model = keras.saving.load_model({keras_path!r})
        model.export_generator({export_dir!r}, max_length={dates.TARGET_LENGTH}, **{decoding!r})
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


class TestMixedPrecision(TestCase):
    @pytest.mark.parametrize("variant", sorted(VARIANTS))
    def test_every_sublayer_computes_in_the_policy_dtype(self, variant):
        def make(policy):
            return LuongSeq2Seq(
                len(DATA["source_vocabulary"]), len(DATA["target_vocabulary"]),
                units=16, embedding_dim=8, dtype=policy, **VARIANTS[variant],
            )  # fmt: skip

        self.run_precision_test(make, [(SOURCE[:4], TARGET_IN[:4])])

    @pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
    def test_training_is_finite(self, policy):
        model = make_model(dtype=policy)
        before, after = fit_lowers_loss(model, (SOURCE, TARGET_IN), TARGET_OUT, learning_rate=1.0)
        assert np.isfinite(after) and after < before - 1e-3

    @pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
    def test_generation_equals_float32_on_a_trained_dates_model(self, policy):
        """tests/data/dates_model.keras (benchmarks/train_dates_model.py)
        decodes its test split in half precision as it does in float32."""
        model = keras.saving.load_model(os.path.join(TEST_DATA, "dates_model.keras"))
        source = np.load(os.path.join(TEST_DATA, "dates_model_test_source.npy")).astype("int32")
        expected = model.generate(source, dates.TARGET_LENGTH)
        half = LuongSeq2Seq.from_config({**model.get_config(), "dtype": policy})
        half((source[:1], np.ones((1, dates.TARGET_LENGTH), "int32")))
        half.set_weights(model.get_weights())
        generated = half.generate(source, dates.TARGET_LENGTH)
        assert np.mean(np.all(generated == expected, axis=1)) >= 0.99


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_length": 0}, "max_length=0"),
        ({"max_length": 2.5}, "max_length=2.5"),
        ({"max_length": 3, "sampler": "nucleus"}, "sampler='nucleus'"),
        ({"max_length": 3, "sampler": "beam", "num_beams": 2}, "argument 'num_beams'"),
    ],
)
def test_invalid_decoding_arguments(kwargs, message):
    model = make_model()
    with pytest.raises((ValueError, TypeError), match=message):
        model.generate(SOURCE[:2], **kwargs)
    # numpy integers are integers
    assert model.generator(np.int64(3)) is model.generator(3)


def test_decodes_without_keras_hub(tmp_path):
    """keras-hub is optional: with its import blocked, the package imports, and greedy and
    beam decoding of a saved model give the same ids as in this process (where it may be
    installed)."""
    model = make_model()
    keras_path, _ = save_and_load(model, tmp_path)
    greedy = model.generate(SOURCE[:4], max_length=5)
    beam = model.generate(SOURCE[:4], max_length=5, sampler=BeamSearchSampler(3))
    np.save(tmp_path / "source.npy", SOURCE[:4])
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["keras_hub"] = None  # import keras_hub raises ImportError
        import keras, numpy as np, keras_luong
        model = keras.saving.load_model({keras_path!r})
        source = np.load({str(tmp_path / "source.npy")!r})
        np.save({str(tmp_path / "greedy.npy")!r}, model.generate(source, max_length=5))
        beam = model.generate(source, max_length=5, sampler=keras_luong.BeamSearchSampler(3))
        np.save({str(tmp_path / "beam.npy")!r}, beam)
        """
    )
    run_python(script, BACKEND)
    np.testing.assert_array_equal(np.load(tmp_path / "greedy.npy"), greedy)
    np.testing.assert_array_equal(np.load(tmp_path / "beam.npy"), beam)


def test_summary_shows_every_part_with_its_shape():
    model = make_model()
    lines = []
    model.summary(print_fn=lambda line, **kwargs: lines.append(line))
    rows = [line for line in "\n".join(lines).splitlines() if line.startswith("│ ")]
    decoder_row = next(row for row in rows if "(LuongDecoder)" in row)
    assert f"(2, {TARGET_IN.shape[1]}, 16)" in decoder_row, decoder_row
    # The one Dropout layer serves the embeddings and h̃ (two shapes): it alone shows none.
    unknown = [row for row in rows if "?" in row]
    assert len(unknown) == 1 and "(Dropout)" in unknown[0], "\n".join(rows)


def small_model(**kwargs):
    model = LuongSeq2Seq(7, 7, units=4, embedding_dim=3, **kwargs)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    return model


SRC = np.array([[4, 5, 6, 0], [5, 0, 0, 0]])


TGT_IN = np.array([[1, 4, 5], [1, 6, 0]])


TGT_OUT = np.array([[4, 5, 2], [6, 2, 0]])


@pytest.mark.parametrize(
    "source, target_in, target_out, message",
    [
        (SRC + 7, TGT_IN, TGT_OUT, r"Invalid source: token ids must be in \[0, 7\)"),
        (SRC - 1, TGT_IN, TGT_OUT, r"Received: ids from -1 to 5"),
        (SRC, TGT_IN * 3, TGT_OUT, r"Invalid target_in: .* ids from 0 to 18"),
        (SRC, TGT_IN, TGT_OUT + 5, r"Invalid y: token ids must be in \[0, 7\)"),
        (SRC + 0.5, TGT_IN, TGT_OUT, r"Invalid source: expected integer token ids"),
        (SRC[0], TGT_IN, TGT_OUT, r"expected token ids of rank 2"),
    ],
)
def test_fit_refuses_bad_token_ids(source, target_in, target_out, message):
    model = small_model()
    with pytest.raises(ValueError, match=message):
        model.fit((source, target_in), target_out, verbose=0)
    with pytest.raises(ValueError, match=message):
        model.evaluate((source, target_in), target_out, verbose=0)
    if "Invalid y" not in message:
        with pytest.raises(ValueError, match=message):
            model.predict((source, target_in), verbose=0)
    # A dict of inputs is checked alike.
    with pytest.raises(ValueError, match=message):
        model.fit({"source": source, "target_in": target_in}, target_out, verbose=0)


def test_translate_checks_texts_and_vocabularies():
    vocabulary = Vocabulary.from_corpus(["abc"])  # 4 reserved ids + 3 letters = 7
    model = small_model()
    with pytest.raises(ValueError, match="Expected a list of strings"):
        model.translate("abc", vocabulary, vocabulary, 3)
    small = Vocabulary.from_corpus(["ab"])
    with pytest.raises(ValueError, match="target vocabulary does not match the model"):
        model.translate(["abc"], vocabulary, small, 3)
    # An empty text is an empty source: a row of padding, decoded like any other.
    [empty] = model.translate([""], vocabulary, vocabulary, 3)
    expected = model.generate(np.zeros((1, 1), "int32"), 3)[0]
    assert empty == vocabulary.decode(expected)
    # Unseen symbols are the OOV id, not an error.
    assert list(vocabulary.encode("axz")) == [4, Vocabulary.OOV, Vocabulary.OOV]


def test_direct_calls_check_token_ids_and_compiled_calls_map_them_to_the_unknown_id():
    """`model(x)` with concrete ids checks them on every backend. Inside a compiled function
    (`predict_on_batch`, compiled on JAX and TensorFlow) their values are not known: an id
    outside the vocabulary reads as the unknown id, 3, never as NaN."""
    model = small_model()
    expected = to_numpy(model((SRC, TGT_IN)))
    for source, target_in, name in (
        (SRC + 7, TGT_IN, "source"),
        (SRC - 1, TGT_IN, "source"),
        (SRC, TGT_IN + 7, "target_in"),
    ):
        with pytest.raises(ValueError, match=f"Invalid {name}: token ids must be in"):
            model((source, target_in))
    bad_source = np.where(SRC > 0, SRC + 7, 0)  # every real id out of range
    if BACKEND == "torch":  # torch's predict runs eagerly: the ids are seen and checked
        with pytest.raises(ValueError, match="Invalid source"):
            model.predict_on_batch((bad_source, TGT_IN))
        return
    got = model.predict_on_batch((bad_source, TGT_IN))
    unknown = np.where(SRC > 0, 3, 0)
    assert np.all(np.isfinite(got))
    assert_allclose(got, model.predict_on_batch((unknown, TGT_IN)), atol=1e-6)
    assert not np.allclose(got, expected, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"decoder_layers": 0}, "decoder_layers=0"),
        ({"units": 0}, "units=0"),
        ({"embedding_dim": 2.5}, "embedding_dim=2.5"),
        ({"end_token": 7}, r"end_token=7"),
        ({"start_token": 0}, r"start_token=0"),
    ],
)
def test_model_constructor_refuses_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LuongSeq2Seq(7, 7, **{"units": 4, **kwargs})


def test_model_with_attention_dropout_trains_compiled():
    """`attention_dropout` inside the model's input-feeding loop, compiled with XLA on JAX and
    TensorFlow (torch's trainer runs eagerly)."""
    model = LuongSeq2Seq(7, 7, units=4, embedding_dim=3, attention_dropout=0.5, dropout=0.2)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(True),
        jit_compile=BACKEND != "torch",
    )
    history = model.fit((SRC, TGT_IN), TGT_OUT, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert model.attention_dropout == model.decoder.attention.dropout == 0.5


def test_truncated_keras_file_is_refused(tmp_path):
    model = small_model()
    model((SRC, TGT_IN))
    path = tmp_path / "model.keras"
    model.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="zip"):
        keras.saving.load_model(path)


_LOADED = dates.load_data(40, seed=5)
X = (_LOADED["train"]["source"], _LOADED["train"]["target_in"])  # two batches of 16
Y = _LOADED["train"]["target_out"]


def _dates_model(seed, **kwargs):
    keras.utils.set_random_seed(seed)
    model = LuongSeq2Seq(
        len(_LOADED["source_vocabulary"]),
        len(dates.TARGET_VOCABULARY),
        units=8,
        embedding_dim=4,
        **kwargs,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        # JAX compiles as always; TensorFlow runs its graph without XLA (XLA's compile
        # doubles these several-fit tests' time there, and the XLA train step is tested by
        # fit_lowers_loss); torch's trainer stays eager.
        jit_compile=BACKEND == "jax",
    )
    return model


class _Interrupt(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("interrupted")


def test_two_seeded_runs_with_dropout_give_identical_losses():
    """With `keras.utils.set_random_seed`, attention dropout, embedding dropout and shuffling
    repeat exactly: the same losses, bit for bit, and the same weights."""
    runs = []
    for _ in range(2):
        model = _dates_model(11, attention_dropout=0.3, dropout=0.2)
        history = model.fit(X, Y, batch_size=16, epochs=2, shuffle=True, verbose=0)
        runs.append((history.history["loss"], [to_numpy(w) for w in model.weights]))
    (losses, weights), (again, weights_again) = runs
    assert losses == again
    for a, b in zip(weights, weights_again, strict=True):
        np.testing.assert_array_equal(a, b)
    # A different seed gives a different run (so the equality above is not vacuous).
    other = _dates_model(12, attention_dropout=0.3, dropout=0.2)
    assert other.fit(X, Y, batch_size=16, epochs=2, verbose=0).history["loss"] != losses


def test_backup_and_restore_resumes_to_the_uninterrupted_weights(tmp_path):
    """Training interrupted after epoch 2 of 4 and resumed with `BackupAndRestore` ends with
    the weights of the uninterrupted run (to 1e-6; the batches come in order, no dropout)."""
    fit = {"batch_size": 16, "epochs": 4, "shuffle": False, "verbose": 0}
    uninterrupted = _dates_model(3)
    uninterrupted.fit(X, Y, **fit)

    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    interrupted = _dates_model(3)
    # BackupAndRestore wants a built model (Keras raises a clear ValueError on TensorFlow).
    interrupted((X[0][:1], X[1][:1]))
    try:
        interrupted.fit(X, Y, callbacks=[backup, _Interrupt(1)], **fit)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the run was not interrupted")
    halfway = [to_numpy(w) for w in interrupted.weights]
    resumed = _dates_model(4)  # another initialisation: the backup must replace it
    resumed((X[0][:1], X[1][:1]))
    history = resumed.fit(X, Y, callbacks=[backup], **fit)
    assert len(history.history["loss"]) == 2  # epochs 3 and 4 only
    for got, expected in zip(resumed.weights, uninterrupted.weights, strict=True):
        np.testing.assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-6, rtol=1e-6)
    # The run really was cut short: halfway weights differ from the final ones.
    assert any(
        not np.allclose(h, to_numpy(w)) for h, w in zip(halfway, uninterrupted.weights, strict=True)
    )


def test_the_output_layer_starts_uniform_in_a_tenth_whatever_the_vocabulary():
    """`W_s` starts uniform in ±0.1 (the paper's and OpenNMT-py's), not Glorot's ±√(6 /
    (units + V)), which shrinks with the vocabulary; an initializer given is used, and the
    config carries it."""
    source_size = len(DATA["source_vocabulary"])
    model = LuongSeq2Seq(source_size, 2000, units=16, embedding_dim=8)
    model((SOURCE[:2], TARGET_IN[:2]))
    kernel = to_numpy(model.projection.kernel)
    assert np.abs(kernel).max() <= 0.1 and np.abs(kernel).max() > 0.099
    # Uniform: the mean of |w| is half the bound (to sampling error over 32,000 draws).
    assert abs(np.abs(kernel).mean() - 0.05) < 0.002
    glorot = LuongSeq2Seq(
        source_size, 2000, units=16, embedding_dim=8, output_initializer="glorot_uniform"
    )
    glorot((SOURCE[:2], TARGET_IN[:2]))
    assert np.abs(to_numpy(glorot.projection.kernel)).max() <= np.sqrt(6 / (16 + 2000))
    config = glorot.get_config()
    assert config["output_initializer"]["class_name"] == "GlorotUniform"
    restored = LuongSeq2Seq.from_config(model.get_config())
    assert isinstance(restored.output_initializer, keras.initializers.RandomUniform)
    assert restored.output_initializer.get_config()["maxval"] == 0.1


def test_one_initializer_starts_every_weight_as_the_paper_does():
    """`initializer=RandomUniform(-0.1, 0.1)`: every weight (embeddings, LSTM kernels,
    recurrent kernels and biases, the forget gate's too, bridge, attention, output layer)
    drawn uniform in ±0.1, each layer from its own draws; the config carries it."""
    source_size = len(DATA["source_vocabulary"])
    uniform = keras.initializers.RandomUniform(-0.1, 0.1)
    model = LuongSeq2Seq(source_size, 300, units=16, embedding_dim=8, initializer=uniform)
    model((SOURCE[:2], TARGET_IN[:2]))
    values = {v.path: to_numpy(v) for v in model.trainable_variables}
    assert len(values) >= 15
    for path, value in values.items():
        assert np.abs(value).max() <= 0.1, path
        # Uniform draws, not constants: the mean |w| near half the bound.
        assert value.size < 64 or abs(np.abs(value).mean() - 0.05) < 0.01, path
    kernels = [to_numpy(model.bridge_h.kernel), to_numpy(model.bridge_c.kernel)]
    assert not np.allclose(*kernels)  # two layers, two draws
    forward = to_numpy(model.encoder.forward_layer.cell.kernel)
    backward = to_numpy(model.encoder.backward_layer.cell.kernel)
    assert not np.allclose(forward, backward)
    restored = LuongSeq2Seq.from_config(model.get_config())
    assert restored.initializer.get_config() == uniform.get_config()
    # Without it, Keras' defaults: the LSTM's forget-gate bias starts at one.
    default = LuongSeq2Seq(source_size, 300, units=16, embedding_dim=8)
    default((SOURCE[:2], TARGET_IN[:2]))
    bias = to_numpy(default.decoder.cell.cell.bias)
    np.testing.assert_array_equal(bias[16:32], 1.0)
    assert default.get_config()["initializer"] is None
