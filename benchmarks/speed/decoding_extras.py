"""What the coverage penalty and n-gram blocking cost: beam search with each (and greedy with
n-gram blocking) over the same decoding without, in one run, interleaved rounds.

    KERAS_BACKEND=jax python -m benchmarks.speed decoding_extras [--rounds 7] [--calls 3]

The sizes of the comparison with tensorflow-addons (B=64 sources of length 30, 30 steps, all
of them run: `stop_token_ids=None`; 256 units, vocabulary 8000, beam 5), a LuongSeq2Seq with
global/general attention and input feeding. Prints each setting's median time and its ratio
to the same sampler without the option (the goal: at most 1.15). `--json FILE` writes the
results file a page quotes (`figures_of`).
"""

import argparse
import statistics
import time

import keras
import numpy as np

from benchmarks import harness
from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocabulary", type=int, default=8000)
    parser.add_argument("--beams", type=int, default=5)
    parser.add_argument("--ngram", type=int, default=3)
    parser.add_argument("--coverage-penalty", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3, help="calls per sample")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    source = rng.integers(3, args.vocabulary, (args.batch, args.length)).astype("int32")
    model = LuongSeq2Seq(args.vocabulary, args.vocabulary, units=args.units)
    model((source[:1], source[:1, :2]))
    samplers = {
        "greedy": GreedySampler(),
        f"greedy, no_repeat_ngram_size={args.ngram}": GreedySampler(
            no_repeat_ngram_size=args.ngram
        ),
        f"beam {args.beams}": BeamSearchSampler(args.beams),
        f"beam {args.beams}, coverage_penalty={args.coverage_penalty:g}": BeamSearchSampler(
            args.beams, coverage_penalty=args.coverage_penalty
        ),
        f"beam {args.beams}, no_repeat_ngram_size={args.ngram}": BeamSearchSampler(
            args.beams, no_repeat_ngram_size=args.ngram
        ),
        f"beam {args.beams}, both": BeamSearchSampler(
            args.beams, coverage_penalty=args.coverage_penalty, no_repeat_ngram_size=args.ngram
        ),
    }

    def run(sampler):
        return model.generate(source, args.length, sampler=sampler, stop_token_ids=None)

    for sampler in samplers.values():
        run(sampler)  # compile each once
    times = {name: [] for name in samplers}
    for _ in range(args.rounds):
        for name, sampler in samplers.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                run(sampler)
            times[name].append((time.perf_counter() - start) / args.calls)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"backend {keras.backend.backend()}: B={args.batch}, S=L={args.length}, units "
        f"{args.units}, vocabulary {args.vocabulary}, medians of {args.rounds} interleaved rounds "
        f"of {args.calls} calls"
    )
    figures = figures_of(medians, f"beam {args.beams}")
    for name, median in medians.items():
        print(f"{name:42s} {median * 1e3:9.1f} ms   {figures[harness.figure_key(name)]:>5}x")
    if args.json:
        settings = harness.settings_of(
            args, "batch", "length", "units", "vocabulary", "beams", "ngram", "rounds", "calls"
        )
        settings["coverage_penalty"] = f"{args.coverage_penalty:g}"
        harness.write_figures(args.json, figures, settings)


def figures_of(medians, beam):
    """Each setting's median time over its sampler's without options (`greedy` for the
    greedy settings, `beam`'s for the others), keyed by `figure_key` of its name
    (`beam_5_coverage_penalty_0_2`), and each one's ms (`greedy_ms`)."""
    figures = {}
    for name, median in medians.items():
        reference = medians["greedy" if name.startswith("greedy") else beam]
        key = harness.figure_key(name)
        figures[key] = f"{median / reference:.2f}"
        figures[f"{key}_ms"] = f"{1e3 * median:.0f}"
    return figures


if __name__ == "__main__":
    main()
