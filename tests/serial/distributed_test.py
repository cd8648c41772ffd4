"""Data-parallel training equals one device: JAX `keras.distribution.DataParallel` over 4
virtual CPU devices, TensorFlow `MirroredStrategy` over 2 logical CPU devices, torch
`DistributedDataParallel` over 2 CPU processes (gloo). Each runs in a subprocess
(`tests/serial/distributed_step.py`): the device count is fixed when the engine starts."""

import json
import os
import subprocess
import sys

import pytest

from tests.test_case import BACKEND

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_step(engine, **env):
    result = subprocess.run(
        [sys.executable, "-m", "tests.serial.distributed_step", engine],
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": engine.split("-")[0], **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    pages = [row for row in rows if "page" in row]
    if engine in ("jax", "tensorflow-page"):  # docs/scaling.md's recipe, as written, learns
        [page] = pages
        assert page["blocks"] == 1 and page["loss"][-1] < page["loss"][0]
    return [row for row in rows if "page" not in row]


def assert_equal_to_one_device(rows, replicas, variants=("global", "local-p")):
    assert [row["alignment"] for row in rows] == list(variants)
    for row in rows:
        assert row["replicas"] == replicas
        single, distributed = row["loss"]
        assert distributed == pytest.approx(single, rel=1e-6, abs=1e-6)
        assert row["max_weight_diff"] < 1e-6
        assert row["same_ids"]


@pytest.mark.skipif(BACKEND != "jax", reason="keras.distribution runs on JAX")
def test_jax_data_parallel_over_4_devices_equals_one_device():
    """Also from `BucketedBatches` whose budget gives 5 and 3 rows: made under the
    distribution, they fill each batch up to a multiple of 4 ("same_ids" there: every batch's
    row count is one), and one epoch equals one device's on the same batches."""
    # Beside the run's own flags (the tests' XLA compiles without LLVM's optimisation passes).
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4"
    rows = run_step("jax", XLA_FLAGS=flags.strip())
    assert_equal_to_one_device(rows, replicas=4, variants=("global", "local-p", "bucketed"))


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.distribute runs on TensorFlow")
def test_tensorflow_mirrored_strategy_over_2_devices_equals_one_device():
    """Also from `BucketedBatches` made under the strategy (filled up to even row counts),
    whose halves hold different numbers of target tokens, with Keras' cross-entropy under the
    model's mask and with `SequenceLoss`: each token weighs what it weighs on one device."""
    assert_equal_to_one_device(
        run_step("tensorflow"),
        replicas=2,
        variants=("global", "local-p", "bucketed", "bucketed-sequence-loss"),
    )
    assert run_step("tensorflow-page") == []  # the page's recipe: checked in run_step


@pytest.mark.skipif(BACKEND != "torch", reason="DistributedDataParallel is torch's")
def test_torch_distributed_data_parallel_over_2_processes_equals_one_process():
    assert_equal_to_one_device(run_step("torch"), replicas=2)
