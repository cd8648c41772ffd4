"""What malformed, extreme or hostile inputs do: a clear error, or a documented valid result.

Each test here is a row of docs/bad_inputs.md. Values stored where a mask says "padding"
(NaN and inf included) must never change an output or a gradient; left padding is aligned
like right padding; float16 scores do not overflow; a random draw never happens inside a
compiled loop; token ids, batch sizes and states are checked at the public entry points.
"""

import keras
import numpy as np
import pytest

from keras_luong import (
    BeamSearchSampler,
    GlobalAttention,
    GreedySampler,
    LocalAttention,
    LuongDecoder,
    LuongSeq2Seq,
    MonotonicAttention,
)
from keras_luong.vocabulary import Vocabulary
from tests.test_case import (
    BACKEND,
    assert_allclose,
    gradients,
    length_mask,
    random,
    to_numpy,
)

B, T, S, D = 3, 4, 7, 6
LENGTHS = [7, 4, 1]

ATTENTIONS = {
    "global-dot": lambda **kw: GlobalAttention(score_mode="dot", attentional_units=5, **kw),
    "global-general": lambda **kw: GlobalAttention(score_mode="general", **kw),
    "global-concat": lambda **kw: GlobalAttention(score_mode="concat", attentional_units=5, **kw),
    "local-m": lambda **kw: LocalAttention("monotonic", window=1, attentional_units=5, **kw),
    "local-p": lambda **kw: LocalAttention("predictive", window=2, score_mode="concat", **kw),
}


def _sum_of_squares(outputs):
    return keras.ops.sum(keras.ops.square(outputs))


@pytest.mark.parametrize("poison", [np.nan, np.inf, -np.inf, 1e30])
@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_values_at_masked_positions_change_nothing(name, poison):
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    mask = length_mask(LENGTHS, S)
    poisoned = np.where(mask[..., None], value, poison).astype("float32")
    layer = ATTENTIONS[name]()
    clean = gradients(layer, _sum_of_squares, [query, value], value_mask=mask)
    dirty = gradients(layer, _sum_of_squares, [query, poisoned], value_mask=mask)
    assert_allclose(layer(query, poisoned, value_mask=mask), layer(query, value, value_mask=mask))
    for got, expected in zip(dirty[0] + dirty[1], clean[0] + clean[1], strict=True):
        assert np.all(np.isfinite(got))
        assert_allclose(got, expected, atol=1e-5)
    # And the value's gradient at a padded position is exactly zero.
    assert np.all(clean[1][1][~mask] == 0)


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_nan_in_the_query_at_masked_steps_stays_out(name):
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    query_mask = length_mask([4, 2, 0], T)
    poisoned = np.where(query_mask[..., None], query, np.nan).astype("float32")
    layer = ATTENTIONS[name]()
    kwargs = {"query_mask": query_mask, "step": 0}
    outputs = to_numpy(layer(poisoned, value, **kwargs))
    assert np.all(outputs[~query_mask] == 0)
    assert_allclose(outputs, layer(query, value, **kwargs))
    var_grads, input_grads = gradients(layer, _sum_of_squares, [poisoned, value], **kwargs)
    clean = gradients(layer, _sum_of_squares, [query, value], **kwargs)
    for got, expected in zip(var_grads + input_grads, clean[0] + clean[1], strict=True):
        assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_decoder_nan_at_padded_target_steps_gives_clean_outputs_and_gradients(input_feeding):
    inputs, memory = random((B, T, 3), 1), random((B, S, 4), 2)
    inputs_mask = length_mask([4, 2, 1], T)
    poisoned = np.where(inputs_mask[..., None], inputs, np.nan).astype("float32")
    decoder = LuongDecoder(
        keras.layers.LSTMCell(4),
        GlobalAttention(attentional_units=4),
        input_feeding=input_feeding,
    )
    kwargs = {"inputs_mask": inputs_mask, "memory_mask": length_mask(LENGTHS, S)}
    outputs = to_numpy(decoder(poisoned, memory, **kwargs))
    assert np.all(outputs[~inputs_mask] == 0)
    assert_allclose(outputs, decoder(inputs, memory, **kwargs))
    dirty = gradients(decoder, _sum_of_squares, [poisoned, memory], **kwargs)
    clean = gradients(decoder, _sum_of_squares, [inputs, memory], **kwargs)
    for got, expected in zip(dirty[0] + dirty[1], clean[0] + clean[1], strict=True):
        assert np.all(np.isfinite(got))
        assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("alignment", ["monotonic", "predictive"])
