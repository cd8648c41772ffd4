import keras
import numpy as np
import pytest

from keras_luong import (
    GlobalAttention,
    LocalAttention,
)
from tests.reference import attentional_state, luong_scores, masked_softmax
from tests.test_case import (
    TestCase,
    assert_allclose,
    fit_lowers_loss,
    gradients,
    length_mask,
    random,
    save_and_load,
    to_numpy,
    weights_by_name,
)

B, T, S, D = 3, 12, 9, 8
SCORES = ("dot", "general", "concat")
ALIGNMENTS = ("local-m", "local-p")


def reference_positions(layer, query, value_mask, step=0):
    lengths = value_mask.sum(-1).astype("float64")
    if layer.alignment == "local-m":
        start = np.reshape(np.asarray(step, "float64"), (-1, 1))
        return np.broadcast_to(start + np.arange(query.shape[1]), query.shape[:2])
    w = {k: v.astype("float64") for k, v in weights_by_name(layer).items()}
    logit = np.tanh(query.astype("float64") @ w["position_kernel"]) @ w["position_vector"]
    return (lengths[:, None] - 1) / (1 + np.exp(-logit))


def reference_local(layer, query, value, value_mask, positions):
    """The dense oracle: score every source position, keep the window, softmax, Gaussian.

    `positions` are the layer's own float32 `p_t` (checked against `reference_positions`
    separately), so that the floor of a p_t a hair from an integer cannot differ."""
    positions = positions.astype("float64")
    source = np.arange(value.shape[1])[None, None, :]
    centre = np.floor(positions)[..., None]
    lengths = value_mask.sum(-1)[:, None, None]
    in_window = (
        (source >= centre - layer.window)
        & (source <= centre + layer.window)
        & (source < lengths)
        & value_mask[:, None, :]
    )
    weights = masked_softmax(luong_scores(layer, query, value), in_window)
    if layer.alignment == "local-p":
        sigma = float(np.sqrt(to_numpy(layer.window_variance("float32"))))  # may be narrowed
        weights = weights * np.exp(-((source - positions[..., None]) ** 2) / (2 * sigma**2))
        if layer.renormalize:
            total = weights.sum(-1, keepdims=True)
            weights = np.where(total > 0, weights / np.where(total > 0, total, 1), 0)
    out = attentional_state(layer, weights @ value.astype("float64"), query.astype("float64"))
    return out, weights


def call_and_check_positions(layer, query, value, value_mask, **kwargs):
    out, weights, positions = layer(
        query,
        value,
        value_mask=value_mask,
        return_attention_scores=True,
        return_positions=True,
        **kwargs,
    )
    positions = to_numpy(positions)
    expected = reference_positions(layer, query, value_mask, kwargs.get("step", 0))
    assert_allclose(positions, expected, atol=1e-4)
    return to_numpy(out), to_numpy(weights), positions


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("score_mode", SCORES)
@pytest.mark.parametrize("window", [0, 2])
def test_gather_equals_dense_oracle(alignment, score_mode, window):
    query, value = random((B, T, D), seed=1), random((B, S, D), seed=2)
    # Lengths 9, 4, 1: local-m windows run past the end of the short sources (t >= S_i + D).
    value_mask = length_mask([9, 4, 1], S)
    layer = LocalAttention(
        alignment=alignment, window=window, sigma=1.5, score_mode=score_mode, use_scale=True
    )
    layer(query, value)
    layer.scale.assign(1.3)
    out, weights, positions = call_and_check_positions(layer, query, value, value_mask)
    expected_out, expected_weights = reference_local(layer, query, value, value_mask, positions)
    assert_allclose(weights, expected_weights)
    assert_allclose(out, expected_out)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("score_mode", SCORES)
