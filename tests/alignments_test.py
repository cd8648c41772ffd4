"""The registry of alignment names, and the attention protocol checked by what a layer does:
a mechanism defined here, a plain Keras layer (not a keras-luong base class), joins from this
file and `LuongSeq2Seq(alignment=...)` trains, decodes and saves with it."""

import keras
import numpy as np
import pytest
from keras import ops

import keras_luong
from keras_luong import BeamSearchSampler, LuongDecoder, LuongSeq2Seq, register_alignment
from keras_luong.attention.alignments import make_attention, registered_alignments
from tests.decoder_test import decode_step_by_step
from tests.test_case import fit_lowers_loss, save_and_load


@keras.saving.register_keras_serializable(package="alignments_test")
class RecencyAttention(keras.layers.Layer):
    """Scaled dot-product attention plus a learned bonus `w` for the position attended most
    at the previous step (its state: the previous alignment), with Luong's `h̃`. Written
    against the protocol only: `prepare`, `state_size`, `get_initial_state`, and a call
    taking a one-step `(B, d)` or all-steps `(B, T, d)` query."""

    state_size = (None,)

    def __init__(self, attentional_units=None, dropout=0.0, bonus=1.0, **kwargs):
        super().__init__(**kwargs)
        self.attentional_units = attentional_units
        self.dropout = dropout
        self.bonus = bonus

    def build(self, query_shape, value_shape):
        self.recency = self.add_weight(
            name="recency", shape=(), initializer=keras.initializers.Constant(self.bonus)
        )
        self.kernel = self.add_weight(
            name="kernel", shape=(value_shape[-1] + query_shape[-1], self.attentional_units)
        )

    def prepare(self, value, value_mask=None):
        value = ops.convert_to_tensor(value, self.compute_dtype)
        if value_mask is None:
            value_mask = ops.ones(ops.shape(value)[:2], "bool")
        return {"value": value, "mask": ops.cast(value_mask, "bool")}

    def get_initial_state(self, batch_size, memory):
        return [ops.zeros((batch_size, ops.shape(memory["value"])[1]), "float32")]

    def one_step(self, query, memory, previous):
        scores = ops.einsum("bd,bsd->bs", query, memory["value"]) / np.sqrt(query.shape[-1])
        last = ops.logical_and(
            ops.equal(ops.arange(ops.shape(previous)[1]), ops.argmax(previous, -1)[:, None]),
            ops.greater(ops.max(previous, -1, keepdims=True), 0),
        )
        scores = scores + self.recency * ops.cast(last, scores.dtype)
        weights = ops.softmax(ops.where(memory["mask"], scores, -1e9), axis=-1)
        context = ops.einsum("bs,bsd->bd", weights, memory["value"])
        output = ops.tanh(ops.matmul(ops.concatenate([context, query], -1), self.kernel))
        return output, weights

    def call(
        self,
        query,
        value=None,
        value_mask=None,
        query_mask=None,
        memory=None,
        initial_state=None,
        step=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        memory = self.prepare(value, value_mask) if memory is None else memory
        state = initial_state or self.get_initial_state(ops.shape(query)[0], memory)
        (previous,) = state
        if len(query.shape) == 2:
            output, weights = self.one_step(query, memory, previous)
            previous = weights
        else:
            outputs, all_weights = [], []
            for t in range(query.shape[1]):
                output, weights = self.one_step(query[:, t], memory, previous)
                outputs.append(output)
                all_weights.append(weights)
                keep = True if query_mask is None else ops.cast(query_mask[:, t, None], "bool")
                previous = ops.where(keep, weights, previous)
            output, weights = ops.stack(outputs, 1), ops.stack(all_weights, 1)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_state:
            result += ([previous],)
        return result[0] if len(result) == 1 else result

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "attentional_units": self.attentional_units,
                "dropout": self.dropout,
                "bonus": self.bonus,
            }
        )
        return config


register_alignment("recency-test", RecencyAttention)


def copy_task(seed=0, rows=16, length=5):
    rng = np.random.default_rng(seed)
    source = rng.integers(3, 9, (rows, length)).astype("int32")
    target = np.concatenate([np.ones((rows, 1)), source, np.full((rows, 1), 2)], 1)
    return source, target.astype("int32")


