from unittest import mock

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keras_luong import (
    GlobalAttention,
    InputFeedingCell,
    LocalAttention,
    LuongDecoder,
)
from tests.attention_cases import PROPERTY, attention_cases, make_layer
from tests.test_case import (
    TestCase,
    assert_allclose,
    fit_lowers_loss,
    gradients,
    length_mask,
    random,
    to_numpy,
)

B, T, S, E, H, U = 3, 6, 7, 4, 5, 6

ATTENTIONS = {
    "global": lambda **kw: GlobalAttention(score_mode="general", attentional_units=U, **kw),
    "local-m": lambda **kw: LocalAttention("local-m", window=1, attentional_units=U, **kw),
    "local-p": lambda **kw: LocalAttention(
        window=2, score_mode="concat", attentional_units=U, **kw
    ),
}
CELLS = {
    "lstm": lambda: keras.layers.LSTMCell(H),
    "gru": lambda: keras.layers.GRUCell(H),
    "stacked": lambda: keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(H), keras.layers.LSTMCell(H)]
    ),
}


def inputs_and_masks(seed=0):
    inputs, memory = random((B, T, E), seed=seed), random((B, S, H), seed=seed + 1)
    return inputs, memory, length_mask([6, 3, 5], T), length_mask([7, 4, 2], S)


def decode_step_by_step(decoder, inputs, memory, inputs_mask, memory_mask, initial_state=None):
    """Runs `decoder.step` one target step at a time, as a sampler would."""
    prepared = decoder.prepare(memory, memory_mask)
    states = decoder.get_initial_state(inputs.shape[0], initial_state, prepared)
    outputs, alignments = [], []
    for t in range(inputs.shape[1]):
        out, new_states, weights = decoder.step(
            inputs[:, t], states, prepared, step=t,
            return_attention_scores=True,
        )  # fmt: skip
        keep = inputs_mask[:, t : t + 1]
        states = [keras.ops.where(keep, n, s) for n, s in zip(new_states, states, strict=True)]
        outputs.append(to_numpy(out) * keep)
        alignments.append(to_numpy(weights) * keep)
    return np.stack(outputs, 1), np.stack(alignments, 1), [to_numpy(s) for s in states]


@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
@pytest.mark.parametrize("input_feeding", [True, False])
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_step_by_step_equals_teacher_forcing(attention, input_feeding, cell):
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks()
    decoder = LuongDecoder(CELLS[cell](), ATTENTIONS[attention](), input_feeding=input_feeding)
    initial_state = None
    if cell != "stacked":
        size = 2 if cell == "lstm" else 1
        initial_state = [random((B, H), seed=10 + i) for i in range(size)]
    outputs, weights, states = decoder(
        inputs, memory, initial_state=initial_state, inputs_mask=inputs_mask,
        value_mask=memory_mask, return_attention_scores=True, return_state=True,
    )  # fmt: skip
    expected_outputs, expected_weights, expected_states = decode_step_by_step(
        decoder, inputs, memory, inputs_mask, memory_mask, initial_state
    )
    assert_allclose(outputs, expected_outputs)
    assert_allclose(weights, expected_weights)
    for state, expected in zip(states, expected_states, strict=True):
        assert_allclose(state, expected)
    # Padded target steps output exactly zero.
    assert np.all(to_numpy(outputs)[~inputs_mask] == 0)


def test_input_feeding_changes_the_result_and_is_used():
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=3)
    feeding = LuongDecoder(keras.layers.LSTMCell(H), ATTENTIONS["global"]())
    out = to_numpy(feeding(inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask))
    # Zeroing the h̃ part of the cell's input kernel turns input feeding into a no-op.
    plain = LuongDecoder(keras.layers.LSTMCell(H), ATTENTIONS["global"](), input_feeding=False)
    plain(inputs, memory)
    kernel, recurrent, bias, *rest = feeding.get_weights()
    plain.set_weights([kernel[:E], recurrent, bias, *rest])
    assert not np.allclose(
        out, to_numpy(plain(inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask))
    )
    kernel[E:] = 0
    feeding.set_weights([kernel, recurrent, bias, *rest])
    assert_allclose(
        feeding(inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask),
        plain(inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask),
    )


