"""The generation contract (`GenerationMixin`'s docstring): a model a user writes, in the
tensorflow-addons style (its own embeddings, a GRU encoder, an attention decoder as
`AttentionWrapper` was, its own projection), trains with `fit` and decodes with every sampler,
its ids equal to a step-by-step loop written here over its own `next_token_logits`."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_luong import BahdanauAttention, BeamSearchSampler, LuongDecoder, SequenceLoss
from keras_luong.generation.mixin import GenerationMixin
from tests.test_case import BACKEND, save_and_load

V, UNITS = 12, 16


@keras.saving.register_keras_serializable(package="generation_contract_test")
class TranslatorOfMine(GenerationMixin, keras.Model):
    """A GRU encoder and a GRU decoder with Bahdanau's additive attention."""

    def __init__(self, vocabulary_size=V, units=UNITS, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.units = units
        self.source_vocabulary_size = self.target_vocabulary_size = vocabulary_size
        self.start_token, self.end_token = 1, 2
        self.source_embedding = keras.layers.Embedding(vocabulary_size, 8, mask_zero=True)
        self.target_embedding = keras.layers.Embedding(vocabulary_size, 8, mask_zero=True)
        self.encoder = keras.layers.GRU(units, return_sequences=True, return_state=True)
        self.decoder = LuongDecoder(
            keras.layers.GRUCell(units), BahdanauAttention(units, attentional_units=units)
        )
        self.projection = keras.layers.Dense(vocabulary_size)

    def encode(self, source, training=None):
        mask = ops.not_equal(source, 0)
        value, state = self.encoder(self.source_embedding(source), mask=mask, training=training)
        return value, mask, [state]

    def call(self, inputs, training=None, return_attention_scores=False):
        source, target_in = inputs
        value, value_mask, states = self.encode(source, training)
        outputs = self.decoder(
            self.target_embedding(target_in),
            value,
            initial_state=states,
            inputs_mask=ops.not_equal(target_in, 0),
            value_mask=value_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            return self.projection(outputs[0]), outputs[1]
        return self.projection(outputs)

    def next_token_logits(
        self, token, states, memory, step, return_attention_scores=False, logits_bias=None
    ):
        hidden, states, *weights = self.decoder.step(
            self.target_embedding(token),
            states,
            memory,
            step=step,
            return_attention_scores=return_attention_scores,
        )
        logits = ops.cast(self.projection(hidden), "float32")
        if logits_bias is not None:
            logits = logits + logits_bias
        return (logits, hidden, states, *weights)

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "units": self.units,
        }


def copy_task(rows=24, length=5, seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(3, V, (rows, length)).astype("int32")
    source[rows // 2 :, length - 2 :] = 0  # padding
    target = [[1, *row[row != 0][::-1], 2] for row in source]  # the source reversed
    target = keras.utils.pad_sequences(target, length + 2, padding="post").astype("int32")
    return source, target


def greedy_by_hand(model, source, max_length):
    """Greedy search as a loop over the model's own contract, in numpy."""
    value, value_mask, states = model.encode(source)
    memory = model.decoder.prepare(value, value_mask)
    states = model.decoder.get_initial_state(len(source), states, memory)
    token = np.full(len(source), model.start_token, "int32")
    ended = np.zeros(len(source), bool)
    ids = np.zeros((len(source), max_length), "int32")
    for t in range(max_length):
        logits, _, states = model.next_token_logits(token, states, memory, t)
        logits = np.array(ops.convert_to_numpy(logits))
        logits[:, [0, model.start_token]] = -np.inf  # never generated
        token = logits.argmax(-1).astype("int32")
        ids[:, t] = np.where(ended, 0, token)
        ended |= token == model.end_token
    return ids


@pytest.fixture(scope="module")
def trained():
    keras.utils.set_random_seed(0)
    source, target = copy_task()
    model = TranslatorOfMine()
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=SequenceLoss(),
        jit_compile=BACKEND != "torch",
    )
    history = model.fit((source, target[:, :-1]), target[:, 1:], epochs=40, verbose=0)
    return model, source, history.history["loss"]


def test_a_users_model_trains_and_decodes_as_its_own_loop_does(trained):
    model, source, losses = trained
    assert losses[-1] < 0.75 * losses[0]
    greedy = model.generate(source, 8)
    np.testing.assert_array_equal(greedy, greedy_by_hand(model, source, 8))
    # One beam is greedy search; more beams never score below it.
    np.testing.assert_array_equal(model.generate(source, 8, sampler=BeamSearchSampler(1)), greedy)
    beams, scores = model.generate(source, 8, sampler=BeamSearchSampler(3, return_all_beams=True))
    assert beams.shape == (len(source), 3, 8)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first


def test_every_sampler_and_the_alignments_work_on_a_users_model(trained, tmp_path):
    model, source, _ = trained
    coverage = BeamSearchSampler(3, coverage_penalty=0.2, no_repeat_ngram_size=2)
    assert coverage.needs == ("attention",)
    ids = model.generate(source, 8, sampler=coverage)
    assert ids.shape == (len(source), 8)
    for row in ids:  # no bigram twice in a row
        row = [int(i) for i in row if i]
        bigrams = list(zip(row, row[1:], strict=False))
        assert len(bigrams) == len(set(bigrams))
    greedy, weights = model.generate(source, 8, return_attention_scores=True)
    weights = np.asarray(weights)
    valid = source != 0
    generated = greedy != 0
    np.testing.assert_allclose(weights.sum(-1)[generated], 1.0, atol=1e-5)
    assert np.all(weights[~valid[:, None, :].repeat(8, 1)] == 0)  # padding gets nothing
    assert len(model.generators) > 0
    _, restored = save_and_load(model, tmp_path)
    np.testing.assert_array_equal(restored.generate(source, 8), greedy)
