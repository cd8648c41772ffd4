"""BahdanauCell and BahdanauDecoder (Bahdanau, Cho and Bengio 2015) against a float64 numpy
reference of the paper's step, and LuongSeq2Seq with attention_timing="bahdanau"."""

import keras
import numpy as np
import pytest

from keras_luong import (
    BahdanauAttention,
    BahdanauCell,
    BahdanauDecoder,
    BahdanauMonotonicAttention,
    GlobalAttention,
    LocalAttention,
    LuongDecoder,
    LuongSeq2Seq,
)
from keras_luong.decoders.bahdanau_decoder import output_state_index
from tests.bahdanau_attention_test import bahdanau_scores, randomize
from tests.decoder_test import decode_step_by_step
from tests.reference import masked_softmax
from tests.seq2seq_test import DATA, SOURCE, TARGET_IN, TARGET_OUT
from tests.test_case import (
    TestCase,
    assert_allclose,
    assert_loads_on_another_backend,
    fit_lowers_loss,
    length_mask,
    random,
    to_numpy,
)

B, T, S, E, H, A, K = 3, 5, 6, 4, 7, 8, 6  # A: the score's units, K: the deep output's


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference(decoder, inputs, value, inputs_mask, value_mask, h, c):
    """The paper's decoder in float64 from the layers' weights, Keras' LSTM gate order
    (i, f, c, o): attend with s_{t-1}, the LSTM on [y_{t-1}; c_t], the deep output of
    [s_t; c_t; y_{t-1}]. Padded target steps keep the states and output zeros."""
    cell, attention = decoder.cell, decoder.attention
    kernel, recurrent, bias = (to_numpy(w).astype("float64") for w in cell.cell.weights)
    w_o, b_o = to_numpy(cell.output_kernel), to_numpy(cell.output_bias)
    value = np.where(value_mask[..., None], value.astype("float64"), 0.0)
    outputs, alignments = [], []
    for t in range(inputs.shape[1]):
        x = inputs[:, t].astype("float64")
        scores = bahdanau_scores(attention, h[:, None], value, value_mask)[:, 0]
        weights = masked_softmax(scores, value_mask)
        context = np.einsum("bs,bsd->bd", weights, value)
        z = np.concatenate([x, context], -1) @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        new_c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        new_h = sigmoid(o) * np.tanh(new_c)
        pre = np.concatenate([new_h, context, x], -1) @ w_o + b_o
        if cell.deep_output == "maxout":
            output = pre.reshape(len(pre), -1, 2).max(-1)
        else:
            output = np.tanh(pre)
        keep = inputs_mask[:, t : t + 1]
        h, c = np.where(keep, new_h, h), np.where(keep, new_c, c)
        outputs.append(output * keep)
        alignments.append(weights * keep)
    return np.stack(outputs, 1), np.stack(alignments, 1), [h, c]


def inputs_and_masks(seed=0):
    inputs, value = random((B, T, E), seed), random((B, S, H), seed + 1)
    return inputs, value, length_mask([5, 2, 4], T), length_mask([6, 3, 1], S)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("deep_output", ["maxout", "tanh"])
def test_decoder_against_the_papers_equations(deep_output, normalize):
    inputs, value, inputs_mask, value_mask = inputs_and_masks()
    decoder = BahdanauDecoder(
        keras.layers.LSTMCell(H), BahdanauAttention(A, normalize=normalize), units=K,
        deep_output=deep_output,
    )  # fmt: skip
    h0, c0 = random((B, H), 3), random((B, H), 4)
    decoder(inputs, value, initial_state=[h0, c0])
    for layer in (decoder.attention, decoder.cell):
        randomize(layer)  # every weight, the LSTM's and W_o included, away from its init
    outputs, weights, states = decoder(
        inputs, value, initial_state=[h0, c0], inputs_mask=inputs_mask, value_mask=value_mask,
        return_attention_scores=True, return_state=True,
    )  # fmt: skip
    expected = reference(decoder, inputs, value, inputs_mask, value_mask, h0, c0)
    assert tuple(outputs.shape) == (B, T, K)
    assert_allclose(outputs, expected[0])
    assert_allclose(weights, expected[1])
    for state, expected_state in zip(states, expected[2], strict=True):
        assert_allclose(state, expected_state)
    # The weights of (the paper's) K outputs: W_o reads [s_t; c_t; y_{t-1}].
    pieces = 2 if deep_output == "maxout" else 1
    assert tuple(decoder.cell.output_kernel.shape) == (H + H + E, pieces * K)


def test_the_first_step_attends_with_the_initial_state_not_the_input():
    """Bahdanau's timing: the weights at step t come from s_{t-1}, so x_0 cannot change the
    first step's weights (it changes the second's); Luong's first step attends with h_0,
    which x_0 makes."""
    inputs, value, _, _ = inputs_and_masks(seed=5)
    changed = inputs.copy()
    changed[:, 0] += 1.0
    initial = [random((B, H), 6), random((B, H), 7)]
    bahdanau = BahdanauDecoder(keras.layers.LSTMCell(H), BahdanauAttention(A))
    luong = LuongDecoder(keras.layers.LSTMCell(H), GlobalAttention(attentional_units=H))
    for decoder, first_moves in ((bahdanau, False), (luong, True)):
        _, before = decoder(inputs, value, initial_state=initial, return_attention_scores=True)
        _, after = decoder(changed, value, initial_state=initial, return_attention_scores=True)
        before, after = to_numpy(before), to_numpy(after)
        assert np.allclose(before[:, 0], after[:, 0]) != first_moves
        assert not np.allclose(before[:, 1], after[:, 1])


