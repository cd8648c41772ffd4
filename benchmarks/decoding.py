"""Decoding speed: beam search against greedy, and a second `generate` against the first.

    KERAS_BACKEND=jax python benchmarks/decoding.py [--rounds 5] [--beams 4]

B sources of length S decoded for T steps by a LuongSeq2Seq (global/general, input feeding,
256 units). Every decoding runs all T steps (`stop_token_ids=None`), so greedy and beam do
the same number of steps whatever the untrained model emits. Prints, measured in this one run
with interleaved rounds (medians):
- first/second: the first `generate` call (generator built and compiled) over the second
  call with the same settings and shapes (cached: no trace);
- beam/greedy: a warm beam-`--beams` call over a warm greedy call.
"""

import argparse
import statistics
import time

import keras
import numpy as np

from keras_luong import LuongSeq2Seq


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    source = rng.integers(3, args.vocabulary, (args.batch, args.source_length)).astype("int32")

    def make_model():
        model = LuongSeq2Seq(args.vocabulary, args.vocabulary, units=args.units)
        model((source[:1], source[:1, :2]))
        return model

    greedy = {"sampler": "greedy", "stop_token_ids": None}
    beam = {"sampler": "beam", "num_beams": args.beams, "stop_token_ids": None}
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

    first, second = statistics.median(firsts), statistics.median(seconds)
    greedy_time, beam_time = statistics.median(greedy_times), statistics.median(beam_times)
    print(
        f"backend {keras.backend.backend()}: B={args.batch}, S={args.source_length}, "
        f"T={args.steps}, units {args.units}, vocabulary {args.vocabulary}, "
        f"{args.rounds} rounds (medians)"
    )
    print(f"generate, first call   {first * 1e3:9.1f} ms")
    print(f"generate, second call  {second * 1e3:9.1f} ms   first/second {first / second:6.1f}")
    print(f"greedy (warm)          {greedy_time * 1e3:9.1f} ms")
    print(
        f"beam {args.beams} (warm)          {beam_time * 1e3:9.1f} ms   "
        f"beam/greedy {beam_time / greedy_time:5.2f}"
    )


if __name__ == "__main__":
    main()
