"""What `torch.compile` does for decoding on torch: the first call's time, and the warm time
over the same generator run eagerly, for greedy and beam search.

    KERAS_BACKEND=torch python -m benchmarks.speed torch_compile [--batch 1] [--rounds 5]

The sizes of benchmarks/speed/decoding_vs_tfa.py (B sources of length 30, embedding 64, a biLSTM
encoder, an input-feeding decoder of 256 units with the general score, vocabulary 8000, 30
steps, all of them run: `stop_token_ids=None`, beam 5). `model.generator(...)` is the
`keras.Model` that `generate` calls; with `jit_compile = True` Keras compiles its predict
step with `torch.compile`. Decoding with torch is eager by default: this script measures
what compiling would buy, and at what first-call cost. Each run compiles into an empty Inductor
cache (a new temporary folder, removed at the end), so that its first call is what a first run
pays. `--json FILE` writes the results file a page quotes (`figures_of`, per sampler).
"""

import argparse
import os
import statistics
import tempfile
import time

import keras
import numpy as np

from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3, help="calls per sample")
    parser.add_argument("--samplers", default="greedy,beam")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args()
    if keras.backend.backend() != "torch":
        raise SystemExit("run with KERAS_BACKEND=torch")
    # An empty Inductor cache, removed afterwards.
    with tempfile.TemporaryDirectory(prefix="torch_compile_") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        measure(args)


def measure(args):
    """Compiles and times each of `args.samplers`; prints, and writes `args.json`."""
    import torch

    keras.utils.set_random_seed(0)
    source = np.random.default_rng(0).integers(3, 7999, (args.batch, 30)).astype("int32")
    model = LuongSeq2Seq(8000, 8000, units=256, embedding_dim=64)
    model((source[:1], source[:1, :2]))
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs: B={args.batch}, "
        f"S=L=30, 256 units, vocabulary 8000; medians of {args.rounds} interleaved rounds "
        f"of {args.calls} calls"
    )
    figures = {}
    for name in args.samplers.split(","):
        sampler = GreedySampler() if name == "greedy" else BeamSearchSampler(5)
        eager = model.generator(30, sampler, stop_token_ids=None)
        compiled = type(eager)(model, 30, sampler, ())
        compiled.jit_compile = True
        expected = eager.generate(source, args.batch)
        start = time.perf_counter()
        ids = compiled.generate(source, args.batch)
        first = time.perf_counter() - start
        if not np.array_equal(ids, expected):
            differ = np.asarray(ids) != np.asarray(expected)
            rows = np.any(np.reshape(differ, (args.batch, -1)), axis=1)
            raise SystemExit(
                f"{name}: the compiled generator decoded other ids in {rows.sum()} of "
                f"{args.batch} rows: {np.flatnonzero(rows).tolist()}"
            )
        times = {"eager": [], "compiled": []}
        for _ in range(args.rounds):
            for kind, generator in (("eager", eager), ("compiled", compiled)):
                start = time.perf_counter()
                for _ in range(args.calls):
                    generator.generate(source, args.batch)
                times[kind].append((time.perf_counter() - start) / args.calls)
        found = figures_of(
            name, first, statistics.median(times["eager"]), statistics.median(times["compiled"])
        )
        figures |= found
        print(
            f"{name:6s} first compiled call {found[f'{name}_first']:>6} s   eager "
            f"{found[f'{name}_eager']:>7} ms   compiled {found[f'{name}_compiled']:>7} ms   "
            f"compiled/eager {found[f'{name}_ratio']:>5}   calls to repay the compile "
            f"{found[f'{name}_repay']:>8}"
        )
    if args.json:
        from benchmarks import harness

        settings = harness.settings_of(args, "batch", "rounds", "calls")
        harness.write_figures(args.json, figures, settings)


def figures_of(name, first, eager, compiled):
    """A sampler's figures (seconds in): the first compiled call in s (`greedy_first`), the
    warm eager and compiled calls in ms, compiled over eager (`greedy_ratio`), and the calls
    after which the time saved pays for the first call (`greedy_repay`, `"never"` where the
    compiled call is no faster)."""
    return {
        f"{name}_first": f"{first:.1f}",
        f"{name}_eager": f"{1e3 * eager:.1f}",
        f"{name}_compiled": f"{1e3 * compiled:.1f}",
        f"{name}_ratio": f"{compiled / eager:.2f}",
        # Compiled calls no faster than eager ones never repay the first.
        f"{name}_repay": f"{first / (eager - compiled):,.0f}" if compiled < eager else "never",
    }


if __name__ == "__main__":
    main()