def test_a_mechanism_registered_in_this_file_trains_decodes_and_round_trips(tmp_path):
    keras.utils.set_random_seed(0)
    source, target = copy_task()
    model = LuongSeq2Seq(
        9,
        9,
        units=8,
        embedding_dim=4,
        alignment="recency-test",
        attention_arguments={"bonus": 0.5},
    )
    attention = model.decoder.cell.attention
    assert isinstance(attention, RecencyAttention)
    # The model's arguments reached the factory; a class's **kwargs take only the layer's.
    assert (attention.bonus, attention.attentional_units, attention.name) == (0.5, 8, "attention")
    before, after = fit_lowers_loss(model, (source, target[:, :-1]), target[:, 1:], steps=3)
    assert after < before
    greedy, weights = model.generate(source[:4], 7, return_attention_scores=True)
    weights = np.asarray(weights)
    generated = greedy != 0
    # The state carried step to step: every generated step's weights are a distribution.
    np.testing.assert_allclose(weights.sum(-1)[generated], 1.0, atol=1e-5)
    np.testing.assert_array_equal(
        model.generate(source[:4], 7, sampler=BeamSearchSampler(1)), greedy
    )
    beam = model.generate(source[:4], 7, sampler=BeamSearchSampler(3))
    _, restored = save_and_load(model, tmp_path)
    assert isinstance(restored.decoder.cell.attention, RecencyAttention)
    np.testing.assert_allclose(
        restored.predict((source, target[:, :-1]), verbose=0),
        model.predict((source, target[:, :-1]), verbose=0),
        atol=1e-6,
    )
    np.testing.assert_array_equal(restored.generate(source[:4], 7), greedy)
    np.testing.assert_array_equal(
        restored.generate(source[:4], 7, sampler=BeamSearchSampler(3)), beam
    )


def test_a_duck_typed_attention_steps_as_it_runs_all_steps():
    rng = np.random.default_rng(1)
    targets = rng.normal(size=(2, 4, 3)).astype("float32")
    value = rng.normal(size=(2, 5, 6)).astype("float32")
    mask = np.arange(5) < np.array([[5], [2]])
    decoder = LuongDecoder(keras.layers.LSTMCell(6), RecencyAttention(attentional_units=6))
    outputs, weights = decoder(targets, value, value_mask=mask, return_attention_scores=True)
    step_outputs, step_weights, _ = decode_step_by_step(
        decoder, targets, value, np.ones((2, 4), bool), mask
    )
    np.testing.assert_allclose(step_outputs, ops.convert_to_numpy(outputs), atol=1e-5)
    np.testing.assert_allclose(step_weights, ops.convert_to_numpy(weights), atol=1e-6)
    assert np.all(ops.convert_to_numpy(weights)[1, :, 2:] < 1e-6)  # padding gets nothing


def test_a_layer_without_the_protocol_is_refused_by_what_it_lacks():
    with pytest.raises(ValueError, match="it has no prepare, state_size, get_initial_state"):
        LuongDecoder(keras.layers.LSTMCell(4), keras.layers.Dense(4))
    with pytest.raises(ValueError, match="Expected an attention layer"):
        LuongDecoder(keras.layers.LSTMCell(4), "global")


def test_the_built_in_names_and_their_errors():
    built_in = {"global", "local-m", "local-p", "hard-monotonic", "location-sensitive"}
    assert built_in | {"recency-test"} <= set(registered_alignments())
    with pytest.raises(ValueError, match="alignment='nowhere'"):
        LuongSeq2Seq(9, 9, alignment="nowhere")
    with pytest.raises(ValueError, match="no score_mode='additive' variant"):
        make_attention("local-m", units=4, score_mode="additive")
    with pytest.raises(ValueError, match="attention_arguments=3"):
        LuongSeq2Seq(9, 9, attention_arguments=3)
    with pytest.raises(ValueError, match="Expected a factory"):
        register_alignment("bad", 3)
    with pytest.raises(ValueError, match="name=''"):
        register_alignment("", RecencyAttention)
    # The model's window and score mode reach a factory that names them.
    local = make_attention("local-p", units=4, score_mode="dot", window=3, name="a")
    assert (local.alignment, local.window, local.score_mode) == ("local-p", 3, "dot")


