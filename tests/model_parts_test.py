"""`LuongSeq2Seq` built from parts: the encoder (layers, GRU, reversed source, a user's layer
under the encoder contract), the decoder cell, the bridge, shared and pretrained embeddings,
and the paper's own model and schedule."""

import gc
import re
import warnings
import weakref

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BeamSearchSampler, LuongSeq2Seq, RecurrentEncoder, samplers
from keras_luong.models.parts import reverse_tokens
from keras_luong.models.presets import HalvingSchedule
from tests.seq2seq_test import check_export
from tests.test_case import assert_allclose, export_variant, save_and_load, to_numpy

V, UNITS, EMBEDDING = 11, 8, 6
# Post-padded and pre-padded rows: reversal keeps each row's real tokens, in reverse.
SOURCE = np.array([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0], [0, 0, 4, 5, 3]], "int32")
TARGET_IN = np.array([[1, 4, 5, 6], [1, 7, 8, 0], [1, 3, 0, 0]], "int32")


def small(**arguments):
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(V, V, units=UNITS, embedding_dim=EMBEDDING, **arguments)
    model((SOURCE, TARGET_IN))
    return model


def reversed_rows(ids):
    """numpy: each row's non-zero ids in reverse order, then its zeros."""
    rows = [[i for i in row if i][::-1] for row in ids]
    return np.array([row + [0] * (ids.shape[1] - len(row)) for row in rows], ids.dtype)


def test_reverse_tokens_reverses_each_rows_real_tokens():
    expected = np.array([[7, 6, 5, 4, 3], [10, 9, 8, 0, 0], [3, 5, 4, 0, 0]])
    np.testing.assert_array_equal(reversed_rows(SOURCE), expected)
    np.testing.assert_array_equal(to_numpy(reverse_tokens(SOURCE)), expected)


