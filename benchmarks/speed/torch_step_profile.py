"""Where does a training step's time go on torch? The default model at the translation
recipe's sizes (8,000 subwords a side, units 256, embeddings 128, dropout 0.3, every weight
uniform in ±0.1, Adam 2e-3 with global norm 5, `SequenceLoss(label_smoothing=0.1)`) trained
on one batch (B=64, S=T=28 by default, with padding), profiled by torch's profiler:

    KERAS_BACKEND=torch OMP_NUM_THREADS=2 python -m benchmarks.speed torch_step_profile

It prints the median time of a step, each operation's share of the profiled steps' CPU time
(its own time, the operations it calls excluded; the `--rows` largest), and the share of the
matrix products (`mm`, `bmm`, `addmm`) together: how much of a step is arithmetic that
another engine of the same model (OpenNMT-py's) must also do, against the cost of running
operation by operation. `--reuse-large-blocks` profiles with glibc's `malloc` reusing large
blocks (`keras_luong.training.allocator`), as `python -m keras_luong.train` trains on torch.
"""

import argparse

PRODUCTS = ("aten::mm", "aten::bmm", "aten::addmm")


def main():
    from benchmarks.harness import interleaved_medians, recipe_train_step

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=28)
    parser.add_argument("--vocabulary", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=3, help="profiled steps")
    parser.add_argument("--rows", type=int, default=15)
    parser.add_argument(
        "--reuse-large-blocks",
        action="store_true",
        help="profile with glibc's malloc reusing large blocks (keras_luong.training.allocator)",
    )
    args = parser.parse_args()
    import keras

    if keras.backend.backend() != "torch":
        parser.error(f"run it with KERAS_BACKEND=torch, received {keras.backend.backend()!r}")
    import torch
    from torch.profiler import ProfilerActivity, profile

    from keras_luong.training.allocator import reuse_large_blocks

    if args.reuse_large_blocks and not reuse_large_blocks():
        parser.error("--reuse-large-blocks: this C library has no mallopt (not glibc)")
    step = recipe_train_step(args.vocabulary, args.batch, args.length)
    step()  # the optimizer's variables built before the timed and profiled steps
    median = interleaved_medians({"recipe": {"step": step}}, ["step"], rounds=8, calls=1)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(args.steps):
            step()
    events = profiler.key_averages()
    total = sum(event.self_cpu_time_total for event in events)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, B={args.batch}, "
        f"S=T={args.length}, vocabulary {args.vocabulary}"
    )
    print(f"median step: {median['recipe', 'step'] * 1e3:.0f} ms")
    print(f"{'operation':<52} {'share':>6} {'calls/step':>10}")
    for event in sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.rows]:
        share = event.self_cpu_time_total / total
        print(f"{event.key[:52]:<52} {share:6.1%} {event.count / args.steps:10.0f}")
    products = sum(e.self_cpu_time_total for e in events if e.key in PRODUCTS) / total
    print(f"matrix products ({', '.join(PRODUCTS)}): {products:.1%} of the step's CPU time")


if __name__ == "__main__":
    main()
