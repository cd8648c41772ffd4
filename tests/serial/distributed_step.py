"""One train step of `LuongSeq2Seq` on one device and data-parallel over several, run in a
subprocess by `distributed_test.py` (the device count must be set before the engine starts):

    XLA_FLAGS=--xla_force_host_platform_device_count=4 KERAS_BACKEND=jax \\
        python -m tests.serial.distributed_step jax
    KERAS_BACKEND=tensorflow python -m tests.serial.distributed_step tensorflow
    KERAS_BACKEND=torch python -m tests.serial.distributed_step torch
    KERAS_BACKEND=tensorflow python -m tests.serial.distributed_step tensorflow-page

Prints one JSON line per variant (global and local-p, input feeding on): the loss of the
step on one device and distributed, the largest difference between the weights after it, the
number of replicas, and whether greedy `generate` gives the same ids; then (JAX, and
TensorFlow's "-page" run) docs/scaling.md's recipe run as written, with its first and last
epoch's loss. On torch, Keras' trainer has no DistributedDataParallel support, so both sides
run the custom loop of Keras' guide to distributed training with PyTorch:
`DistributedDataParallel` over 2 CPU processes (gloo), one SGD step.
"""

import json
import os
import sys

import numpy as np

ALIGNMENTS = ("global", "local-p")


def data():
    rng = np.random.default_rng(0)
    source = rng.integers(3, 9, (8, 6))
    source[4:, 4:] = 0  # half the batch padded: the mask is sharded too
    target_in = np.concatenate([np.ones((8, 1), int), rng.integers(3, 9, (8, 4))], 1)
    target_out = np.concatenate([target_in[:, 1:], np.full((8, 1), 2)], 1)
    return source, target_in, target_out


def make(alignment, loss=None):
    import keras

    from keras_luong import LuongSeq2Seq

    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(9, 9, units=8, embedding_dim=4, alignment=alignment, window=2)
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=loss or keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def step(model):
    """One `fit` step over the whole batch of 8; the loss and the weights after it."""
    source, target_in, target_out = data()
    history = model.fit(
        (source, target_in), target_out, batch_size=8, epochs=1, shuffle=False, verbose=0
    )
    return history.history["loss"][0], model.get_weights()


def report(alignment, replicas, single, distributed, same_ids):
    (loss, weights), (dloss, dweights) = single, distributed
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(weights, dweights, strict=True))
    print(
        json.dumps(
            {
                "alignment": alignment,
                "replicas": replicas,
                "loss": [float(loss), float(dloss)],
                "max_weight_diff": diff,
                "same_ids": bool(same_ids),
            }
        ),
        flush=True,
    )


def bucketed_epoch(model, batch_multiple=None):
    """One epoch of `fit` on `BucketedBatches` of 13 pairs whose token budget gives batches
    of 5 and 3 rows: rounded up to multiples of the device count with filler rows."""
    from keras_luong.data.batching import BucketedBatches

    rng = np.random.default_rng(1)
    sources = [rng.integers(3, 9, n).tolist() for n in rng.integers(1, 7, 13)]
    targets = [rng.integers(3, 9, n).tolist() for n in rng.integers(1, 7, 13)]
    batches = BucketedBatches(sources, targets, 40, seed=0, batch_multiple=batch_multiple)
    # shuffle=False: the batches come in their own seeded order (Keras' fit would shuffle
    # a PyDataset's batches again with Python's `random`, drawn differently in each run).
    history = model.fit(batches, epochs=1, verbose=0, shuffle=False)
    rows = sorted({batches[i][1].shape[0] for i in range(len(batches))})
    return (history.history["loss"][0], model.get_weights()), rows


def run_page(section):
    """Runs docs/scaling.md's code blocks of `section` as written, on 40 pairs of ids, and
    prints the first and last epoch's loss."""
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "scaling.md"), encoding="utf-8") as page:
        body = next(p for p in page.read().split("\n## ") if p.startswith(section))
    rng = np.random.default_rng(2)
    pairs = [[rng.integers(3, 20, n).tolist() for n in rng.integers(1, 9, 40)] for _ in "st"]
    names = {"source_size": 20, "target_size": 20, "source_ids": pairs[0], "target_ids": pairs[1]}
    blocks = re.findall(r"```python\n(.*?)```", body, re.S)
    for block in blocks:
        exec(block, names)
    losses = names["model"].history.history["loss"]
    print(json.dumps({"page": section, "blocks": len(blocks), "loss": [losses[0], losses[-1]]}))


