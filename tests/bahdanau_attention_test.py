"""BahdanauAttention and BahdanauMonotonicAttention against float64 numpy references of
tensorflow-addons' equations (tensorflow-addons itself, in its own virtual environment:
tests/tfa_parity_test.py)."""

import keras
import numpy as np
import pytest

from keras_luong import (
    BahdanauAttention,
    BahdanauMonotonicAttention,
    BeamSearchSampler,
    LuongDecoder,
    LuongSeq2Seq,
)
from tests.monotonic_attention_test import reference as monotonic_reference
from tests.reference import masked_softmax
from tests.test_case import (
    TestCase,
    assert_allclose,
    fit_lowers_loss,
    random,
    save_and_load,
    to_numpy,
    weights_by_name,
)

B, S, T, D_Q, D_V, U = 3, 6, 4, 5, 7, 8
MASK = np.arange(S) < np.array([[6], [3], [5]])


def bahdanau_scores(layer, query, value, mask):
    """tensorflow-addons' `_bahdanau_score` in float64, padded states zeroed first."""
    w = {k: v.astype("float64") for k, v in weights_by_name(layer).items()}
    value = np.where(mask[..., None], value.astype("float64"), 0.0)
    hidden = (query.astype("float64") @ w["query_kernel"])[:, :, None] + (value @ w["key_kernel"])[
        :, None
    ]
    v = w["score_kernel"]
    if layer.normalize:
        v = w["score_gain"] * v / np.sqrt(np.sum(v * v))
        hidden = hidden + w["score_offset"]
    return np.tanh(hidden) @ v


def randomize(layer):
    """Weights other than their initial values (a gain of 1/√U and a zero offset would
    hide a misplaced g or b)."""
    for i, weight in enumerate(layer.weights):
        weight.assign(random(weight.shape, seed=100 + i))


@pytest.mark.parametrize("normalize", [False, True])
def test_weights_and_context_against_numpy(normalize):
    query, value = random((B, T, D_Q), 1), random((B, S, D_V), 2)
    layer = BahdanauAttention(U, normalize=normalize)
    layer.build(query.shape, value.shape)
    randomize(layer)
    names = ["key_kernel", "query_kernel", "score_kernel"]
    names += ["score_gain", "score_offset"] if normalize else []
    assert [w.path.split("/")[-1] for w in layer.weights] == names
    assert [tuple(w.shape) for w in layer.weights][:3] == [(D_V, U), (D_Q, U), (U,)]
    context, weights = layer(query, value, value_mask=MASK, return_attention_scores=True)
    expected = masked_softmax(bahdanau_scores(layer, query, value, MASK), MASK[:, None])
    assert_allclose(weights, expected)
    value64 = np.where(MASK[..., None], value, 0.0)
    assert_allclose(context, np.einsum("bts,bsd->btd", expected, value64))


def test_normalized_gain_starts_at_the_root_of_one_over_units():
    layer = BahdanauAttention(U, normalize=True)
    layer(random((B, T, D_Q)), random((B, S, D_V)))
    assert_allclose(layer.score_gain, np.sqrt(1 / U))
    assert_allclose(layer.score_offset, np.zeros(U))


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_monotonic_alignments_against_numpy(normalize, mode):
    query, value = 0.3 * random((B, T, D_Q), 3), random((B, S, D_V), 4)
    layer = BahdanauMonotonicAttention(U, normalize=normalize, mode=mode, score_bias_init=0.2)
    layer.build(query.shape, value.shape)
    randomize(layer)
    _, alignments = layer(query, value, value_mask=MASK, return_attention_scores=True)
    scores = bahdanau_scores(layer, query, value, MASK)
    expected = monotonic_reference(layer, query, value, MASK, mode, scores=scores)
    assert_allclose(alignments, expected, atol=2e-5)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="units"):
        BahdanauAttention(0)
    with pytest.raises(ValueError, match="normalize"):
        BahdanauAttention(U, normalize="yes")
    with pytest.raises(ValueError, match="score_mode='general'"):
        BahdanauAttention(U, score_mode="general")


class TestBahdanauLayers(TestCase):
    @pytest.mark.parametrize("normalize", [False, True])
    def test_layer_bundle(self, normalize, tmp_path):
        self.run_layer_bundle(
            lambda dtype=None: BahdanauAttention(U, normalize=normalize, dtype=dtype),
            [random((B, T, D_Q), 5), random((B, S, D_V), 6)],
            tmp_path,
            expected_output_shape=(B, T, D_V),
        )

    def test_monotonic_layer_bundle(self, tmp_path):
        self.run_layer_bundle(
            # "recursive": every query step at once runs the exact recursion in a loop,
            # which trains jit-compiled on TensorFlow too.
            lambda dtype=None: BahdanauMonotonicAttention(
                U, normalize=True, mode="recursive", dtype=dtype
            ),
            [random((B, T, D_Q), 7), random((B, S, D_V), 8)],
            tmp_path,
            expected_output_shape=(B, T, D_V),
        )


@pytest.mark.parametrize(
    "attention",
    [
        lambda: BahdanauAttention(U, normalize=True, attentional_units=D_V),
        lambda: BahdanauMonotonicAttention(U, mode="recursive", attentional_units=D_V),
    ],
    ids=["global", "monotonic"],
)
def test_decoder_step_by_step_equals_teacher_forcing(attention):
    targets, value = random((B, T, 4), 9), random((B, S, D_V), 10)
    decoder = LuongDecoder(keras.layers.LSTMCell(D_V), attention())
    outputs, weights = decoder(targets, value, value_mask=MASK, return_attention_scores=True)
    memory = decoder.prepare(value, MASK)
    states = decoder.get_initial_state(B, memory=memory)
    for t in range(T):
        h_tilde, states, step_weights = decoder.step(
            targets[:, t], states, memory, step=t, return_attention_scores=True
        )
        assert_allclose(h_tilde, to_numpy(outputs)[:, t])
        assert_allclose(step_weights, to_numpy(weights)[:, t])


@pytest.mark.parametrize("alignment", ["global", "hard-monotonic"])
def test_seq2seq_with_bahdanau_scores_trains_decodes_and_saves(alignment, tmp_path):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    source = rng.integers(3, 9, (16, 5)).astype("int32")
    target = np.concatenate([np.ones((16, 1)), source, np.full((16, 1), 2)], 1).astype("int32")
    model = LuongSeq2Seq(9, 9, units=8, embedding_dim=4, alignment=alignment, score_mode="additive")
    assert isinstance(model.decoder.attention, BahdanauAttention if alignment == "global" else
                      BahdanauMonotonicAttention)  # fmt: skip
    before, after = fit_lowers_loss(model, (source, target[:, :-1]), target[:, 1:], steps=3)
    assert after < before
    greedy = model.generate(source[:4], 6)
    beam = model.generate(source[:4], 6, sampler=BeamSearchSampler(1))
    np.testing.assert_array_equal(beam, greedy)  # a beam of one is greedy decoding
    _, restored = save_and_load(model, tmp_path)
    np.testing.assert_array_equal(restored.generate(source[:4], 6), greedy)


def test_value_and_memory_are_not_both_taken():
    query, value = random((B, T, D_Q), 11), random((B, S, D_V), 12)
    layer = BahdanauAttention(U)
    memory = (layer(query, value), layer.prepare(value))[1]
    with pytest.raises(ValueError, match="not both"):
        layer(query, value, memory=memory)
