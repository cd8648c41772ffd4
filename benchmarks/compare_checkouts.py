"""The same timings on two checkouts of keras-luong, interleaved: is a change speed-neutral?

    git worktree add /tmp/baseline <commit>
    KERAS_BACKEND=jax .venv/bin/python benchmarks/compare_checkouts.py --baseline /tmp/baseline

Each round runs one fresh process per checkout (its `keras_luong` first on the path), in
alternating order, and each process times, after a warm-up call: a train step of
`LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)` (input feeding, global general
attention; B=64, S=T=30, with padding), greedy `generate` and beam-4 `generate` (B=64, 20
steps). Medians over the rounds of each process's median, then the ratio this checkout /
baseline (1.00: the same speed). Processes on a shared machine are noisy: read ratios within
a few percent as equal, and run more `--rounds` to narrow them.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

CASES = ("train step", "greedy", "beam 4")


def worker(calls, cases):
    """Runs in a child process: the timings of this process' `keras_luong`, as JSON."""
    import time

    import keras

    from keras_luong import BeamSearchSampler, LuongSeq2Seq

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    batch, length, vocabulary = 64, 30, 1000
    source = rng.integers(3, vocabulary, (batch, length)).astype("int32")
    target = rng.integers(3, vocabulary, (batch, length + 1)).astype("int32")
    lengths = rng.integers(length // 2, length + 1, batch)
    source[np.arange(length)[None] >= lengths[:, None]] = 0
    target[:, 1:][np.arange(length)[None] >= lengths[:, None]] = 0
    model = LuongSeq2Seq(vocabulary, vocabulary, units=256, embedding_dim=128)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=keras.backend.backend() != "torch",
    )
    runs = {
        "train step": lambda: model.train_on_batch((source, target[:, :-1]), target[:, 1:]),
        "greedy": lambda: model.generate(source, 20),
        "beam 4": lambda: model.generate(source, 20, sampler=BeamSearchSampler(4)),
    }
    times = {}
    for name, run in runs.items():
        if name not in cases:
            continue
        run()  # compiles
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        times[name] = float(np.median(samples))
    print(json.dumps(times))


def run_checkout(checkout, calls, cases):
    env = dict(os.environ, PYTHONPATH=checkout, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", str(calls), "--cases", *cases],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="the other checkout's root folder")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=5, help="timed calls per case")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.cases)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkouts = {"this": here, "baseline": os.path.abspath(args.baseline)}
    results = {name: [] for name in checkouts}
    for round_ in range(args.rounds):
        order = list(checkouts) if round_ % 2 == 0 else list(checkouts)[::-1]
        for name in order:
            results[name].append(run_checkout(checkouts[name], args.calls, args.cases))
    import keras

    print(f"backend {keras.backend.backend()}, {args.rounds} rounds of {args.calls} calls")
    print(f"{'case':<12} {'this ms':>9} {'baseline ms':>12} {'ratio':>7}")
    for case in args.cases:
        this, base = (np.median([r[case] for r in results[n]]) * 1e3 for n in checkouts)
        print(f"{case:<12} {this:9.1f} {base:12.1f} {this / base:7.3f}")


if __name__ == "__main__":
    main()
