import keras
import numpy as np
import pytest

from keras_luong import GlobalAttention, LocalAttention
from keras_luong.attention import scores
from tests.reference import attentional_state, luong_scores, masked_softmax
from tests.test_case import (
    TestCase,
    assert_allclose,
    fit_lowers_loss,
    gradients,
    length_mask,
    random,
    to_numpy,
)

B, T, S, D = 3, 4, 6, 8
MODES = ("dot", "general", "concat", "location")


def reference_global(layer, query, value, value_mask=None, query_mask=None):
    """numpy Luong global attention: returns (output, weights)."""
    one_step = query.ndim == 2
    q = query[:, None, :] if one_step else query
    if value_mask is None:
        value_mask = np.ones(value.shape[:2], bool)
    weights = masked_softmax(luong_scores(layer, q, value), value_mask[:, None, :])
    out = attentional_state(layer, weights @ value.astype("float64"), q)
    if query_mask is not None:
        qm = (query_mask[:, None] if one_step else query_mask)[..., None]
        out, weights = out * qm, weights * qm
    if one_step:
        out, weights = out[:, 0], weights[:, 0]
    return out, weights


def make_layer(score_mode, **kwargs):
    kwargs.setdefault("max_source_length", 10)
    return GlobalAttention(score_mode=score_mode, **kwargs)


def randomize_scale(layer, value=1.7):
    """A scale of exactly 1 would make a use_scale test pass with the scale ignored."""
    if layer.use_scale:
        layer.scale.assign(value)


@pytest.mark.parametrize("score_mode", MODES)
@pytest.mark.parametrize("use_scale", [False, True])
@pytest.mark.parametrize("one_step", [False, True])
def test_matches_numpy_reference(score_mode, use_scale, one_step):
    query = random((B, D) if one_step else (B, T, D), seed=1)
    value = random((B, S, D), seed=2)
    value_mask = length_mask([6, 3, 1], S)
    layer = make_layer(score_mode, use_scale=use_scale)
    layer(query, value)
    randomize_scale(layer)
    out, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    expected_out, expected_weights = reference_global(layer, query, value, value_mask)
    assert_allclose(weights, expected_weights)
    assert_allclose(out, expected_out)
    assert out.shape == ((B, D) if one_step else (B, T, D))


@pytest.mark.parametrize("score_mode", MODES)
def test_attentional_state_matches_reference(score_mode):
    query, value = random((B, T, 5), seed=3), random((B, S, 7), seed=4)
    if score_mode == "dot":
        value = random((B, S, 5), seed=4)
    query_mask = length_mask([4, 2, 3], T)
    layer = make_layer(score_mode, attentional_units=6)
    out = layer(query, value, query_mask=query_mask)
    expected, _ = reference_global(layer, query, value, query_mask=query_mask)
    assert out.shape == (B, T, 6)
    assert_allclose(out, expected)
    # Padded decoder steps give exactly zero.
    assert np.all(to_numpy(out)[1, 2:] == 0.0)


def test_linear_attentional_state_is_tensorflow_addons_attention_layer():
    """`attentional_activation=None`: `h̃ = W_c [c; h]` without the tanh, what tensorflow-addons'
    `AttentionWrapper(attention_layer_size=n)` computes (its kernel takes `[h; c]`)."""
    query, value = random((B, T, 5), seed=3), random((B, S, 7), seed=4)
    layer = make_layer("general", attentional_units=6, attentional_activation=None)
    out, weights = layer(query, value, return_attention_scores=True)
    out = to_numpy(out).astype("float64")
    expected, _ = reference_global(layer, query, value)
    assert_allclose(out, expected)
    context = to_numpy(weights).astype("float64") @ value
    kernel = to_numpy(layer.attentional_kernel).astype("float64")
    tfa_kernel = np.concatenate([kernel[7:], kernel[:7]])  # rows for [h; c]
    assert_allclose(out, np.concatenate([query, context], -1) @ tfa_kernel)
    tanh_layer = make_layer("general", attentional_units=6)
    tanh_layer(query, value)
    tanh_layer.set_weights(layer.get_weights())
    assert_allclose(tanh_layer(query, value), np.tanh(out))
    assert layer.get_config()["attentional_activation"] == "linear"


