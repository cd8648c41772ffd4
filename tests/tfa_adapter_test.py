"""`keras_luong.tfa.seq2seq` on every backend, by value against NumPy written from
tensorflow-addons' equations (its own tests, vendored in tests/tfa_seq2seq/, run on TensorFlow;
`benchmarks/tfa_adapter_parity.py` compares with tensorflow-addons itself)."""

import numpy as np
import pytest
from keras import ops

import keras_luong.tfa as tfa
from tests.test_case import assert_allclose, to_numpy

BATCH, TIME, DEPTH, UNITS = 3, 6, 5, 4
LENGTHS = np.array([6, 3, 1])


def data(seed=0):
    rng = np.random.default_rng(seed)
    memory = rng.normal(size=(BATCH, TIME, DEPTH)).astype("float32")
    query = rng.normal(size=(BATCH, UNITS)).astype("float32")
    return memory, query


def masked_softmax(score):
    mask = np.arange(TIME)[None] < LENGTHS[:, None]
    score = np.where(mask, score, -np.inf)
    e = np.exp(score - score.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("scale", [False, True])
def test_luong_alignments_and_memory(scale):
    memory, query = data()
    attention = tfa.seq2seq.LuongAttention(UNITS, memory, LENGTHS, scale=scale)
    alignments, state = attention([query, attention.initial_state(BATCH, "float32")])
    if scale:
        attention.attention.scale.assign(2.5)
        alignments, state = attention([query, None])
    kernel = to_numpy(attention.attention.key_kernel)
    values = memory * (np.arange(TIME)[None, :, None] < LENGTHS[:, None, None])
    score = np.einsum("bu,btu->bt", query, values @ kernel) * (2.5 if scale else 1.0)
    assert_allclose(alignments, masked_softmax(score))
    assert_allclose(state, alignments)
    assert_allclose(attention.values, values)  # zeroed past each row's length
    assert_allclose(attention.keys, values @ kernel)


def test_hardmax_probability_fn_and_hardmax():
    memory, query = data(1)
    attention = tfa.seq2seq.LuongAttention(UNITS, memory, LENGTHS, probability_fn="hardmax")
    alignments, _ = attention([query, None])
    softmax = tfa.seq2seq.LuongAttention(UNITS, memory, LENGTHS)
    softmax.set_weights(attention.get_weights())
    softmax.setup_memory(memory, LENGTHS)  # the keys are projected at set-up, as in tfa
    expected = np.eye(TIME)[to_numpy(softmax([query, None])[0]).argmax(-1)]
    np.testing.assert_array_equal(to_numpy(alignments), expected)
    np.testing.assert_array_equal(
        to_numpy(tfa.seq2seq.hardmax(np.array([[1.0, 3.0, 3.0, 0.0]], "float32"))),
        [[0.0, 1.0, 0.0, 0.0]],  # the first of equal maxima
    )


@pytest.mark.parametrize("normalize", [False, True])
def test_bahdanau_alignments(normalize):
    memory, query = data(2)
    attention = tfa.seq2seq.BahdanauAttention(UNITS, memory, LENGTHS, normalize=normalize)
    alignments, _ = attention([query, None])  # the first query builds the layer
    layer = attention.attention
    v = to_numpy(layer.score_kernel)
    if normalize:
        layer.score_gain.assign(1.7)
        layer.score_offset.assign(np.full((UNITS,), 0.3, "float32"))
        alignments, _ = attention([query, None])
        v = 1.7 * v / np.linalg.norm(v)
    values = memory * (np.arange(TIME)[None, :, None] < LENGTHS[:, None, None])
    hidden = (query @ to_numpy(layer.query_kernel))[:, None] + values @ to_numpy(layer.key_kernel)
    score = np.tanh(hidden + (0.3 if normalize else 0.0)) @ v
    assert_allclose(alignments, masked_softmax(score))


def monotonic_reference(p, previous):
    """a(s) = p(s) Σ_{k<=s} previous(k) Π_{k<=l<s} (1 - p(l)), written as loops."""
    out = np.zeros_like(p)
    for b in range(p.shape[0]):
        for s in range(p.shape[1]):
            total = sum(previous[b, k] * np.prod(1 - p[b, k:s]) for k in range(s + 1))
            out[b, s] = p[b, s] * total
    return out


@pytest.mark.parametrize("mode", ["recursive", "parallel"])
def test_monotonic_attention_function_and_mechanism(mode):
    rng = np.random.default_rng(3)
    p = rng.uniform(0.1, 0.9, size=(BATCH, TIME)).astype("float32")
    previous = rng.dirichlet(np.ones(TIME), size=BATCH).astype("float32")
    expected = monotonic_reference(p.astype("float64"), previous.astype("float64"))
    assert_allclose(tfa.seq2seq.monotonic_attention(p, previous, mode), expected, atol=1e-5)

    memory, query = data(4)
    attention = tfa.seq2seq.LuongMonotonicAttention(
        UNITS, memory, LENGTHS, mode=mode, score_bias_init=-0.5
    )
    start = attention.initial_state(BATCH, "float32")
    np.testing.assert_array_equal(to_numpy(start), np.eye(TIME)[[0, 0, 0]])
    alignments, _ = attention([query, start])
    values = memory * (np.arange(TIME)[None, :, None] < LENGTHS[:, None, None])
    score = np.einsum("bu,btu->bt", query, values @ to_numpy(attention.attention.key_kernel))
    stop = 1 / (1 + np.exp(-(score - 0.5)))
    stop = np.where(np.arange(TIME)[None] < LENGTHS[:, None], stop, 0.0)
    assert_allclose(alignments, monotonic_reference(stop, to_numpy(start)), atol=1e-5)


def test_hard_monotonic_attention_and_safe_cumprod():
    p = np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], "float32")
    previous = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]], "float32")
    np.testing.assert_array_equal(
        to_numpy(tfa.seq2seq.monotonic_attention(p, previous, "hard")),
        [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]],
    )
    x = np.array([[0.5, 0.0, 2.0, 0.25]], "float32")
    clipped = np.clip(x, np.finfo("float32").tiny, 1.0)
    assert_allclose(tfa.seq2seq.safe_cumprod(x, axis=1), np.cumprod(clipped, axis=1))
    assert_allclose(
        tfa.seq2seq.safe_cumprod(x, axis=1, exclusive=True, reverse=True),
        np.concatenate([np.cumprod(clipped[:, ::-1], 1)[:, ::-1][:, 1:], [[1.0]]], 1),
    )


