"""`.keras` files written by keras-luong 0.1.0 (before the layers' redesign) still load and
give the outputs they gave then. The files in tests/data/ were made by that release from
fixed seeds, with the logits it computed saved beside them."""

import os

import keras
import numpy as np
import pytest

import keras_luong
from tests.test_case import assert_allclose

DATA = os.path.join(os.path.dirname(__file__), "data")
NAMES = [
    "seq2seq_0.1.0_global_feeding",
    "seq2seq_0.1.0_predictive_feeding",  # local-p, two stacked decoder layers
    "seq2seq_0.1.0_monotonic_nofeeding",  # local-m on the fused-LSTM fast path
]


@pytest.mark.parametrize("name", NAMES)
def test_a_file_from_0_1_0_loads_with_its_outputs(name):
    expected = np.load(os.path.join(DATA, "seq2seq_0.1.0_outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, name + ".keras"))
    logits = model((expected["source"], expected["target_in"]))
    assert_allclose(logits, expected[name], atol=2e-5)


PRE_0_2 = [
    "hard_monotonic_feeding",  # monotonic attention's alignment in the decoder's states
    "hard_monotonic_nofeeding",  # the same on the fused-LSTM path
    "global_nofeeding",  # the fused path, whose cell the decoder now takes as given
]


@pytest.mark.parametrize("name", PRE_0_2)
def test_a_file_from_before_the_state_protocol_loads_with_its_outputs(name):
    """Files written just before attention kept its own state (the previous alignment rode in
    the memory then) load and give the same logits and generated ids."""
    expected = np.load(os.path.join(DATA, "seq2seq_pre_0.2_outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, f"seq2seq_pre_0.2_{name}.keras"))
    logits = model((expected["source"], expected["target_in"]))
    assert_allclose(logits, expected[name], atol=2e-5)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5), expected[name + "_generated"]
    )


@pytest.mark.parametrize("name", ["default", "unidirectional_bahdanau"])
def test_a_file_from_0_2_0_loads_with_its_outputs(name):
    """Files written by keras-luong 0.2.0 (the default model; a forward encoder with
    Bahdanau's decoder and two stacked layers) load into the model built from parts with
    their logits, greedy and beam ids."""
    expected = np.load(os.path.join(DATA, "seq2seq_0.2.0_outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, f"seq2seq_0.2.0_{name}.keras"))
    inputs = (expected["source"], expected["target_in"])
    assert_allclose(model(inputs), expected[name], atol=2e-5)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5), expected[name + "_generated"]
    )
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5, sampler="beam"), expected[name + "_beam"]
    )


@pytest.mark.parametrize("name", ["bidirectional_2_reversed", "gru_3_copy"])
def test_a_file_with_stacked_encoder_layers_from_0_3_0_loads_with_its_outputs(name):
    """Files whose built-in encoder stacks recurrent layers (two bidirectional LSTM layers
    over the reversed source; three GRU layers copied into a three-layer decoder), written
    before `LuongSeq2Seq` ran its encoder as a `RecurrentEncoder`, load with their logits,
    greedy and beam ids: the encoder's layers keep their place in the file."""
    expected = np.load(os.path.join(DATA, "seq2seq_0.3.0_outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, f"seq2seq_0.3.0_{name}.keras"))
    assert isinstance(model.source_encoder, keras_luong.RecurrentEncoder)
    assert len(model.source_encoder.recurrent_layers) == (2 if "2" in name else 3)
    inputs = (expected["source"], expected["target_in"])
    assert_allclose(model(inputs), expected[name], atol=2e-5)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5), expected[name + "_generated"]
    )
    beam = keras_luong.BeamSearchSampler(3, length_penalty=0.0)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5, sampler=beam), expected[name + "_beam"]
    )


# A file's old spelling -> the model's attribute and the spelling it loads with.
RENAMED_IN_FILES = {
    "seq2seq_0.1.0_monotonic_nofeeding": ("alignment", "local-m"),
    "seq2seq_0.1.0_predictive_feeding": ("alignment", "local-p"),
    "seq2seq_0.2.0_unidirectional_bahdanau": ("score_mode", "additive"),
    "seq2seq_0.3.0_location": ("alignment", "location-sensitive"),
}


@pytest.mark.parametrize("name", sorted(RENAMED_IN_FILES))
def test_a_file_with_an_old_attention_name_loads_with_the_new_one(name):
    """Files that spell an alignment or score mode as keras-luong 0.3 did (`"monotonic"`,
    `"predictive"`, `"location"`, `score_mode="bahdanau"`) load with the new spelling in
    the model and its config, and save with it."""
    attribute, spelling = RENAMED_IN_FILES[name]
    model = keras.saving.load_model(os.path.join(DATA, name + ".keras"))
    assert getattr(model, attribute) == spelling
    assert model.get_config()[attribute] == spelling
    assert type(model).from_config(model.get_config()).get_config()[attribute] == spelling


def test_a_location_sensitive_file_from_0_3_0_loads_with_its_outputs():
    """`alignment="location"` of keras-luong 0.3 (now `"location-sensitive"`) loads with
    its attention's weights: its logits, greedy and beam ids are the recorded ones."""
    expected = np.load(os.path.join(DATA, "seq2seq_0.3.0_outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, "seq2seq_0.3.0_location.keras"))
    assert isinstance(model.decoder.cell.attention, keras_luong.LocationSensitiveAttention)
    inputs = (expected["source"], expected["target_in"])
    assert_allclose(model(inputs), expected["location"], atol=2e-5)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5), expected["location_generated"]
    )
    beam = keras_luong.BeamSearchSampler(3, length_penalty=0.0)
    np.testing.assert_array_equal(
        model.generate(expected["source"], 5, sampler=beam), expected["location_beam"]
    )
