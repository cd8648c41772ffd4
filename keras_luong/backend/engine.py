"""What the package needs to know of the engine under Keras: whether a compiled function is
compiled with XLA, whether Keras compiles a train step with XLA by default, how many
replicas a batch is split over, and, on TensorFlow, the replicas' all-reduce. The rest of
the package asks these questions by name; TensorFlow's module is read here only if a program
has already imported it, never imported."""

import sys

import keras
import numpy as np

# `BucketedBatches`' threads on TensorFlow: more than one, so that Keras reads the batches
# through its own queue and not a tf.data pipeline it autotunes, whose iterator, dropped at
# the end of every epoch, waits for the autotuning thread's sleep (seconds; measured by
# `benchmarks/speed/tensorflow_epoch_stall.py`).
TENSORFLOW_WORKERS = 2


def _tensorflow():
    """TensorFlow's module if the program has imported it (Keras' TensorFlow backend has),
    else `None`."""
    return sys.modules.get("tensorflow")


def compiles_with_xla():
    """Whether the package compiles its own functions (the decoding loop, the aligner) with
    `jit_compile=True`: with XLA on JAX and TensorFlow. torch stays eager: its `jit_compile`
    is torch.compile, which takes minutes over a decoding loop."""
    return keras.backend.backend() != "torch"


def train_step_compiles_with_xla():
    """Whether Keras compiles a model's train step with XLA when `compile` leaves
    `jit_compile="auto"`: always on JAX; on TensorFlow where it sees a GPU or TPU and no
    `tf.distribute` strategy is active; never on torch, whose step runs op by op."""
    backend = keras.backend.backend()
    if backend == "torch":
        return False
    if backend == "tensorflow":
        devices = keras.distribution.list_devices()  # accelerators if any, else the CPUs
        if all(device.startswith("cpu") for device in devices):
            return False
        tf = _tensorflow()
        if tf is not None and tf.distribute.has_strategy():  # Keras leaves XLA off there
            return False
    return True


def loader_workers():
    """The threads a `keras.utils.PyDataset` of the package reads with when its caller names
    none: `TENSORFLOW_WORKERS` on TensorFlow, else Keras' default (`None`)."""
    return TENSORFLOW_WORKERS if keras.backend.backend() == "tensorflow" else None


def replica_count():
    """The number of replicas a batch is split over by the active data parallelism: the
    `keras.distribution` mesh's batch axis (JAX), the `tf.distribute` strategy's replicas
    in sync (TensorFlow), else 1."""
    distribution = keras.distribution.distribution()
    if distribution is not None:
        mesh = getattr(distribution, "device_mesh", None)
        if mesh is not None:
            batch_axis = getattr(distribution, "batch_dim_name", None)
            if batch_axis in mesh.axis_names:
                return int(mesh.shape[mesh.axis_names.index(batch_axis)])
            return int(np.prod(mesh.shape))
    tf = _tensorflow()
    if tf is not None and tf.distribute.has_strategy():
        return int(tf.distribute.get_strategy().num_replicas_in_sync)
    return 1


def replicas_in_step():
    """The number of replicas running the present step within a TensorFlow replica context
    (Keras' TensorFlow trainer then averages the replicas' losses); 1 outside one, and on the
    other backends."""
    tf = _tensorflow()
    if keras.backend.backend() != "tensorflow" or tf is None:
        return 1
    context = tf.distribute.get_replica_context()
    return 1 if context is None else context.num_replicas_in_sync


def replica_sum(x):
    """`x` summed over the replicas of the present TensorFlow replica context (call it where
    `replicas_in_step()` is over 1)."""
    return _tensorflow().distribute.get_replica_context().all_reduce("sum", x)
