"""`keras_luong.tfa.seq2seq` on every backend, by value against NumPy written from
tensorflow-addons' equations (its own tests, vendored in tests/tfa_seq2seq/, run on TensorFlow;
`tests/tfa_parity_test.py` compares with tensorflow-addons itself)."""

import keras
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


def test_bad_input_gets_a_value_error_naming_it():
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
    with pytest.raises(ValueError, match="sampling_probability"):
        tfa.seq2seq.ScheduledEmbeddingTrainingSampler(np.ones((2, 2)))
    with pytest.raises(ValueError, match="embedding is required"):
        tfa.seq2seq.ScheduledEmbeddingTrainingSampler(0.5).initialize(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="beam_width"):
        tfa.seq2seq.BeamSearchDecoder(keras.layers.GRUCell(2), beam_width=0)


# Every public name of tensorflow-addons 0.23's tfa.seq2seq (its __init__.py).
TFA_SEQ2SEQ_NAMES = (
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "BaseDecoder",
    "BasicDecoder",
    "BasicDecoderOutput",
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "CustomSampler",
    "Decoder",
    "FinalBeamSearchDecoderOutput",
    "GreedyEmbeddingSampler",
    "InferenceSampler",
    "LuongAttention",
    "LuongMonotonicAttention",
    "SampleEmbeddingSampler",
    "Sampler",
    "ScheduledEmbeddingTrainingSampler",
    "ScheduledOutputTrainingSampler",
    "SequenceLoss",
    "TrainingSampler",
    "dynamic_decode",
    "gather_tree",
    "gather_tree_from_array",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
    "sequence_loss",
    "tile_batch",
)


def test_every_public_name_of_tfa_seq2seq_is_here():
    assert sorted(n for n in TFA_SEQ2SEQ_NAMES if not hasattr(tfa.seq2seq, n)) == []
    assert sorted(tfa.seq2seq.__all__) == sorted(TFA_SEQ2SEQ_NAMES)


def test_config_round_trip_keeps_the_arguments():
    for attention in (
        tfa.seq2seq.LuongAttention(UNITS, scale=True, probability_fn="hardmax"),
        tfa.seq2seq.BahdanauMonotonicAttention(UNITS, normalize=True, mode="hard"),
    ):
        config = attention.get_config()
        again = type(attention).from_config(config)
        assert again.get_config() == config and config["memory"] is None


def test_attention_wrapper_step_against_numpy():
    """One step of AttentionWrapper(SimpleRNNCell, LuongAttention, attention_layer_size):
    input feeding, the cell, the alignments, the context and the linear attention layer,
    written out in NumPy."""
    import keras

    memory, _ = data(7)
    cell = keras.layers.SimpleRNNCell(UNITS)
    mechanism = tfa.seq2seq.LuongAttention(UNITS, memory, LENGTHS)
    wrapper = tfa.seq2seq.AttentionWrapper(cell, mechanism, attention_layer_size=3)
    state = wrapper.get_initial_state(batch_size=BATCH, dtype="float32")
    inputs = np.random.default_rng(8).normal(size=(BATCH, 2)).astype("float32")
    output, state = wrapper(inputs, state)
    output, state = wrapper(inputs, state)  # a second step reads the fed-back attention

    kernel, recurrent, bias = (to_numpy(w) for w in cell.weights)
    keys = memory @ to_numpy(mechanism.attention.key_kernel)
    values = memory * (np.arange(TIME)[None, :, None] < LENGTHS[:, None, None])
    layer = to_numpy(wrapper._attention_layers[0].kernel)
    h, attention = np.zeros((BATCH, UNITS)), np.zeros((BATCH, 3))
    for _ in range(2):
        h = np.tanh(np.concatenate([inputs, attention], 1) @ kernel + h @ recurrent + bias)
        alignments = masked_softmax(np.einsum("bu,btu->bt", h, keys))
        context = np.einsum("bt,btd->bd", alignments, values)
        attention = np.concatenate([h, context], 1) @ layer
    assert_allclose(output, attention)
    assert_allclose(state.attention, attention)
    assert_allclose(state.alignments, alignments)
    assert_allclose(state.cell_state[0], h)
    again = state.clone(attention=np.zeros((BATCH, 3), "float32"))
    assert_allclose(again.attention, np.zeros((BATCH, 3)))
    with pytest.raises(ValueError, match="shape"):
        state.clone(attention=np.zeros((BATCH, 4), "float32"))