def test_fast_path_uses_the_fused_layer_and_the_cell_once():
    decoder = LuongDecoder(keras.layers.LSTMCell(H), ATTENTIONS["global"](), input_feeding=False)
    decoder(*inputs_and_masks()[:2])
    assert isinstance(decoder.rnn, keras.layers.LSTM)
    assert decoder.cell.cell is decoder.rnn.cell
    # kernel, recurrent kernel, bias; key kernel; attentional kernel: no copies.
    assert len(decoder.trainable_weights) == 5


@pytest.mark.parametrize("cell_class", [keras.layers.LSTMCell, keras.layers.GRUCell])
def test_fast_path_runs_the_given_cell(cell_class):
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=8)
    trained = cell_class(H)
    trained.build((B, E))
    for w in trained.weights:
        w.assign(random(w.shape, seed=len(w.path)))
    decoder = LuongDecoder(trained, ATTENTIONS["global"](), input_feeding=False)
    assert decoder.cell.cell is trained and decoder.rnn.cell is trained
    # The decoder computes with those weights: its RNN states equal the cell's own steps.
    _, states = decoder(inputs, memory, inputs_mask=inputs_mask, return_state=True)
    state = [np.zeros((B, H), "float32")] * (2 if cell_class is keras.layers.LSTMCell else 1)
    for t in range(T):
        _, new = trained(inputs[:, t], state)
        keep = inputs_mask[:, t : t + 1]
        state = [np.where(keep, to_numpy(n), s) for n, s in zip(new, state, strict=True)]
    for actual, expected in zip(states[:-1], state, strict=True):
        assert_allclose(actual, expected)


@pytest.mark.parametrize("input_feeding", [True, False])
@pytest.mark.parametrize("cell_class", [keras.layers.LSTMCell, keras.layers.GRUCell])
def test_fit_trains_the_cell_object_given(cell_class, input_feeding):
    inputs, memory, inputs_mask, _ = inputs_and_masks(seed=9)
    cell = cell_class(H)
    decoder = LuongDecoder(cell, ATTENTIONS["global"](), input_feeding=input_feeding)
    targets = keras.Input((T, E))
    value = keras.Input((S, H))
    model = keras.Model([targets, value], decoder(targets, value))
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.predict([inputs, memory], verbose=0)
    before = [to_numpy(w) for w in cell.weights]
    assert {id(w) for w in cell.weights} <= {id(w) for w in model.trainable_weights}
    model.fit([inputs, memory], random((B, T, U), seed=10), epochs=2, verbose=0)
    for old, new in zip(before, cell.weights, strict=True):
        assert np.abs(old - to_numpy(new)).max() > 1e-6


@pytest.mark.parametrize("input_feeding", [True, False])
def test_padding_cannot_change_valid_outputs(input_feeding):
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=5)
    decoder = LuongDecoder(keras.layers.LSTMCell(H), ATTENTIONS["local-p"](), input_feeding)
    out = decoder(inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask)
    noisy_inputs = np.where(inputs_mask[..., None], inputs, 50 * random((B, T, E), seed=6))
    noisy_memory = np.where(memory_mask[..., None], memory, 50 * random((B, S, H), seed=7))
    assert_allclose(
        decoder(noisy_inputs, noisy_memory, inputs_mask=inputs_mask, value_mask=memory_mask),
        out,
    )


def build_seq2seq(attention="global", input_feeding=True, vocab=11):
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory, h, c = keras.layers.LSTM(H, return_sequences=True, return_state=True)(
        keras.layers.Embedding(vocab, E, mask_zero=True)(source)
    )
    decoder = LuongDecoder(keras.layers.LSTMCell(H), ATTENTIONS[attention](), input_feeding)
    attentional = decoder(
        keras.layers.Embedding(vocab, E, mask_zero=True)(target), memory, initial_state=[h, c]
    )
    return keras.Model([source, target], keras.layers.Dense(vocab)(attentional))