@pytest.mark.parametrize("renormalize", [False, True])
def test_predictive_windows_at_both_edges(score_mode, renormalize):
    query, value = random((B, T, D), seed=3), random((B, S, D), seed=4)
    value_mask = length_mask([9, 6, 3], S)
    layer = LocalAttention(window=2, score_mode=score_mode, renormalize=renormalize)
    layer(query, value)
    # A steep v_p saturates the sigmoid: p_t lands on 0 or on S_i - 1, windows at both edges.
    layer.position_vector.assign(40.0 * np.sign(to_numpy(layer.position_vector)))
    out, weights, positions = call_and_check_positions(layer, query, value, value_mask)
    lengths = value_mask.sum(-1)[:, None]
    assert np.any(positions < 0.5) and np.any(positions > lengths - 1.5)
    expected_out, expected_weights = reference_local(layer, query, value, value_mask, positions)
    assert_allclose(weights, expected_weights)
    assert_allclose(out, expected_out)
    if renormalize:
        assert_allclose(weights.sum(-1), np.ones((B, T)))


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_one_step_at_a_time_equals_all_steps(alignment):
    query, value = random((B, T, D), seed=5), random((B, S, D), seed=6)
    value_mask = length_mask([9, 5, 2], S)
    layer = LocalAttention(alignment=alignment, window=2, attentional_units=D)
    full = to_numpy(layer(query, value, value_mask=value_mask))
    for t in (0, 3, 11):
        assert_allclose(layer(query[:, t], value, value_mask=value_mask, step=t), full[:, t])
    # The step may be a tensor per example, and a rank-3 query may start at an offset.
    steps = keras.ops.convert_to_tensor(np.array([4, 4, 4], "int32"))
    assert_allclose(layer(query[:, 4], value, value_mask=value_mask, step=steps), full[:, 4])
    assert_allclose(layer(query[:, 5:], value, value_mask=value_mask, step=5), full[:, 5:])


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
@pytest.mark.parametrize("make", [GlobalAttention, LocalAttention])
def test_memory_prepared_from_numpy_holds_tensors_of_the_compute_dtype(make, policy):
    # A numpy (or float64) value left as it is in the memory would be converted again by the
    # layer's call at every decoding step: O(S) per step (the eager S = 16384 benchmark).
    query, value = random((B, T, D), seed=7), random((B, S, D), seed=8).astype("float64")
    layer = make(dtype=policy)
    full = to_numpy(layer(query, value))
    memory = layer.prepare(value)
    assert keras.ops.is_tensor(memory["value"])
    assert keras.backend.standardize_dtype(memory["value"].dtype) == layer.compute_dtype
    tolerance = 1e-6 if policy == "float32" else 1e-3
    np.testing.assert_allclose(to_numpy(memory["value"]), value, rtol=tolerance, atol=tolerance)
    assert_allclose(layer(query, memory=memory), full, atol=tolerance, rtol=tolerance)


def test_monotonic_with_a_window_over_everything_is_global_attention():
    query, value = random((B, T, D), seed=7), random((B, S, D), seed=8)
    value_mask = length_mask([9, 5, 2], S)
    for score_mode in SCORES:
        local = LocalAttention(alignment="local-m", window=max(S, T), score_mode=score_mode)
        global_ = GlobalAttention(score_mode=score_mode)
        local(query, value)
        global_(query, value)
        global_.set_weights(local.get_weights())
        assert_allclose(
            local(query, value, value_mask=value_mask),
            global_(query, value, value_mask=value_mask),
        )


def test_predictive_with_a_flat_gaussian_is_global_attention():
    query, value = random((B, T, D), seed=9), random((B, S, D), seed=10)
    value_mask = length_mask([9, 5, 2], S)
    for score_mode in SCORES:
        local = LocalAttention(window=S, sigma=1e5, score_mode=score_mode, attentional_units=4)
        global_ = GlobalAttention(score_mode=score_mode, attentional_units=4)
        local(query, value)
        global_(query, value)
        global_.set_weights(
            [
                w
                for w, v in zip(local.get_weights(), local.weights, strict=True)
                if "position" not in v.path
            ]
        )
        _, local_weights = local(query, value, value_mask=value_mask, return_attention_scores=True)
        _, global_weights = global_(
            query, value, value_mask=value_mask, return_attention_scores=True
        )
        assert_allclose(local_weights, global_weights)
        assert_allclose(
            local(query, value, value_mask=value_mask),
            global_(query, value, value_mask=value_mask),
        )


