"""keras-luong's default model and recipe beside OpenNMT-py 3.5.1's: learning per epoch and speed.

    make onmt-venv   # OpenNMT-py 3.5.1 in .venv-onmt, over the project's torch
    python -m benchmarks.opennmt epochs --data ../shared/data/multi30k-en-de \\
        --corpus long --engines jax,opennmt --threads 1,2 --epochs 3 --output side.md

Both sides train the same model on the same SentencePiece pieces (one vocabulary of
`--vocabulary-size` pieces for both languages, trained here; OpenNMT-py reads the pieces as
text, and its vocabulary, the pieces its corpus holds, is padded to the same size): a
bidirectional LSTM encoder of 256 units (128 a direction), an LSTM decoder of 256 units with
global attention, general score and input feeding, embeddings of 128, dropout 0.3, every weight
uniform in ±0.1, Adam at 2·10⁻³ with the gradient clipped at global norm 5, label smoothing
0.1, batches of 2,048 tokens (batch size × the longer side, padded: each engine's own batcher,
both sorting pairs by length). keras-luong's side is the translation page's recipe as written
(`ReduceLROnPlateau` included; no `BleuCallback`, which OpenNMT-py's validation does not do
either); OpenNMT-py's is `encoder_type brnn`, `global_attention general`, `input_feed 1`,
`param_init 0.1`, `max_grad_norm 5`, `batch_type tokens`, `batch_size 2048`, and a
`bucket_size` of the training pairs: OpenNMT-py sorts and batches each bucket of that many
examples, one pass over the corpus, as keras-luong sorts an epoch (its default bucket of
262,144 examples is 87 passes over 3,000 pairs, and its training stops for minutes while it
reads them).

`--engines tensorflow-xla` trains on TensorFlow with `jit_compile=True` (XLA), which Keras
leaves off by default on a machine without a GPU. `--bucket-width` sets keras-luong's
`BucketedBatches(bucket_width=...)`: `auto` by default, as the recipe leaves it (no buckets on
torch and on TensorFlow without a GPU, buckets of 8 on JAX); `none` batches as OpenNMT-py does.

`--rounds N` runs the engines N times, their order reversed every other round, and takes each
keras-luong run's speed over the OpenNMT-py run of its own round, printing the ratios round by
round and their median: a CPU whose speed drifts over the command (a shared machine's does,
by more than the engines differ) then favours neither side.

Each run is a process pinned to its cores (`taskset`: core 1 for one thread, cores 0-1 for two)
with its engine's threads set to match: `OMP_NUM_THREADS`/`MKL_NUM_THREADS` for torch and
OpenNMT-py, `TF_NUM_INTRAOP_THREADS`/`TF_NUM_INTEROP_THREADS` for TensorFlow, and for JAX
XLA's Eigen pool switched off at one thread (`--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1`). Run nothing else beside it: on a 2-core machine any other job
is measured too. `--reuse-large-blocks` starts every engine's process with glibc's `malloc`
reusing large blocks (the thresholds that
`keras_luong.training.allocator.reuse_large_blocks()` sets, and `python -m keras_luong.train`
sets on torch): on a CPU, torch and OpenNMT-py otherwise map every logits-sized tensor afresh.
The table's heading says how `malloc` ran.

It prints, per engine and thread count:
- validation token accuracy (teacher forced, over every real target token and the end token,
  as OpenNMT-py computes it) after each epoch; OpenNMT-py validates every `--valid-steps` steps
  and its accuracy at an epoch's end is read off between the two nearest validations, its
  epoch counted from the sentences its log reports;
- training speed in target tokens per second (real tokens and the end token): keras-luong's
  the median of its epochs after the first (every shape compiled by then; the first alone
  with `--epochs 1`), over the training batches, OpenNMT-py's the median of its log intervals
  after the first, validation excluded in both;
- keras-luong's first epoch's speed too, which holds the compiling of one train function per
  batch shape (JAX, and TensorFlow with XLA; TensorFlow without it traces one per shape);
- the vocabulary and parameters of each model.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

from benchmarks.harness import path, read_lines, recipe_model, worker_result
from benchmarks.opennmt.common import (
    allocator_note,
    batching_flag,
    build_onmt_vocabulary,
    checked_engines,
    common_parser,
    onmt_config,
    pinned,
    prepare,
    read_onmt_log,
    set_allocator,
    thread_env,
    validation_accuracy,
    write_output,
    xla_flag,
)


def parse_args(argv=None):
    parser = common_parser(__doc__, ".cache/opennmt-epochs", valid_pairs=500)
    parser.add_argument("--threads", default="2", help="comma-separated: 1, 2")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the engines this many times, the order reversed every other round",
    )
    parser.add_argument(
        "--reuse-large-blocks",
        action="store_true",
        help="start every engine's process with glibc's malloc reusing large blocks "
        "(MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ at 1 GiB: the setting "
        "keras_luong.training.allocator.reuse_large_blocks() makes, and "
        "python -m keras_luong.train "
        "makes on torch)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, received {args.rounds}")
    return args


def keras_worker(args):
    """Trains the translation page's recipe; writes per-epoch figures as JSON to stdout."""
    import keras

    from benchmarks.harness import bucketed
    from keras_luong import SubwordVocabulary

    with open(path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources, targets = read_lines(args, "train.src.txt"), read_lines(args, "train.tgt.txt")
    valid_sources = read_lines(args, "valid.src.txt")
    valid_targets = read_lines(args, "valid.tgt.txt")
    model = recipe_model(subwords, args.seed, xla=args.jit_compile)
    train = bucketed(subwords, sources, targets, True, args.seed, args.bucket_width)
    train_tokens = sum(len(subwords.encode(t)) + 1 for t in targets)  # and the end token

    accuracy = validation_accuracy(model, subwords, valid_sources, valid_targets)

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs = []

        def on_epoch_begin(self, epoch, logs=None):
            self.started = time.perf_counter()

        def on_test_begin(self, logs=None):
            # Steps may still be running (JAX dispatches them asynchronously): wait for the
            # last update's weights before reading the clock.
            keras.ops.convert_to_numpy(model.trainable_variables[-1])
            self.trained = time.perf_counter() - self.started

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append(
                {
                    "train_seconds": self.trained,
                    "epoch_seconds": time.perf_counter() - self.started,
                    "loss": float(logs["loss"]),
                    "val_loss": float(logs["val_loss"]),
                    "val_accuracy": accuracy(),  # after the clock: not in its times
                }
            )

    clock = Clock()
    model.fit(
        train,
        validation_data=bucketed(
            subwords, valid_sources, valid_targets, False, args.seed, args.bucket_width
        ),
        epochs=args.epochs,
        shuffle=False,
        callbacks=[clock, keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=1)],
        verbose=0,
    )
    return {
        "parameters": model.count_params(),
        "vocabulary": len(subwords),
        "epochs": clock.epochs,
        "val_accuracy": [e["val_accuracy"] for e in clock.epochs],
        "tokens_per_second": train_tokens
        / statistics.median(e["train_seconds"] for e in clock.epochs[1:] or clock.epochs),
        "first_epoch_tokens_per_second": train_tokens / clock.epochs[0]["train_seconds"],
        "steps_per_epoch": len(train),
        "target_tokens_per_epoch": train_tokens,
    }