def test_reversed_source_reads_the_source_backwards():
    """A model with `reverse_source=True` gives on `x` the logits that the same weights without
    it give on the reversed `x`; its attention weights come back in `x`'s order."""
    reversing = small(reverse_source=True)
    plain = small()
    plain.set_weights(reversing.get_weights())
    flipped = reversed_rows(SOURCE)
    logits, weights = reversing((SOURCE, TARGET_IN), return_attention_scores=True)
    expected_logits, expected_weights = plain((flipped, TARGET_IN), return_attention_scores=True)
    assert_allclose(logits, expected_logits)
    weights, expected_weights = to_numpy(weights), to_numpy(expected_weights)
    for row, ids in enumerate(SOURCE):
        real = np.flatnonzero(ids)  # the source positions of the real tokens, in order
        np.testing.assert_allclose(
            weights[row][:, real], expected_weights[row][:, : len(real)][:, ::-1], atol=1e-6
        )
        np.testing.assert_allclose(weights[row][:, ids == 0], 0.0, atol=1e-7)
    # Decoding reads the reversed source too.
    np.testing.assert_array_equal(
        to_numpy(reversing.generate(SOURCE, max_length=5)),
        to_numpy(plain.generate(flipped, max_length=5)),
    )


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_stacked_encoder_runs_its_layers_in_order(cell):
    """`encoder_layers=2`: the second layer reads the first's sequence; the learned bridge
    reads the top layer's final states (a GRU's `h` for both of an LSTM decoder's states)."""
    model = small(encoder_layers=2, encoder_cell=cell, bidirectional=True)
    assert [
        type(layer.forward_layer).__name__ for layer in (model.encoder, *model.encoder_stack)
    ] == [cell.upper()] * 2
    mask = SOURCE != 0
    embedded = model.source_embedding(SOURCE)
    first, *first_states = model.encoder(embedded, mask=mask)
    second, *states = model.encoder_stack[0](first, mask=mask)
    value, value_mask, initial = model.encode(SOURCE)
    assert_allclose(value, second)
    np.testing.assert_array_equal(to_numpy(value_mask), mask)
    half = len(states) // 2
    top = [
        np.concatenate([to_numpy(f), to_numpy(b)], -1)
        for f, b in zip(states[:half], states[half:], strict=True)
    ]
    h, c = top if cell == "lstm" else (top[0], top[0])
    kernel_h, bias_h = (to_numpy(w) for w in model.bridge_h.weights)
    kernel_c, bias_c = (to_numpy(w) for w in model.bridge_c.weights)
    assert len(initial) == 2
    assert_allclose(initial[0], np.tanh(h @ kernel_h + bias_h))
    assert_allclose(initial[1], np.tanh(c @ kernel_c + bias_c))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_bidirectional_layers_keep_the_layers_they_were_copied_from(cell, monkeypatch, tmp_path):
    """Keras' `Bidirectional` copies the layer it is given by serializing it, and inside
    `load_model` Keras matches serialized objects by `id()`: a template collected in the
    middle of a load freed its objects' `id()`s for later ones, and a later template given
    one was copied as an earlier object (a load that failed now and then). Every recurrent
    layer made while building or loading the model, templates included, lives as long as
    the model."""
    layer_class = keras.layers.LSTM if cell == "lstm" else keras.layers.GRU
    made, init = [], layer_class.__init__

    def recording_init(self, *args, **kwargs):
        made.append(weakref.ref(self))
        init(self, *args, **kwargs)

    monkeypatch.setattr(layer_class, "__init__", recording_init)
    model = small(encoder_layers=3, encoder_cell=cell, bidirectional=True)
    model((SOURCE, TARGET_IN))
    _, restored = save_and_load(model, tmp_path)
    gc.collect()
    # Three a layer (the template and its two directions), three layers, two models.
    assert len(made) == 18
    assert all(ref() is not None for ref in made)
    assert_allclose(restored((SOURCE, TARGET_IN)), model((SOURCE, TARGET_IN)))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_encoder_is_the_built_in_encoder_as_a_layer(cell, tmp_path):
    """`RecurrentEncoder` given the built-in encoder's weights returns its states and mask;
    its final states are each layer's directions concatenated; a model composed with it
    round-trips through `.keras`."""
    built_in = small(encoder_layers=2, encoder_cell=cell)
    encoder = RecurrentEncoder(UNITS, layers=2, cell=cell)
    embedded, mask = built_in.source_embedding(SOURCE), SOURCE != 0
    encoder(embedded, mask=mask)
    layers = (built_in.encoder, *built_in.encoder_stack)
    for mine, theirs in zip(encoder.recurrent_layers, layers, strict=True):
        mine.set_weights(theirs.get_weights())
    sequence, sequence_mask, final_states = encoder(embedded, mask=mask)
    value, value_mask, _ = built_in.encode(SOURCE)
    assert_allclose(sequence, value)
    np.testing.assert_array_equal(to_numpy(sequence_mask), to_numpy(value_mask))
    first, *_ = built_in.encoder(embedded, mask=mask)
    _, *states = built_in.encoder_stack[0](first, mask=mask)
    half = len(states) // 2
    assert len(final_states) == 2 and len(final_states[1]) == half
    for mine, forward, backward in zip(final_states[1], states[:half], states[half:], strict=True):
        assert_allclose(mine, np.concatenate([to_numpy(forward), to_numpy(backward)], -1))

    keras.utils.set_random_seed(0)
    composed = LuongSeq2Seq(
        V, V, units=UNITS, embedding_dim=EMBEDDING,
        encoder=RecurrentEncoder(UNITS, layers=2, cell=cell, dropout=0.2),
    )  # fmt: skip
    expected = composed((SOURCE, TARGET_IN))
    _, restored = save_and_load(composed, tmp_path)
    assert type(restored.encoder) is RecurrentEncoder and restored.encoder.dropout == 0.2
    assert_allclose(restored((SOURCE, TARGET_IN)), expected)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"units": 7}, "units=7"),
        ({"units": 8, "layers": 0}, "layers=0"),
        ({"units": 8, "cell": "rnn"}, "cell='rnn'"),
        ({"units": 8, "dropout": 1.0}, "dropout=1.0"),
    ],
)
def test_recurrent_encoder_refuses_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RecurrentEncoder(**arguments)


