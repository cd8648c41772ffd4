"""Decoding the long corpus's test split with the models a `budget` run trained, keras-luong
beside OpenNMT-py 3.5.1: the first call (compiling included) and the second apart.

    make onmt-venv
    python -m benchmarks.opennmt budget --data ../shared/data/multi30k-en-de --minutes 10
    python -m benchmarks.opennmt decode --engines jax,tensorflow,torch,opennmt \
        --model .cache/opennmt-budget/budget-jax.keras --json docs/results/opennmt_decode.json

It reads the `budget` workdir (`--workdir`, the same default): keras-luong's saved model
(`budget-<backend>.keras`, or `--model`: one file for every backend, since a `.keras` file
loads on any) and OpenNMT-py's last checkpoint at `--threads`, the test split's pieces and
references. Each engine decodes in processes of its own, on the same threads, with
beam `--beam` and length penalty `--length-penalty` (GNMT's; OpenNMT-py's `wu`):

- keras-luong: one process loads the model and calls `translate(sources,
  sampler=BeamSearchSampler(...))` twice; the table gives the process's time from its start
  to the first call's end (Python, Keras and the model loaded, the first call compiling its
  generators), the first call alone, and the second;
- OpenNMT-py: its `translate` command, run twice (each a process that loads the checkpoint,
  whose decoding is eager: its two calls are alike).

sacreBLEU scores each call's output against the references (`tokenize="none"`). `--json`
writes the table and each engine's figures (`jax_first`, `opennmt_first`, ...) to the results
file the OpenNMT-py page quotes. Run nothing else beside it: on a 2-core machine any other job
is measured too.
"""

import argparse
import json
import os
import sys
import time

