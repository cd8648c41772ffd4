"""What every attention layer does through the attention protocol and the shared base class.

Properties over random shapes, masks, lengths, windows and score modes (hypothesis, see
tests/attention_cases.py), and what malformed or extreme inputs do to any attention: values
stored where a mask says "padding" (NaN and inf included) never change an output or a
gradient, empty batches and sources give zero contexts, float16 scores do not overflow,
dropout masks are drawn ahead of the loop, and mismatched or integer inputs are refused."""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keras_luong import (
    BahdanauAttention,
    BahdanauMonotonicAttention,
    GlobalAttention,
    LocalAttention,
    LocationSensitiveAttention,
    LuongDecoder,
    MonotonicAttention,
)
from tests.attention_cases import PROPERTY, attend, attention_cases, make_layer
from tests.test_case import (
    assert_allclose,
    gradients,
    length_mask,
    random,
    to_numpy,
)

B, T, S, D = 3, 4, 7, 6
LENGTHS = [7, 4, 1]

# One of each attention on the protocol (Luong's global and local scores, monotonic
# attention with its state, Bahdanau's additive score and its monotonic form).
ATTENTIONS = {
    "global-dot": lambda **kw: GlobalAttention(score_mode="dot", attentional_units=5, **kw),
    "global-general": lambda **kw: GlobalAttention(score_mode="general", **kw),
    "global-concat": lambda **kw: GlobalAttention(score_mode="concat", attentional_units=5, **kw),
    "local-m": lambda **kw: LocalAttention("local-m", window=1, attentional_units=5, **kw),
    "local-p": lambda **kw: LocalAttention("local-p", window=2, score_mode="concat", **kw),
    "monotonic": lambda **kw: MonotonicAttention(attentional_units=5, **kw),
    "bahdanau": lambda **kw: BahdanauAttention(5, normalize=True, **kw),
    "bahdanau-monotonic": lambda **kw: BahdanauMonotonicAttention(5, **kw),
    "location": lambda **kw: LocationSensitiveAttention(
        5, filters=2, kernel_size=3, cumulative=True, attentional_units=5, **kw
    ),
}


def _sum_of_squares(outputs):
    return keras.ops.sum(keras.ops.square(outputs))


FLOAT16_LAYERS = {
    "global": lambda **kw: GlobalAttention(score_mode="dot", **kw),
    "local-m": lambda **kw: LocalAttention("local-m", window=1, score_mode="dot", **kw),
}


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


def test_attention_dropout_masks_drawn_ahead_keep_or_scale_each_weight():
    layer = GlobalAttention(dropout=0.5)
    mask = to_numpy(layer.dropout_mask(B, T, S))
    assert mask.shape == (B, T, S)
    assert set(np.unique(mask)) == {0.0, 2.0}
    local = LocalAttention(window=2, dropout=0.25)
    assert to_numpy(local.dropout_mask(B, T, S)).shape == (B, T, 5)


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


@PROPERTY
@given(attention_cases())
def test_weights_are_a_distribution_over_valid_positions_in_the_window(case):
    output, weights, positions = attend(make_layer(case), case)
    assert np.all(np.isfinite(output)) and np.all(weights >= 0)
    assert np.all(weights[~np.broadcast_to(case["mask"][:, None, :], weights.shape)] == 0)
    source = np.arange(case["value"].shape[1])
    steps = np.arange(case["query"].shape[1])
    if case["kind"] == "global":
        window = np.ones(weights.shape, bool)
    else:
        centre = np.floor(positions) if case["kind"] == "local-p" else steps[None, :]
        centre = np.broadcast_to(centre, weights.shape[:2])[..., None]
        window = np.abs(source[None, None, :] - centre) <= case["window"]
        assert np.all(weights[~window] == 0)
    valid = window & case["mask"][:, None, :]
    totals = weights.sum(-1)
    if case["kind"] == "local-p":
        # The Gaussian is not renormalised: at most 1, and 0 without a valid position.
        assert np.all(totals <= 1 + 1e-5)
        assert np.all(totals[~valid.any(-1)] == 0)
    else:
        np.testing.assert_allclose(totals, valid.any(-1).astype("float32"), atol=1e-5)


@PROPERTY
@given(attention_cases(), st.sampled_from([np.nan, np.inf, -np.inf, 1e30, 0.0]))
def test_masked_values_change_neither_outputs_nor_gradients(case, poison):
    layer = make_layer(case)
    poisoned = np.where(case["mask"][..., None], case["value"], poison).astype("float32")
    assert_allclose(attend(layer, case, poisoned)[0], attend(layer, case)[0])
    loss = lambda outputs: keras.ops.sum(keras.ops.square(outputs))  # noqa: E731
    inputs = [case["query"], case["value"]]
    clean = gradients(layer, loss, inputs, value_mask=case["mask"])
    dirty = gradients(layer, loss, [case["query"], poisoned], value_mask=case["mask"])
    for got, expected in zip(dirty[0] + dirty[1], clean[0] + clean[1], strict=True):
        assert np.all(np.isfinite(got))
        assert_allclose(got, expected, atol=1e-5)


@PROPERTY
@given(attention_cases(kinds=("global",)), st.randoms(use_true_random=False))
def test_permuting_the_source_permutes_the_weights_and_keeps_the_context(case, rng):
    layer = make_layer(case)
    order = list(range(case["value"].shape[1]))
    rng.shuffle(order)
    output, weights, _ = attend(layer, case)
    permuted = attend(layer, case, case["value"][:, order], case["mask"][:, order])
    assert_allclose(permuted[0], output)
    assert_allclose(permuted[1], weights[:, :, order])


@PROPERTY
@given(attention_cases())
def test_an_example_does_not_depend_on_the_rest_of_the_batch(case):
    layer = make_layer(case)
    output, weights, _ = attend(layer, case)
    last = {k: v[-1:] if isinstance(v, np.ndarray) else v for k, v in case.items()}
    alone, alone_weights, _ = attend(layer, last)
    assert_allclose(alone, output[-1:])
    assert_allclose(alone_weights, weights[-1:])


@PROPERTY
@given(attention_cases(kinds=("local-m",)))
def test_local_m_with_a_window_over_everything_is_global(case):
    """Luong's local-m with `D ≥ S + T` sees every source position at every step: it is
    global attention with the same weights."""
    global_layer = make_layer({**case, "kind": "global"})
    expected = attend(global_layer, case)
    window = case["value"].shape[1] + case["query"].shape[1]
    local = make_layer({**case, "window": window})
    attend(local, case)  # build
    local.set_weights(global_layer.get_weights())
    got = attend(local, case)
    assert_allclose(got[0], expected[0])
    assert_allclose(got[1], expected[1])


@PROPERTY
@given(
    attention_cases(),
    st.sampled_from(["mixed_float16", "mixed_bfloat16"]),
    st.floats(1.0, 300.0),
)
def test_lower_precision_inputs_of_large_magnitude_stay_finite(case, policy, scale):
    layer = make_layer(case, dtype=policy)
    big = {**case, "query": case["query"] * scale, "value": case["value"] * scale}
    output, weights, _ = attend(layer, big)
    assert np.all(np.isfinite(output.astype("float32"))) and np.all(np.isfinite(weights))