def test_gru_decoder_with_a_copy_bridge_starts_from_the_encoders_states():
    """A GRU encoder and decoder of two layers each: `bridge="copy"` starts decoder layer `l`
    from encoder layer `l`'s final state; `"zeros"` from zeros; the model decodes and saves."""
    model = small(
        encoder_cell="gru", decoder_cell="gru", encoder_layers=2, decoder_layers=2,
        bidirectional=False, bridge="copy",
    )  # fmt: skip
    mask = SOURCE != 0
    first, h1 = model.encoder(model.source_embedding(SOURCE), mask=mask)
    _, h2 = model.encoder_stack[0](first, mask=mask)
    _, _, initial = model.encode(SOURCE)
    assert len(initial) == 2
    assert_allclose(initial[0], h1)
    assert_allclose(initial[1], h2)
    assert not hasattr(model, "bridge_h")
    zeros = small(decoder_cell="gru", bridge="zeros")
    _, _, initial = zeros.encode(SOURCE)
    np.testing.assert_array_equal(to_numpy(initial[0]), np.zeros((3, UNITS)))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_stacked_decoder_drops_out_between_its_layers_in_training_only(cell, tmp_path):
    """`dropout` reaches the decoder's stacked layers: each above the first drops its input
    (the output of the one below) in training. With the embedding and `h̃` dropout off, the
    training logits differ from the inference ones because of it alone (with the layers'
    dropout set to 0 they are equal), and inference is that of the same weights without
    dropout. `fit` trains it (a compiled step on JAX and TensorFlow)."""
    model = small(decoder_cell=cell, decoder_layers=3, dropout=0.5)
    cells = model.decoder.cell.cell.cells
    assert [c.dropout for c in cells] == [0.0, 0.5, 0.5]
    model.dropout_layer.rate = 0.0
    inference = to_numpy(model((SOURCE, TARGET_IN), training=False))
    training = to_numpy(model((SOURCE, TARGET_IN), training=True))
    assert np.abs(training - inference).max() > 0.1 * np.abs(inference).max()
    plain = small(decoder_cell=cell, decoder_layers=3, dropout=0.0)
    plain.set_weights(model.get_weights())
    assert_allclose(plain((SOURCE, TARGET_IN), training=False), inference, atol=1e-7, rtol=1e-5)
    for c in cells:
        c.dropout = 0.0
    assert_allclose(model((SOURCE, TARGET_IN), training=True), inference, atol=1e-7, rtol=1e-5)
    model = small(decoder_cell=cell, decoder_layers=2, dropout=0.5)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit((SOURCE, TARGET_IN), TARGET_IN, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    _, loaded = save_and_load(model, tmp_path)
    assert [c.dropout for c in loaded.decoder.cell.cell.cells] == [0.0, 0.5]


def test_a_decoder_cell_object_and_shared_embeddings_round_trip(tmp_path):
    """A Keras cell object (a GRU cell with dropout) as the decoder's, one embedding matrix for
    both sides: `.keras` round trip gives the same logits and ids."""
    cell = keras.layers.GRUCell(UNITS, dropout=0.1)
    model = small(decoder_cell=cell, share_embeddings=True)
    assert model.target_embedding is model.source_embedding
    assert model.decoder.cell.cell is cell
    embeddings = [w for w in model.weights if "embedding" in w.path]
    assert len(embeddings) == 1
    _, restored = save_and_load(model, tmp_path)
    assert isinstance(restored.decoder.cell.cell, keras.layers.GRUCell)
    assert restored.target_embedding is restored.source_embedding
    assert_allclose(restored((SOURCE, TARGET_IN)), model((SOURCE, TARGET_IN)))
    np.testing.assert_array_equal(
        to_numpy(restored.generate(SOURCE, max_length=4, sampler="beam")),
        to_numpy(model.generate(SOURCE, max_length=4, sampler="beam")),
    )


def test_pretrained_embeddings_start_the_embedding_matrices():
    source = np.random.default_rng(0).normal(size=(V, EMBEDDING)).astype("float32")
    target = np.random.default_rng(1).normal(size=(V, EMBEDDING)).astype("float32")
    model = small(source_embeddings=source, target_embeddings=target)
    np.testing.assert_array_equal(to_numpy(model.source_embedding.embeddings), source)
    np.testing.assert_array_equal(to_numpy(model.target_embedding.embeddings), target)
    assert "source_embeddings" not in model.get_config()  # the weights carry them


@keras.saving.register_keras_serializable(package="model_parts_test")
class ConvolutionalEncoder(keras.layers.Layer):
    """A user's encoder under the contract: a convolution over the embedded source, its states
    masked, the masked mean of the states as the one layer's final `[h]`."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.convolution = keras.layers.Conv1D(units, 3, padding="same", activation="tanh")

    def build(self, embedded_shape):
        self.convolution.build(embedded_shape)

    def call(self, embedded, mask=None, training=None):
        keep = ops.expand_dims(ops.cast(mask, embedded.dtype), -1)
        sequence = self.convolution(embedded) * keep
        mean = ops.sum(sequence, axis=1) / ops.maximum(ops.sum(keep, axis=1), 1.0)
        return sequence, mask, [[mean]]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_a_users_encoder_meets_the_contract(tmp_path):
    """`encoder=` a user's layer: its states are what attention reads, its final `h` goes
    through the learned bridge (`c` from `h`); fit, decode, `.keras` round trip."""
    encoder = ConvolutionalEncoder(UNITS)
    model = small(encoder=encoder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model((SOURCE, TARGET_IN))
    # Keras' "does not support masking and will therefore destroy the mask" is not shown: the
    # contract passes the mask as an argument.
    assert not [w for w in caught if "mask" in str(w.message)], [str(w.message) for w in caught]
    embedded = model.source_embedding(SOURCE)
    sequence, _, ((mean,),) = encoder(embedded, mask=SOURCE != 0)
    value, _, initial = model.encode(SOURCE)
    assert_allclose(value, sequence)
    kernel_c, bias_c = (to_numpy(w) for w in model.bridge_c.weights)
    assert_allclose(initial[1], np.tanh(to_numpy(mean) @ kernel_c + bias_c))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    target_out = np.concatenate([TARGET_IN[:, 1:], np.zeros((3, 1), "int32")], 1)
    before = model.evaluate((SOURCE, TARGET_IN), target_out, verbose=0)
    model.fit((SOURCE, TARGET_IN), target_out, epochs=5, verbose=0)
    assert model.evaluate((SOURCE, TARGET_IN), target_out, verbose=0) < before
    _, restored = save_and_load(model, tmp_path)
    assert isinstance(restored.encoder, ConvolutionalEncoder)
    assert_allclose(restored((SOURCE, TARGET_IN)), model((SOURCE, TARGET_IN)))
    np.testing.assert_array_equal(
        to_numpy(restored.generate(SOURCE, max_length=4)),
        to_numpy(model.generate(SOURCE, max_length=4)),
    )


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"encoder_cell": "rnn"}, "encoder_cell='rnn'"),
        ({"decoder_cell": "rnn"}, "decoder_cell='rnn'"),
        ({"bridge": "average"}, "bridge='average'"),
        ({"bridge": "copy", "encoder_layers": 2}, "encoder_layers=2"),
        ({"bridge": "copy", "decoder_cell": "gru"}, "decoder_cell='gru'"),
        ({"decoder_cell": keras.layers.GRUCell(4), "decoder_layers": 2}, "decoder_layers=2"),
        ({"share_embeddings": True, "target_vocabulary_size": 9}, "target_vocabulary_size=9"),
        ({"source_embeddings": np.zeros((V, 3))}, "source_embeddings"),
        ({"encoder_layers": 0}, "encoder_layers=0"),
    ],
)
def test_parts_that_do_not_fit_are_refused(arguments, message):
    arguments = {"target_vocabulary_size": V, **arguments}
    with pytest.raises(ValueError, match=message):
        LuongSeq2Seq(V, units=UNITS, embedding_dim=EMBEDDING, **arguments)


def test_copy_bridge_refuses_states_of_other_sizes():
    """`bridge="copy"` with a bidirectional GRU encoder of the model's units and a GRU
    decoder cell of other units: the sizes are named."""
    model = LuongSeq2Seq(
        V, V, units=UNITS, embedding_dim=EMBEDDING, encoder_cell="gru",
        decoder_cell=keras.layers.GRUCell(UNITS + 2), bridge="copy",
    )  # fmt: skip
    with pytest.raises(ValueError, match=rf"sizes \[{UNITS + 2}\].*sizes \[{UNITS}\]"):
        model((SOURCE, TARGET_IN))


def lstm_parameters(inputs, units):
    return 4 * units * (inputs + units + 1)


def test_the_papers_model_at_full_size_has_the_hand_counted_parameters():
    """Section 4.1: 4 layers of 1000 LSTM cells a side, embeddings of 1000, 50K words a side,
    local-p attention with the general score, input feeding."""
    model = LuongSeq2Seq.paper()
    model((SOURCE, TARGET_IN))
    units, vocabulary = 1000, 50000
    embeddings = 2 * vocabulary * units
    encoder = 4 * lstm_parameters(units, units)
    decoder = lstm_parameters(2 * units, units) + 3 * lstm_parameters(units, units)  # feeding
    attention = (
        units * units  # W_a, the general score
        + 2 * units * units  # W_c of h̃ = tanh(W_c [c; h]), no bias
        + units * units
        + units  # W_p and v_p of the predicted position
    )
    output = units * vocabulary + vocabulary
    assert model.count_params() == embeddings + encoder + decoder + attention + output
    config = model.get_config()
    assert (config["encoder_layers"], config["decoder_layers"], config["bridge"]) == (4, 4, "copy")
    assert config["reverse_source"] and not config["bidirectional"]
    assert config["alignment"] == "local-p" and config["dropout"] == 0.2
    assert config["initializer"]["config"]["maxval"] == 0.1
    _, _, initial = model.encode(SOURCE)
    assert len(initial) == 8  # h and c of each of the 4 layers, copied


def test_halving_schedule_halves_every_epoch_after_the_given_one():
    schedule = HalvingSchedule(steps_per_epoch=10, halve_after=5)
    rates = [float(to_numpy(schedule(step))) for step in (0, 49, 50, 59, 60, 75, 99)]
    assert rates == [1.0, 1.0, 0.5, 0.5, 0.25, 0.125, 1 / 32]
    restored = HalvingSchedule.from_config(schedule.get_config())
    assert float(to_numpy(restored(60))) == 0.25
    with pytest.raises(ValueError, match="steps_per_epoch=0"):
        HalvingSchedule(steps_per_epoch=0)


@export_variant
def test_a_model_from_parts_exports_its_beam_search(tmp_path):
    """A reversed source through two GRU layers, a GRU decoder: the SavedModel, run by
    TensorFlow alone, decodes as the model does."""
    model = small(encoder_cell="gru", decoder_cell="gru", encoder_layers=2, reverse_source=True)
    check_export(model, SOURCE, tmp_path, {"sampler": samplers.serialize(BeamSearchSampler(3))})
