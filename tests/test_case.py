"""Test helpers for keras_luong, on public Keras APIs only (never `keras.src`).

`TestCase` bundles the checks every layer gets (in keras-hub's manner): `run_layer_test`
(symbolic and eager call agree, weight counts, one fit step moves the weights and lowers the
loss), `run_precision_test` (every sublayer computes in the policy's dtype),
`run_serialization_test` (JSON config round trip) and `run_saving_test` (`.keras` round trip,
and the file loaded on another backend). The functions below it are the pieces.
"""

import collections
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


def in_jax_run_only(what):
    """Marks the tests of `what`, whose own code is the same on every backend, to run in JAX's
    run of the suite alone: the model code they call is tested in all three."""
    return pytest.mark.skipif(BACKEND != "jax", reason=f"{what}: checked in JAX's run of the suite")


def outside_tensorflow_run(what):
    """Marks the tests of `what`, Keras code that is the same on every backend, to run in JAX's
    and torch's runs of the suite: TensorFlow's traces every `fit` and decoding function into
    a graph first, and the library code they call is tested in all three."""
    return pytest.mark.skipif(
        BACKEND == "tensorflow", reason=f"{what}: checked in JAX's and torch's runs of the suite"
    )


# The command lines and the demo script (`python -m keras_luong.translate`, `.evaluate`,
# `.train`, `.demo`): arguments, files and printing. JAX's run is the fastest at them
# (TensorFlow's took 144 s of worker time over them on a 2-core machine, JAX's 68).
command_line = in_jax_run_only("the command lines and the demo")

# A SavedModel export that differs from the plain greedy one only in the decoding traced into
# the file (beam search, blocks over a large vocabulary, n-gram bans, Bahdanau's timing, a
# model of parts, n-best lists: the same `keras.ops` code on every backend) is checked on
# TensorFlow, which writes SavedModels itself. From JAX (jax2tf) and from torch (the file
# written by TensorFlow from a `.keras` file, in a process of its own) the greedy exports and
# the ensemble's beam search check each route, at 20-40 s an export on a 2-core machine.
export_variant = pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="a decoding variant of the SavedModel is checked on TensorFlow, which writes it",
)


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def assert_allclose(actual, expected, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=atol, rtol=rtol)


