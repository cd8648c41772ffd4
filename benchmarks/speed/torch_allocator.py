"""How much of a torch training step on a CPU goes to glibc mapping fresh pages? The recipe's
training step (the model and batch of `torch_step_profile.py`: B=64, S=T=28, 8,000 subwords)
timed in two worker processes, one with glibc's `malloc` as the process starts with it and one
after `keras_luong.training.allocator.reuse_large_blocks()` (its mmap and trim thresholds raised to
1 GiB, as `python -m keras_luong.train` raises them on torch), started in turn, their order
reversed every other round:

    KERAS_BACKEND=torch OMP_NUM_THREADS=2 python -m benchmarks.speed torch_allocator

Each worker trains two steps untimed, then times `--calls` steps and prints their median. The
script prints each round's two medians and their ratio (raised / as it is; below 1: faster),
and the median of the rounds' ratios. The workers get the environment without glibc's
`MALLOC_*` variables, so that "as it is" is glibc's default. `--json FILE` writes the rounds
and the ratios' median, lowest and highest (`ratio`, `ratio_low`, `ratio_high`) to the results
file the pages quote. Run nothing else beside it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks import harness

SETTINGS = ("as it is", "raised")


def worker(args):
    """One process's median step time, in seconds, with the thresholds `args.worker` says."""
    from keras_luong.training.allocator import reuse_large_blocks

    if args.worker == "raised" and not reuse_large_blocks():
        raise SystemExit("this C library has no mallopt (not glibc): nothing to compare")
    from benchmarks.harness import recipe_train_step

    step = recipe_train_step(args.vocabulary, args.batch, args.length)
    step()
    step()
    times = []
    for _ in range(args.calls):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_worker(args, setting):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    command = [sys.executable, "-m", __spec__.name, "--worker", setting]
    command += ["--calls", str(args.calls), "--vocabulary", str(args.vocabulary)]
    command += ["--batch", str(args.batch), "--length", str(args.length)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the worker ({setting}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=9, help="timed steps a worker")
    parser.add_argument("--vocabulary", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=28)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    parser.add_argument("--worker", choices=SETTINGS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("rounds", "calls", "vocabulary", "batch", "length"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, received {getattr(args, name)}")
    import keras

    if keras.backend.backend() != "torch":
        parser.error(f"run it with KERAS_BACKEND=torch, received {keras.backend.backend()!r}")
    if args.worker:
        print(json.dumps(worker(args)))
        return
    print(
        f"torch, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, B={args.batch}, "
        f"S=T={args.length}, vocabulary {args.vocabulary}, {args.calls} timed steps a worker"
    )
    print(f"{'round':>5} {'as it is ms':>12} {'raised ms':>10} {'ratio':>6}")
    ratios, rounds = [], []
    for number in range(1, args.rounds + 1):
        order = SETTINGS if number % 2 else SETTINGS[::-1]
        seconds = {setting: run_worker(args, setting) for setting in order}
        rounds.append(seconds)
        ratios.append(seconds["raised"] / seconds["as it is"])
        print(
            f"{number:>5} {seconds['as it is'] * 1e3:>12.0f} {seconds['raised'] * 1e3:>10.0f} "
            f"{ratios[-1]:>6.2f}",
            flush=True,
        )
    print(f"raised / as it is, median over {args.rounds} rounds: {statistics.median(ratios):.2f}")
    if args.json:
        write_json(args, rounds)


def write_json(args, rounds):
    """The results file: a row per round (each setting's median step in ms, their ratio) and
    the ratios' median, lowest and highest."""
    ratios = [seconds["raised"] / seconds["as it is"] for seconds in rounds]
    rows = [
        {
            "round": str(number),
            "as_it_is": f"{seconds['as it is'] * 1e3:.0f}",
            "raised": f"{seconds['raised'] * 1e3:.0f}",
            "ratio": f"{ratio:.2f}",
        }
        for number, (seconds, ratio) in enumerate(zip(rounds, ratios, strict=True), 1)
    ]
    figures = {"ratio": f"{statistics.median(ratios):.2f}", "rounds": str(len(rounds))}
    figures |= {"ratio_low": f"{min(ratios):.2f}", "ratio_high": f"{max(ratios):.2f}"}
    settings = {"threads": os.environ.get("OMP_NUM_THREADS", "unset")}
    settings |= harness.settings_of(args, "batch", "length", "vocabulary")
    harness.write_results(args.json, rows, figures=figures, settings=settings)


if __name__ == "__main__":
    main()
