"""What each decoding control costs: `generate`'s time with it over the same sampler's without
it, in one run.

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.speed decoding_controls \
        --json docs/results/decoding_controls_jax.json

The model is `LuongSeq2Seq(8000, 8000, units=256, embedding_dim=128)` (the recipe's sizes),
its end token's bias lowered so that no row ends early: every setting decodes all `--steps`
tokens of all `--batch` rows (64 sources of 20 ids), so a ratio is the control's own cost, not
a change in the outputs' lengths. The settings run in alternating order for `--rounds`
rounds, each compiled first (JAX, TensorFlow). Each call of a setting is paired with a call of
its sampler without controls, the two adjacent and in alternating order, and a ratio is the
median over those pairs: a drift in the machine's speed (PyTorch's CPU times move by 20%
between runs) reaches both calls of a pair. Run nothing else beside it. `--json` writes the
ratios (`figures`, keyed by `harness.figure_key` of the setting) and the rows to a results file that
the benchmarks page quotes.
"""

import argparse
import re
import statistics
import time

import numpy as np

from benchmarks import harness


def settings(steps):
    """`(label, base label, sampler, generate's keyword arguments)` rows."""
    from keras_luong import BeamSearchSampler, GreedySampler, RandomSampler

    prefix = {"prefix": np.tile(np.arange(10, 15, dtype="int32"), (1, 1))}
    rows = []
    for name, make in (
        ("greedy", GreedySampler),
        ("beam 5", lambda **k: BeamSearchSampler(5, **k)),
    ):
        rows += [
            (name, name, make(), {}),
            (f"{name}, min_length 5", name, make(min_length=5), {}),
            (f"{name}, banned unknown", name, make(banned_token_ids=(3,)), {}),
            (f"{name}, prefix of 5", name, make(), prefix),
            # What `translate(..., return_alignments=True)` and replace-unk add.
            (f"{name}, alignments", name, make(), {"return_attention_scores": True}),
        ]
    rows += [
        ("sampling", "greedy", RandomSampler(seed=0), {}),
        ("sampling, top-k 10", "greedy", RandomSampler(top_k=10, seed=0), {}),
        ("sampling, top-p 0.9", "greedy", RandomSampler(top_p=0.9, seed=0), {}),
    ]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument(
        "--only",
        metavar="REGEX",
        help="only the settings whose label matches, and their samplers without controls",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)

    import keras

    from keras_luong import LuongSeq2Seq

    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(8000, 8000, units=args.units, embedding_dim=args.units // 2)
    rng = np.random.default_rng(0)
    source = rng.integers(4, 8000, (args.batch, 20)).astype("int32")
    model((source[:1], source[:1]))
    bias = keras.ops.convert_to_numpy(model.projection.bias).copy()
    bias[model.end_token] = -1e4  # no row ends: every setting decodes every step
    model.projection.bias.assign(bias)
    rows = settings(args.steps)
    if args.only:
        matched = {label: base for label, base, *_ in rows if re.search(args.only, label)}
        rows = [row for row in rows if row[0] in matched or row[0] in matched.values()]

    def run(sampler, kwargs):
        extra = dict(kwargs)
        if "prefix" in extra:
            extra["prefix"] = np.repeat(extra["prefix"], args.batch, axis=0)
        started = time.perf_counter()
        model.generate(source, max_length=args.steps, sampler=sampler, batch_size=args.batch,
                       **extra)  # fmt: skip
        return time.perf_counter() - started

    for _, _, sampler, kwargs in rows:  # the compiles
        run(sampler, kwargs)
    plain = {label: (sampler, kwargs) for label, base, sampler, kwargs in rows if label == base}
    times = {label: [] for label, *_ in rows}
    ratios = {label: [] for label, *_ in rows}
    for number in range(args.rounds):
        order = rows if number % 2 == 0 else rows[::-1]
        for label, base, sampler, kwargs in order:
            for call in range(args.calls):
                if label == base:
                    times[label].append(run(sampler, kwargs))
                    continue
                if (number + call) % 2 == 0:
                    base_time, time_ = run(*plain[base]), run(sampler, kwargs)
                else:
                    time_, base_time = run(sampler, kwargs), run(*plain[base])
                times[label].append(time_)
                times[base].append(base_time)
                ratios[label].append(time_ / base_time)
    found = table(times, ratios, [(label, base) for label, base, _, _ in rows])
    print(f"backend {keras.backend.backend()}, {args.batch} sources, {args.steps} steps")
    print(f"{'setting':30} {'ms':>9} {'x its sampler':>14}")
    for row in found:
        print(f"{row['setting']:30} {row['ms']:>9} {row['ratio']:>14}")
    if args.json:
        figures = {
            harness.figure_key(row["setting"]): f"{float(row['ratio']):.2f}" for row in found
        }
        measured = {"sources": str(args.batch), "steps": str(args.steps)}
        measured.update(rounds=str(args.rounds), calls=str(args.calls))
        harness.write_results(args.json, found, figures=figures, settings=measured)


def table(times, ratios, settings):
    """A row per `(label, base label)` of `settings`: the setting, its median time in ms from
    `times` (each label's seconds), and the median of its `ratios` (each call's time over its
    paired call of the base; 1 for a base)."""
    rows = []
    for label, base in settings:
        median = statistics.median(times[label])
        ratio = 1.0 if label == base else statistics.median(ratios[label])
        rows.append({"setting": label, "ms": f"{1000 * median:.1f}", "ratio": f"{ratio:.3f}"})
    return rows


if __name__ == "__main__":
    main()