def test_general_and_concat_scores_work_across_state_sizes():
    query, value = random((B, T, 5), seed=5), random((B, S, 9), seed=6)
    for score_mode in ("general", "concat"):
        layer = make_layer(score_mode, units=3)
        out = layer(query, value)
        assert_allclose(out, reference_global(layer, query, value)[0])


@pytest.mark.parametrize("score_mode", MODES)
def test_masked_positions_get_zero_weight_and_cannot_change_the_output(score_mode):
    query, value = random((B, T, D), seed=7), random((B, S, D), seed=8)
    value_mask = length_mask([5, 2, 4], S)
    layer = make_layer(score_mode)
    out, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    weights = to_numpy(weights)
    assert np.all(weights[~np.broadcast_to(value_mask[:, None], weights.shape)] == 0.0)
    assert_allclose(weights.sum(-1), np.ones((B, T)))
    garbage = np.where(value_mask[..., None], value, 1e4 * random((B, S, D), seed=9))
    assert_allclose(layer(query, garbage, value_mask=value_mask), out)


@pytest.mark.parametrize("score_mode", MODES)
def test_row_without_valid_position_gives_zeros_and_finite_gradients(score_mode):
    query, value = random((B, T, D), seed=10), random((B, S, D), seed=11)
    value_mask = length_mask([4, 0, 2], S)
    layer = make_layer(score_mode, use_scale=True, attentional_units=D)
    out, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    assert np.all(to_numpy(weights)[1] == 0.0)
    context_layer = make_layer(score_mode)
    assert np.all(to_numpy(context_layer(query, value, value_mask=value_mask))[1] == 0.0)

    var_grads, input_grads = gradients(
        layer, lambda o: keras.ops.sum(o**2), [query, value], value_mask=value_mask
    )
    for g in var_grads + input_grads:
        assert np.all(np.isfinite(g))
    # Nothing flows into the masked value positions; the valid ones do get a gradient.
    value_grad = input_grads[1]
    assert np.all(value_grad[~value_mask] == 0.0)
    assert np.any(value_grad[value_mask] != 0.0)


def test_keys_are_projected_once_per_call(monkeypatch):
    layer = make_layer("general")
    query, value = random((B, 20, D), seed=12), random((B, S, D), seed=13)
    layer(query, value)
    calls = []
    original = layer.project_keys
    monkeypatch.setattr(layer, "project_keys", lambda v: calls.append(1) or original(v))
    out = layer(query, value)
    assert len(calls) == 1
    # A memory prepared ahead of time gives the same result, one step at a time, and
    # projects nothing again.
    memory = layer.prepare(value)
    assert len(calls) == 2
    for t in (0, 7, 19):
        assert_allclose(layer(query[:, t], memory=memory), to_numpy(out)[:, t])
    assert len(calls) == 2


