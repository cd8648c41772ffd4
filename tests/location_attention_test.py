"""LocationSensitiveAttention against a float64 numpy reference of Chorowski et al.'s
equations, step after step; in the decoder, in a model by its alignment name, and through the
layer bundle. (The shared contract tests run it too: tests/attention_protocol_test.py.)"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import (
    BeamSearchSampler,
    LocationSensitiveAttention,
    LuongDecoder,
    LuongSeq2Seq,
)
from tests.decoder_test import decode_step_by_step
from tests.test_case import TestCase, fit_lowers_loss, save_and_load

B, S, T, D, UNITS = 3, 7, 5, 6, 4
LENGTHS = np.array([7, 4, 1])
MASK = np.arange(S) < LENGTHS[:, None]


def random(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def weights_of(layer):
    return {w.name: ops.convert_to_numpy(w).astype("float64") for w in layer.weights}


def reference(layer, query, value, mask):
    """Outputs `(B, T, d)` and alignments `(B, T, S)` in float64, one step at a time:
    `f = F * a` (zero padded, centred), `e = w · tanh(W h + V h̄ + U f + b)`, the softmax over
    the valid positions, `c = Σ a h̄`, then `h̃ = tanh(W_c [c; h])` where the layer has it."""
    w = weights_of(layer)
    query, value = query.astype("float64"), np.where(mask[..., None], value, 0.0)
    half = layer.kernel_size // 2
    outputs, alignments = [], []
    previous = np.zeros(mask.shape)
    cumulative = np.zeros(mask.shape)
    for t in range(query.shape[1]):
        channels = np.stack([previous, cumulative] if layer.cumulative else [previous], -1)
        padded = np.pad(channels, ((0, 0), (half, half), (0, 0)))
        features = np.zeros((len(query), value.shape[1], layer.filters))
        for s in range(value.shape[1]):
            window = padded[:, s : s + layer.kernel_size]  # (B, width, channels)
            features[:, s] = np.einsum("bic,icf->bf", window, w["location_filters"])
        hidden = (
            (query[:, t] @ w["query_kernel"])[:, None]
            + value @ w["key_kernel"]
            + features @ w["location_kernel"]
            + w["score_bias"]
        )
        scores = np.tanh(hidden) @ w["score_kernel"]
        scores = np.where(mask, scores, -np.inf)
        exp = np.exp(scores - scores.max(-1, keepdims=True))
        a = np.where(mask, exp, 0.0) / np.where(mask, exp, 0.0).sum(-1, keepdims=True)
        context = np.einsum("bs,bsd->bd", a, value)
        if layer.attentional_units:
            context = np.tanh(np.concatenate([context, query[:, t]], -1) @ w["attentional_kernel"])
        outputs.append(context)
        alignments.append(a)
        previous, cumulative = a, cumulative + a
    return np.stack(outputs, 1), np.stack(alignments, 1)


@pytest.mark.parametrize("cumulative", [False, True])
@pytest.mark.parametrize("attentional_units", [None, 5])
def test_equals_the_float64_reference_of_its_equations(cumulative, attentional_units):
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    layer = LocationSensitiveAttention(
        UNITS, filters=3, kernel_size=3, cumulative=cumulative, attentional_units=attentional_units
    )
    output, weights, state = layer(
        query, value, value_mask=MASK, return_attention_scores=True, return_state=True
    )
    expected_output, expected_weights = reference(layer, query, value, MASK)
    np.testing.assert_allclose(ops.convert_to_numpy(weights), expected_weights, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(output), expected_output, atol=1e-5)
    # The state after the last step: a_{T-1} (and the sum of every alignment).
    np.testing.assert_allclose(ops.convert_to_numpy(state[0]), expected_weights[:, -1], atol=1e-5)
    if cumulative:
        np.testing.assert_allclose(
            ops.convert_to_numpy(state[1]), expected_weights.sum(1), atol=1e-5
        )


def test_the_previous_alignment_moves_the_attention():
    """The location term is what decides here: with the content scores made equal (a value
    the same at every position), the weights follow the filters over a_{t-1}."""
    layer = LocationSensitiveAttention(UNITS, filters=2, kernel_size=3)
    query, value = random((1, 1, D), 3), np.ones((1, S, D), "float32")
    layer(query, value)  # builds
    memory = layer.prepare(value)
    starts = [np.eye(S, dtype="float32")[[s]] for s in (1, 4)]
    weights = [
        ops.convert_to_numpy(
            layer(query[:, 0], memory=memory, initial_state=[a], return_attention_scores=True)[1]
        )[0]
        for a in starts
    ]
    # Shifting a_{t-1} by three positions shifts the weights by three away from the edges.
    np.testing.assert_allclose(weights[1][3:6], weights[0][0:3], atol=1e-6)
    assert not np.allclose(weights[0], weights[1])


def test_step_by_step_equals_all_steps_at_once():
    query, value = random((B, T, D), 4), random((B, S, D), 5)
    layer = LocationSensitiveAttention(UNITS, filters=3, kernel_size=5, cumulative=True)
    output, weights = layer(query, value, value_mask=MASK, return_attention_scores=True)
    memory = layer.prepare(value, MASK)
    state = layer.get_initial_state(B, memory)
    for t in range(T):
        step_output, step_weights, state = layer(
            query[:, t],
            memory=memory,
            initial_state=state,
            return_attention_scores=True,
            return_state=True,
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(step_output), ops.convert_to_numpy(output)[:, t], atol=1e-5
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(step_weights), ops.convert_to_numpy(weights)[:, t], atol=1e-6
        )


@pytest.mark.parametrize("input_feeding", [True, False])
def test_decoder_step_by_step_equals_teacher_forcing(input_feeding):
    targets, value = random((B, T, 6), 6), random((B, S, D), 7)
    decoder = LuongDecoder(
        keras.layers.LSTMCell(D),
        LocationSensitiveAttention(UNITS, filters=2, kernel_size=3, attentional_units=D),
        input_feeding=input_feeding,
    )
    outputs, weights = decoder(targets, value, value_mask=MASK, return_attention_scores=True)
    step_outputs, step_weights, _ = decode_step_by_step(
        decoder, targets, value, np.ones((B, T), bool), MASK
    )
    np.testing.assert_allclose(step_outputs, ops.convert_to_numpy(outputs), atol=1e-5)
    np.testing.assert_allclose(step_weights, ops.convert_to_numpy(weights), atol=1e-6)


def test_a_model_by_its_alignment_name_trains_decodes_and_round_trips(tmp_path):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    source = rng.integers(3, 9, (16, 5)).astype("int32")
    target = np.concatenate([np.ones((16, 1)), source, np.full((16, 1), 2)], 1).astype("int32")
    model = LuongSeq2Seq(
        9,
        9,
        units=8,
        embedding_dim=4,
        alignment="location-sensitive",
        attention_arguments={"filters": 2, "kernel_size": 3, "cumulative": True},
    )
    attention = model.decoder.cell.attention
    assert isinstance(attention, LocationSensitiveAttention)
    assert (attention.units, attention.filters, attention.cumulative) == (8, 2, True)
    before, after = fit_lowers_loss(model, (source, target[:, :-1]), target[:, 1:], steps=3)
    assert after < before
    greedy = model.generate(source[:4], 7)
    beam = model.generate(source[:4], 7, sampler=BeamSearchSampler(1))
    np.testing.assert_array_equal(beam, greedy)  # one beam is greedy search
    _, restored = save_and_load(model, tmp_path)
    assert restored.get_config()["attention_arguments"] == {
        "filters": 2,
        "kernel_size": 3,
        "cumulative": True,
    }
    np.testing.assert_array_equal(restored.generate(source[:4], 7), greedy)
    np.testing.assert_array_equal(
        restored.generate(source[:4], 7, sampler=BeamSearchSampler(3)),
        model.generate(source[:4], 7, sampler=BeamSearchSampler(3)),
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, "units=0"),
        ({"units": 4, "kernel_size": 4}, "kernel_size=4"),
        ({"units": 4, "filters": 1.5}, "filters=1.5"),
        ({"units": 4, "cumulative": "yes"}, "cumulative='yes'"),
        ({"units": 4, "score_mode": "general"}, "score_mode='general'"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LocationSensitiveAttention(**kwargs)


def test_a_model_refuses_a_score_mode_the_alignment_does_not_take():
    with pytest.raises(ValueError, match="takes no score_mode"):
        LuongSeq2Seq(9, 9, units=8, alignment="location-sensitive", score_mode="dot")


class TestLocationSensitiveAttentionLayer(TestCase):
    @pytest.mark.parametrize("cumulative", [False, True])
    def test_layer_bundle(self, cumulative, tmp_path):
        self.run_layer_bundle(
            lambda dtype=None: LocationSensitiveAttention(
                UNITS, filters=2, kernel_size=3, cumulative=cumulative, use_scale=True, dtype=dtype
            ),
            [random((B, T, D), 8), random((B, S, D), 9)],
            tmp_path,
            expected_output_shape=(B, T, D),
        )