def token_batch(vocab=11, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(1, vocab, (8, S)).astype("int32")
    tgt = rng.integers(1, vocab, (8, T)).astype("int32")
    src[:4, 5:] = 0
    tgt[:3, 4:] = 0
    return src, tgt


@pytest.mark.parametrize("input_feeding", [True, False])
def test_keras_masks_reach_the_decoder(input_feeding):
    model = build_seq2seq("local-p", input_feeding)
    src, tgt = token_batch()
    out = model.predict([src, tgt], verbose=0)
    # Example 0 has 5 source and 4 target tokens: without its padding it gives the same logits.
    unpadded = model.predict([src[:1, :5], tgt[:1, :4]], verbose=0)
    assert_allclose(out[0, :4], unpadded[0])
    # At padded target steps h̃ = 0, so the logits are the output layer's bias alone.
    bias = to_numpy(model.layers[-1].bias)
    assert_allclose(out[0, 4:], np.broadcast_to(bias, out[0, 4:].shape))


@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
@pytest.mark.parametrize("input_feeding", [True, False])
def test_fit_lowers_the_loss(attention, input_feeding):
    model = build_seq2seq(attention, input_feeding)
    src, tgt = token_batch()
    before, after = fit_lowers_loss(model, [src, tgt], tgt, steps=3, learning_rate=0.5)
    assert np.isfinite(after) and after < before - 1e-3


class TestLuongDecoderLayer(TestCase):
    def test_layer_bundle_of_cell_outputs(self, tmp_path):
        # output_attention=False: the cell's h_t out, every weight still trained (h̃ feeds
        # the next step).
        self.run_layer_bundle(
            lambda dtype=None: LuongDecoder(
                keras.layers.LSTMCell(H, dtype=dtype),
                ATTENTIONS["global"](dtype=dtype),
                output_attention=False,
                dtype=dtype,
            ),
            inputs_and_masks(seed=9)[:2],
            tmp_path,
            expected_output_shape=(B, T, H),
            expected_num_trainable_weights=5,
        )

    @pytest.mark.parametrize("attention", sorted(ATTENTIONS))
    @pytest.mark.parametrize("input_feeding", [True, False])
    def test_layer_bundle(self, attention, input_feeding, tmp_path):
        # The LSTM's 3 weights, then global and local-m (general): W_a, W_c; local-p (concat):
        # W_q, W_k, v_a, W_c, W_p, v_p.
        expected = 3 + {"global": 2, "local-m": 2, "local-p": 6}[attention]
        self.run_layer_bundle(
            lambda dtype=None: LuongDecoder(
                keras.layers.LSTMCell(H, dtype=dtype),
                ATTENTIONS[attention](dtype=dtype),
                input_feeding=input_feeding,
                dtype=dtype,
            ),
            inputs_and_masks(seed=9)[:2],
            tmp_path,
            expected_output_shape=(B, T, U),
            expected_num_trainable_weights=expected,
        )

    @pytest.mark.parametrize("input_feeding", [True, False])
    def test_precision(self, input_feeding):
        def make(dtype):
            attention = LocalAttention(window=2, attentional_units=U, dtype=dtype)
            cell = keras.layers.LSTMCell(H, dtype=dtype)
            return LuongDecoder(cell, attention, input_feeding=input_feeding, dtype=dtype)

        inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=10)
        self.run_precision_test(
            make, [inputs, memory], {"inputs_mask": inputs_mask, "value_mask": memory_mask}
        )

    @pytest.mark.parametrize("input_feeding", [True, False])
    def test_keras_file_round_trip(self, input_feeding, tmp_path):
        src, tgt = token_batch(seed=1)
        self.run_saving_test(build_seq2seq("local-p", input_feeding), [src, tgt], tmp_path)

    def test_keras_file_loads_on_another_backend(self, tmp_path):
        src, tgt = token_batch(seed=2)
        self.run_saving_test(
            build_seq2seq("global", True), [src, tgt], tmp_path, cross_backend=True
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cell": keras.layers.Dense(4)}, "argument cell"),
        ({"attention": keras.layers.Attention()}, "argument attention"),
    ],
)
def test_invalid_arguments(kwargs, message):
    arguments = {"cell": keras.layers.LSTMCell(H), "attention": ATTENTIONS["global"](), **kwargs}
    with pytest.raises(ValueError, match=message):
        LuongDecoder(**arguments)


