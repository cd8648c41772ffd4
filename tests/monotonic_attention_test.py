"""MonotonicAttention against a float64 numpy reference of Raffel et al.'s recursion.

tensorflow-addons' own `LuongMonotonicAttention`, in its own virtual environment, gives the
same alignments in every mode: tests/tfa_parity_test.py (within 5e-7).
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import (
    BeamSearchSampler,
    LuongDecoder,
    LuongSeq2Seq,
    MonotonicAttention,
)
from keras_luong.attention.monotonic_attention import monotonic_alignment
from tests.test_case import TestCase, fit_lowers_loss, gradients, save_and_load

B, S, T, D = 3, 7, 5, 8
LENGTHS = np.array([7, 4, 6])
MASK = np.arange(S) < LENGTHS[:, None]


def random(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def reference(layer, query, value, mask, mode, previous=None, scores=None):
    """The layer's alignments in float64 numpy, step after step: Luong's general score (or
    the given float64 `scores` `(B, T, S)`), the scale and bias, the sigmoid (or `> 0`),
    then the recursion itself."""
    query, value = query.astype("float64"), value.astype("float64")
    scale = float(ops.convert_to_numpy(layer.scale)) if layer.scale is not None else 1.0
    bias = float(ops.convert_to_numpy(layer.score_bias))
    value = np.where(mask[..., None], value, 0.0)
    if scores is None:
        kernel = ops.convert_to_numpy(layer.key_kernel).astype("float64")
        scores = np.einsum("btd,bsd->bts", query, value @ kernel)
    scores = scale * scores + bias
    scores = np.where(mask[:, None], scores, -np.inf)
    p = (scores > 0).astype("float64") if mode == "hard" else 1 / (1 + np.exp(-scores))
    if previous is None:
        previous = np.zeros((len(query), value.shape[1]))
        previous[:, 0] = 1.0
    alignments = np.zeros_like(p)
    for b in range(len(query)):
        a = previous[b].astype("float64")
        for t in range(query.shape[1]):
            if mode == "hard":
                stops = [s for s in range(len(a)) if p[b, t, s] and a[: s + 1].sum() > 0]
                a = np.zeros_like(a)
                if stops:
                    a[stops[0]] = 1.0
            else:
                q, new = 0.0, np.zeros_like(a)
                for s in range(len(a)):
                    q = (1 - p[b, t, s - 1]) * q + a[s] if s else a[0]
                    new[s] = p[b, t, s] * q
                a = new
            alignments[b, t] = a
    return alignments


def attend(layer, query, value, mask=MASK, **kwargs):
    output, weights = layer(query, value, value_mask=mask, return_attention_scores=True, **kwargs)
    return ops.convert_to_numpy(output), ops.convert_to_numpy(weights)


@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_alignments_against_the_float64_recursion(mode):
    keras.utils.set_random_seed(0)
    query, value = random((B, T, D), 1), random((B, S, D), 2)
    if mode == "parallel":  # exact only while no 1 - p is tiny: see the two tests below
        query = 0.3 * query
    layer = MonotonicAttention(mode=mode, use_scale=True, score_bias_init=0.5)
    layer.build(query.shape, value.shape)
    layer.scale.assign(1.4)
    output, weights = attend(layer, query, value)
    expected = reference(layer, query, value, MASK, mode)
    np.testing.assert_allclose(weights, expected, atol=2e-6)
    np.testing.assert_allclose(output, np.einsum("bts,bsd->btd", expected, value), atol=1e-5)
    assert np.all(weights[~np.broadcast_to(MASK[:, None], weights.shape)] == 0)
    assert expected[..., 1:].sum() > 0.5  # the alignment moves: the check compares something


def test_parallel_equals_recursive():
    """Within 1e-5 while no `1 - p` is tiny (states of moderate size: here p is in about
    [0.1, 0.9]; the next test is about the other case, where only "recursive" is exact)."""
    keras.utils.set_random_seed(1)
    query, value = 0.3 * random((B, T, D), 3), random((B, S, D), 4)
    layers = [MonotonicAttention(mode=mode, seed=0) for mode in ("parallel", "recursive")]
    layers[0].build(query.shape, value.shape)
    layers[1].build(query.shape, value.shape)
    layers[1].set_weights(layers[0].get_weights())
    parallel, recursive = (attend(layer, query, value)[1] for layer in layers)
    np.testing.assert_allclose(parallel, recursive, atol=1e-5)


def test_parallel_is_safe_where_probabilities_reach_one():
    """`1 - p` of 0 (a sure stop) or tiny: the parallel form's cumulative product is clipped in
    log space, so it gives finite weights that sum to at most 1, and the recursive form the
    exact ones."""
    p = np.array([[0.3, 1.0, 0.5, 1 - 1e-9, 0.2, 0.7]], "float32")
    previous = np.array([[0.1, 0.2, 0.3, 0.1, 0.2, 0.1]], "float32")
    exact = reference_step(p, previous)
    for mode in ("parallel", "recursive"):
        got = ops.convert_to_numpy(monotonic_alignment(ops.array(p), ops.array(previous), mode))
        assert np.all(np.isfinite(got)) and got.sum() <= 1 + 1e-6
        if mode == "recursive":
            np.testing.assert_allclose(got, exact, atol=1e-6)


def reference_step(p, previous):
    q, out = 0.0, np.zeros(p.shape[1])
    for s in range(p.shape[1]):
        q = (1 - float(p[0, s - 1])) * q + float(previous[0, s]) if s else float(previous[0, 0])
        out[s] = float(p[0, s]) * q
    return out[None]


def test_hard_alignments_are_one_hot_or_empty_and_never_move_backwards():
    rng = np.random.default_rng(5)
    query, value = random((8, 12, D), 6), random((8, 10, D), 7)
    mask = np.arange(10) < rng.integers(3, 11, (8, 1))
    layer = MonotonicAttention(mode="hard", score_bias_init=0.3)
    _, weights = attend(layer, query, value, mask)
    assert np.all((weights == 0) | (weights == 1)) and np.all(weights.sum(-1) <= 1)
    assert 0 < weights.sum() < weights.shape[0] * weights.shape[1]  # both kinds occur
    for row in range(8):
        positions = [int(np.argmax(w)) for w in weights[row] if w.sum() == 1]
        assert positions == sorted(positions)
        assert all(mask[row, p] for p in positions)
        # Once the alignment has run off the end of the source, it stays empty.
        ended = np.cumsum(weights[row].sum(-1) == 0) > 0
        assert np.all(weights[row][ended] == 0)


@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_step_by_step_equals_all_steps_at_once(mode):
    """A one-step query with the previous call's alignment continues the same process."""
    query, value = random((B, T, D), 8), random((B, S, D), 9)
    layer = MonotonicAttention(mode=mode, score_bias_init=0.2, attentional_units=6)
    output, weights = attend(layer, query, value)
    memory = layer.prepare(value, MASK)
    previous = None
    for t in range(T):
        step_output, previous = layer(
            query[:, t], memory=memory, previous_alignment=previous, return_attention_scores=True
        )
        np.testing.assert_allclose(ops.convert_to_numpy(step_output), output[:, t], atol=1e-5)
        np.testing.assert_allclose(ops.convert_to_numpy(previous), weights[:, t], atol=1e-6)