def test_local_attention_aligns_left_padding_like_right_padding(alignment):
    """`keras.utils.pad_sequences` pads on the left by default: each source's valid states are
    shifted right by `S - S_i`, and so are its weights and positions."""
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    right_mask = length_mask(LENGTHS, S)
    left_value, left_mask = np.zeros_like(value), np.zeros_like(right_mask)
    for i, n in enumerate(LENGTHS):
        left_value[i, S - n :], left_mask[i, S - n :] = value[i, :n], True
    layer = LocalAttention(alignment, window=2, score_mode="dot")
    kwargs = {"return_attention_scores": True, "return_positions": True}
    right = [to_numpy(x) for x in layer(query, value, value_mask=right_mask, **kwargs)]
    left = [to_numpy(x) for x in layer(query, left_value, value_mask=left_mask, **kwargs)]
    assert_allclose(left[0], right[0])
    for i, n in enumerate(LENGTHS):
        assert_allclose(left[1][i, :, S - n :], right[1][i, :, :n])
        assert np.all(left[1][i, :, : S - n] == 0)
        assert_allclose(left[2][i], right[2][i] + (S - n))
    assert np.any(left[1] > 0.1)  # the valid positions do get weight


def test_local_attention_of_an_empty_source_is_a_zero_context():
    query = random((B, T, D), 1)
    layer = LocalAttention("predictive", window=2, score_mode="dot", attentional_units=5)
    empty = np.zeros((B, 0, D), "float32")
    output, weights = layer(query, empty, return_attention_scores=True)
    # A source with every position masked gives the same zero context.
    masked = layer(query, random((B, S, D), 2), value_mask=np.zeros((B, S), bool))
    assert_allclose(output, masked)
    assert tuple(weights.shape) == (B, T, 0)
    kernel = to_numpy(layer.attentional_kernel)
    assert_allclose(output, np.tanh(query @ kernel[D:]), atol=1e-6)


FLOAT16_LAYERS = {
    "global": lambda **kw: GlobalAttention(score_mode="dot", **kw),
    "local-m": lambda **kw: LocalAttention("monotonic", window=1, score_mode="dot", **kw),
}


@pytest.mark.parametrize("name", sorted(FLOAT16_LAYERS))
def test_float16_scores_of_large_states_do_not_overflow(name):
    """Dot products of states of magnitude 100-120 over 6 dimensions reach 7e4, beyond
    float16's 65504: the scores are computed in float32. The float32 reference gets the same
    float16-rounded states."""
    query, value = random((B, T, D), 1, 100, 120), random((B, S, D), 2, 100, 120)
    query, value = (x.astype("float16").astype("float32") for x in (query, value))
    assert np.einsum("btd,bsd->bts", query, value).max() > np.finfo("float16").max
    reference = FLOAT16_LAYERS[name]()
    expected = to_numpy(reference(query, value, step=0))
    layer = FLOAT16_LAYERS[name](dtype="mixed_float16")
    layer(query[:, :1], value, step=0)  # build, then copy the float32 layer's weights
    layer.set_weights(reference.get_weights())
    got = to_numpy(layer(query, value, step=0)).astype("float32")
    assert np.all(np.isfinite(got))
    assert_allclose(got, expected, atol=2e-2, rtol=2e-2)


