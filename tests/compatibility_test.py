"""`.keras` files written by keras-luong 0.1.0 (before the layers' redesign) still load and
give the outputs they gave then. The files in tests/data/ were made by that release from
fixed seeds, with the logits it computed saved beside them."""

import os

import keras
import numpy as np
import pytest

import keras_luong  # noqa: F401  (registers the classes)
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