def test_left_padding_aligns_like_right_padding():
    """Padding never stops the process, so a left-padded source gives the right-padded
    source's alignments, shifted."""
    query, value = random((1, T, D), 10), random((1, 5, D), 11)
    layer = MonotonicAttention(mode="recursive", score_bias_init=0.5)
    right = np.concatenate([value, np.zeros((1, 2, D), "float32")], axis=1)
    left = np.concatenate([np.full((1, 2, D), np.nan, "float32"), value], axis=1)
    mask = np.array([[1, 1, 1, 1, 1, 0, 0]], bool)
    out_right, w_right = attend(layer, query, right, mask)
    out_left, w_left = attend(layer, query, left, mask[:, ::-1])
    np.testing.assert_allclose(w_left[..., 2:], w_right[..., :5], atol=1e-6)
    np.testing.assert_allclose(out_left, out_right, atol=1e-5)


def test_gradients_are_finite_with_padding():
    """NaN in the padded positions reaches neither the output nor any gradient."""
    query, value = random((B, T, D), 12), random((B, S, D), 13)
    value[~MASK] = np.nan
    for mode in ("parallel", "recursive"):
        layer = MonotonicAttention(mode=mode, use_scale=True)
        variable_grads, input_grads = gradients(layer, ops.sum, [query, value], value_mask=MASK)
        for g in [*variable_grads, input_grads[0], input_grads[1][MASK]]:
            assert np.all(np.isfinite(g)) and np.any(g != 0)
        assert np.all(input_grads[1][~MASK] == 0)