@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("input_feeding", [True, False])
def test_output_shapes_and_specs_match_the_call(cell, input_feeding):
    """compute_output_shape/compute_output_spec (what functional models and summary() use)
    give the shapes and dtypes the call returns, with and without weights and states."""
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks()
    decoder = LuongDecoder(CELLS[cell](), ATTENTIONS["global"](), input_feeding=input_feeding)
    outputs, weights, states = decoder(
        inputs, memory, return_attention_scores=True, return_state=True
    )
    assert decoder.compute_output_shape(inputs.shape, memory.shape) == tuple(outputs.shape)
    spec = decoder.compute_output_spec(
        keras.KerasTensor((None, None, E)),
        keras.KerasTensor((None, None, H)),
        return_attention_scores=True,
        return_state=True,
    )
    dtype = keras.backend.standardize_dtype
    assert spec[0].shape == (None, None, U) and spec[0].dtype == dtype(outputs.dtype)
    assert spec[1].shape == (None, None, None) and spec[1].dtype == dtype(weights.dtype)
    assert [s.shape[1:] for s in spec[2]] == [tuple(s.shape[1:]) for s in states]
    # The cell's own, one step.
    cell_out, cell_states, cell_weights = decoder.step(
        inputs[:, 0],
        decoder.get_initial_state(B),
        decoder.prepare(memory),
        return_attention_scores=True,
    )
    shape, state_shapes = decoder.cell.compute_output_shape((B, E), None, (B, S, H))
    assert shape == tuple(cell_out.shape)
    assert state_shapes == [tuple(s.shape) for s in cell_states]
    # And in a functional model: the symbolic outputs have the eager outputs' shapes.
    x, m = keras.Input((T, E)), keras.Input((S, H))
    symbolic = LuongDecoder(CELLS[cell](), ATTENTIONS["local-p"](), input_feeding=input_feeding)(
        x, m, return_attention_scores=True
    )
    assert symbolic[0].shape == (None, T, U) and symbolic[1].shape == (None, T, S)
    model = keras.Model([x, m], symbolic)
    eager = model([inputs, memory])
    assert tuple(eager[0].shape) == (B, T, U) and tuple(eager[1].shape) == (B, T, S)
    assert_allclose(to_numpy(eager[1]).sum(-1) <= 1 + 1e-5, True)


B, T, S, D = 3, 4, 7, 6


LENGTHS = [7, 4, 1]


def _sum_of_squares(outputs):
    return keras.ops.sum(keras.ops.square(outputs))


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
    kwargs = {"inputs_mask": inputs_mask, "value_mask": length_mask(LENGTHS, S)}
    outputs = to_numpy(decoder(poisoned, memory, **kwargs))
    assert np.all(outputs[~inputs_mask] == 0)
    assert_allclose(outputs, decoder(inputs, memory, **kwargs))
    dirty = gradients(decoder, _sum_of_squares, [poisoned, memory], **kwargs)
    clean = gradients(decoder, _sum_of_squares, [inputs, memory], **kwargs)
    for got, expected in zip(dirty[0] + dirty[1], clean[0] + clean[1], strict=True):
        assert np.all(np.isfinite(got))
        assert_allclose(got, expected, atol=1e-5)


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


def test_decoder_refuses_inputs_of_one_step():
    decoder = LuongDecoder(keras.layers.LSTMCell(D), GlobalAttention(attentional_units=D))
    with pytest.raises(ValueError, match=r"Invalid inputs: expected a tensor of rank 3"):
        decoder(random((B, D), 1), random((B, S, D), 2))


@pytest.mark.parametrize("input_feeding", [True, False])
@pytest.mark.parametrize("alignment", ["global", "local-m"])
def test_decoder_refuses_inputs_and_value_of_different_batches(alignment, input_feeding):
    """The same `ValueError` on every backend and path (torch's eager fast paths included,
    which never call the attention layer): inputs of batch 3 beside a value of batch 2."""
    decoder = LuongDecoder(
        keras.layers.LSTMCell(H), ATTENTIONS[alignment](), input_feeding=input_feeding
    )
    message = "inputs batch size 3, value batch size 2"
    with pytest.raises(ValueError, match=message):
        decoder(random((3, T, E), 1), random((2, S, H), 2))


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