def test_positions_use_each_examples_own_length():
    layer = LocalAttention(window=2, score_mode="general", attentional_units=D)
    short_query, short_value = random((1, T, D), seed=11), random((1, 5, D), seed=12)
    long_query, long_value = random((1, T, D), seed=13), random((1, 8, D), seed=14)
    alone_short = to_numpy(layer(short_query, short_value, return_positions=True)[1])
    alone_long = to_numpy(layer(long_query, long_value, return_positions=True)[1])
    alone = [to_numpy(layer(short_query, short_value)), to_numpy(layer(long_query, long_value))]
    # Batched together, padded to S = 9 with garbage in the padding.
    value = random((2, S, D), seed=15) * 100
    value[0, :5], value[1, :8] = short_value[0], long_value[0]
    query = np.concatenate([short_query, long_query])
    out, positions = layer(query, value, value_mask=length_mask([5, 8], S), return_positions=True)
    assert_allclose(positions, np.concatenate([alone_short, alone_long]))
    assert_allclose(out, np.concatenate(alone), atol=2e-5)
    assert np.all(to_numpy(positions)[0] <= 4.0)


def test_gradient_reaches_the_position_weights():
    query, value = random((2, 4, 6), seed=16), random((2, 7, 6), seed=17)
    # D >= S keeps every position in the window however p_t moves, so the loss is smooth in
    # W_p and v_p and a finite difference is a fair reference.
    layer = LocalAttention(window=7, sigma=1.0, score_mode="dot")
    layer(query, value)
    probe = keras.ops.convert_to_tensor(random((2, 4, 6), seed=18))

    def loss(out):
        return keras.ops.sum(out * probe)

    var_grads, _ = gradients(layer, loss, [query, value])
    grads = dict(
        zip([v.path.split("/")[-1] for v in layer.trainable_variables], var_grads, strict=True)
    )
    for name in ("position_kernel", "position_vector"):
        assert np.all(np.isfinite(grads[name])) and np.abs(grads[name]).max() > 1e-3

    eps = 1e-2
    for name, index in (("position_vector", (1,)), ("position_kernel", (2, 3))):
        variable = getattr(layer, name)
        original = to_numpy(variable)
        losses = []
        for sign in (1, -1):
            shifted = original.copy()
            shifted[index] += sign * eps
            variable.assign(shifted)
            losses.append(float(to_numpy(loss(layer(query, value)))))
        variable.assign(original)
        numeric = (losses[0] - losses[1]) / (2 * eps)
        np.testing.assert_allclose(grads[name][index], numeric, rtol=2e-2, atol=1e-4)


def test_window_past_the_end_gives_zeros_and_finite_gradients():
    query, value = random((B, T, D), seed=19), random((B, S, D), seed=20)
    value_mask = length_mask([9, 3, 0], S)
    layer = LocalAttention(alignment="local-m", window=1)
    out, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    out, weights = to_numpy(out), to_numpy(weights)
    # Source 1 has 3 positions: steps t >= 3 + 1 see none; source 2 has none at all.
    assert np.all(weights[1, 4:] == 0) and np.all(out[1, 4:] == 0)
    assert np.all(weights[2] == 0) and np.all(out[2] == 0)
    assert np.all(weights[0, 10:] == 0) and np.all(weights[0, :10].sum(-1) > 0.99)
    # Past the end h̃_t = tanh(W_c [0; h_t]); its gradient stays finite.
    layer = LocalAttention(alignment="local-m", window=1, attentional_units=D, use_scale=True)
    var_grads, input_grads = gradients(
        layer, lambda o: keras.ops.sum(o**2), [query, value], value_mask=value_mask
    )
    for g in var_grads + input_grads:
        assert np.all(np.isfinite(g))
    assert np.all(input_grads[1][~value_mask] == 0)