def test_noise_only_in_training_and_seeded():
    query, value = random((B, T, D), 14), random((B, S, D), 15)
    layer = MonotonicAttention(sigmoid_noise=1.0, seed=3)
    clean = attend(layer, query, value)[1]
    again = attend(layer, query, value)[1]
    noisy = attend(layer, query, value, training=True)[1]
    np.testing.assert_array_equal(clean, again)
    assert np.abs(noisy - clean).max() > 1e-3


def test_saving_round_trip(tmp_path):
    query, value = random((B, T, D), 16), random((B, S, D), 17)
    inputs = keras.Input((None, D)), keras.Input((None, D))
    outputs = MonotonicAttention(mode="recursive", score_bias_init=-1.0, use_scale=True)(*inputs)
    model = keras.Model(inputs, outputs)
    path = tmp_path / "monotonic.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    layer = restored.layers[-1]
    assert (layer.mode, layer.score_bias_init, layer.use_scale) == ("recursive", -1.0, True)
    np.testing.assert_allclose(
        ops.convert_to_numpy(restored([query, value])),
        ops.convert_to_numpy(model([query, value])),
        atol=1e-6,
    )


def test_mixed_precision():
    query, value = random((B, T, D), 18), random((B, S, D), 19)
    full = MonotonicAttention(mode="parallel")
    half = MonotonicAttention(mode="parallel", dtype="mixed_float16")
    full.build(query.shape, value.shape)
    half.build(query.shape, value.shape)
    half.set_weights(full.get_weights())
    output, weights = half(query, value, value_mask=MASK, return_attention_scores=True)
    assert keras.backend.standardize_dtype(output.dtype) == "float16"
    assert keras.backend.standardize_dtype(weights.dtype) == "float32"
    np.testing.assert_allclose(
        ops.convert_to_numpy(weights), attend(full, query, value)[1], atol=5e-3
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "soft"}, "mode='soft'"),
        ({"sigmoid_noise": -1.0}, "sigmoid_noise=-1.0"),
        ({"score_bias_init": "0"}, "score_bias_init='0'"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MonotonicAttention(**kwargs)


def test_bad_previous_alignment():
    query, value = random((B, D), 20), random((B, S, D), 21)
    with pytest.raises(ValueError, match="previous_alignment"):
        MonotonicAttention()(query, value, previous_alignment=np.ones((B, S + 1), "float32"))


def test_inference_mode_is_used_when_not_training():
    query, value = random((B, T, D), 22), random((B, S, D), 23)
    layer = MonotonicAttention(mode="parallel", inference_mode="hard", score_bias_init=0.5)
    soft = attend(layer, query, value, training=True)[1]
    hard = attend(layer, query, value)[1]
    assert np.all((hard == 0) | (hard == 1)) and np.any((soft > 0) & (soft < 1))
    layer.mode = "hard"
    np.testing.assert_array_equal(attend(layer, query, value, training=True)[1], hard)


# --- in the decoder, which carries the alignment in its states


@pytest.mark.parametrize("input_feeding", [True, False])
def test_decoder_step_by_step_equals_teacher_forcing(input_feeding):
    targets, value = random((B, T, 6), 24), random((B, S, D), 25)
    decoder = LuongDecoder(
        keras.layers.LSTMCell(D),
        MonotonicAttention(mode="recursive", attentional_units=D, score_bias_init=0.3),
        input_feeding=input_feeding,
    )
    outputs, weights, states = decoder(
        targets, value, value_mask=MASK, return_attention_scores=True, return_state=True
    )
    assert tuple(states[-1].shape) == (B, S)  # the last alignment, after h̃
    outputs, weights = ops.convert_to_numpy(outputs), ops.convert_to_numpy(weights)
    memory = decoder.prepare(value, MASK)
    step_states = decoder.get_initial_state(B, memory=memory)
    np.testing.assert_array_equal(ops.convert_to_numpy(step_states[-1]), np.eye(S)[[0] * B])
    for t in range(T):
        h_tilde, step_states, step_weights = decoder.step(
            targets[:, t], step_states, memory, step=t, return_attention_scores=True
        )
        np.testing.assert_allclose(ops.convert_to_numpy(h_tilde), outputs[:, t], atol=1e-5)
        np.testing.assert_allclose(ops.convert_to_numpy(step_weights), weights[:, t], atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(states[-1]), weights[:, -1], atol=1e-6)
    with pytest.raises(ValueError, match="pass the memory"):
        decoder.get_initial_state(B)


def test_seq2seq_hard_monotonic_trains_and_decodes_monotonically(tmp_path):
    keras.utils.set_random_seed(6)
    rng = np.random.default_rng(6)
    source = rng.integers(3, 9, (32, 6)).astype("int32")
    target = np.concatenate([np.ones((32, 1)), source, np.full((32, 1), 2)], 1).astype("int32")
    model = LuongSeq2Seq(9, 9, units=16, embedding_dim=8, alignment="hard-monotonic")
    attention = model.decoder.cell.attention
    assert (attention.mode, attention.inference_mode) == ("parallel", "hard")
    before, after = fit_lowers_loss(model, (source, target[:, :-1]), target[:, 1:], steps=5)
    assert after < before
    ids, weights = model.generate(source[:4], 7, return_attention_scores=True)
    weights = np.asarray(weights)
    assert np.all((weights == 0) | (weights == 1))
    for row in weights:
        positions = [int(np.argmax(w)) for w in row if w.sum() == 1]
        assert positions == sorted(positions)
    beam = model.generate(source[:4], 7, sampler=BeamSearchSampler(3))
    assert beam.shape == (4, 7)
    _, restored = save_and_load(model, tmp_path)
    np.testing.assert_array_equal(restored.generate(source[:4], 7), ids)


class TestMonotonicAttentionLayer(TestCase):
    @pytest.mark.parametrize("mode", ["parallel", "recursive"])
    def test_layer_bundle(self, mode, tmp_path):
        # Every query step at once: the recursion runs in the layer's own loop, which trains
        # jit-compiled on every backend.
        self.run_layer_bundle(
            lambda dtype=None: MonotonicAttention(
                mode=mode, use_scale=True, score_bias_init=0.5, dtype=dtype
            ),
            [random((B, T, D), 30), random((B, S, D), 31)],
            tmp_path,
            expected_output_shape=(B, T, D),
        )


def test_a_mode_set_after_construction_is_checked_where_it_is_used():
    layer = MonotonicAttention(mode="parallel")
    query, value = random((B, T, D), 40), random((B, S, D), 41)
    layer(query, value)
    layer.mode = "Hard"
    with pytest.raises(ValueError, match="Received: mode='Hard'"):
        layer(query, value, training=True)
