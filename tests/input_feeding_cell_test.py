import keras
import numpy as np
import pytest

from keras_luong import GlobalAttention, InputFeedingCell, LocalAttention
from tests.reference import attentional_state, luong_scores, masked_softmax
from tests.test_case import TestCase, assert_allclose, length_mask, random, to_numpy

B, S, E, H, U = 3, 5, 4, 6, 7


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_lstm(cell, x, h, c):
    """Keras' LSTMCell equations (gates i, f, c, o) in float64."""
    kernel, recurrent, bias = (to_numpy(w).astype("float64") for w in cell.weights)
    z = x @ kernel + h @ recurrent + bias
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


@pytest.mark.parametrize("input_feeding", [True, False])
def test_two_steps_match_the_equations(input_feeding):
    memory, memory_mask = random((B, S, H), seed=1), length_mask([5, 2, 4], S)
    xs = random((2, B, E), seed=2)
    attention = GlobalAttention(score_mode="general", attentional_units=U)
    cell = InputFeedingCell(keras.layers.LSTMCell(H), attention, input_feeding=input_feeding)
    h0, c0 = random((B, H), seed=3), random((B, H), seed=4)
    states = cell.get_initial_state(B, [h0, c0])
    prepared = cell.prepare(memory, memory_mask)  # builds the attention: once per source
    assert_allclose(states[-1], np.zeros((B, U)))

    h, c, feed = h0.astype("float64"), c0.astype("float64"), np.zeros((B, U))
    for t in range(2):
        out, states, weights = cell(xs[t], states, prepared, return_attention_scores=True)
        x = np.concatenate([xs[t], feed], -1) if input_feeding else xs[t]
        h, c = reference_lstm(cell.cell, x, h, c)
        expected_weights = masked_softmax(
            luong_scores(attention, h[:, None], memory), memory_mask[:, None]
        )[:, 0]
        context = np.einsum("bs,bsh->bh", expected_weights, memory.astype("float64"))
        feed = attentional_state(attention, context, h)
        assert_allclose(weights, expected_weights)
        assert_allclose(out, feed)
        assert_allclose(states[0], h)
        assert_allclose(states[1], c)
        assert_allclose(states[2], feed)


def test_state_of_stacked_cells():
    stacked = keras.layers.StackedRNNCells([keras.layers.LSTMCell(H), keras.layers.GRUCell(5)])
    cell = InputFeedingCell(stacked, GlobalAttention(attentional_units=U))
    assert cell.state_size == [H, H, 5, U]
    states = cell.get_initial_state(B)
    out, new_states = cell(random((B, E)), states, cell.prepare(random((B, S, 5))))
    assert [tuple(s.shape) for s in new_states] == [(B, H), (B, H), (B, 5), (B, U)]
    # The first layer's h feeds the second; the second's h is what attention sees.
    assert_allclose(new_states[-1], out)
    assert not np.allclose(to_numpy(new_states[0]), 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cell": keras.layers.Dense(4)}, "argument cell"),
        ({"cell": "lstm"}, "argument cell"),
        ({"attention": keras.layers.Attention()}, "argument attention"),
    ],
)
def test_invalid_arguments(kwargs, message):
    arguments = {
        "cell": keras.layers.LSTMCell(H),
        "attention": GlobalAttention(attentional_units=U),
        **kwargs,
    }
    with pytest.raises(ValueError, match=message):
        InputFeedingCell(**arguments)


def test_wrong_number_of_initial_states():
    cell = InputFeedingCell(keras.layers.LSTMCell(H), GlobalAttention(attentional_units=U))
    with pytest.raises(ValueError, match="Expected 2 initial cell states"):
        cell.get_initial_state(B, [random((B, H))])


class TestInputFeedingCellLayer(TestCase):
    @pytest.mark.parametrize("attention_class", [GlobalAttention, LocalAttention])
    def test_config_round_trip(self, attention_class):
        cell = InputFeedingCell(
            keras.layers.GRUCell(H), attention_class(score_mode="concat", attentional_units=U)
        )
        states = cell.get_initial_state(B)
        inputs = [random((B, E), seed=6), states, cell.prepare(random((B, S, H), seed=5))]
        self.run_serialization_test(cell, inputs, {"step": 0})
