"""The benchmarks' own arithmetic: the harness's interleaved timing and its JSON results
(benchmarks/harness.py); the side-by-side benchmark's order of engines, how it reads
OpenNMT-py's log and the speed ratios it prints (benchmarks/opennmt/; the
runs themselves take minutes and OpenNMT-py's venv, so they stay out of the suite)."""

import json
import os
import re
import sys
from types import SimpleNamespace

import pytest

from benchmarks import harness
from benchmarks.opennmt import common, epochs
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the benchmarks' argument handling (no backend)")


def test_interleaved_medians_compile_first_then_alternate_the_versions(monkeypatch):
    calls = []
    clock = iter(range(1000))
    monkeypatch.setattr(harness.time, "perf_counter", lambda: next(clock) ** 2)
    versions = {
        version: {case: (lambda v=version, c=case: calls.append((v, c))) for case in ("x", "y")}
        for version in ("a", "b")
    }
    medians = harness.interleaved_medians(versions, ["x", "y"], rounds=2, calls=1)
    compiles, timed = calls[:4], calls[4:]
    assert compiles == [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")]
    assert timed == [("a", "x"), ("b", "x"), ("a", "y"), ("b", "y"),
                     ("b", "x"), ("a", "x"), ("b", "y"), ("a", "y")]  # fmt: skip
    # Call i is timed from clock tick 2i to 2i + 1: (2i + 1)^2 - (2i)^2 = 4i + 1 seconds.
    assert medians[("a", "x")] == (1 + 4 * 5 + 1) / 2  # calls 0 and 5
    assert medians[("b", "y")] == (4 * 3 + 1 + 4 * 6 + 1) / 2  # calls 3 and 6


def test_print_ratios_writes_what_it_prints_as_json(tmp_path, capsys, monkeypatch):
    import keras

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the command names it where set

    medians = {("new", "step"): 0.030, ("old", "step"): 0.025}
    path = tmp_path / "results.json"
    rows = harness.print_ratios(medians, ["step"], "new", "old", 3, 2, json_path=str(path))
    out = capsys.readouterr().out
    assert "step" in out and "30.0" in out and "25.0" in out and "1.200" in out
    record = json.loads(path.read_text())
    assert record["rows"] == rows == [
        {"case": "step", "this": "new", "other": "old", "this ms": "30.0", "other ms": "25.0",
         "ratio": "1.20"}
    ]  # fmt: skip
    assert record["figures"] == {
        "step_over_old": "1.20",
        "step_new_ms": "30.0",
        "step_old_ms": "25.0",
    }
    assert record["backend"] == keras.backend.backend() and record["settings"]["rounds"] == "3"
    assert record["command"].startswith(f"KERAS_BACKEND={keras.backend.backend()} python")


def test_every_benchmark_a_page_names_exists():
    """Each `python -m benchmarks.<name>`, `python -m benchmarks.speed <case>` (and
    `opennmt <comparison>`) and `benchmarks/<path>.py` of the pages, the README and the
    Makefile is a module of the suite (a retired script leaves no command behind)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    texts = [os.path.join(root, name) for name in ("README.md", "Makefile", "CONTRIBUTING.md")]
    for folder, _, files in os.walk(os.path.join(root, "docs")):
        texts += [os.path.join(folder, f) for f in files if f.endswith(".md")]
    named = {}
    command = r"-m\s+benchmarks\.(\w+)(?:\s+(\w+))?|benchmarks/((?:speed/)?\w+)\.py"
    for text in texts:
        with open(text, encoding="utf-8") as f:
            content = f.read()
        for name, case, path in re.findall(command, content):
            if not path and name in ("speed", "opennmt"):  # a case, or the list of them
                path = f"{name}/{case or '__main__'}"
            path = path or name
            named.setdefault(path, os.path.relpath(text, root))
    assert len(named) > 20 and sum(path.startswith("speed/") for path in named) > 20
    missing = {
        path: where
        for path, where in named.items()
        if not os.path.isfile(os.path.join(root, "benchmarks", path + ".py"))
    }
    assert not missing


def test_speed_cases_are_listed_and_run_by_name(capsys, monkeypatch):
    from benchmarks import speed
    from benchmarks.speed.__main__ import listing

    def run(*argv):
        return harness.run_named("speed", speed.cases(), list(argv), listing())

    assert run() == 0
    listed = capsys.readouterr().out.splitlines()[2:]
    assert [line.split()[0] for line in listed] == speed.cases()
    assert "output_layer" in speed.cases() and "__main__" not in speed.cases()
    row = dict(line.split(maxsplit=1) for line in listed)["output_layer"]
    assert row == "What does the output layer's matrix form buy in a training step?"
    with pytest.raises(SystemExit, match="Unknown speed name 'output'.*output_layer"):
        run("output", "--rounds", "1")
    program = list(sys.argv)
    try:
        with pytest.raises(SystemExit) as exit:
            run("output_layer", "--help")
        assert exit.value.code == 0
        assert capsys.readouterr().out.startswith("usage: python -m benchmarks.speed output_layer")
        # The results file records the command as the case was run, with the threads.
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert harness.command_line().split(" ", 2)[::2] == [
            "OMP_NUM_THREADS=1",
            "python -m benchmarks.speed output_layer --help",
        ]
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert harness.command_line().startswith("KERAS_BACKEND=")
    finally:
        sys.argv, harness.PROGRAM = program, None


def test_the_opennmt_comparisons_are_one_command(capsys):
    from benchmarks.opennmt import COMPARISONS
    from benchmarks.opennmt import __doc__ as usage

    def run(*argv):
        return harness.run_named("opennmt", COMPARISONS, list(argv), usage)

    assert run() == 0
    printed = capsys.readouterr().out
    assert all(f"python -m benchmarks.opennmt {name}" in printed for name in COMPARISONS)
    with pytest.raises(SystemExit, match="Unknown opennmt name 'side'.*epochs, budget, decode"):
        run("side")
    program = list(sys.argv)
    try:
        for name in COMPARISONS:
            with pytest.raises(SystemExit) as exit:
                run(name, "--help")
            assert exit.value.code == 0
            assert capsys.readouterr().out.startswith(f"usage: python -m benchmarks.opennmt {name}")
    finally:
        sys.argv, harness.PROGRAM = program, None


def test_the_decoding_table_sets_each_first_call_beside_opennmt_pys(tmp_path):
    """`opennmt decode`'s table and results file: each engine's first call over OpenNMT-py's
    first `translate` (a process of its own, so its first call is the whole process)."""
    from benchmarks.opennmt import decode

    args = decode.parse_args(["--threads", "2", "--json", str(tmp_path / "decode.json")])
    keras_result = {
        "sentences": 500,
        "process_to_first_seconds": 15.0,
        "calls": [{"seconds": 9.0, "bleu": 30.123}, {"seconds": 6.0, "bleu": 30.123}],
    }
    onmt_result = {"sentences": 500, "calls": [{"seconds": 12.0, "bleu": 29.5}] * 2}
    results = [("jax", keras_result), ("opennmt", onmt_result)]
    lines = decode.table(args, results).splitlines()
    assert "(500 sentences), beam 5, length penalty 1, 2 threads" in lines[0]
    assert lines[-2] == "| keras-luong (jax) | 15.0 | 9.0 | 6.0 | 30.12 | 0.75 |"
    assert lines[-1] == "| OpenNMT-py 3.5.1 | 12.0 | 12.0 | 12.0 | 29.50 | 1.00 |"
    decode.write_json(args, results)
    record = json.loads((tmp_path / "decode.json").read_text())
    assert record["figures"]["jax_first"] == "9.0" and record["figures"]["jax_versus"] == "0.75"
    assert (
        record["figures"]["opennmt_process"] == "12.0" and record["figures"]["sentences"] == "500"
    )
    assert [row["engine"] for row in record["rows"]] == ["keras-luong (jax)", "OpenNMT-py 3.5.1"]
    # Each backend decodes its own budget model, or --model on every backend.
    own = os.path.join(args.workdir, "budget-torch.keras")
    assert os.path.abspath(decode.model_path(args, "torch")) == os.path.abspath(own)
    one = decode.parse_args(["--model", "trained.keras"])
    assert [decode.model_path(one, b) for b in ("jax", "torch")] == ["trained.keras"] * 2


def test_local_vs_global_writes_its_times_and_ratios(tmp_path):
    """`speed local_vs_global --json`: a row per S in ms, and the two ratios the page quotes
    (local at the largest S over the smallest; global over local at the largest)."""
    import argparse

    from benchmarks.speed import local_vs_global

    path = tmp_path / "lvg.json"
    args = argparse.Namespace(
        sources=[256, 16384], batch=8, steps=64, dim=128, window=10, score="dot", eager=False,
        json=str(path),
    )  # fmt: skip
    local_vs_global.write_json(args, [0.002, 0.0019], [0.001, 0.095])
    record = json.loads(path.read_text())
    assert record["rows"] == [
        {"S": "256", "local": "2.00 ms", "global": "1.00 ms"},
        {"S": "16384", "local": "1.90 ms", "global": "95.00 ms"},
    ]
    figures = record["figures"]
    assert (figures["flatness"], figures["speedup"]) == ("0.95", "50.0")
    assert (figures["local_16384"], figures["global_256"]) == ("1.90", "1.00")
    assert record["settings"]["eager"] == "False"


def test_source_length_writes_each_ratio_at_the_largest_source(tmp_path):
    """`speed source_length --json`: per model, each attention's step time at the largest S
    over the smallest, and each time in ms."""
    import argparse

    from benchmarks.speed import source_length

    path = tmp_path / "sl.json"
    args = argparse.Namespace(
        sources=[200, 2000], batch=32, length=50, units=128, vocab=100, rounds=3, steps=2,
        json=str(path),
    )  # fmt: skip
    med = {("model", "local-p", 200): 0.1, ("model", "local-p", 2000): 0.55}
    med |= {("model", "global", 200): 0.1, ("model", "global", 2000): 0.9}
    med |= {("decoder", "local-p", 200): 0.05, ("decoder", "local-p", 2000): 0.08}
    med |= {("decoder", "global", 200): 0.08, ("decoder", "global", 2000): 0.36}
    source_length.write_json(args, med)
    record = json.loads(path.read_text())
    assert [(r["local-p"], r["global"]) for r in record["rows"]] == [
        ("5.50", "9.00"),
        ("1.60", "4.50"),
    ]
    assert record["figures"]["decoder_global_2000"] == "360.0"
    assert record["tables"]["ratios"]["columns"][0] == ["model", "S = 2000 over S = 200", False]


def test_run_paths_writes_each_paths_time_and_their_ratio(tmp_path):
    import argparse

    from benchmarks.speed import run_paths

    path = tmp_path / "rp.json"
    args = argparse.Namespace(
        batch=64, length=50, units=256, vocab=1000, rounds=3, steps=1, json=str(path)
    )
    run_paths.write_json(args, {"cell-only": 0.2, "in-loop": 0.25})
    figures = json.loads(path.read_text())["figures"]
    assert figures == {"cell_only": "200.0", "in_loop": "250.0", "ratio": "1.25"}


def test_ensemble_overhead_writes_the_ensemble_over_its_members_sum(tmp_path, monkeypatch):
    """`speed ensemble_overhead --json`: per decoding, the members' summed time and the
    ensemble's over it (the medians stubbed: 2 members at 50 and 70 ms, the ensemble 90)."""
    from benchmarks.speed import ensemble_overhead

    def medians(versions, cases, rounds, calls):
        times = {"member 0": 0.05, "member 1": 0.07, "ensemble": 0.09}
        return {(name, case): times[name] for name in versions for case in cases}

    monkeypatch.setattr(ensemble_overhead, "interleaved_medians", medians)
    path = tmp_path / "eo.json"
    ensemble_overhead.main(["--members", "2", "--max-length", "2", "--json", str(path)])
    figures = json.loads(path.read_text())["figures"]
    assert (figures["greedy_sum"], figures["greedy_ratio"]) == ("120", "0.75")
    assert figures["beam_5_ratio"] == "0.75" and figures["beam_5_ensemble"] == "90"


def test_compile_cache_writes_each_processs_compiling(tmp_path):
    """`speed compile_cache --json`: each process's first-epoch excess over its second."""
    import argparse

    from benchmarks.speed import compile_cache

    path = tmp_path / "cc.json"
    args = argparse.Namespace(train_pairs=1500, valid_pairs=300, json=str(path))
    names = list(compile_cache.NAMES)
    runs = {names[0]: {"epochs": [32.0, 8.5], "shapes": 14}}
    runs |= {names[1]: {"epochs": [33.0, 8.0]}, names[2]: {"epochs": [12.0, 8.25]}}
    compile_cache.write_json(args, runs)
    figures = json.loads(path.read_text())["figures"]
    assert (figures["no_cache_compiling"], figures["cached_compiling"]) == ("23.5", "3.8")
    assert (figures["shapes"], figures["pairs"]) == ("14", "1,500")
    assert figures["filling_first"] == "33.0"


def test_torch_allocator_writes_the_rounds_ratios(tmp_path):
    import argparse

    from benchmarks.speed import torch_allocator

    path = tmp_path / "ta.json"
    args = argparse.Namespace(batch=64, length=28, vocabulary=8000, json=str(path))
    rounds = [{"as it is": 0.4, "raised": 0.3}, {"as it is": 0.5, "raised": 0.4}]
    rounds.append({"as it is": 0.4, "raised": 0.32})
    torch_allocator.write_json(args, rounds)
    record = json.loads(path.read_text())
    assert record["figures"] == {
        "ratio": "0.80", "rounds": "3", "ratio_low": "0.75", "ratio_high": "0.80"
    }  # fmt: skip
    assert record["rows"][1] == {"round": "2", "as_it_is": "500", "raised": "400", "ratio": "0.80"}


def test_decoding_figures_give_each_time_in_ms_and_the_ratios():
    from benchmarks.speed import decoding

    times = {"first": 1.5, "second": 0.02, "greedy": 0.02, "beam": 0.05}
    times |= {"sentence_generate": 0.0077, "sentence_direct": 0.007, "sentence_predict": 0.0084}
    figures = decoding.figures_of(times)
    assert (figures["first"], figures["second"], figures["first_over_second"]) == (
        "1500.0", "20.0", "75.0"
    )  # fmt: skip
    assert figures["beam_over_greedy"] == "2.50" and figures["sentence_direct"] == "7.0"
    assert (figures["generate_over_direct"], figures["predict_over_direct"]) == ("1.10", "1.20")


def test_decoder_step_figures_give_each_models_ratios_and_cs_shares():
    from benchmarks.speed import decoder_step

    medians = {
        50: {"a": 0.100, "b": 0.095, "c": 0.130, "d": 0.143},
        200: {"a": 0.400, "b": 0.380, "c": 0.560, "d": 0.504},
    }
    shares = {"forward": 0.25, "backward + update": 0.75, "outside the loop": 0.2}
    figures = decoder_step.figures_of(medians, shares)
    assert (figures["a_50"], figures["c_200"]) == ("100.0", "560.0")
    assert (figures["b_over_a_50"], figures["c_over_a_50"], figures["d_over_a_200"]) == (
        "0.95", "1.30", "1.26"
    )  # fmt: skip
    assert (figures["d_over_c_50"], figures["d_over_c_200"]) == ("1.10", "0.90")
    assert figures["linearity"] == "1.08"  # 1.40 / 1.30
    assert figures["backward_update_share"] == "75%" and figures["outside_the_loop_share"] == "20%"
    assert "linearity" not in decoder_step.figures_of({50: medians[50]}, {})


def test_decoder_step_builds_every_model_and_its_parts_add_up(tmp_path, monkeypatch):
    """`speed decoder_step` at tiny sizes builds its seven models (the stand-in attention and
    cell of its breakdown included), and the parts of (c)'s time telescope: forward plus
    backward, and attention, cell, loop and the rest, are each all of it."""
    from benchmarks.speed import decoder_step

    path = tmp_path / "ds.json"
    argv = "--lengths 4 --batch 2 --units 4 --vocab 7 --rounds 1 --steps 1 --json".split()
    monkeypatch.setattr(sys, "argv", ["decoder_step", *argv, str(path)])
    decoder_step.main()
    record = json.loads(path.read_text())
    figures = record["figures"]
    assert record["rows"] == [{"figure": key, "value": value} for key, value in figures.items()]
    share = {key: float(value.rstrip("%")) for key, value in figures.items() if "share" in key}
    assert share["forward_share"] + share["backward_update_share"] == pytest.approx(100, abs=1)
    parts = ("attention", "cell", "bookkeeping", "outside_the_loop")
    assert sum(share[f"{part}_share"] for part in parts) == pytest.approx(100, abs=2)


def test_decoding_vs_tfa_figures_take_tfas_faster_form():
    from benchmarks.speed import decoding_vs_tfa

    medians = {"greedy keras-luong": 0.09, "greedy tfa graph": 0.09, "greedy tfa xla": 0.15}
    medians |= {"beam keras-luong": 0.012, "beam tfa graph": 0.024, "beam tfa xla": 0.016}
    figures = decoding_vs_tfa.figures_of(medians)
    assert (figures["greedy"], figures["greedy_tfa_xla"]) == ("90.0", "150.0")
    assert (figures["greedy_over_graph"], figures["greedy_over_fastest"]) == ("1.00", "1.00")
    assert (figures["beam_over_graph"], figures["beam_over_xla"]) == ("0.50", "0.75")
    assert figures["beam_over_fastest"] == "0.75"


def test_g2p_decoding_options_write_each_settings_per_and_wer(tmp_path):
    import argparse

    from benchmarks import g2p_decoding_options

    path = tmp_path / "options.json"
    args = argparse.Namespace(model_dir="small", beams=5, json=str(path))
    scores = {"as is": (0.1832, 0.623), "`coverage_penalty=0.2`": (0.18984, 0.631)}
    g2p_decoding_options.write_json(args, scores, 2000)
    record = json.loads(path.read_text())
    assert record["figures"] == {
        "as_is_per": "18.32", "as_is_wer": "62.30",
        "coverage_penalty_0_2_per": "18.98", "coverage_penalty_0_2_wer": "63.10",
    }  # fmt: skip
    row = {"setting": "`coverage_penalty=0.2`", "per": "18.98", "wer": "63.10"}
    assert record["rows"][1] == row
    assert record["settings"]["test_words"] == "2000"
    assert record["settings"]["length_penalty"] == "1.0"  # BeamSearchSampler's default


def test_torch_compile_figures_count_the_calls_that_repay_the_first():
    from benchmarks.speed import torch_compile

    figures = torch_compile.figures_of("beam", 13.7, 1.1351, 0.805)
    assert figures == {
        "beam_first": "13.7", "beam_eager": "1135.1", "beam_compiled": "805.0",
        "beam_ratio": "0.71", "beam_repay": "42",  # 13.7 / 0.3301 = 41.5
    }  # fmt: skip
    assert torch_compile.figures_of("greedy", 24.0, 0.0341, 0.0214)["greedy_repay"] == "1,890"
    assert torch_compile.figures_of("greedy", 94.1, 0.0679, 0.1045)["greedy_repay"] == "never"


def test_rounds_reverse_the_engines_every_other_round():
    order = list(epochs.rounds(["torch", "jax", "opennmt"], 3))
    assert order == [
        (1, "torch"),
        (1, "jax"),
        (1, "opennmt"),
        (2, "opennmt"),
        (2, "jax"),
        (2, "torch"),
        (3, "torch"),
        (3, "jax"),
        (3, "opennmt"),
    ]
    # Over an even number of rounds each engine runs first as often as it runs last.
    order = list(epochs.rounds(["torch", "opennmt"], 4))
    firsts = [engine for number, engine in order[::2]]
    assert firsts.count("torch") == firsts.count("opennmt") == 2


def test_rounds_below_one_are_refused(capsys):
    with pytest.raises(SystemExit):
        epochs.parse_args(["--rounds", "0"])
    assert "--rounds must be at least 1, received 0" in capsys.readouterr().err
    assert epochs.parse_args(["--rounds", "2"]).rounds == 2


def onmt_line(step, sentences, tokens_per_second):
    return (
        f"[2026-11-30 14:47:31,367 INFO] Step {step}/  340; acc: 6.2; ppl: 1401.2; xent: 7.2; "
        f"lr: 0.00200; sents: {sentences:>7}; bsz: 1556/1627/57; 2255/{tokens_per_second} tok/s;"
        f"     17 sec;"
    )


def test_read_onmt_log_interpolates_epochs_and_drops_start_and_validation():
    log = "\n".join(
        [
            "[2026-11-30 14:47:14,109 INFO] * number of parameters: 5222208",
            "[2026-11-30 14:47:14,110 INFO]  * tgt vocab size = 8000",
            onmt_line(25, 60, 1000),  # the start-up: left out of the speed
            onmt_line(50, 60, 3000),
            "[2026-11-30 14:48:28,910 INFO] Validation accuracy: 20.0",  # 1.2 epochs
            onmt_line(75, 60, 2000),  # holds the validation: left out
            onmt_line(100, 60, 4000),
            onmt_line(125, 60, 5000),
            "[2026-11-30 14:48:28,910 INFO] Validation accuracy: 30.0",  # 3 epochs
        ]
    )
    result = common.read_onmt_log(log, pairs=100, epochs=3, wall=12.5)
    assert result["parameters"] == 5222208
    assert result["vocabulary"] == 8000
    assert result["epochs_done"] == pytest.approx(3.0)
    assert result["wall_seconds"] == 12.5
    # Epoch 1 between (0, 0%) and (1.2, 20%); epochs 2 and 3 between (1.2, 20%) and (3, 30%).
    assert result["val_accuracy"] == pytest.approx([1 / 1.2 * 0.2, 0.2 + 0.8 / 1.8 * 0.1, 0.3])
    assert result["tokens_per_second"] == 4000  # median of 3000, 4000 and 5000


def test_read_onmt_log_stops_its_curve_where_validation_stops():
    log = "\n".join(
        [
            "* number of parameters: 10",
            "* tgt vocab size = 8",
            onmt_line(25, 50, 1000),
            onmt_line(50, 50, 3000),
            "Validation accuracy: 50.0",  # 1 epoch
        ]
    )
    result = common.read_onmt_log(log, pairs=100, epochs=3, wall=1.0)
    assert result["val_accuracy"] == pytest.approx([0.5])
    # One interval after the start-up's.
    assert result["tokens_per_second"] == 3000


def run(engine, threads, number, tokens_per_second):
    result = {
        "round": number,
        "tokens_per_second": tokens_per_second,
        "pairs": 3000,
        "vocabulary": 8000,
        "parameters": 10,
        "val_accuracy": [0.25],
        "first_epoch_tokens_per_second": None,
        "wall_seconds": 60.0,
    }
    return engine, threads, result


def test_speed_ratios_pair_each_run_with_its_own_rounds_opennmt():
    results = [
        run("torch", 2, 1, 3300),
        run("opennmt", 2, 1, 3000),
        run("opennmt", 2, 2, 2000),
        run("torch", 2, 2, 1800),
        run("torch", 2, 3, 2750),
        run("opennmt", 2, 3, 2500),
        run("torch", 1, 1, 999),  # no OpenNMT-py run at one thread: no ratio
    ]
    ratios = epochs.speed_ratios(results)
    assert list(ratios) == [("torch", 2)]
    assert ratios["torch", 2] == pytest.approx([1.1, 0.9, 1.1])

    args = SimpleNamespace(epochs=1, rounds=3, corpus="long", seed=0, bucket_width=None)
    text = epochs.table(args, results)
    assert "| keras-luong (torch) | 2 | 2 | 8,000 | 10 | 25.0% | 1,800 | - | 1.0 |" in text
    assert "at 2 threads: 1.10×, 0.90×, 1.10× (round by round; median 1.10×)" in text


def test_reuse_large_blocks_reaches_every_engine_and_the_heading(monkeypatch):
    """`--reuse-large-blocks` puts glibc's two thresholds (1 GiB, as
    `keras_luong.training.allocator.reuse_large_blocks()` sets
    them) in the environment every engine's
    process starts from, and the table's heading says how malloc ran."""
    for name in list(os.environ):
        if name.startswith("MALLOC_"):
            monkeypatch.delenv(name)
    args = SimpleNamespace(epochs=1, rounds=1, corpus="long", seed=0, bucket_width=None)
    results = [run("torch", 2, 1, 3300), run("opennmt", 2, 1, 3000)]
    assert "glibc's malloc as it starts in every engine" in epochs.table(args, results)
    common.set_allocator(epochs.parse_args([]))
    assert "MALLOC_MMAP_THRESHOLD_" not in common.thread_env("torch", 2)

    monkeypatch.setattr(os, "environ", dict(os.environ))  # set_allocator's changes undone
    common.set_allocator(epochs.parse_args(["--reuse-large-blocks"]))
    for engine in ("torch", "jax", "opennmt"):
        env = common.thread_env(engine, 2)
        assert env["MALLOC_MMAP_THRESHOLD_"] == env["MALLOC_TRIM_THRESHOLD_"] == str(2**30)
    heading = epochs.table(args, results).splitlines()[0]
    assert heading.endswith(
        "glibc's malloc with MALLOC_MMAP_THRESHOLD_=1073741824, "
        "MALLOC_TRIM_THRESHOLD_=1073741824 in every engine:"
    )


def test_the_decoding_controls_results_give_each_setting_over_its_sampler(tmp_path):
    from benchmarks.speed import decoding_controls

    times = {"greedy": [0.10, 0.30, 0.20], "greedy, prefix of 5": [0.22, 0.21, 0.50]}
    # Each call over its paired base call: 0.22 / 0.10, 0.21 / 0.30, 0.50 / 0.20.
    ratios = {"greedy": [], "greedy, prefix of 5": [2.2, 0.7, 2.5]}
    settings = [("greedy", "greedy"), ("greedy, prefix of 5", "greedy")]
    rows = decoding_controls.table(times, ratios, settings)
    assert rows == [
        {"setting": "greedy", "ms": "200.0", "ratio": "1.000"},
        # The median time, and the median of the pairs' ratios (not 220 / 200).
        {"setting": "greedy, prefix of 5", "ms": "220.0", "ratio": "2.200"},
    ]
    keys = [harness.figure_key(label) for label, *_ in decoding_controls.settings(4)]
    assert "beam_5_prefix_of_5" in keys and "sampling_top_p_0_9" in keys
    assert len(set(keys)) == len(keys)  # one figure each


def test_luong_vs_bahdanau_figures_and_tables_as_the_page_renders_them():
    """The comparison's results file: the figures its page's text quotes are the seeds' mean,
    lowest and highest (in %, one decimal) and the step-time ratios to Luong's general score;
    the script's Markdown tables are the ones docs/_ext/figures.py renders from the file."""
    from benchmarks import luong_vs_bahdanau as script
    from tests.site_test import load_hook

    assert harness.figure_key("Bahdanau (2015)") == "bahdanau_2015"
    assert harness.figure_key("Luong, local-p general") == "luong_local_p_general"
    scores = {
        "Luong, general": [(0.98, 0.875, 0.1), (0.954, 0.5, 0.3)],
        "Bahdanau (2015)": [(0.99, 0.9, 0.05), (0.97, 0.95, 0.15)],
    }
    times = {"Luong, general": {"train": 0.05, "greedy": 0.02}}
    times["Bahdanau (2015)"] = {"train": 0.075, "greedy": 0.021}
    found = script.figures(scores, [4, 7], times)
    assert found["luong_general_exact_mean"] == "96.7"  # (98 + 95.4) / 2
    assert found["luong_general_exact_lowest"] == "95.4"
    assert found["luong_general_accuracy_highest"] == "87.5"
    assert found["luong_general_accuracy_7"] == "50.0" and found["bahdanau_2015_exact_4"] == "99.0"
    assert found["bahdanau_2015_aer_mean"] == "0.100"
    assert found["bahdanau_2015_train_ratio"] == "1.50"
    assert found["bahdanau_2015_greedy_ratio"] == "1.05"
    assert found["luong_general_train_ratio"] == "1.00"

    rows = [
        {"model": "Luong, dot", "train": "50.0 ms", "train_ratio": "0.90"},
        {"model": "Luong, general", "train": "55.6 ms", "train_ratio": "1.00"},
    ]
    columns = [("model", "model", False), ("train", "train", True), ("train_ratio", "×", True)]
    lines = harness.markdown(columns, rows)
    assert lines == [
        "| model | train | × |",
        "|---|---:|---:|",
        "| Luong, dot | 50.0 ms | 0.90 |",
        "| Luong, general | 55.6 ms | 1.00 |",
    ]
    hook = load_hook("figures")
    record = {"rows": rows, "tables": {"speed": {"columns": [list(c) for c in columns]}}}
    hook.results = lambda name: record
    assert hook.on_page_markdown("<!-- results table: any.speed -->") == "\n".join(lines)
    with pytest.raises(ValueError, match="no table 'seeds'"):
        hook.on_page_markdown("<!-- results table: any.seeds -->")


def test_g2p_table_collects_each_variants_row_and_the_gaps_between_them(tmp_path, capsys):
    from benchmarks import g2p_table

    def run(folder, recipe, best_wer, greedy, beam):
        (tmp_path / folder).mkdir()
        result = {
            "recipe": recipe,
            "curve": [{"epoch": 1, "wer": 0.45, "per": 0.1}, {"epoch": 2, "wer": best_wer}],
            "test": {
                "ours, greedy": {"per": greedy[0], "wer": greedy[1]},
                "ours, beam 5 (length penalty 0.5)": {"per": beam[0], "wer": beam[1]},
            },
        }
        (tmp_path / folder / "results.json").write_text(json.dumps(result))

    run(
        "local-m-general",
        "local-m/general D=5, input feeding on",
        0.4180,
        (0.1, 0.42),
        (0.1, 0.4108),
    )
    run(
        "global-general", "global/general, input feeding on", 0.3815, (0.09, 0.39), (0.0942, 0.3842)
    )
    path = tmp_path / "variants.json"
    g2p_table.main([str(tmp_path), "--json", str(path)])
    record = json.loads(path.read_text())
    # The page's order (global before local-m), not the folders' names.
    assert [row["variant"] for row in record["rows"]] == [
        "global, general, feeding on", "local-m, general, feeding on"
    ]  # fmt: skip
    assert record["rows"][0] == {
        "variant": "global, general, feeding on", "epochs": "2", "validation_wer": "38.15",
        "greedy_per": "9.00", "greedy_wer": "39.00", "beam_per": "9.42", "beam_wer": "38.42",
    }  # fmt: skip
    assert record["figures"]["local_m_general_validation_wer"] == "41.80"
    assert record["figures"]["local_m_behind_global"] == "2.7"  # 41.08 - 38.42 = 2.66
    assert "general_behind_dot" not in record["figures"]  # no dot run here
    assert record["settings"] == {
        "epochs": "2", "beam_width": "5", "length_penalty": "0.5", "window": "5"
    }  # fmt: skip
    assert record["published"] == {"luong_input_feeding_gain": "1.3"}  # 18.1 - 16.8 BLEU
    assert "| global, general, feeding on | 2 | 38.15 |" in capsys.readouterr().out


def test_g2p_table_refuses_runs_of_different_budgets(tmp_path):
    from benchmarks import g2p_table

    for folder, last in (("global-dot", 3), ("global-general", 2)):
        (tmp_path / folder).mkdir()
        curve = [{"epoch": last, "wer": 0.4}]
        test = {"ours, greedy": {"per": 0.1, "wer": 0.4}}
        test["ours, beam 5 (length penalty 0.5)"] = {"per": 0.1, "wer": 0.4}
        result = {"recipe": "global/dot, input feeding on", "curve": curve, "test": test}
        (tmp_path / folder / "results.json").write_text(json.dumps(result))
    with pytest.raises(ValueError, match="global-general has epochs 2, the others 3"):
        g2p_table.main([str(tmp_path), "--json", str(tmp_path / "out.json")])


def test_median_figures_take_each_figures_median_and_range_over_the_runs():
    from benchmarks.harness import median_figures

    def run(ms, ratio, repay="never", seed="0", share="25%"):
        figures = {"ms": ms, "ratio": ratio, "repay": repay, "share": share}
        return {"figures": figures, "settings": {"seed": seed}}

    runs = [run("142.1", "1.35"), run("150.3", "1.49", share="9%"), run("139.0", "1.39")]
    figures, settings = median_figures(runs)
    assert figures == {
        "ms": "142.1", "ms_low": "139.0", "ms_high": "150.3",
        "ratio": "1.39", "ratio_low": "1.35", "ratio_high": "1.49", "repay": "never",
        "share": "25%", "share_low": "9%", "share_high": "25%",
    }  # fmt: skip
    assert settings == {"seed": "0"}
    # An even count takes the mean of the middle two, in the first run's decimals and grouping.
    figures, _ = median_figures([run("1,890", "1.30"), run("2,010", "1.40")])
    assert (figures["ms"], figures["ratio"]) == ("1,950", "1.35")
    with pytest.raises(ValueError, match=r"repay reads \['never', '42'\]"):
        median_figures([run("1", "1"), run("1", "1", repay="42")])
    with pytest.raises(ValueError, match="Invalid runs: settings"):
        median_figures([run("1", "1"), run("1", "1", seed="1")])


def test_run_processes_writes_the_median_of_fresh_processes(tmp_path):
    from benchmarks import harness

    # Each process counts itself in a file and measures 10 ms times its number.
    program = [
        "-c",
        "import json, pathlib, sys\n"
        f"count = pathlib.Path({str(tmp_path / 'count')!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        "record = {'figures': {'ms': f'{10 * n:.1f}'}, 'settings': {'rounds': sys.argv[2]}}\n"
        "json.dump(record, open(sys.argv[-1], 'w'))\n",
    ]
    path = tmp_path / "median.json"
    harness.run_processes(program, ["--rounds", "3", "--processes", "3", "--json", str(path)])
    record = json.loads(path.read_text())
    assert record["figures"] == {"ms": "20.0", "ms_low": "10.0", "ms_high": "30.0"}
    assert record["settings"] == {"rounds": "3", "processes": "3"}
    with pytest.raises(ValueError, match="--processes: 1"):
        harness.run_processes(program, ["--processes", "1", "--json", str(path)])


def test_decoding_extras_figures_are_each_setting_over_its_sampler_without_options():
    from benchmarks.speed import decoding_extras

    medians = {"greedy": 0.097, "greedy, no_repeat_ngram_size=3": 0.1067}
    medians |= {"beam 5": 0.421, "beam 5, coverage_penalty=0.2": 0.4252, "beam 5, both": 0.4168}
    figures = decoding_extras.figures_of(medians, "beam 5")
    assert figures["greedy_no_repeat_ngram_size_3"] == "1.10"  # 106.7 / 97
    assert figures["beam_5_coverage_penalty_0_2"] == "1.01"  # 425.2 / 421
    assert figures["beam_5_both"] == "0.99"  # 416.8 / 421
    assert (figures["greedy"], figures["beam_5"]) == ("1.00", "1.00")
    assert (figures["greedy_ms"], figures["beam_5_ms"]) == ("97", "421")