def test_dropout_only_in_training():
    layer = make_layer("general", dropout=0.5, seed=3)
    query, value = random((B, T, D), seed=14), random((B, S, D), seed=15)
    inference = layer(query, value, training=False)
    assert_allclose(inference, reference_global(layer, query, value)[0])
    trained = to_numpy(layer(query, value, training=True))
    assert not np.allclose(trained, to_numpy(inference))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"score_mode": "additive"}, "score_mode='additive'"),
        ({"score_mode": "location"}, "max_source_length=None"),
        ({"units": 0}, "units=0"),
        ({"attentional_units": -2}, "attentional_units=-2"),
        ({"dropout": 1.5}, "dropout=1.5"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GlobalAttention(**kwargs)


def test_dot_needs_equal_sizes():
    with pytest.raises(ValueError, match=r"query.shape=\(3, 4, 5\), value.shape=\(3, 6, 8\)"):
        GlobalAttention(score_mode="dot")(random((B, T, 5)), random((B, S, D)))


def test_location_rejects_a_longer_source():
    layer = GlobalAttention(score_mode="location", max_source_length=5)
    with pytest.raises(ValueError, match="max_source_length=5.*length 6"):
        layer(random((B, T, D)), random((B, S, D)))
    layer = GlobalAttention(score_mode="location", max_source_length=8)
    layer(random((B, T, D)), random((B, S, D)))
    with pytest.raises(ValueError, match="max_source_length=8.*length 9"):
        layer(random((B, T, D)), random((B, 9, D)))


@pytest.mark.parametrize("shape", [(D,), (B, 2, T, D)])
def test_query_of_wrong_rank(shape):
    with pytest.raises(ValueError, match=rf"query.shape=.*rank {len(shape)}"):
        GlobalAttention()(random(shape), random((B, S, D)))


@pytest.mark.parametrize(
    "argument, mask",
    [
        ("value_mask", np.ones((B, S + 1), bool)),
        ("value_mask", np.ones((B, S, 1), bool)),
        ("query_mask", np.ones((B, T + 2), bool)),
    ],
)
def test_mask_of_wrong_shape(argument, mask):
    with pytest.raises(ValueError, match=f"{argument}.shape="):
        GlobalAttention()(random((B, T, D)), random((B, S, D)), **{argument: mask})


def test_one_step_query_mask_of_wrong_rank_names_the_shape_passed():
    """A one-step query `(B, d)` takes a mask `(B,)`: a `(B, T)` mask is named as passed."""
    with pytest.raises(
        ValueError, match=rf"expected shape \({B},\). Received: query_mask.shape=\({B}, {T}\)"
    ):
        GlobalAttention()(random((B, D)), random((B, S, D)), query_mask=np.ones((B, T), bool))


def test_keras_masks_propagate_from_embeddings():
    vocab = 12
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    source_embedding = keras.layers.Embedding(vocab, D, mask_zero=True)
    target_embedding = keras.layers.Embedding(vocab, D, mask_zero=True)
    memory, states = source_embedding(source), target_embedding(target)
    attention = GlobalAttention(score_mode="general")
    context = attention(states, memory)
    # GlobalAveragePooling1D averages only over the unmasked steps: it sees the target mask.
    pooled = keras.layers.GlobalAveragePooling1D()(context)
    model = keras.Model([source, target], [context, pooled])

    src = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]], "int32")
    tgt = np.array([[7, 8, 0], [9, 10, 11]], "int32")
    context, pooled = model.predict([src, tgt], verbose=0)
    source_embed = to_numpy(source_embedding.embeddings)
    target_embed = to_numpy(target_embedding.embeddings)
    expected, _ = reference_global(
        attention, target_embed[tgt], source_embed[src], src != 0, query_mask=tgt != 0
    )
    assert_allclose(context, expected)
    assert_allclose(pooled[0], expected[0, :2].mean(0))
    assert_allclose(pooled[1], expected[1].mean(0))


def build_model(score_mode="general"):
    query = keras.Input((T, D))
    value = keras.Input((S, D))
    out = make_layer(score_mode, use_scale=True, attentional_units=D)(query, value)
    return keras.Model([query, value], out)


# Trainable weights per score mode, with use_scale and attentional_units: the score's kernels,
# the scale and W_c.
NUM_WEIGHTS = {"dot": 2, "general": 3, "concat": 5, "location": 3}


class TestGlobalAttentionLayer(TestCase):
    @pytest.mark.parametrize("score_mode", MODES)
    def test_layer_bundle(self, score_mode, tmp_path):
        self.run_layer_bundle(
            lambda dtype=None: make_layer(
                score_mode, use_scale=True, attentional_units=5, dtype=dtype
            ),
            [random((B, T, D), seed=14), random((B, S, D), seed=15)],
            tmp_path,
            expected_output_shape=(B, T, 5),
            expected_num_trainable_weights=NUM_WEIGHTS[score_mode],
        )

    @pytest.mark.parametrize("score_mode", MODES)
    def test_config_round_trip(self, score_mode):
        layer = make_layer(
            score_mode,
            use_scale=True,
            units=5,
            attentional_units=4,
            dropout=0.1,
            seed=2,
            kernel_regularizer="l2",
            name="attn",
        )
        self.run_serialization_test(layer, [random((B, T, D), seed=16), random((B, S, D), seed=17)])

    def test_keras_file_loads_on_another_backend(self, tmp_path):
        inputs = [random((B, T, D), seed=20), random((B, S, D), seed=21)]
        self.run_saving_test(build_model("concat"), inputs, tmp_path, cross_backend=True)