def gather_tree_reference(step_ids, parent_ids, lengths, end_token):
    """Back-pointers followed from each final beam, time-major, as loops."""
    max_time, batch, beams = step_ids.shape
    out = np.full_like(step_ids, end_token)
    for b in range(batch):
        length = min(lengths[b], max_time)
        for k in range(beams):
            beam = k
            for t in range(length - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, beam]
                beam = parent_ids[t, b, beam]
        for k in range(beams):
            ended = np.flatnonzero(out[:, b, k] == end_token)
            if ended.size:
                out[ended[0] :, b, k] = end_token
    return out


def test_gather_tree_and_tile_batch_against_loops():
    rng = np.random.default_rng(5)
    step_ids = rng.integers(0, 9, size=(7, 4, 3)).astype("int32")
    parent_ids = rng.integers(0, 3, size=(7, 4, 3)).astype("int32")
    lengths = np.array([7, 4, 1, 9], "int32")
    np.testing.assert_array_equal(
        to_numpy(tfa.seq2seq.gather_tree(step_ids, parent_ids, lengths, 8)),
        gather_tree_reference(step_ids, parent_ids, lengths, 8),
    )
    with pytest.raises(ValueError, match="parent ids"):
        tfa.seq2seq.gather_tree(step_ids, parent_ids + 1, lengths, 8)
    nested = {"a": np.arange(6).reshape(3, 2), "b": np.arange(3)}
    tiled = tfa.seq2seq.tile_batch(nested, 2)
    np.testing.assert_array_equal(to_numpy(tiled["a"]), np.repeat(nested["a"], 2, axis=0))
    np.testing.assert_array_equal(to_numpy(tiled["b"]), [0, 0, 1, 1, 2, 2])


def test_sequence_loss_with_a_softmax_loss_function():
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    targets = rng.integers(0, 5, size=(2, 3))
    weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    crossent = -np.take_along_axis(log_p, targets[..., None], -1)[..., 0]

    def doubled(labels, logits):
        return 2.0 * ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)

    assert_allclose(
        tfa.seq2seq.sequence_loss(logits, targets, weights),
        (crossent * weights).sum() / weights.sum(),
    )
    assert_allclose(
        tfa.seq2seq.sequence_loss(
            logits, targets, weights, average_across_batch=False, softmax_loss_function=doubled
        ),
        2 * (crossent * weights).sum(1) / weights.sum(1),
    )
    loss = tfa.seq2seq.SequenceLoss()  # the mean over the tokens of non-zero weight
    assert_allclose(loss(targets, logits, weights), (crossent * weights).sum() / 3)


def test_bad_input_and_names_not_provided_yet():
    memory, query = data()
    with pytest.raises(ValueError, match="memory_sequence_length"):
        tfa.seq2seq.LuongAttention(UNITS, memory, np.array([6, 0, 2]))
    with pytest.raises(ValueError, match="probability_fn"):
        tfa.seq2seq.LuongAttention(UNITS, probability_fn="sparsemax")
    with pytest.raises(ValueError, match="mode"):
        tfa.seq2seq.monotonic_attention(np.ones((1, 2)), np.ones((1, 2)), "soft")
    with pytest.raises(ValueError, match="no memory"):
        tfa.seq2seq.LuongAttention(UNITS)([query, None])
    with pytest.raises(ValueError, match="ambiguous"):
        tfa.seq2seq.SequenceLoss(average_across_batch=True, sum_over_batch=True)
    with pytest.raises(AttributeError, match="InputFeedingCell"):
        tfa.seq2seq.AttentionWrapper  # noqa: B018
    from keras_luong.tfa.seq2seq import basic_decoder

    with pytest.raises(AttributeError, match="LuongDecoder"):
        basic_decoder.BasicDecoder  # noqa: B018


def test_config_round_trip_keeps_the_arguments():
    for attention in (
        tfa.seq2seq.LuongAttention(UNITS, scale=True, probability_fn="hardmax"),
        tfa.seq2seq.BahdanauMonotonicAttention(UNITS, normalize=True, mode="hard"),
    ):
        config = attention.get_config()
        again = type(attention).from_config(config)
        assert again.get_config() == config and config["memory"] is None