def test_location_score_builds_with_an_unknown_source_length():
    query, value = keras.Input((T, D)), keras.Input((None, D))
    layer = GlobalAttention(score_mode="location", max_source_length=S)
    model = keras.Model([query, value], layer(query, value))
    assert model.output.shape == (None, T, D)
    q, v = random((B, T, D), 1), random((B, 5, D), 2)
    assert_allclose(model([q, v]), layer(q, v))


@pytest.mark.parametrize("rate_at", ["attention", "cell", "both"])
def test_fit_with_dropout_inside_the_input_feeding_loop(rate_at):
    """Attention dropout and the cell's dropout inside the decoding loop, under the backend's
    default compilation (XLA on JAX): the random masks are drawn before the loop."""
    rate = {"attention": (0.0, 0.5), "cell": (0.5, 0.0), "both": (0.5, 0.5)}[rate_at]
    target, memory = keras.Input((T, 3)), keras.Input((S, 4))
    decoder = LuongDecoder(
        keras.layers.LSTMCell(4, dropout=rate[0], recurrent_dropout=rate[0]),
        GlobalAttention(attentional_units=4, dropout=rate[1]),
    )
    model = keras.Model([target, memory], keras.layers.Dense(2)(decoder(target, memory)))
    model.compile(optimizer="adam", loss="mse")
    x = [random((8, T, 3), 1), random((8, S, 4), 2)]
    y = random((8, T, 2), 3)
    before = [to_numpy(w) for w in model.trainable_weights]
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert all(
        not np.allclose(b, to_numpy(w))
        for b, w in zip(before, model.trainable_weights, strict=True)
    )
    # Dropout acts in training only.
    inference = to_numpy(model(x, training=False))
    assert_allclose(model(x, training=False), inference)
    assert not np.allclose(to_numpy(model(x, training=True)), inference)


def test_attention_dropout_masks_drawn_ahead_keep_or_scale_each_weight():
    layer = GlobalAttention(dropout=0.5)
    mask = to_numpy(layer.dropout_mask(B, T, S))
    assert mask.shape == (B, T, S)
    assert set(np.unique(mask)) == {0.0, 2.0}
    local = LocalAttention(window=2, dropout=0.25)
    assert to_numpy(local.dropout_mask(B, T, S)).shape == (B, T, 5)


# -- the model's entry points -----------------------------------------------------------------


def _model(**kwargs):
    model = LuongSeq2Seq(7, 7, units=4, embedding_dim=3, **kwargs)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    return model


SOURCE = np.array([[4, 5, 6, 0], [5, 0, 0, 0]])
TARGET_IN = np.array([[1, 4, 5], [1, 6, 0]])
TARGET_OUT = np.array([[4, 5, 2], [6, 2, 0]])


@pytest.mark.parametrize(
    "source, target_in, target_out, message",
    [
        (SOURCE + 7, TARGET_IN, TARGET_OUT, r"Invalid source: token ids must be in \[0, 7\)"),
        (SOURCE - 1, TARGET_IN, TARGET_OUT, r"Received: ids from -1 to 5"),
        (SOURCE, TARGET_IN * 3, TARGET_OUT, r"Invalid target_in: .* ids from 0 to 18"),
        (SOURCE, TARGET_IN, TARGET_OUT + 5, r"Invalid y: token ids must be in \[0, 7\)"),
        (SOURCE + 0.5, TARGET_IN, TARGET_OUT, r"Invalid source: expected integer token ids"),
        (SOURCE[0], TARGET_IN, TARGET_OUT, r"expected token ids of rank 2"),
    ],
)
def test_fit_refuses_bad_token_ids(source, target_in, target_out, message):
    model = _model()
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


def test_generate_refuses_bad_arguments():
    model = _model()
    with pytest.raises(ValueError, match=r"Invalid inputs: token ids must be in \[0, 7\)"):
        model.generate(SOURCE + 7, 3)
    with pytest.raises(ValueError, match="max_length=-1"):
        model.generate(SOURCE, -1)
    with pytest.raises(ValueError, match="num_beams=0"):
        model.generate(SOURCE, 3, sampler="beam", num_beams=0)
    with pytest.raises(ValueError, match="expected token ids of rank 2"):
        model.generate(SOURCE[0], 3)