@pytest.mark.parametrize("policy, tolerance", [("mixed_float16", 1e-2), ("mixed_bfloat16", 5e-2)])
@pytest.mark.parametrize("score_mode", MODES)
def test_mixed_precision_close_to_float32(policy, tolerance, score_mode):
    query, value = random((B, T, D), seed=22), random((B, S, D), seed=23)
    value_mask = length_mask([6, 0, 3], S)
    reference = make_layer(score_mode, attentional_units=D)
    expected = to_numpy(reference(query, value, value_mask=value_mask))
    layer = make_layer(score_mode, attentional_units=D, dtype=policy)
    layer(query, value)
    layer.set_weights(reference.get_weights())
    out, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    assert keras.backend.standardize_dtype(out.dtype) == policy.split("_")[1]
    out = to_numpy(out).astype("float32")
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, atol=tolerance)
    assert np.all(to_numpy(weights)[1] == 0)


def test_fit_lowers_the_loss():
    vocab = 10
    source = keras.Input((S,), dtype="int32")
    target = keras.Input((T,), dtype="int32")
    memory = keras.layers.LSTM(D, return_sequences=True)(
        keras.layers.Embedding(vocab, D, mask_zero=True)(source)
    )
    states = keras.layers.LSTM(D, return_sequences=True)(
        keras.layers.Embedding(vocab, D, mask_zero=True)(target)
    )
    attentional = GlobalAttention(score_mode="general", attentional_units=D)(states, memory)
    model = keras.Model([source, target], keras.layers.Dense(vocab)(attentional))
    rng = np.random.default_rng(0)
    src = rng.integers(1, vocab, (8, S)).astype("int32")
    src[:, 4:] = 0
    tgt = rng.integers(1, vocab, (8, T)).astype("int32")
    before, after = fit_lowers_loss(model, [src, tgt], tgt, steps=3, learning_rate=0.5)
    assert np.isfinite(after) and after < before - 1e-3


# -- the extension point: a score mode is one method ------------------------------------------


class CosineGlobal(GlobalAttention):
    @scores.score_mode("cosine")
    def cosine_score(self, query, keys):
        norm = lambda x: x / keras.ops.sqrt(keras.ops.sum(x * x, axis=-1, keepdims=True))  # noqa: E731
        return scores.dot_score(self, norm(query), norm(keys))


class CosineLocal(LocalAttention):
    cosine_score = CosineGlobal.cosine_score


def test_a_subclass_adds_a_score_mode_with_one_method():
    assert CosineGlobal.score_modes == (*GlobalAttention.score_modes, "cosine")
    assert "cosine" not in GlobalAttention.score_modes
    assert "location" not in LocalAttention.score_modes
    query, value = random((B, 4, D), seed=21), random((B, S, D), seed=22)
    value_mask = np.arange(S) < np.array([[S], [3], [5]])
    layer = CosineGlobal(score_mode="cosine")
    context, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    scores = np.einsum("btd,bsd->bts", unit(query.astype("float64")), unit(value))
    expected = masked_softmax(scores, value_mask[:, None])
    assert_allclose(weights, expected)
    assert_allclose(context, np.einsum("bts,bsd->btd", expected, value))
    assert layer.weights == []  # no weights in its entry: no kernel
    # Local attention reads the same table: local-m with a window over the whole source
    # weighs every valid position as global attention does.
    local = CosineLocal(alignment="local-m", window=S + 4, score_mode="cosine")
    assert_allclose(local(query, value, value_mask=value_mask), context)
    with pytest.raises(ValueError, match="score_mode='cosine'"):
        GlobalAttention(score_mode="cosine")


