"""Test helpers for keras_luong, on public Keras APIs only (never `keras.src`)."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

BACKENDS = ("tensorflow", "jax", "torch")
BACKEND = keras.backend.backend()


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def assert_allclose(actual, expected, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=atol, rtol=rtol)


def random(shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def length_mask(lengths, max_length):
    """`(B, max_length)` boolean mask with the first `lengths[i]` positions of row i valid."""
    return np.arange(max_length)[None, :] < np.asarray(lengths)[:, None]


def weights_by_name(layer):
    """The layer's variables as numpy arrays, keyed by their short names."""
    return {v.path.split("/")[-1]: to_numpy(v) for v in layer.weights}


def gradients(layer, loss_fn, inputs, **call_kwargs):
    """Gradients of `loss_fn(layer(*inputs, **call_kwargs))` with respect to the layer's
    trainable variables and to `inputs`, as numpy arrays: `(variable_grads, input_grads)`.

    The one place tests need a backend's own autodiff; the layers themselves never do."""
    inputs = [np.asarray(x) for x in inputs]
    if not layer.built:
        layer(*inputs, **call_kwargs)
    variables = layer.trainable_variables
    if BACKEND == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(x) for x in inputs]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            loss = loss_fn(layer(*tensors, **call_kwargs))
        grads = tape.gradient(loss, [v.value for v in variables] + tensors)
    elif BACKEND == "jax":
        import jax

        non_trainable = [v.value for v in layer.non_trainable_variables]

        def f(trainable, tensors):
            out, _ = layer.stateless_call(trainable, non_trainable, *tensors, **call_kwargs)
            return loss_fn(out)

        var_grads, input_grads = jax.grad(f, argnums=(0, 1))(
            [v.value for v in variables], [jax.numpy.asarray(x) for x in inputs]
        )
        grads = list(var_grads) + list(input_grads)
    else:
        import torch

        tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
        for v in variables:
            v.value.grad = None
        loss_fn(layer(*tensors, **call_kwargs)).backward()
        grads = [v.value.grad for v in variables] + [t.grad for t in tensors]
    grads = [np.zeros(1) if g is None else to_numpy(g) for g in grads]
    return grads[: len(variables)], grads[len(variables) :]


def config_round_trip(layer):
    """Rebuilds a layer from its JSON-serialized config (no `custom_objects`)."""
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    return keras.saving.deserialize_keras_object(config)


def save_and_load(model, tmp_path, name="model.keras"):
    path = os.path.join(str(tmp_path), name)
    model.save(path)
    return path, keras.saving.load_model(path)


def assert_keras_file_round_trip(model, inputs, tmp_path):
    """`.keras` save and load (no `custom_objects`) gives the same outputs."""
    _, loaded = save_and_load(model, tmp_path)
    assert_allclose(loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0))


def assert_loads_on_the_other_backends(model, inputs, tmp_path):
    """A `.keras` file saved here gives the same outputs loaded on each other backend."""
    path, _ = save_and_load(model, tmp_path)
    expected = model.predict(inputs, verbose=0)
    for backend in BACKENDS:
        if backend != BACKEND:
            assert_allclose(outputs_on_backend(backend, path, inputs, tmp_path), expected)


def outputs_on_backend(backend, model_path, inputs, tmp_path):
    """Loads a `.keras` file on `backend` in a fresh process and returns its outputs on `inputs`
    (a list of arrays), as a numpy array."""
    inputs_path = os.path.join(str(tmp_path), f"inputs_{backend}.npz")
    outputs_path = os.path.join(str(tmp_path), f"outputs_{backend}.npy")
    np.savez(inputs_path, *inputs)
    script = textwrap.dedent(
        f"""
        import keras, numpy as np
        import keras_luong  # noqa: F401  (registration happens on import)
        data = np.load({inputs_path!r})
        inputs = [data[f"arr_{{i}}"] for i in range(len(data.files))]
        model = keras.saving.load_model({model_path!r})
        out = model(inputs if len(inputs) > 1 else inputs[0])
        np.save({outputs_path!r}, keras.ops.convert_to_numpy(out))
        """
    )
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        pytest.fail(f"loading on {backend} failed:\n{result.stderr[-4000:]}")
    return np.load(outputs_path)


def fit_lowers_loss(model, x, y, steps=3, learning_rate=0.1, jit_compile=None):
    """Compiles `model` (jit-compiled on JAX and TensorFlow; torch runs eagerly, its compile
    takes minutes), fits `steps` steps on one batch and returns (loss before, loss after)."""
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=BACKEND != "torch" if jit_compile is None else jit_compile,
    )
    before = model.evaluate(x, y, batch_size=len(y), verbose=0)
    model.fit(x, y, batch_size=len(y), epochs=steps, verbose=0, shuffle=False)
    after = model.evaluate(x, y, batch_size=len(y), verbose=0)
    return before, after