def test_translate_checks_texts_and_vocabularies():
    vocabulary = Vocabulary.from_corpus(["abc"])  # 4 reserved ids + 3 letters = 7
    model = _model()
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


def test_mismatched_batches_and_states_are_refused():
    with pytest.raises(ValueError, match="query batch size 3, value batch size 1"):
        GlobalAttention()(random((3, T, D)), random((1, S, D)))
    with pytest.raises(ValueError, match="query batch size 3, value batch size 2"):
        LocalAttention()(random((3, T, D)), random((2, S, D)))
    decoder = LuongDecoder(keras.layers.LSTMCell(4), GlobalAttention(attentional_units=4))
    with pytest.raises(ValueError, match=r"2 initial cell states of shapes .*Received: states"):
        decoder(random((2, T, 3)), random((2, S, 4)), initial_state=[random((2, 5))] * 2)
    with pytest.raises(ValueError, match="Invalid inputs_mask"):
        decoder(random((2, T, 3)), random((2, S, 4)), inputs_mask=np.ones((2, T + 1), bool))


def test_integer_states_are_refused():
    with pytest.raises(TypeError, match="Received: query.dtype=int32"):
        GlobalAttention(score_mode="dot")(np.ones((B, T, D), "int32"), random((B, S, D)))
    with pytest.raises(TypeError, match="Received: value.dtype=int32"):
        GlobalAttention(score_mode="dot")(random((B, T, D)), np.ones((B, S, D), "int32"))


def test_model_with_attention_dropout_trains_compiled():
    """`attention_dropout` inside the model's input-feeding loop, compiled with XLA on JAX and
    TensorFlow (torch's trainer runs eagerly)."""
    model = LuongSeq2Seq(7, 7, units=4, embedding_dim=3, attention_dropout=0.5, dropout=0.2)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(True),
        jit_compile=BACKEND != "torch",
    )
    history = model.fit((SOURCE, TARGET_IN), TARGET_OUT, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert model.attention_dropout == model.decoder.attention.dropout == 0.5


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_empty_batches_and_empty_sources(name):
    layer = ATTENTIONS[name]()
    output = layer(random((0, T, D)), random((0, S, D)))
    assert tuple(output.shape) == (0, T, layer.attentional_units or D)
    # A source of length 0 is a source with nothing to attend to: a zero context.
    query = random((B, T, D), 1)
    empty = layer(query, np.zeros((B, 0, D), "float32"))
    masked = layer(query, random((B, S, D), 2), value_mask=np.zeros((B, S), bool))
    assert_allclose(empty, masked)


def test_masks_of_any_dtype_are_read_as_nonzero():
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    mask = length_mask(LENGTHS, S)
    layer = GlobalAttention()
    expected = layer(query, value, value_mask=mask)
    for dtype in ("int32", "float32"):
        assert_allclose(layer(query, value, value_mask=mask.astype(dtype)), expected)


def test_unknown_config_keys_are_refused():
    config = GlobalAttention().get_config()
    with pytest.raises((TypeError, ValueError), match="Unrecognized keyword arguments"):
        GlobalAttention.from_config({**config, "scroe_mode": "dot"})
    config = LuongSeq2Seq(7, 7, units=4).get_config()
    with pytest.raises((TypeError, ValueError), match="Unrecognized keyword arguments"):
        LuongSeq2Seq.from_config({**config, "window_size": 3})


def test_truncated_keras_file_is_refused(tmp_path):
    model = _model()
    model((SOURCE, TARGET_IN))
    path = tmp_path / "model.keras"
    model.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="zip"):
        keras.saving.load_model(path)


# -- entry points that must refuse bad input with a message naming it --------------------------


def test_decoder_refuses_inputs_of_one_step():
    decoder = LuongDecoder(keras.layers.LSTMCell(D), GlobalAttention(attentional_units=D))
    with pytest.raises(ValueError, match=r"Invalid inputs: expected a tensor of rank 3"):
        decoder(random((B, D), 1), random((B, S, D), 2))


