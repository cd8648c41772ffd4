"""keras-luong against tensorflow-addons itself (TensorFlow 2.15, tensorflow-addons 0.23, Keras
2: a virtual environment of its own, not a dependency of this project). Each module here has a
`tensorflow_addons_side(path)` that runs in that environment (`python -m
tests.tfa_parity.<module> PATH` saves its arrays to PATH) and what this side needs to compute
the same; `tests/tfa_parity_test.py` compares them, opted into with `--tfa-python` (`make
tfa-parity` makes the environment and runs them on every backend)."""

import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tensorflow_addons_arrays(module, tfa_python):
    """The arrays `tests.tfa_parity.<module>.tensorflow_addons_side` saves, run by
    `tfa_python` (the tensorflow-addons environment's interpreter) from the repository's
    root."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "tfa.npz")
        done = subprocess.run(
            [tfa_python, "-m", f"tests.tfa_parity.{module}", path],
            cwd=ROOT,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"the tensorflow-addons side failed:\n{done.stderr[-3000:]}")
        return dict(np.load(path))