from benchmarks import harness
from benchmarks.opennmt import budget, common


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=".cache/opennmt-budget", help="a budget run's")
    parser.add_argument("--engines", default="jax,opennmt", help="jax, tensorflow, torch, opennmt")
    parser.add_argument(
        "--model",
        help="one saved keras-luong model for every backend in --engines (a .keras file loads "
        "on any backend; default: each backend's own budget-<backend>.keras in --workdir)",
    )
    parser.add_argument("--threads", type=int, default=2, choices=[1, 2])
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--length-penalty", type=float, default=1.0)
    parser.add_argument(
        "--onmt-python", default=os.path.join(harness.ROOT, ".venv-onmt", "bin", "python")
    )
    parser.add_argument("--output", help="append the table (markdown) to this file")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    parser.add_argument("--worker", choices=["keras"], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def keras_worker(args, started):
    """Loads the budget's model and decodes the test split twice; its figures as JSON, the
    times from `started` (the wall clock when the parent started this process)."""
    import keras

    from keras_luong import BeamSearchSampler

    sources = harness.read_lines(args, "test.src.txt")
    model = keras.saving.load_model(model_path(args, keras.backend.backend()))
    sampler = BeamSearchSampler(num_beams=args.beam, length_penalty=args.length_penalty)
    loaded = time.time()
    calls = []
    for _ in range(2):
        call_started = time.perf_counter()
        hypotheses = model.translate(sources, sampler=sampler)
        calls.append(
            {"seconds": time.perf_counter() - call_started, "bleu": budget.bleu(args, hypotheses)}
        )
    return {
        "sentences": len(sources),
        "load_seconds": loaded - started,
        "process_to_first_seconds": loaded - started + calls[0]["seconds"],
        "calls": calls,
    }


def model_path(args, backend):
    """The saved model `backend` decodes: `--model`, else the budget's own for it."""
    return args.model or harness.path(args, f"budget-{backend}.keras")


def run_keras(args, engine):
    model = model_path(args, engine)
    if not os.path.exists(model):
        raise ValueError(
            f"No {model}: run `python -m benchmarks.opennmt budget --engines {engine}` first"
        )
    command = [*common.pinned(args.threads), sys.executable, "-m", __spec__.name]
    command += ["--worker", "keras", "--workdir", args.workdir, "--threads", str(args.threads)]
    command += ["--model", model] if args.model else []
    command += ["--beam", str(args.beam), "--length-penalty", str(args.length_penalty)]
    env = common.thread_env(engine, args.threads)
    env["DECODE_STARTED"] = repr(time.time())  # the worker's clock starts with its process
    return harness.worker_result(command, env, f"keras-luong on {engine}")


def run_opennmt(args):
    checkpoint, _ = budget.last_checkpoint(args, args.threads)
    if checkpoint is None:
        raise ValueError(
            f"No OpenNMT-py checkpoint in {args.workdir}/onmt-{args.threads}: run the budget first"
        )
    env = common.thread_env("opennmt", args.threads)
    env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    calls = []
    for _ in range(2):
        seconds, hypotheses = budget.onmt_translate(args, checkpoint, env, "decode-onmt.hyp")
        calls.append({"seconds": seconds, "bleu": budget.bleu(args, hypotheses)})
    return {"sentences": len(hypotheses), "checkpoint": checkpoint, "calls": calls}


COLUMNS = [
    ("engine", "engine"),
    ("process", "process start to first call's end, s"),
    ("first", "first call, s"),
    ("second", "second call, s"),
    ("bleu", "test BLEU"),
    ("versus", "first call / OpenNMT-py's"),
]


def rows(results):
    """One row of strings per engine (`COLUMNS`' keys). OpenNMT-py's call is its `translate`
    command, a process of its own: its first call is the whole process."""
    reference = dict(results).get("opennmt")
    found = []
    for engine, r in results:
        first, second = (c["seconds"] for c in r["calls"])
        versus = first / reference["calls"][0]["seconds"] if reference else None
        found.append(
            {
                "engine": "OpenNMT-py 3.5.1" if engine == "opennmt" else f"keras-luong ({engine})",
                "process": f"{r.get('process_to_first_seconds', first):.1f}",
                "first": f"{first:.1f}",
                "second": f"{second:.1f}",
                "bleu": f"{r['calls'][0]['bleu']:.2f}",
                "versus": "-" if versus is None else f"{versus:.2f}",
            }
        )
    return found


def table(args, results):
    lines = [
        f"The long corpus's test split ({results[0][1]['sentences']} sentences), beam "
        f"{args.beam}, length penalty {args.length_penalty:g}, {args.threads} threads:",
        "",
        "| " + " | ".join(label for _, label in COLUMNS) + " |",
        "|---|" + "---:|" * (len(COLUMNS) - 1),
    ]
    for row in rows(results):
        lines.append("| " + " | ".join(row[key] for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def write_json(args, results):
    """The results file a page quotes (`docs/results/<name>.json`): the rows, and each
    engine's figures by name (`jax_first`, `opennmt_first`, ...)."""
    found = rows(results)
    figures = {"sentences": f"{results[0][1]['sentences']:,}"}
    for (engine, _), row in zip(results, found, strict=True):
        figures.update({f"{engine}_{key}": row[key] for key, _ in COLUMNS[1:]})
    settings = {"beam": str(args.beam), "length_penalty": f"{args.length_penalty:g}"}
    settings["threads"] = str(args.threads)
    harness.write_results(args.json, found, columns=COLUMNS, figures=figures, settings=settings)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(keras_worker(args, float(os.environ["DECODE_STARTED"]))))
        return
    engines = args.engines.split(",")
    unknown = set(engines) - {"jax", "tensorflow", "torch", "opennmt"}
    if unknown:
        raise ValueError(f"Invalid value for argument --engines: unknown {sorted(unknown)}")
    if "opennmt" in engines and not os.path.exists(args.onmt_python):
        raise ValueError(f"No OpenNMT-py Python at {args.onmt_python}: run `make onmt-venv`")
    results = []
    for engine in engines:
        result = run_opennmt(args) if engine == "opennmt" else run_keras(args, engine)
        print(json.dumps({"engine": engine, **result}), flush=True)
        results.append((engine, result))
    common.write_output(args, table(args, results))
    if args.json:
        write_json(args, results)


if __name__ == "__main__":
    main()