CELLS = {
    "lstm": lambda: keras.layers.LSTMCell(H),
    "gru": lambda: keras.layers.GRUCell(H),
    "stacked": lambda: keras.layers.StackedRNNCells(
        [keras.layers.GRUCell(5), keras.layers.LSTMCell(H)]
    ),
}
ATTENTIONS = {
    "bahdanau": lambda: BahdanauAttention(A, normalize=True),
    "local-p": lambda: LocalAttention(window=2, score_mode="concat"),
    "monotonic": lambda: BahdanauMonotonicAttention(A, mode="recursive"),
}


@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
def test_step_by_step_equals_teacher_forcing(cell, attention):
    inputs, value, inputs_mask, value_mask = inputs_and_masks(seed=8)
    decoder = BahdanauDecoder(CELLS[cell](), ATTENTIONS[attention](), deep_output="tanh")
    outputs, weights, states = decoder(
        inputs, value, inputs_mask=inputs_mask, value_mask=value_mask,
        return_attention_scores=True, return_state=True,
    )  # fmt: skip
    stepped, stepped_weights, stepped_states = decode_step_by_step(
        decoder, inputs, value, inputs_mask, value_mask
    )
    assert_allclose(outputs, stepped)
    assert_allclose(weights, stepped_weights)
    assert len(states) == len(decoder.cell.state_size)
    for state, expected in zip(states, stepped_states, strict=True):
        assert_allclose(state, expected)


def test_the_query_is_the_cells_output_state():
    # Flattened states: [h, c] -> h; a stack's top cell's first: GRU [h], LSTM [h, c], LSTM.
    assert output_state_index(keras.layers.LSTMCell(3)) == 0
    stacked = keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(3), keras.layers.GRUCell(4), keras.layers.LSTMCell(5)]
    )
    assert output_state_index(stacked) == 3
    cell = BahdanauCell(stacked, BahdanauAttention(A))
    assert cell.cell_state_size == [3, 3, 4, 5, 5] and cell.units == 5


class TestBahdanauDecoderLayer(TestCase):
    @pytest.mark.parametrize("deep_output", ["maxout", "tanh"])
    def test_layer_bundle(self, deep_output, tmp_path):
        # The LSTM's 3 weights, the attention's W_q, W_k, v, then W_o and b_o.
        self.run_layer_bundle(
            lambda dtype=None: BahdanauDecoder(
                keras.layers.LSTMCell(H, dtype=dtype),
                BahdanauAttention(A, dtype=dtype),
                units=K,
                deep_output=deep_output,
                dtype=dtype,
            ),
            inputs_and_masks(seed=9)[:2],
            tmp_path,
            expected_output_shape=(B, T, K),
            expected_num_trainable_weights=8,
        )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: BahdanauDecoder(keras.layers.LSTMCell(H), GlobalAttention(attentional_units=H)),
            "Received: attention.attentional_units=7",
        ),
        (
            lambda: BahdanauDecoder(
                keras.layers.LSTMCell(H), BahdanauAttention(A), deep_output="relu"
            ),
            "deep_output='relu'",
        ),
        (
            lambda: BahdanauDecoder(keras.layers.LSTMCell(H), BahdanauAttention(A), units=0),
            "units=0",
        ),
        (lambda: BahdanauDecoder(keras.layers.Dense(H), BahdanauAttention(A)), "cell="),
        (
            lambda: LuongSeq2Seq(10, 8, attention_timing="late"),
            "attention_timing='late'",
        ),
        (
            lambda: LuongSeq2Seq(10, 8, attention_timing="bahdanau", input_feeding=False),
            "input_feeding=False",
        ),
    ],
)
def test_bad_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def make_model(**kwargs):
    model = LuongSeq2Seq(
        len(DATA["source_vocabulary"]), len(DATA["target_vocabulary"]), units=16,
        embedding_dim=8, attention_timing="bahdanau", **kwargs,
    )  # fmt: skip
    model((SOURCE[:2], TARGET_IN[:2]))
    return model


def test_model_decodes_step_by_step_as_it_trains():
    """The model's logits from its decoder's loop equal those of `next_token_logits` fed the
    gold tokens, the function every sampler calls."""
    model = make_model(score_mode="additive")
    expected = to_numpy(model((SOURCE[:4], TARGET_IN[:4])))
    value, value_mask, cell_states = model.encode(SOURCE[:4])
    memory = model.decoder.prepare(value, value_mask)
    states = model.decoder.get_initial_state(4, cell_states, memory)
    for t in range(TARGET_IN.shape[1]):
        logits, _, states = model.next_token_logits(TARGET_IN[:4, t], states, memory, t)
        valid = TARGET_IN[:4, t] != 0
        assert_allclose(to_numpy(logits)[valid], expected[:4, t][valid])


def test_model_fits_and_its_keras_file_loads_on_another_backend(tmp_path):
    model = make_model(score_mode="additive", decoder_layers=2)
    before, after = fit_lowers_loss(model, (SOURCE, TARGET_IN), TARGET_OUT, learning_rate=0.5)
    assert np.isfinite(after) and after < before - 1e-3
    assert model.get_config()["attention_timing"] == "bahdanau"
    assert_loads_on_another_backend(model, [SOURCE, TARGET_IN], tmp_path)