class TutorialModel:
    """tensorflow-addons' NMT tutorial's model, written with `keras_luong.tfa` and no
    TensorFlow call: an LSTM encoder, Luong attention, AttentionWrapper and BasicDecoder."""

    def __init__(self, vocabulary=12, units=16):
        import keras

        tfa_ = tfa.seq2seq
        self.embedding = keras.layers.Embedding(vocabulary, 8)
        self.encoder = keras.layers.LSTM(units, return_sequences=True, return_state=True)
        self.mechanism = tfa_.LuongAttention(units)
        self.cell = tfa_.AttentionWrapper(
            keras.layers.LSTMCell(units), self.mechanism, attention_layer_size=units
        )
        self.output_layer = keras.layers.Dense(vocabulary)
        self.vocabulary = vocabulary

    def start(self, source, lengths):
        outputs, h, c = self.encoder(self.embedding(source))
        self.mechanism.setup_memory(outputs, memory_sequence_length=lengths)
        return self.cell.get_initial_state(batch_size=ops.shape(source)[0], dtype="float32").clone(
            cell_state=[h, c]
        )

    def teacher_forced(self, source, lengths, target_in):
        decoder = tfa.seq2seq.BasicDecoder(
            self.cell, tfa.seq2seq.TrainingSampler(), output_layer=self.output_layer
        )
        outputs, _, _ = decoder(
            self.embedding(target_in),
            initial_state=self.start(source, lengths),
            sequence_length=ops.full((ops.shape(source)[0],), target_in.shape[1], "int32"),
        )
        return outputs


def test_the_tutorial_model_trains_and_decodes_greedily():
    """The tutorial's model, in a Keras model, lowers its loss under `fit` (compiled on JAX
    and TensorFlow) on every backend, and its greedy ids are the argmax of its own
    teacher-forced logits fed those ids."""
    import keras

    rng = np.random.default_rng(9)
    source = rng.integers(3, 12, size=(4, 5)).astype("int32")
    target = np.concatenate([np.ones((4, 1), "int32"), source], axis=1)  # copy, start id 1
    lengths = np.full((4,), 5)
    model = TutorialModel()

    class Translator(keras.Model):
        def call(self, inputs):
            source, target_in = inputs
            lengths = ops.sum(ops.cast(ops.not_equal(source, 0), "int32"), axis=1)
            return model.teacher_forced(source, lengths, target_in).rnn_output

    translator = Translator()
    for layer in model_layers(model):
        setattr(translator, layer.name, layer)  # tracked, so fit trains their weights
    translator((source, target[:, :-1]))
    translator.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=tfa.seq2seq.SequenceLoss(),
        jit_compile=keras.backend.backend() != "torch",
    )
    x, y = (source, target[:, :-1]), target[:, 1:]
    before = translator.evaluate(x, y, verbose=0)
    translator.fit(x, y, epochs=3, batch_size=4, verbose=0)
    after = translator.evaluate(x, y, verbose=0)
    assert np.isfinite(after) and after < before

    decoder = tfa.seq2seq.BasicDecoder(
        model.cell,
        tfa.seq2seq.GreedyEmbeddingSampler(model.embedding),
        output_layer=model.output_layer,
        maximum_iterations=6,
    )
    outputs, _, decoded_lengths = decoder(
        None,
        initial_state=model.start(source, lengths),
        start_tokens=np.ones((4,), "int32"),
        end_token=2,
    )
    ids = to_numpy(outputs.sample_id)
    assert ids.shape[0] == 4 and ids.shape[1] <= 6
    fed = np.concatenate([np.ones((4, 1), "int32"), ids[:, :-1]], axis=1)
    forced = to_numpy(model.teacher_forced(source, lengths, fed).rnn_output)
    ended = np.cumsum(ids == 2, axis=1) - (ids == 2) > 0  # steps after a row's end id
    np.testing.assert_array_equal(np.where(ended, 0, forced.argmax(-1)), np.where(ended, 0, ids))
    assert np.all(to_numpy(decoded_lengths) <= 6)


