"""What `torch.compile` does for decoding on torch: the first call's time, and the warm time
over the same generator run eagerly, for greedy and beam search.

    KERAS_BACKEND=torch python -m benchmarks.speed torch_compile [--batch 1] [--rounds 5]

The sizes of benchmarks/speed/decoding_vs_tfa.py (B sources of length 30, embedding 64, a biLSTM
encoder, an input-feeding decoder of 256 units with the general score, vocabulary 8000, 30
steps, all of them run: `stop_token_ids=None`, beam 5). `model.generator(...)` is the
`keras.Model` that `generate` calls; with `jit_compile = True` Keras compiles its predict
step with `torch.compile`. Decoding with torch is eager by default: this script measures
what compiling would buy, and at what first-call cost.
"""

import argparse
import os
import statistics
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
    args = parser.parse_args()
    if keras.backend.backend() != "torch":
        raise SystemExit("run with KERAS_BACKEND=torch")
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
            raise SystemExit(f"{name}: the compiled generator decoded other ids")
        times = {"eager": [], "compiled": []}
        for _ in range(args.rounds):
            for kind, generator in (("eager", eager), ("compiled", compiled)):
                start = time.perf_counter()
                for _ in range(args.calls):
                    generator.generate(source, args.batch)
                times[kind].append((time.perf_counter() - start) / args.calls)
        eager_time = statistics.median(times["eager"])
        compiled_time = statistics.median(times["compiled"])
        print(
            f"{name:6s} first compiled call {first:6.1f} s   eager {eager_time * 1e3:7.1f} ms"
            f"   compiled {compiled_time * 1e3:7.1f} ms   compiled/eager "
            f"{compiled_time / eager_time:5.2f}   calls to repay the compile "
            f"{first / max(eager_time - compiled_time, 1e-9):8.0f}"
        )


if __name__ == "__main__":
    main()