def run_keras(args, engine, threads):
    command = [*pinned(threads), sys.executable, "-m", __spec__.name, "--worker", "keras"]
    command += ["--workdir", args.workdir, "--epochs", str(args.epochs), "--seed", str(args.seed)]
    command += xla_flag(engine) + batching_flag(args)
    started = time.perf_counter()
    result = worker_result(command, thread_env(engine, threads), f"keras-luong on {engine}")
    result["wall_seconds"] = time.perf_counter() - started
    return result


def run_opennmt(args, threads, pairs):
    vocabulary = path(args, "onmt.vocab")
    env = thread_env("opennmt", threads)
    env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    # Enough steps for the epochs: OpenNMT-py's batcher replayed on the corpus sorted as it
    # sorts it (by source length, then target length with its start and end tokens), with
    # room to spare; the log's sentence count says where each epoch ends.
    pairs_lengths = zip(read_lines(args, "train.src"), read_lines(args, "train.tgt"), strict=True)
    lengths = sorted((len(s.split()), len(t.split()) + 2) for s, t in pairs_lengths)
    steps, rows, longest = 0, 0, 0
    for length in map(max, lengths):
        if (rows + 1) * max(longest, length) > 2048:
            steps, rows, longest = steps + 1, 0, 0
        rows, longest = rows + 1, max(longest, length)
    train_steps = math.ceil(1.15 * args.epochs * (steps + 1)) + args.valid_steps
    config = path(args, f"onmt-{threads}.yaml")
    with open(config, "w") as f:
        # A bucket of one pass over the corpus: each epoch sorted by length and batched once,
        # as keras-luong's batches are without buckets.
        vocabulary = os.path.abspath(vocabulary)
        f.write(onmt_config(args, threads, train_steps, vocabulary, bucket_size=pairs))
    onmt = [args.onmt_python, "-c"]
    build_onmt_vocabulary(args, config, env)
    started = time.perf_counter()
    done = subprocess.run(
        [*pinned(threads), *onmt, "from onmt.bin.train import main; main()", "-config", config],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    log = done.stdout + done.stderr
    with open(path(args, f"onmt-{threads}.log"), "w") as f:
        f.write(log)
    if done.returncode:
        raise RuntimeError(f"OpenNMT-py failed:\n{log[-3000:]}")
    return read_onmt_log(log, pairs, args.epochs, wall)


def rounds(engines, count):
    """(round, engine) in running order: the engines as given, then reversed, and so on, so
    that over an even number of rounds each engine runs first as often as second and a
    machine that speeds up or slows down over the run does not favour one of them."""
    for number in range(1, count + 1):
        for engine in engines if number % 2 else engines[::-1]:
            yield number, engine


def speed_ratios(results):
    """{(engine, threads): [tok/s over OpenNMT-py's tok/s, one per round]}, each keras-luong
    run over the OpenNMT-py run of its own round and thread count."""
    reference = {(t, r["round"]): r for e, t, r in results if e == "opennmt"}
    ratios = {}
    for engine, threads, r in results:
        other = reference.get((threads, r["round"]))
        if engine != "opennmt" and other is not None:
            ratio = r["tokens_per_second"] / other["tokens_per_second"]
            ratios.setdefault((engine, threads), []).append(ratio)
    return ratios


def table(args, results):
    epochs = range(1, args.epochs + 1)
    several = args.rounds > 1
    lines = [
        f"{args.corpus} corpus, {results[0][2]['pairs']} training pairs, seed {args.seed}, "
        f"keras-luong's bucket width {str(args.bucket_width).lower()}, {allocator_note()} "
        "in every engine:",
        "",
        "| engine | threads | "
        + ("round | " if several else "")
        + "vocabulary | parameters | "
        + " | ".join(f"val acc ep {e}" for e in epochs)
        + " | target tok/s | first epoch's tok/s | wall min |",
        "|---|---:|"
        + ("---:|" if several else "")
        + "---:|---:|"
        + "---:|" * len(epochs)
        + "---:|---:|---:|",
    ]
    for engine, threads, r in results:
        accuracy = [f"{100 * a:.1f}%" for a in r["val_accuracy"]]
        accuracy += ["-"] * (len(epochs) - len(accuracy))
        first = r["first_epoch_tokens_per_second"]
        first = "-" if first is None else f"{first:,.0f}"
        name = "OpenNMT-py 3.5.1" if engine == "opennmt" else f"keras-luong ({engine})"
        lines.append(
            f"| {name} | {threads} | "
            + (f"{r['round']} | " if several else "")
            + f"{r['vocabulary']:,} | {r['parameters']:,} | "
            f"{' | '.join(accuracy)} | "
            f"{r['tokens_per_second']:,.0f} | {first} | {r['wall_seconds'] / 60:.1f} |"
        )
    lines.append("")
    for (engine, threads), ratios in speed_ratios(results).items():
        text = f"keras-luong ({engine}) / OpenNMT-py, target tok/s at {threads} threads: "
        text += ", ".join(f"{ratio:.2f}×" for ratio in ratios)
        if len(ratios) > 1:
            text += f" (round by round; median {statistics.median(ratios):.2f}×)"
        lines.append(text + "  ")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(keras_worker(args)))
        return
    engines = checked_engines(args)
    set_allocator(args)
    pairs = prepare(args)
    results = []
    for threads in (int(t) for t in args.threads.split(",")):
        for number, engine in rounds(engines, args.rounds):
            if engine == "opennmt":
                result = run_opennmt(args, threads, pairs)
            else:
                result = run_keras(args, engine, threads)
            result.update(pairs=pairs, round=number)
            print(json.dumps({"engine": engine, "threads": threads, **result}), flush=True)
            results.append((engine, threads, result))
    write_output(args, table(args, results))


if __name__ == "__main__":
    main()