def run_jax():
    import keras

    source = data()[0]
    singles = {}
    for alignment in ALIGNMENTS:
        model = make(alignment)
        singles[alignment] = (step(model), model.generate(source, 4))
    count = len(keras.distribution.list_devices("cpu"))
    bucketed_single, _ = bucketed_epoch(make("global"), batch_multiple=count)
    devices = keras.distribution.list_devices("cpu")
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    for alignment in ALIGNMENTS:
        model = make(alignment)
        distributed = step(model)
        # Every variable is replicated on every device.
        replicas = len(model.trainable_weights[0].value.sharding.device_set)
        same = np.array_equal(singles[alignment][1], model.generate(source, 4))
        report(alignment, replicas, singles[alignment][0], distributed, same)
    # Bucketed batches made under the distribution take its device count on their own.
    model = make("global")
    distributed, rows = bucketed_epoch(model)
    replicas = len(model.trainable_weights[0].value.sharding.device_set)
    report("bucketed", replicas, bucketed_single, distributed, all(r % count == 0 for r in rows))
    run_page("JAX")


def run_tensorflow():
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    source = data()[0]
    for alignment in ALIGNMENTS:
        model = make(alignment)
        single, ids = step(model), model.generate(source, 4)
        with strategy.scope():
            model = make(alignment)
        distributed = step(model)
        same = np.array_equal(ids, model.generate(source, 4))
        report(alignment, strategy.num_replicas_in_sync, single, distributed, same)
    # Bucketed batches of 5 and 3 rows, made under the strategy: filled up to multiples of 2
    # with rows the loss ignores ("same_ids" there: every batch's row count is one), so the
    # replicas' halves hold different numbers of target tokens.
    from keras_luong.training.losses import SequenceLoss

    for name, loss in (("bucketed", None), ("bucketed-sequence-loss", SequenceLoss())):
        single, _ = bucketed_epoch(make("global", loss), batch_multiple=2)
        with strategy.scope():
            model = make("global", loss)
            distributed, rows = bucketed_epoch(model)
        report(name, 2, single, distributed, all(r % 2 == 0 for r in rows))


def run_tensorflow_page():
    """The page's recipe in a process of its own: a second `MirroredStrategy` in the process
    of the first would share its collective ops' instance keys."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    run_page("TensorFlow")


def torch_step(model, source, target_in, target_out, wrap=None):
    """One SGD step of a custom torch loop (Keras' torch trainer has no DDP support; this is
    the loop of Keras' guide to distributed training with PyTorch); the loss and weights."""
    import torch

    model((source[:1], target_in[:1]))  # build the Keras model: its torch parameters exist
    module = model if wrap is None else wrap(model)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
    logits = module((torch.as_tensor(source), torch.as_tensor(target_in)))
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), torch.as_tensor(target_out).reshape(-1)
    )
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item(), [np.array(w) for w in model.get_weights()]


def _torch_worker(rank, alignment, port, path):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    source, target_in, target_out = data()
    shard = slice(4 * rank, 4 * rank + 4)
    model = make(alignment)
    loss, weights = torch_step(
        model, source[shard], target_in[shard], target_out[shard], wrap=DistributedDataParallel
    )
    losses = [None, None]
    dist.all_gather_object(losses, loss)
    if rank == 0:
        ids = model.generate(source, 4)  # the whole batch, by the trained replica
        arrays = {f"weight_{i}": w for i, w in enumerate(weights)}
        np.savez(path, loss=np.mean(losses), ids=ids, **arrays)
    dist.barrier()  # both ranks leave together: no gloo thread torn down under the other
    dist.destroy_process_group()


def run_torch():
    import socket
    import tempfile

    import torch.multiprocessing as mp

    source, target_in, target_out = data()
    for alignment in ALIGNMENTS:
        model = make(alignment)
        single = torch_step(model, source, target_in, target_out)
        ids = model.generate(source, 4)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        path = os.path.join(tempfile.mkdtemp(), "rank0.npz")
        mp.spawn(_torch_worker, args=(alignment, port, path), nprocs=2, join=True)
        saved = np.load(path)
        weights = [saved[f"weight_{i}"] for i in range(len(single[1]))]
        # Each rank's loss is over its 4 examples; their mean is the loss over all 8.
        same = np.array_equal(ids, saved["ids"])
        report(alignment, 2, single, (float(saved["loss"]), weights), same)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    runs = {"jax": run_jax, "tensorflow": run_tensorflow, "torch": run_torch}
    runs["tensorflow-page"] = run_tensorflow_page
    runs[sys.argv[1]]()
