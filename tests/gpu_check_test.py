"""The GPU check (benchmarks/gpu.py) dry-run on the CPU at tiny sizes, so that it cannot rot
between the sessions that have a GPU: its figures agree with its own counts, and its table
and OpenNMT-py's configuration say what was run. (OpenNMT-py itself is not installed here:
its log is read from a fixture line, as `benchmarks_test.py` reads it.)"""

import json

import keras
import pytest

from benchmarks import gpu
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the GPU check's dry run (one backend's worker)")


def test_dry_run_figures_agree_with_the_batches_it_trained(tmp_path):
    output = tmp_path / "gpu.json"
    results = gpu.main(
        ["--dry-run", "--engines", keras.backend.backend(), "--cases", "recipe",
         "--workdir", str(tmp_path), "--output", str(output)]
    )  # fmt: skip
    assert json.loads(output.read_text()) == results
    header, *decodes, train = results
    assert header["device"] == "cpu" and header["keras"] == keras.__version__
    figures = train["train"]
    assert train["case"] == "recipe" and train["tokens_per_batch"] == 2048
    # The speed is the epoch's real target tokens (each target and its end id) over its time.
    pairs, valid, _ = gpu.load_pairs(gpu.parse_args(["--dry-run"]))
    tokens = sum(len(target) + 1 for _, target in pairs)
    assert figures["tokens_per_second"] == pytest.approx(tokens / figures["epoch_seconds"])
    assert figures["peak_memory"] is None  # a CPU's is not read
    assert 0 < figures["padding_share"] < 1
    assert [(d["decode"], d["batch"]) for d in decodes] == [("greedy", 4), ("beam", 4)]
    for decode in decodes:
        # Every sentence decoded to the default length bound of the longest source.
        assert decode["tokens"] == int(1.5 * max(len(source) for source, _ in valid) + 10)
        assert decode["sentences_per_second"] == pytest.approx(8 / decode["seconds"])


def test_table_sets_each_engine_beside_opennmt_at_its_batch():
    def trained(engine, case, tokens, speed, policy="float32"):
        figures = {"tokens_per_second": speed, "peak_memory": 2**30, "epoch_seconds": 2.0}
        return {"engine": engine, "case": case, "tokens_per_batch": tokens, "policy": policy,
                "train": figures}  # fmt: skip

    table = gpu.table(
        [
            trained("torch", "recipe", 2048, 15000.0),
            trained("torch", "gpu-bf16", 16384, 90000.0, "bfloat16"),
            trained("opennmt", "recipe", 2048, 30000.0),
            trained("opennmt", "gpu", 16384, 60000.0),
            {"engine": "jax", "error": "stopped by --engine-timeout 10"},
            {
                "engine": "jax",
                "decode": "beam",
                "batch": 64,
                "sentences_per_second": 8000.0,
                "peak_memory": 2**29,
            },  # fmt: skip
        ]
    ).splitlines()
    assert table[2] == "| torch | recipe | 2048 | 15,000 | 0.50 | 1.00 | 2.0 | 0.0 |"
    assert table[3] == "| torch | gpu-bf16 | 16384 | 90,000 | 1.50 | 1.00 | 2.0 | 0.0 |"
    assert table[4].startswith("| opennmt | recipe | 2048 | 30,000 | – |")
    assert table[6] == "| jax |  | failed: stopped by --engine-timeout 10 |"
    assert table[-1] == "| jax | beam | 64 | 8,000.0 | 0.50 |"


def test_opennmt_config_is_the_recipe_on_one_gpu(tmp_path):
    config = gpu.onmt_config(str(tmp_path), 16384, 256, 150, 8000, gpu=True, pairs=12000)
    lines = set(config.splitlines())
    assert {"encoder_type: brnn", "global_attention: general", "input_feed: 1"} <= lines
    assert {"hidden_size: 256", "word_vec_size: 128", "batch_size: 16384"} <= lines
    assert {"gpu_ranks: [0]", "bucket_size: 12000", "report_every: 10"} <= lines
    assert "gpu_ranks: [0]" not in gpu.onmt_config(str(tmp_path), 2048, 8, 4, 40, False, 96)


def test_unknown_cases_and_engines_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"--cases: unknown \['fp8'\]"):
        gpu.selected_cases(gpu.parse_args(["--cases", "recipe,fp8"]))
    with pytest.raises(ValueError, match=r"--engines: unknown \['mxnet'\]"):
        gpu.main(["--dry-run", "--engines", "mxnet", "--workdir", str(tmp_path)])