def random(shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype("float32")


def length_mask(lengths, max_length):
    """`(B, max_length)` boolean mask with the first `lengths[i]` positions of row i valid."""
    return np.arange(max_length)[None, :] < np.asarray(lengths)[:, None]


def autograd_nodes(*tensors):
    """The nodes of eager torch tensors' autograd graph, counted by name (a
    `collections.Counter`), each node once however many paths reach it."""
    counts, stack, seen = collections.Counter(), [t.grad_fn for t in tensors], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        counts[type(node).__name__] += 1
        stack.extend(parent for parent, _ in node.next_functions)
    return counts


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


# The backend a `.keras` file saved here is loaded on, in a fresh process: the next one in
# BACKENDS, round the circle. Over the three backends' runs of the suite every backend saves
# a file that another loads and loads one that another saved, at half the processes (each
# one imports a backend) of loading every file on both others.
OTHER_BACKEND = BACKENDS[(BACKENDS.index(BACKEND) + 1) % len(BACKENDS)]


def assert_loads_on_another_backend(model, inputs, tmp_path):
    """A `.keras` file saved here gives the same outputs loaded on `OTHER_BACKEND`."""
    path, _ = save_and_load(model, tmp_path)
    expected = model.predict(inputs, verbose=0)
    assert_allclose(outputs_on_backend(OTHER_BACKEND, path, inputs, tmp_path), expected)


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


class ListBatches(keras.utils.PyDataset):
    """A plain `PyDataset` of given `((source, target_in), target_out)` batches."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        return self.batches[index]


def fit_lowers_loss(model, x, y, steps=3, learning_rate=0.1, jit_compile=None):
    """Compiles `model` (jit-compiled on JAX and TensorFlow; torch runs eagerly, its compile
    takes minutes), fits `steps` steps on one batch and returns (loss before, loss after).

    Each epoch of `fit` is one step on the batch, and logs the batch's loss at the weights it
    starts from: the first epoch's is the loss before training, and one epoch more gives the
    loss after `steps` steps, with no evaluation function to compile (on TensorFlow, a graph
    and an XLA program a call)."""
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=BACKEND != "torch" if jit_compile is None else jit_compile,
    )
    history = model.fit(x, y, batch_size=len(y), epochs=steps + 1, verbose=0, shuffle=False)
    losses = history.history["loss"]
    return losses[0], losses[-1]


class TestCase:
    """Checks shared by the layer tests. Subclass it (`class TestX(TestCase)`) and call the
    `run_*` methods from test methods; `run_layer_bundle` runs them all for one layer."""

    def run_layer_bundle(
        self,
        layer_fn,
        inputs,
        tmp_path,
        call_kwargs=None,
        expected_output_shape=None,
        expected_num_trainable_weights=None,
        precision_atol=None,
    ):
        """Every check a layer gets, in one call (keras-hub's `run_layer_test` in spirit):
        `layer_fn(dtype=None)` makes a fresh layer (`dtype` a policy name). The symbolic
        output shape equals the eager one, a functional model gives the eager values and one
        fit step changes every trainable weight (`run_layer_test`); the JSON config round
        trip gives the same config and outputs (`run_serialization_test`); a `.keras` file
        of a model around it loads with equal outputs (`run_saving_test`); `mixed_float16`
        and `mixed_bfloat16` compute in the half dtype near the float32 values
        (`run_precision_test`)."""
        call_kwargs = call_kwargs or {}
        inputs = [np.asarray(x) for x in inputs]
        self.run_layer_test(
            layer_fn,
            inputs,
            call_kwargs,
            expected_output_shape=expected_output_shape,
            expected_num_trainable_weights=expected_num_trainable_weights,
        )
        layer = layer_fn()
        symbolic_inputs = [keras.Input(x.shape[1:], dtype=str(x.dtype)) for x in inputs]
        symbolic = layer(*symbolic_inputs, **call_kwargs)
        eager = layer(*inputs, **call_kwargs)
        assert tuple(symbolic.shape[1:]) == tuple(eager.shape[1:])
        self.run_serialization_test(layer, inputs, call_kwargs)
        model = keras.Model(symbolic_inputs, symbolic)
        self.run_saving_test(model, inputs, tmp_path)
        self.run_precision_test(
            lambda policy: layer_fn(dtype=policy), inputs, call_kwargs, atol=precision_atol
        )

    def run_layer_test(
        self,
        layer_fn,
        inputs,
        call_kwargs=None,
        expected_output_shape=None,
        expected_num_trainable_weights=None,
        run_training_check=True,
    ):
        """`layer_fn()` makes a fresh layer; `inputs` is the list of positional call
        arguments (numpy arrays). Checks that a functional model over `keras.Input`s gives
        the eager call's values (same weights), the output shape and the number of trainable
        weights, and that jit-compiled fit steps (eager on torch) change every trainable
        weight, the first lowering a squared-output loss."""
        call_kwargs = call_kwargs or {}
        inputs = [np.asarray(x) for x in inputs]
        layer = layer_fn()
        eager = to_numpy(layer(*inputs, **call_kwargs))
        if expected_output_shape is not None:
            assert eager.shape == tuple(expected_output_shape)
        if expected_num_trainable_weights is not None:
            assert len(layer.trainable_weights) == expected_num_trainable_weights
        symbolic_inputs = [keras.Input(x.shape[1:], dtype=str(x.dtype)) for x in inputs]
        model = keras.Model(symbolic_inputs, layer(*symbolic_inputs, **call_kwargs))
        assert_allclose(model.predict(inputs, verbose=0), eager)
        if not run_training_check:
            return
        before = [to_numpy(w).copy() for w in layer.trainable_weights]
        target = np.zeros_like(eager)
        model.compile(
            optimizer=keras.optimizers.SGD(0.1),
            loss="mse",
            jit_compile=BACKEND != "torch",
        )
        # Each epoch is one step and logs the loss at the weights it starts from (as in
        # `fit_lowers_loss`): the second epoch's is the loss after the first step.
        history = model.fit(
            inputs, target, batch_size=len(target), epochs=2, verbose=0, shuffle=False
        )
        loss_before, loss_after = history.history["loss"]
        assert np.isfinite(loss_after) and loss_after < loss_before
        for old, new in zip(before, layer.trainable_weights, strict=True):
            assert not np.allclose(old, to_numpy(new)), f"{new.path} did not change"

    def run_precision_test(self, layer_fn, inputs, call_kwargs=None, atol=None):
        """Under `mixed_float16` and `mixed_bfloat16`: the layer and every sublayer compute in
        the half dtype and keep float32 variables, the output is in the half dtype, finite,
        and close to the float32 layer's with the same weights (to 1e-2 and 5e-2, or `atol`
        where it is larger)."""
        call_kwargs = call_kwargs or {}
        reference = layer_fn(None)
        expected = to_numpy(reference(*inputs, **call_kwargs))
        for policy, tolerance in (("mixed_float16", 1e-2), ("mixed_bfloat16", 5e-2)):
            half = policy.split("_")[1]
            layer = layer_fn(policy)
            layer(*inputs, **call_kwargs)
            layer.set_weights(reference.get_weights())
            out = layer(*inputs, **call_kwargs)
            for sublayer in [layer, *_sublayers(layer)]:
                assert sublayer.compute_dtype == half, f"{sublayer.name}: {sublayer.compute_dtype}"
            for variable in layer.weights:
                assert keras.backend.standardize_dtype(variable.dtype) == "float32"
            assert keras.backend.standardize_dtype(out.dtype) == half
            out = to_numpy(out).astype("float32")
            assert np.all(np.isfinite(out))
            np.testing.assert_allclose(out, expected, atol=max(tolerance, atol or 0.0))

    def run_serialization_test(self, layer, inputs, call_kwargs=None):
        """A built layer rebuilt from its JSON config has the same config and, given the same
        weights, the same outputs."""
        call_kwargs = call_kwargs or {}
        expected = layer(*inputs, **call_kwargs)
        clone = config_round_trip(layer)
        assert json.dumps(clone.get_config(), sort_keys=True) == json.dumps(
            layer.get_config(), sort_keys=True
        )
        clone(*inputs, **call_kwargs)
        clone.set_weights(layer.get_weights())
        actual = clone(*inputs, **call_kwargs)
        for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected), strict=True):
            assert_allclose(a, e)

    def run_saving_test(self, model, inputs, tmp_path, cross_backend=False):
        """`.keras` save and load (no `custom_objects`) gives the same outputs; with
        `cross_backend=True` the file loaded on `OTHER_BACKEND` too."""
        if cross_backend:
            assert_loads_on_another_backend(model, inputs, tmp_path)
        else:
            assert_keras_file_round_trip(model, inputs, tmp_path)


def _sublayers(layer):
    """Every layer nested in `layer` (public API: walks the `Layer` attributes)."""
    found, stack = [], [layer]
    while stack:
        current = stack.pop()
        for value in vars(current).values():
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, keras.layers.Layer) and item not in found and item is not layer:
                    found.append(item)
                    stack.append(item)
    return found