def model_layers(model):
    return [model.embedding, model.encoder, model.cell, model.output_layer, model.mechanism]


@pytest.mark.parametrize("length_penalty", [0.0, 0.6])
def test_beam_search_decoder_ranks_every_hypothesis(length_penalty):
    """With as many beams as there are hypotheses (3 ids, 2 steps: 9), beam search keeps
    them all: each batch entry's beams are every sequence, best first by the GNMT score of
    the sum of its log-probabilities, which the cell gives when stepped by hand."""
    import itertools

    import keras

    vocabulary, beams, steps = 3, 9, 2
    rng = np.random.default_rng(3)
    embedding = rng.normal(size=(vocabulary, 5)).astype("float32")
    cell = keras.layers.LSTMCell(4)
    projection = keras.layers.Dense(vocabulary)
    decoder = tfa.seq2seq.BeamSearchDecoder(
        cell,
        beam_width=beams,
        output_layer=projection,
        length_penalty_weight=length_penalty,
        maximum_iterations=steps,
    )
    start = np.array([0, 2], "int32")
    state = tfa.seq2seq.tile_batch(cell.get_initial_state(batch_size=2), beams)
    # End id 3 is never a candidate: every hypothesis runs both steps.
    outputs, final_state, lengths = decoder(
        embedding, start_tokens=start, end_token=3, initial_state=state
    )
    ids = to_numpy(outputs.predicted_ids)  # (batch, time, beam)
    scores = to_numpy(outputs.beam_search_decoder_output.scores)  # (batch, time, beam)
    assert ids.shape == (2, steps, beams)
    np.testing.assert_array_equal(to_numpy(lengths), steps)
    np.testing.assert_array_equal(to_numpy(final_state.lengths), steps)

    def log_softmax(x):
        x = to_numpy(x)
        return (
            x
            - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))
            - x.max(-1, keepdims=True)
        )

    penalty = ((5.0 + steps) / 6.0) ** length_penalty
    for b in range(2):
        expected = {}
        for sequence in itertools.product(range(vocabulary), repeat=steps):
            states = [s[b : b + 1] for s in cell.get_initial_state(batch_size=2)]
            inputs, total = embedding[start[b]][None], 0.0
            for token in sequence:
                output, states = cell(inputs, states)
                total += log_softmax(projection(output))[0, token]
                inputs = embedding[token][None]
            expected[sequence] = total / penalty
        ranked = sorted(expected, key=expected.get, reverse=True)
        assert [tuple(ids[b, :, k]) for k in range(beams)] == ranked
        assert_allclose(scores[b, -1], [expected[s] for s in ranked], atol=1e-5)