def test_an_attention_layer_given_as_the_alignment_round_trips(tmp_path):
    keras.utils.set_random_seed(1)
    source, target = copy_task(seed=1)
    for attention in (
        RecencyAttention(attentional_units=8, bonus=0.25, name="mine"),
        keras_luong.LocationSensitiveAttention(4, filters=2, kernel_size=3, attentional_units=8),
    ):
        model = LuongSeq2Seq(9, 9, units=8, embedding_dim=4, alignment=attention)
        assert model.decoder.cell.attention is attention and model.alignment is None
        before, after = fit_lowers_loss(model, (source, target[:, :-1]), target[:, 1:], steps=2)
        assert after < before
        _, restored = save_and_load(model, tmp_path)
        restored_attention = restored.decoder.cell.attention
        assert type(restored_attention) is type(attention)
        assert restored_attention.get_config() == attention.get_config()
        np.testing.assert_allclose(
            restored.predict((source, target[:, :-1]), verbose=0),
            model.predict((source, target[:, :-1]), verbose=0),
            atol=1e-6,
        )
        np.testing.assert_array_equal(
            restored.generate(source[:4], 7, sampler=BeamSearchSampler(2)),
            model.generate(source[:4], 7, sampler=BeamSearchSampler(2)),
        )
    with pytest.raises(ValueError, match="Expected an attention layer"):
        LuongSeq2Seq(9, 9, alignment=keras.layers.Dense(3))


@pytest.mark.parametrize(
    "make, old, new",
    [
        (lambda: LuongSeq2Seq(9, 9, alignment="monotonic"), "monotonic", "local-m"),
        (lambda: LuongSeq2Seq(9, 9, alignment="predictive"), "predictive", "local-p"),
        (lambda: LuongSeq2Seq(9, 9, alignment="location"), "location", "location-sensitive"),
        (lambda: LuongSeq2Seq(9, 9, score_mode="bahdanau"), "bahdanau", "additive"),
        (lambda: keras_luong.LocalAttention("monotonic"), "monotonic", "local-m"),
        (lambda: keras_luong.BahdanauAttention(4, score_mode="bahdanau"), "bahdanau", "additive"),
        (lambda: keras_luong.GlobalAttention(score_mode="bahdanau"), "bahdanau", "additive"),
    ],
)
def test_an_old_spelling_is_refused_with_the_new_one(make, old, new):
    """The names that meant two things up to 0.3 are refused by the constructors, the error
    naming the spelling to use; "location" stays a score mode, "bahdanau" a timing."""
    with pytest.raises(ValueError, match=f"'{old}' is spelled '{new}' since keras-luong 0.4.0"):
        make()
    model = LuongSeq2Seq(9, 9, units=4, score_mode="location", max_source_length=5,
                         attention_timing="bahdanau")  # fmt: skip
    assert (model.score_mode, model.attention_timing) == ("location", "bahdanau")


def test_a_config_with_an_old_spelling_loads_with_the_new_one():
    """A layer's or model's saved config with keras-luong 0.3's spelling builds the layer it
    meant (the `.keras` files of each are in compatibility_test.py)."""
    local = keras_luong.LocalAttention("local-m", window=2)
    config = {**local.get_config(), "alignment": "monotonic"}
    assert keras_luong.LocalAttention.from_config(config).alignment == "local-m"
    additive = keras_luong.BahdanauAttention(4)
    config = {**additive.get_config(), "score_mode": "bahdanau"}
    assert keras_luong.BahdanauAttention.from_config(config).score_mode == "additive"
    model = LuongSeq2Seq(9, 9, units=4, alignment="location-sensitive")
    config = {**model.get_config(), "alignment": "location"}
    loaded = LuongSeq2Seq.from_config(config)
    assert isinstance(loaded.decoder.cell.attention, keras_luong.LocationSensitiveAttention)
