import gc
import os
import pathlib

import keras
import pytest

# Tests between two garbage collections (and clearings of JAX's compiled functions).
CLEAR_EVERY = 25
_tests_since_clear = 0


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts from float32, a fixed seed and a clean name scope, and leaves
    Keras' session cleared."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
    # Python's garbage collection, which `clear_session` runs by default, takes 0.5 s with a
    # backend's objects in memory: after every test it was about a tenth of the suite's time.
    keras.backend.clear_session(free_memory=False)
    global _tests_since_clear
    _tests_since_clear += 1
    if _tests_since_clear < CLEAR_EVERY:
        return
    _tests_since_clear = 0
    if keras.backend.backend() == "jax":
        # JAX keeps every function it has compiled, each executable holding some hundred
        # memory maps: a worker that runs a few hundred tests reaches the kernel's limit of
        # 65,530 maps (vm.max_map_count) and XLA's next compile segfaults. Clearing after
        # every test recompiled what the next test shares (JAX's eager operations): global
        # attention and decoder tests took 476 s so, 331 s clearing every 25 tests.
        import jax

        jax.clear_caches()
    gc.collect()


SERIAL = pathlib.Path(__file__).parent / "serial"


def pytest_addoption(parser):
    parser.addoption(
        "--tfa-python",
        default=os.environ.get("TFA_PYTHON"),
        help="the interpreter of a tensorflow-addons 0.23 environment: runs the tests marked "
        "tfa_venv (tests/tfa_parity_test.py; `make tfa-parity`)",
    )


def pytest_collection_modifyitems(config, items):
    """The tests in tests/serial run alone (`make test` runs that folder after the xdist
    workers): they are marked `serial`, and a `serial` mark elsewhere is refused, since the
    serial run collects that folder alone. The tests marked `tfa_venv` run when
    `--tfa-python` names tensorflow-addons' environment."""
    tfa_python = config.getoption("--tfa-python")
    skip_tfa = pytest.mark.skip(reason="compares with tensorflow-addons: opt in with --tfa-python")
    for item in items:
        if item.get_closest_marker("tfa_venv") and not tfa_python:
            item.add_marker(skip_tfa)
        if SERIAL in item.path.parents:
            item.add_marker(pytest.mark.serial)
        elif item.get_closest_marker("serial"):
            raise pytest.UsageError(f"{item.nodeid} is marked serial: move it to {SERIAL}")
