"""Property-based tests (hypothesis) over random shapes, masks, lengths, windows and score modes.

Each property runs `EXAMPLES` examples per backend (set in `settings` below; the shapes are
tiny, so a property costs a few seconds) with no deadline: the first call of a new shape
traces on JAX and TensorFlow.
"""

import keras
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_luong import GlobalAttention, LocalAttention, LuongDecoder
from tests.test_case import assert_allclose, gradients, length_mask, to_numpy

EXAMPLES = 10
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: a CI failure can be replayed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SCORE_MODES = ("dot", "general", "concat")
KINDS = ("global", "monotonic", "predictive")


@st.composite
def attention_cases(draw, kinds=KINDS):
    """A layer kind, score mode, window and data: query `(B, T, d)`, value `(B, S, d)` and
    per-row source lengths in `[0, S]` (0: a fully masked row)."""
    batch = draw(st.integers(1, 3))
    source_length = draw(st.integers(1, 6))
    steps = draw(st.integers(1, 4))
    dim = draw(st.integers(1, 4))
    lengths = draw(st.lists(st.integers(0, source_length), min_size=batch, max_size=batch))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    return {
        "kind": draw(st.sampled_from(kinds)),
        "score_mode": draw(st.sampled_from(SCORE_MODES)),
        "window": draw(st.integers(0, 3)),
        "attentional": draw(st.booleans()),
        "query": rng.uniform(-2, 2, (batch, steps, dim)).astype("float32"),
        "value": rng.uniform(-2, 2, (batch, source_length, dim)).astype("float32"),
        "mask": length_mask(lengths, source_length),
        "lengths": np.array(lengths),
    }


def make_layer(case, **kwargs):
    common = {
        "score_mode": case["score_mode"],
        "attentional_units": 3 if case["attentional"] else None,
        **kwargs,
    }
    if case["kind"] == "global":
        return GlobalAttention(**common)
    # local-p with D = 0 needs its own sigma (sigma = D / 2 = 0 is refused).
    sigma = 0.5 if case["window"] == 0 and case["kind"] == "predictive" else None
    return LocalAttention(case["kind"], window=case["window"], sigma=sigma, **common)


def attend(layer, case, value=None, mask=None):
    value = case["value"] if value is None else value
    mask = case["mask"] if mask is None else mask
    kwargs = {"value_mask": mask, "return_attention_scores": True}
    if isinstance(layer, LocalAttention):
        return [to_numpy(x) for x in layer(case["query"], value, return_positions=True, **kwargs)]
    return [to_numpy(x) for x in layer(case["query"], value, **kwargs)] + [None]


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
        centre = np.floor(positions) if case["kind"] == "predictive" else steps[None, :]
        centre = np.broadcast_to(centre, weights.shape[:2])[..., None]
        window = np.abs(source[None, None, :] - centre) <= case["window"]
        assert np.all(weights[~window] == 0)
    valid = window & case["mask"][:, None, :]
    totals = weights.sum(-1)
    if case["kind"] == "predictive":
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
@given(attention_cases(kinds=("monotonic",)))
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


@PROPERTY
@given(attention_cases(kinds=("global", "monotonic")), st.booleans())
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