def test_location_score_builds_with_an_unknown_source_length():
    query, value = keras.Input((T, D)), keras.Input((None, D))
    layer = GlobalAttention(score_mode="location", max_source_length=S)
    model = keras.Model([query, value], layer(query, value))
    assert model.output.shape == (None, T, D)
    q, v = random((B, T, D), 1), random((B, 5, D), 2)
    assert_allclose(model([q, v]), layer(q, v))


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


@pytest.mark.parametrize("score_mode", ["dot", "general"])
@pytest.mark.parametrize("use_scale", [False, True])
@pytest.mark.parametrize("attentional_units", [None, 5])
@pytest.mark.parametrize("masked", [False, True])
def test_eager_step_is_the_one_step_call(score_mode, use_scale, attentional_units, masked):
    """On eager torch `eager_step(memory)` attends one step with what it made once per
    sequence: its output and weights equal numpy's, and its gradients (query, value and
    weights) the layer's one-step call's, NaN in the padding included. The compiled backends
    trace `attend` and get `None`."""
    query, value = random((B, D), seed=3), random((B, S, D), seed=4)
    value_mask = length_mask([6, 3, 1], S) if masked else None
    layer = make_layer(score_mode, use_scale=use_scale, attentional_units=attentional_units)
    layer(query, value)
    randomize_scale(layer)
    if keras.backend.backend() != "torch":
        assert layer.eager_step(layer.prepare(value, value_mask)) is None
        return
    import torch

    expected_output, expected_weights = reference_global(layer, query, value, value_mask)
    if masked:
        value[1, 3:] = np.nan  # never read: prepare zeroes the padding
    probe = torch.tensor(random((B, S), seed=5))

    def run(attend):
        q, v = torch.tensor(query, requires_grad=True), torch.tensor(value, requires_grad=True)
        output, weights = attend(q, v)
        loss = (output * output).sum() + (weights * probe).sum()
        grads = torch.autograd.grad(loss, [q, v, *(w.value for w in layer.trainable_weights)])
        return [to_numpy(x) for x in (output, weights, *grads)]

    def eager(q, v):
        step = layer.eager_step(layer.prepare(v, value_mask), training=True)
        return step(q)

    def call(q, v):
        return layer(q, value=v, value_mask=value_mask, return_attention_scores=True)

    fast, slow = run(eager), run(call)
    assert_allclose(fast[0], expected_output)
    assert_allclose(fast[1], expected_weights)
    assert np.isfinite(fast[3]).all()
    for a, b in zip(fast, slow, strict=True):
        assert_allclose(a, b, atol=1e-6)


def test_eager_step_only_where_it_computes_attend():
    """`eager_step` is `None` (the layer's call attends) for the scores that are not a dot
    with the keys, attention dropout in training, another compute dtype, and a subclass
    that overrides a method it replaces; on torch it is there for dot and general otherwise,
    a subclass that keeps those methods included, with the call's values."""
    query, value = random((B, D), seed=3), random((B, S, D), seed=4)

    def step(score_mode="general", cls=GlobalAttention, training=None, **kwargs):
        layer = cls(score_mode=score_mode, max_source_length=S, **kwargs)
        layer(query, value)
        return layer.eager_step(layer.prepare(value), training=training)

    class Subclass(GlobalAttention):
        pass

    class OwnAttend(GlobalAttention):
        def attend(self, *args, **kwargs):
            return super().attend(*args, **kwargs)

    on_torch = keras.backend.backend() == "torch"
    assert (step() is not None) == on_torch
    assert (step("dot", dropout=0.5) is not None) == on_torch  # not training
    assert step("dot", dropout=0.5, training=True) is None
    assert step("concat") is None
    assert step("location") is None
    assert step(dtype="mixed_float16") is None
    assert (step(cls=Subclass) is not None) == on_torch
    assert step(cls=OwnAttend) is None
    if on_torch:  # the subclass's fast step gives its call's output
        layer = Subclass(score_mode="general", max_source_length=S)
        expected = layer(query, value)
        output, _ = layer.eager_step(layer.prepare(value))(keras.ops.convert_to_tensor(query))
        assert_allclose(output, expected, atol=1e-6)