def test_beam_search_reorders_the_alignment_history_with_the_beams():
    """The alignment history is written in the beams' order of each step; at the end it is
    stacked and each final beam's row at step t is its ancestor's (tensorflow-addons'
    `reorder_tensor_arrays`), checked against walking the back-pointers in NumPy. The state's
    alignments move with the beams: the last step's, gathered by the last back-pointers."""
    import keras

    memory, _ = data(4)
    beams, steps, vocabulary = 3, 4, 7
    mechanism = tfa.seq2seq.BahdanauAttention(UNITS)
    mechanism.setup_memory(
        tfa.seq2seq.tile_batch(memory, beams),
        memory_sequence_length=tfa.seq2seq.tile_batch(LENGTHS, beams),
    )
    cell = tfa.seq2seq.AttentionWrapper(
        keras.layers.GRUCell(UNITS), mechanism, attention_layer_size=UNITS, alignment_history=True
    )
    projection = keras.layers.Dense(vocabulary)
    embedding = np.random.default_rng(5).normal(size=(vocabulary, 3)).astype("float32")
    results = []
    for reorder in (False, True):
        decoder = tfa.seq2seq.BeamSearchDecoder(
            cell,
            beam_width=beams,
            output_layer=projection,
            coverage_penalty_weight=0.2,
            maximum_iterations=steps,
            reorder_tensor_arrays=reorder,
            output_time_major=True,
        )
        results.append(
            decoder(
                embedding,
                start_tokens=np.zeros(BATCH, "int32"),
                end_token=vocabulary,  # no beam ends: every beam runs every step
                initial_state=cell.get_initial_state(batch_size=BATCH * beams, dtype="float32"),
            )
        )
    (raw_outputs, raw_state, _), (outputs, state, _) = results
    raw = to_numpy(raw_state.cell_state.alignment_history.stack()).reshape(
        steps, BATCH, beams, TIME
    )
    parents = to_numpy(outputs.beam_search_decoder_output.parent_ids)  # (time, batch, beam)
    expected = np.empty_like(raw)
    for b in range(BATCH):
        for k in range(beams):
            ancestor = k
            for t in reversed(range(steps)):
                expected[t, b, k] = raw[t, b, ancestor]
                ancestor = parents[t, b, ancestor]
    history = to_numpy(state.cell_state.alignment_history)  # stacked, as tensorflow-addons'
    assert_allclose(history.reshape(steps, BATCH, beams, TIME), expected, atol=1e-6)
    final = to_numpy(state.cell_state.alignments)  # (batch, beam, memory)
    last = np.take_along_axis(raw[-1], parents[-1][..., None], axis=1)
    assert_allclose(final, last, atol=1e-6)
    assert_allclose(final.sum(-1), 1.0, atol=1e-5)
    past_length = np.arange(TIME)[None, None] >= LENGTHS[:, None, None]
    assert_allclose(np.where(past_length, final, 0.0), 0.0)
    np.testing.assert_array_equal(
        to_numpy(raw_outputs.predicted_ids), to_numpy(outputs.predicted_ids)
    )


@pytest.mark.parametrize("probability", [0.0, 1.0])
def test_scheduled_samplers_feed_the_inputs_or_the_samples(probability):
    """Probability 0 is teacher forcing; probability 1 feeds the embedding of the drawn id
    (ScheduledEmbeddingTrainingSampler) or the output followed by the next auxiliary input
    (ScheduledOutputTrainingSampler)."""
    rng = np.random.default_rng(6)
    inputs = rng.normal(size=(3, 4, 5)).astype("float32")
    outputs = rng.normal(size=(3, 5)).astype("float32")
    embedding = rng.normal(size=(5, 5)).astype("float32")
    sampler = tfa.seq2seq.ScheduledEmbeddingTrainingSampler(probability, seed=1)
    finished, first = sampler.initialize(inputs, sequence_length=[4, 2, 1], embedding=embedding)
    assert_allclose(to_numpy(first), inputs[:, 0])
    ids = to_numpy(sampler.sample(0, outputs, None))
    finished, following, _ = sampler.next_inputs(0, outputs, None, ops.convert_to_tensor(ids))
    np.testing.assert_array_equal(to_numpy(finished), [False, False, True])
    if probability:
        assert ids.min() >= 0 and ids.max() < 5
        assert_allclose(to_numpy(following), embedding[ids])
    else:
        np.testing.assert_array_equal(ids, -1)
        assert_allclose(to_numpy(following), inputs[:, 1])

    auxiliary = rng.normal(size=(3, 4, 2)).astype("float32")
    sampler = tfa.seq2seq.ScheduledOutputTrainingSampler(probability, seed=1)
    _, first = sampler.initialize(inputs, auxiliary_inputs=auxiliary)
    assert_allclose(to_numpy(first), np.concatenate([inputs[:, 0], auxiliary[:, 0]], -1))
    chosen = sampler.sample(0, outputs, None)
    np.testing.assert_array_equal(to_numpy(chosen), int(probability))
    _, following, _ = sampler.next_inputs(0, outputs, None, chosen)
    expected = np.concatenate([outputs if probability else inputs[:, 1], auxiliary[:, 1]], -1)
    assert_allclose(to_numpy(following), expected)
