import keras
import pytest


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts from float32, a fixed seed and a clean name scope."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()