@PROPERTY
@given(attention_cases(kinds=("global", "local-m")), st.booleans())
def test_step_decoding_equals_teacher_forcing(case, input_feeding):
    inputs = case["query"]
    batch, steps = inputs.shape[:2]
    attention = make_layer({**case, "attentional": True})
    cell = keras.layers.LSTMCell(case["value"].shape[-1])  # the dot score needs equal sizes
    decoder = LuongDecoder(cell, attention, input_feeding=input_feeding)
    forced = to_numpy(decoder(inputs, case["value"], value_mask=case["mask"]))
    memory = decoder.prepare(case["value"], case["mask"])
    states = decoder.get_initial_state(batch)
    for t in range(steps):
        output, states = decoder.step(inputs[:, t], states, memory, step=t)
        assert_allclose(output, forced[:, t], atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_output_attention_false_outputs_the_cell_and_keeps_the_states(cell):
    # tensorflow-addons' AttentionWrapper(output_attention=False): the same weights and
    # states as the default; each step outputs the cell's h_t (an LSTM's and a GRU's h is
    # their first state) instead of h̃_t, which still feeds the next step.
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=4)
    default = LuongDecoder(CELLS[cell](), ATTENTIONS["global"]())
    outputs, weights, states = default(
        inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask,
        return_attention_scores=True, return_state=True,
    )  # fmt: skip
    config = {**default.get_config(), "output_attention": False}
    wrapper_like = LuongDecoder.from_config(config)
    wrapper_like(inputs, memory)
    wrapper_like.set_weights(default.get_weights())
    cell_outputs, cell_weights, cell_states = wrapper_like(
        inputs, memory, inputs_mask=inputs_mask, value_mask=memory_mask,
        return_attention_scores=True, return_state=True,
    )  # fmt: skip
    assert wrapper_like.get_config()["output_attention"] is False
    assert tuple(cell_outputs.shape) == (B, T, H) and tuple(outputs.shape) == (B, T, U)
    assert_allclose(cell_weights, weights)
    for a, b in zip(cell_states, states, strict=True):
        assert_allclose(a, b)
    # Step by step, the output is the cell's new h; padded steps output zeros.
    states = wrapper_like.get_initial_state(B)
    prepared = wrapper_like.prepare(memory, memory_mask)
    mask = to_numpy(inputs_mask)
    for t in range(T):
        out, new_states = wrapper_like.step(inputs[:, t], states, prepared, step=t)
        assert_allclose(out, new_states[0])
        assert_allclose(to_numpy(cell_outputs[:, t]), to_numpy(out) * mask[:, t : t + 1])
        keep = inputs_mask[:, t : t + 1]
        states = [keras.ops.where(keep, n, s) for n, s in zip(new_states, states, strict=True)]
    assert not np.allclose(to_numpy(cell_outputs)[..., :H], to_numpy(outputs)[..., :H])


def test_output_attention_false_needs_input_feeding():
    with pytest.raises(ValueError, match="output_attention=False, input_feeding=False"):
        LuongDecoder(CELLS["lstm"](), ATTENTIONS["global"](), input_feeding=False,
                     output_attention=False)  # fmt: skip


@pytest.mark.parametrize("input_feeding", [True, False])
def test_without_attentional_units_the_context_is_the_attention(input_feeding):
    """tensorflow-addons' `AttentionWrapper(attention_layer_size=None)`: each step outputs
    and feeds `c_t`, the context of its own `h_t`. The same layers with
    `output_attention=False` output that `h_t` (same weights, same states); attending with
    it on its own gives the outputs."""
    inputs, value, inputs_mask, value_mask = inputs_and_masks(seed=12)
    cell, attention = keras.layers.LSTMCell(H), GlobalAttention(score_mode="general")
    decoder = LuongDecoder(cell, attention, input_feeding=input_feeding)
    contexts, states = decoder(
        inputs, value, inputs_mask=inputs_mask, value_mask=value_mask, return_state=True
    )
    assert decoder.units == H and tuple(contexts.shape) == (B, T, H)  # the value's size
    if input_feeding:  # the context is fed: the cell reads [x_t; c_{t-1}]
        assert tuple(cell.kernel.shape) == (E + H, 4 * H)
        hidden = LuongDecoder(cell, attention, output_attention=False)(
            inputs, value, inputs_mask=inputs_mask, value_mask=value_mask
        )
    else:
        hidden = keras.layers.RNN(cell, return_sequences=True)(inputs, mask=inputs_mask)
    expected = attention(hidden, value, value_mask=value_mask)
    keep = inputs_mask[..., None]
    assert_allclose(contexts, to_numpy(expected) * keep)
    # The last context of each sequence is the state fed on (h̃'s place).
    last = to_numpy(expected)[np.arange(B), inputs_mask.sum(1) - 1]
    assert_allclose(states[2], last)


