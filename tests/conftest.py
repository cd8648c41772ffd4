import gc

import keras
import pytest


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts from float32, a fixed seed and a clean name scope, and leaves no
    compiled function behind."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()
    if keras.backend.backend() == "jax":
        # JAX keeps every function it has compiled, each executable holding some hundred
        # memory maps: a worker that runs a few hundred tests reaches the kernel's limit of
        # 65,530 maps (vm.max_map_count) and XLA's next compile segfaults.
        import jax

        jax.clear_caches()
        gc.collect()