def test_dropout_only_in_training():
    query, value = random((B, T, D), seed=21), random((B, S, D), seed=22)
    layer = LocalAttention(window=2, dropout=0.5, seed=1)
    inference = to_numpy(layer(query, value, training=False))
    assert_allclose(layer(query, value), inference)
    assert not np.allclose(to_numpy(layer(query, value, training=True)), inference)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": -1}, "window=-1"),
        ({"window": 2.5}, "window=2.5"),
        ({"sigma": 0}, "sigma=0"),
        ({"sigma": -1.0}, "sigma=-1.0"),
        ({"alignment": "local-q"}, "alignment='local-q'"),
        ({"score_mode": "location", "max_source_length": 9}, "score_mode='location'"),
        ({"window": 0}, "sigma=None"),
        ({"position_units": 0}, "position_units=0"),
        ({"initial_sigma": 0}, "initial_sigma=0"),
        ({"initial_sigma": "wide"}, "initial_sigma='wide'"),
        ({"alignment": "local-m", "initial_sigma": 8.0}, "alignment='local-m'"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LocalAttention(**kwargs)


def test_initial_sigma_is_a_variable_the_gaussian_reads():
    query, value = random((B, T, D), seed=41), random((B, S, D), seed=42)
    value_mask = length_mask([9, 6, 3], S)
    layer = LocalAttention(window=4, sigma=1.0, initial_sigma=6.0, score_mode="general")
    layer(query, value)
    # Non-trainable, started at initial_sigma; the final sigma is the argument's.
    assert layer.sigma_variable in layer.non_trainable_weights
    assert float(to_numpy(layer.sigma_variable)) == 6.0 and layer.final_sigma == 1.0
    fixed = LocalAttention(window=4, sigma=6.0, score_mode="general")
    fixed(query, value)
    fixed.set_weights(layer.get_weights()[:-1])  # the same weights but the variable
    for sigma in (6.0, 2.5):
        layer.sigma_variable.assign(sigma)
        out, weights, positions = call_and_check_positions(layer, query, value, value_mask)
        expected_out, expected_weights = reference_local(layer, query, value, value_mask, positions)
        assert_allclose(weights, expected_weights)
        assert_allclose(out, expected_out)
    # At the variable's value, the layer is local-p with that sigma.
    layer.sigma_variable.assign(6.0)
    assert_allclose(
        layer(query, value, value_mask=value_mask), fixed(query, value, value_mask=value_mask)
    )


def test_monotonic_one_step_needs_the_step():
    layer = LocalAttention(alignment="local-m")
    with pytest.raises(ValueError, match="step=None"):
        layer(random((B, D)), random((B, S, D)))


def test_mask_of_wrong_shape():
    with pytest.raises(ValueError, match=r"value_mask.shape=\(3, 4\)"):
        LocalAttention()(random((B, T, D)), random((B, S, D)), value_mask=np.ones((B, 4), bool))


def build_model(alignment="local-p"):
    query, value = keras.Input((T, D)), keras.Input((S, D))
    layer = LocalAttention(alignment=alignment, window=2, score_mode="general", use_scale=True)
    return keras.Model([query, value], layer(query, value))


class TestLocalAttentionLayer(TestCase):
    @pytest.mark.parametrize("alignment", ALIGNMENTS)
    @pytest.mark.parametrize("score_mode", SCORES)
    def test_layer_bundle(self, alignment, score_mode, tmp_path):
        # The score's kernels (0, 1 or 3), the scale, W_c, and local-p's W_p and v_p.
        expected = {"dot": 0, "general": 1, "concat": 3}[score_mode] + 2
        expected += 2 if alignment == "local-p" else 0
        self.run_layer_bundle(
            lambda dtype=None: LocalAttention(
                alignment=alignment,
                window=2,
                score_mode=score_mode,
                use_scale=True,
                attentional_units=5,
                dtype=dtype,
            ),
            [random((B, T, D), seed=21), random((B, S, D), seed=22)],
            tmp_path,
            expected_output_shape=(B, T, 5),
            expected_num_trainable_weights=expected,
            precision_atol=2e-2,  # float16 puts 1 output in 180 at 1.003e-2 from float32 (JAX)
        )

    @pytest.mark.parametrize("alignment", ALIGNMENTS)
    def test_config_round_trip(self, alignment):
        layer = LocalAttention(
            alignment=alignment, window=3, sigma=2.5, renormalize=True, position_units=5,
            score_mode="concat", units=4, use_scale=True, attentional_units=6, dropout=0.1,
            seed=3,
        )  # fmt: skip
        self.run_serialization_test(layer, [random((B, T, D), seed=23), random((B, S, D), seed=24)])

    def test_narrowed_sigma_round_trips_with_the_weights(self, tmp_path):
        query, value = keras.Input((T, D)), keras.Input((S, D))
        layer = LocalAttention(window=4, sigma=1.0, initial_sigma=6.0)
        model = keras.Model([query, value], layer(query, value))
        layer.sigma_variable.assign(2.5)  # mid-schedule: the file keeps 2.5, not 6
        inputs = [random((B, T, D), seed=43), random((B, S, D), seed=44)]
        _, loaded = save_and_load(model, tmp_path)
        assert_allclose(loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0))
        assert float(to_numpy(loaded.layers[-1].sigma_variable)) == 2.5
        assert loaded.layers[-1].get_config()["initial_sigma"] == 6.0

    def test_keras_file_loads_on_another_backend(self, tmp_path):
        inputs = [random((B, T, D), seed=27), random((B, S, D), seed=28)]
        self.run_saving_test(build_model("local-p"), inputs, tmp_path, cross_backend=True)