def test_step_refuses_missing_states_and_unprepared_memory():
    decoder = LuongDecoder(keras.layers.LSTMCell(D), GlobalAttention(attentional_units=D))
    value = random((B, S, D), 2)
    decoder(random((B, T, D), 1), value)
    memory = decoder.prepare(value)
    h, c, attentional = decoder.get_initial_state(B)
    with pytest.raises(ValueError, match="Invalid states: expected a list of 3 states"):
        decoder.step(random((B, D), 3), [h, c], memory)  # h̃ left out
    with pytest.raises(TypeError, match="Invalid memory: expected the prepared source"):
        decoder.step(random((B, D), 3), [h, c, attentional], value)
    with pytest.raises(ValueError, match=r"Invalid inputs: expected a tensor of rank 2"):
        decoder.step(random((B, T, D), 3), [h, c, attentional], memory)


def test_local_m_refuses_a_negative_step():
    layer = LocalAttention(alignment="monotonic", window=2)
    with pytest.raises(ValueError, match="step=-3"):
        layer(random((B, D), 1), random((B, S, D), 2), step=-3)
    with pytest.raises(ValueError, match="step=1.5"):
        layer(random((B, D), 1), random((B, S, D), 2), step=1.5)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: LuongSeq2Seq(7, 7, dropout=1.5), "argument dropout. .*dropout=1.5"),
        (lambda: LuongSeq2Seq(7, 7, attention_dropout=-0.1), "attention_dropout=-0.1"),
        (lambda: LuongSeq2Seq(7, 7, start_token=7), "start_token=7"),
        (lambda: LocalAttention(position_units=True), "position_units=True"),
        (lambda: LocalAttention(window=True), "window=True"),
        (lambda: GlobalAttention(units=True), "units=True"),
        (lambda: GlobalAttention(dropout=True), "dropout=True"),
        (lambda: BeamSearchSampler(num_beams=True), "num_beams=True"),
        (lambda: BeamSearchSampler(min_length=-1), "min_length=-1"),
    ],
)
def test_constructors_name_the_bad_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_location_score_with_a_longer_source_than_it_was_built_for():
    """Wherever the source length is known before the model runs, a source longer than
    max_source_length is refused; where only the compiled model knows it (TensorFlow's
    traced `predict` on an unknown length), positions from max_source_length on get zero
    weight: the output is the layer's on the first max_source_length positions."""
    query, value = keras.Input((T, D)), keras.Input((None, D))
    layer = GlobalAttention(score_mode="location", max_source_length=S)
    model = keras.Model([query, value], layer(query, value, return_attention_scores=True))
    q, v = random((B, T, D), 1), random((B, S + 3, D), 2)
    with pytest.raises(ValueError, match=f"max_source_length={S}.*length {S + 3}"):
        model([q, v])
    if keras.backend.backend() != "tensorflow":
        with pytest.raises(ValueError, match=f"max_source_length={S}"):
            model.predict([q, v], verbose=0)
        return
    # A first predict traces for its shapes; TensorFlow traces the second for any length.
    model.predict([q, v[:, : S - 2]], verbose=0)
    output, weights = model.predict([q, v], verbose=0)
    expected_output, expected_weights = layer(q, v[:, :S], return_attention_scores=True)
    assert_allclose(output, expected_output)
    assert_allclose(weights[..., :S], expected_weights)
    assert np.all(weights[..., S:] == 0)


def test_old_memory_mask_argument_warns_and_is_the_value_mask():
    decoder = LuongDecoder(keras.layers.LSTMCell(D), GlobalAttention(attentional_units=D))
    inputs, value, mask = random((B, T, D), 1), random((B, S, D), 2), length_mask(LENGTHS, S)
    expected = decoder(inputs, value, value_mask=mask)
    with pytest.warns(DeprecationWarning, match="value_mask"):
        assert_allclose(decoder(inputs, value, memory_mask=mask), expected)
    with pytest.raises(ValueError, match="both value_mask and memory_mask"):
        decoder(inputs, value, value_mask=mask, memory_mask=mask)