def test_without_attentional_units_the_states_wait_for_the_value():
    """The fed context is as wide as the value, unknown before the memory is prepared."""
    decoder = LuongDecoder(keras.layers.LSTMCell(H), GlobalAttention())
    with pytest.raises(ValueError, match="prepare the memory first"):
        decoder.get_initial_state(B)
    memory = decoder.prepare(random((B, S, 9)))
    states = decoder.get_initial_state(B, memory=memory)
    assert [tuple(s.shape) for s in states] == [(B, H), (B, H), (B, 9)]


@pytest.mark.parametrize("attention", ["global", "local-m"])
@pytest.mark.parametrize("output_attention", [True, False])
def test_inputs_projected_ahead_give_the_step_by_step_call(attention, output_attention):
    """On eager torch an LSTM cell with input feeding takes its inputs' part of every step
    in one matmul (`project_ahead`, then `projected_call` per step): the outputs, weights,
    states and gradients of `call` at every step, with padding on both sides."""
    inputs, memory, inputs_mask, memory_mask = inputs_and_masks(seed=5)
    decoder = LuongDecoder(
        keras.layers.LSTMCell(H, bias_initializer="random_normal"),
        ATTENTIONS[attention](),
        output_attention=output_attention,
    )
    kwargs = dict(inputs_mask=inputs_mask, value_mask=memory_mask, return_attention_scores=True)
    decoder(inputs, memory, **kwargs)
    calls = []
    original = InputFeedingCell.projected_call

    def counted(self, *args, **kw):
        calls.append(1)
        return original(self, *args, **kw)

    def run():
        out = decoder(inputs, memory, return_state=True, training=True, **kwargs)
        grads = gradients(decoder, lambda o: keras.ops.sum(o[0] * o[0]), [inputs, memory],
                          training=True, **kwargs)  # fmt: skip
        return [to_numpy(o) for o in keras.tree.flatten(out)], grads

    with mock.patch.object(InputFeedingCell, "projected_call", counted):
        ahead, ahead_grads = run()
    assert (len(calls) > 0) == (keras.backend.backend() == "torch")
    with mock.patch.object(InputFeedingCell, "project_ahead", return_value=None):
        expected, expected_grads = run()
    for a, b in zip(ahead, expected, strict=True):
        assert_allclose(a, b, atol=1e-6)
    for a, b in zip(
        keras.tree.flatten(ahead_grads), keras.tree.flatten(expected_grads), strict=True
    ):
        assert_allclose(a, b, atol=1e-5)


def test_project_ahead_covers_only_what_projected_call_computes():
    """`project_ahead` gives `None` (the steps run `call`) for another cell, a cell with
    dropout in training, no input feeding and a cell subclass whose `call` differs."""
    inputs, memory = inputs_and_masks()[:2]

    class Overridden(InputFeedingCell):
        def call(self, *args, **kwargs):
            return super().call(*args, **kwargs)

    def cell(rnn_cell=None, wrapper=InputFeedingCell, **kwargs):
        layer = wrapper(rnn_cell or keras.layers.LSTMCell(H), ATTENTIONS["global"](), **kwargs)
        layer.build_attention(memory.shape)
        layer.build((B, E))
        return layer

    on_torch = keras.backend.backend() == "torch"
    x = keras.ops.convert_to_tensor(inputs)
    assert (cell().project_ahead(x, training=True) is not None) == on_torch
    assert cell(keras.layers.GRUCell(H)).project_ahead(x) is None
    assert cell(keras.layers.LSTMCell(H, dropout=0.5)).project_ahead(x, training=True) is None
    assert (cell(keras.layers.LSTMCell(H, dropout=0.5)).project_ahead(x) is not None) == on_torch
    assert cell(input_feeding=False).project_ahead(x) is None
    assert cell(wrapper=Overridden).project_ahead(x) is None
