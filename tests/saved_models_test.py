"""Several saved models of different variants, loaded one after another in one process (an
ensemble, a server), each predict and decode as they did before saving: with `jit_compile` as
saved and off. On torch a compiled step (`torch.compile`) traces the layers' general code,
not their eager fast paths, so no frame of one model is compiled with guards that a later
model's states fail."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from tests.test_case import BACKEND, to_numpy

# In this order on purpose: a model whose decoder carries three states (hard monotonic
# attention keeps its alignment) before one that carries two (local-m with the dot score,
# without input feeding: Keras' fused LSTM, then one batched attention).
VARIANTS = {
    "hard_monotonic": dict(alignment="hard-monotonic"),
    "local_m": dict(alignment="local-m", score_mode="dot", input_feeding=False),
}
SOURCE = np.array([[5, 6, 7, 8, 9, 3, 4], [3, 4, 5, 6, 0, 0, 0], [9, 8, 7, 6, 5, 4, 0]])
TARGET_IN = np.array([[1, 5, 6, 7, 8, 9], [1, 3, 4, 5, 0, 0], [1, 9, 8, 7, 6, 5]])

LOADER = """
import sys
import keras, numpy as np
import keras_luong  # noqa: F401  (registration happens on import)

folder, names = sys.argv[1], sys.argv[2:]
data = np.load(f"{folder}/inputs.npz")
for name in names:
    model = keras.saving.load_model(f"{folder}/{name}.keras")
    np.savez(
        f"{folder}/{name}_loaded.npz",
        logits=model.predict((data["source"], data["target_in"]), verbose=0),
        greedy=keras.ops.convert_to_numpy(model.generate(data["source"], 6)),
        beam=keras.ops.convert_to_numpy(model.generate(data["source"], 6, sampler="beam")),
    )
"""


@pytest.mark.parametrize("jit_compile", [True, False], ids=["jit_compile", "eager"])
def test_models_loaded_one_after_another_in_one_process(jit_compile, tmp_path):
    expected = {}
    for seed, (name, arguments) in enumerate(VARIANTS.items()):
        keras.utils.set_random_seed(seed)
        model = LuongSeq2Seq(20, 20, units=8, embedding_dim=6, **arguments)
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit_compile,
        )
        model((SOURCE, TARGET_IN))
        model.save(os.path.join(tmp_path, f"{name}.keras"))
        expected[name] = {
            "logits": to_numpy(model((SOURCE, TARGET_IN))),
            "greedy": to_numpy(model.generate(SOURCE, 6)),
            "beam": to_numpy(model.generate(SOURCE, 6, sampler="beam")),
        }
    np.savez(os.path.join(tmp_path, "inputs.npz"), source=SOURCE, target_in=TARGET_IN)
    env = dict(os.environ, KERAS_BACKEND=BACKEND, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LOADER), str(tmp_path), *VARIANTS],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    for name, outputs in expected.items():
        loaded = np.load(os.path.join(tmp_path, f"{name}_loaded.npz"))
        np.testing.assert_allclose(loaded["logits"], outputs["logits"], atol=2e-5, err_msg=name)
        np.testing.assert_array_equal(loaded["greedy"], outputs["greedy"], err_msg=name)
        np.testing.assert_array_equal(loaded["beam"], outputs["beam"], err_msg=name)