@pytest.mark.parametrize("policy, tolerance", [("mixed_float16", 1e-2), ("mixed_bfloat16", 5e-2)])
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_mixed_precision_close_to_float32(policy, tolerance, alignment):
    query, value = random((B, T, D), seed=29), random((B, 40, D), seed=30)
    value_mask = length_mask([40, 17, 0], 40)
    reference = LocalAttention(alignment=alignment, window=3, attentional_units=D)
    expected = to_numpy(reference(query, value, value_mask=value_mask))
    layer = LocalAttention(alignment=alignment, window=3, attentional_units=D, dtype=policy)
    layer(query, value)
    layer.set_weights(reference.get_weights())
    out, positions = layer(query, value, value_mask=value_mask, return_positions=True)
    assert keras.backend.standardize_dtype(out.dtype) == policy.split("_")[1]
    # p_t is kept in float32: a half-precision p_t would be off by whole positions.
    assert keras.backend.standardize_dtype(positions.dtype) == "float32"
    out = to_numpy(out).astype("float32")
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, atol=tolerance)


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_fit_lowers_the_loss(alignment):
    vocab = 10
    source, target = keras.Input((S,), dtype="int32"), keras.Input((T,), dtype="int32")
    memory = keras.layers.Embedding(vocab, D, mask_zero=True)(source)
    states = keras.layers.LSTM(D, return_sequences=True)(
        keras.layers.Embedding(vocab, D, mask_zero=True)(target)
    )
    attentional = LocalAttention(alignment=alignment, window=2, attentional_units=D)(states, memory)
    model = keras.Model([source, target], keras.layers.Dense(vocab)(attentional))
    rng = np.random.default_rng(0)
    src = rng.integers(1, vocab, (8, S)).astype("int32")
    src[:, 6:] = 0
    tgt = rng.integers(1, vocab, (8, T)).astype("int32")
    before, after = fit_lowers_loss(model, [src, tgt], tgt, steps=3, learning_rate=0.5)
    assert np.isfinite(after) and after < before - 1e-3


LENGTHS = [7, 4, 1]


@pytest.mark.parametrize("alignment", ["local-m", "local-p"])
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
    layer = LocalAttention("local-p", window=2, score_mode="dot", attentional_units=5)
    empty = np.zeros((B, 0, D), "float32")
    output, weights = layer(query, empty, return_attention_scores=True)
    # A source with every position masked gives the same zero context.
    masked = layer(query, random((B, S, D), 2), value_mask=np.zeros((B, S), bool))
    assert_allclose(output, masked)
    assert tuple(weights.shape) == (B, T, 0)
    kernel = to_numpy(layer.attentional_kernel)
    assert_allclose(output, np.tanh(query @ kernel[D:]), atol=1e-6)


def test_local_m_refuses_a_negative_step():
    layer = LocalAttention(alignment="local-m", window=2)
    with pytest.raises(ValueError, match="step=-3"):
        layer(random((B, D), 1), random((B, S, D), 2), step=-3)
    with pytest.raises(ValueError, match="step=1.5"):
        layer(random((B, D), 1), random((B, S, D), 2), step=1.5)
