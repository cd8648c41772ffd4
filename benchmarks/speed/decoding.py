"""Decoding speed: beam search against greedy, a second `generate` against the first, and
`generate` on one sentence against its compiled function called directly.

    KERAS_BACKEND=jax python -m benchmarks.speed decoding [--rounds 5] [--beams 4]

B sources of length S decoded for T steps by a LuongSeq2Seq (global/general, input feeding,
256 units). Every decoding runs all T steps (`stop_token_ids=None`), so greedy and beam do
the same number of steps whatever the untrained model emits. Prints, measured in this one run
with interleaved rounds (medians):
- first/second: the first `generate` call (generator built and compiled) over the second
  call with the same settings and shapes (cached: no trace);
- beam/greedy: a warm beam-`--beams` call over a warm greedy call;
- one sentence (B=1, greedy, warm; 10 calls a sample): `generate` over the compiled generator
  called directly (`generator.predict_on_batch`), and Keras' `predict` (a per-call input
  pipeline, what `generate` used to run) over the same direct call. The issue's sentence
  shape: `--source-length 30 --steps 30 --vocabulary 8000`.

`--json FILE` writes the results file a page quotes: each median in ms and each ratio, by
name (`first`, `first_over_second`, `beam_over_greedy`, `sentence_generate`,
`generate_over_direct`, ...).
"""

import argparse
import statistics
import time

import keras
import numpy as np

from benchmarks import harness
from keras_luong import BeamSearchSampler, LuongSeq2Seq


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    source = rng.integers(3, args.vocabulary, (args.batch, args.source_length)).astype("int32")

    def make_model():
        model = LuongSeq2Seq(args.vocabulary, args.vocabulary, units=args.units)
        model((source[:1], source[:1, :2]))
        return model

    greedy = {"sampler": "greedy", "stop_token_ids": None}
    beam = {"sampler": BeamSearchSampler(args.beams), "stop_token_ids": None}
    firsts, seconds = [], []
    for _ in range(args.rounds):
        model = make_model()
        firsts.append(timed(lambda m=model: m.generate(source, args.steps, **greedy)))
        seconds.append(timed(lambda m=model: m.generate(source, args.steps, **greedy)))
    model = make_model()
    model.generate(source, args.steps, **greedy)  # compile both once
    model.generate(source, args.steps, **beam)
    greedy_times, beam_times = [], []
    for _ in range(args.rounds):
        greedy_times.append(timed(lambda: model.generate(source, args.steps, **greedy)))
        beam_times.append(timed(lambda: model.generate(source, args.steps, **beam)))

    one = source[:1]
    generator = model.generator(args.steps, **greedy)
    single = {
        "generate": lambda: model.generate(one, args.steps, **greedy),
        "direct": lambda: generator.predict_on_batch(one),
        "predict": lambda: generator.predict(one, verbose=0),
    }
    for run in single.values():
        run()  # compile for B=1
    single_times = {name: [] for name in single}
    for _ in range(args.rounds * 4):
        for name, run in single.items():
            single_times[name].append(timed(lambda run=run: [run() for _ in range(10)]) / 10)
    single_times = {name: statistics.median(t) for name, t in single_times.items()}

    times = {
        "first": statistics.median(firsts),
        "second": statistics.median(seconds),
        "greedy": statistics.median(greedy_times),
        "beam": statistics.median(beam_times),
        **{f"sentence_{name}": value for name, value in single_times.items()},
    }
    print(
        f"backend {keras.backend.backend()}: B={args.batch}, S={args.source_length}, "
        f"T={args.steps}, units {args.units}, vocabulary {args.vocabulary}, "
        f"{args.rounds} rounds (medians)"
    )
    figures = figures_of(times)
    print(f"generate, first call   {figures['first']:>9} ms")
    print(f"generate, second call  {figures['second']:>9} ms   first/second "
          f"{figures['first_over_second']:>6}")  # fmt: skip
    print(f"greedy (warm)          {figures['greedy']:>9} ms")
    print(f"beam {args.beams} (warm)          {figures['beam']:>9} ms   "
          f"beam/greedy {figures['beam_over_greedy']:>5}")  # fmt: skip
    print(f"B=1 direct call        {figures['sentence_direct']:>9} ms")
    print(f"B=1 generate           {figures['sentence_generate']:>9} ms   "
          f"generate/direct {figures['generate_over_direct']:>5}")  # fmt: skip
    print(f"B=1 predict            {figures['sentence_predict']:>9} ms   "
          f"predict/direct {figures['predict_over_direct']:>5}")  # fmt: skip
    if args.json:
        settings = harness.settings_of(
            args, "batch", "source_length", "steps", "units", "vocabulary", "beams", "rounds"
        )
        harness.write_figures(args.json, figures, settings)


def figures_of(times):
    """The medians (seconds) as the page quotes them: each in ms, and the ratios."""
    figures = {name: f"{1e3 * value:.1f}" for name, value in times.items()}
    figures["first_over_second"] = f"{times['first'] / times['second']:.1f}"
    figures["beam_over_greedy"] = f"{times['beam'] / times['greedy']:.2f}"
    for name in ("generate", "predict"):
        ratio = times[f"sentence_{name}"] / times["sentence_direct"]
        figures[f"{name}_over_direct"] = f"{ratio:.2f}"
    return figures


if __name__ == "__main__":
    main()
