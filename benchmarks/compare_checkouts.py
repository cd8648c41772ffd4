"""The same timings on two checkouts of keras-luong in one process, interleaved: is a change
speed-neutral?

    git worktree add /tmp/baseline <commit>
    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.compare_checkouts --baseline /tmp/baseline

The baseline's `keras_luong` is copied into a temporary folder as `keras_luong_baseline` (its
imports renamed), so both versions load side by side and share one process, one set of
compiled kernels and one stretch of the machine's noise (separate processes on a shared
machine differed by up to 35% between two runs of the same checkout). Each version builds
`LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)` (input feeding, global general
attention) from the same seed and times, in alternating order: a train step (B=64,
S=T=30, with padding), greedy `generate` and beam-4 `generate` (B=64, 20 steps). It prints
the median of every call and the ratio this checkout / baseline (1.00: the same speed).
On torch, `OMP_NUM_THREADS=1` keeps another process on the machine from skewing the ratios.
"""

import argparse
import tempfile

from benchmarks.harness import batch_data, interleaved_medians, load_baseline, print_ratios

CASES = ("train step", "greedy", "beam 4")


def runs_of(package, data):
    """The timed calls of one version's model."""
    import keras

    source, target = data
    keras.utils.set_random_seed(0)
    model = package.LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=keras.backend.backend() != "torch",
    )
    beam = package.BeamSearchSampler(4, length_penalty=0.0)  # the same in every version
    return {
        "train step": lambda: model.train_on_batch((source, target[:, :-1]), target[:, 1:]),
        "greedy": lambda: model.generate(source, 20),
        "beam 4": lambda: model.generate(source, 20, sampler=beam),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the other checkout's root folder")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3, help="calls per version and round")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args()
    import keras_luong

    data = batch_data()
    with tempfile.TemporaryDirectory() as folder:
        versions = {
            "this": runs_of(keras_luong, data),
            "baseline": runs_of(load_baseline(args.baseline, folder), data),
        }
        medians = interleaved_medians(versions, args.cases, args.rounds, args.calls)
    print_ratios(medians, args.cases, "this", "baseline", args.rounds, args.calls, args.json)


if __name__ == "__main__":
    main()