# -- numbers, modes and stop ids checked where they are given ----------------------------------


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda v: BeamSearchSampler(3, length_penalty=v), "length_penalty"),
        (lambda v: BeamSearchSampler(3, coverage_penalty=v), "coverage_penalty"),
        (lambda v: BeamSearchSampler(3, temperature=v), "temperature"),
        (lambda v: GreedySampler(temperature=v), "temperature"),
        (lambda v: MonotonicAttention(sigmoid_noise=v), "sigmoid_noise"),
        (lambda v: MonotonicAttention(score_bias_init=v), "score_bias_init"),
        (lambda v: LocalAttention(sigma=v), "sigma"),
    ],
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), True, "1"])
def test_numbers_must_be_finite(make, name, value):
    with pytest.raises(ValueError, match=f"argument {name}. Expected a finite number"):
        make(value)


def test_a_mode_set_after_construction_is_checked_where_it_is_used():
    layer = MonotonicAttention(mode="parallel")
    query, value = random((B, T, D), 40), random((B, S, D), 41)
    layer(query, value)
    layer.mode = "Hard"
    with pytest.raises(ValueError, match="Received: mode='Hard'"):
        layer(query, value, training=True)


def test_stop_token_ids_one_id_or_ids_in_the_vocabulary():
    model = _model()
    source = np.array([[3, 4, 0]], "int32")
    np.testing.assert_array_equal(
        model.generate(source, 4, stop_token_ids=2), model.generate(source, 4)
    )
    with pytest.raises(ValueError, match="target_vocabulary_size=7"):
        model.generate(source, 4, stop_token_ids=(2, 7))
    with pytest.raises(ValueError, match="stop_token_ids"):
        model.generate(source, 4, stop_token_ids={2})


# -- texts: one check for every entry point that takes them -----------------------------------


def test_texts_are_lists_of_strings_everywhere():
    from keras_luong.callbacks import BleuCallback
    from keras_luong.evaluation import corpus_bleu
    from keras_luong.vocabulary import SubwordVocabulary

    vocabulary = Vocabulary(list("abc"))
    for call in (
        lambda: SubwordVocabulary.train("one long string", vocabulary_size=8),
        lambda: SubwordVocabulary.train(None, vocabulary_size=8),
        lambda: vocabulary.encode_batch("abc"),
        lambda: corpus_bleu("a b", ["a b"]),
        lambda: BleuCallback("a b", ["a b"], max_length=5),
    ):
        with pytest.raises(ValueError, match="Expected a list of strings"):
            call()
    with pytest.raises(TypeError, match=r"texts\[1\]=3 of type int"):
        SubwordVocabulary.train(["a b", 3], vocabulary_size=8)
    with pytest.raises(TypeError, match="Received: text=None"):
        vocabulary.encode(None)
    with pytest.raises(ValueError, match="Received: length=-1"):
        vocabulary.encode("ab", length=-1)
    with pytest.raises(ValueError, match="Received: max_sentences=-1"):
        SubwordVocabulary.train(["a b"], vocabulary_size=8, max_sentences=-1)
    # BLEU of no sentence is undefined: said at the call, and by the callback when it is made.
    with pytest.raises(ValueError, match="non-empty list"):
        corpus_bleu([], [])
    with pytest.raises(ValueError, match="non-empty list"):
        BleuCallback([], [], max_length=5)
    # A generator of lines is an iterable of texts too.
    trained = SubwordVocabulary.train((line for line in ["a b c", "b c a"] * 20), 8)
    assert trained.decode(trained.encode("a b")) == "a b"


def test_parallel_text_files_name_what_is_wrong(tmp_path):
    import gzip
    import pathlib

    from keras_luong.datasets.parallel_text import load_parallel_text

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
    with pytest.raises(TypeError, match="Expected a path"):
        load_parallel_text(3, target)
