"""keras-luong's default model and recipe beside OpenNMT-py 3.5.1's: learning per epoch and speed.

    make onmt-venv   # OpenNMT-py 3.5.1 in .venv-onmt, over the project's torch
    python -m benchmarks.opennmt_side_by_side --data ../shared/data/multi30k-en-de \\
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

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

from benchmarks.harness import ROOT, bucket_width, path, read_lines, recipe_model, worker_result

KERAS_ENGINES = ("jax", "tensorflow", "tensorflow-xla", "torch")


def backend_of(engine):
    """The Keras backend an engine runs on: `tensorflow-xla` is TensorFlow with
    `jit_compile=True`, which Keras leaves off by default on a machine without a GPU."""
    return engine.removesuffix("-xla")


def xla_flag(engine):
    """The worker's flag for an engine that compiles with XLA."""
    return ["--jit-compile"] if engine.endswith("-xla") else []


def parse_args(argv=None):
    parser = common_parser(__doc__, ".cache/opennmt_side_by_side", valid_pairs=500)
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


def common_parser(doc, workdir, valid_pairs):
    """The arguments this script shares with `budget_side_by_side.py`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the Multi30k files (default: download)")
    parser.add_argument("--corpus", default="long", choices=["multi30k", "long"])
    parser.add_argument("--train-pairs", type=int, default=None, help="first pairs only")
    parser.add_argument("--valid-pairs", type=int, default=valid_pairs)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument(
        "--engines",
        default="jax,opennmt",
        help="jax, tensorflow, tensorflow-xla (jit_compile=True), torch, opennmt",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--bucket-width",
        type=bucket_width,
        default="auto",
        help="keras-luong's BucketedBatches: auto (the recipe's: none on torch, 8 elsewhere), "
        "a width, or none (each batch padded to its own longest, as OpenNMT-py pads; torch "
        "and TensorFlow only)",
    )
    parser.add_argument("--valid-steps", type=int, default=100, help="OpenNMT-py's")
    parser.add_argument("--workdir", default=workdir)
    parser.add_argument("--onmt-python", default=os.path.join(ROOT, ".venv-onmt", "bin", "python"))
    parser.add_argument("--output", help="append the tables (markdown) to this file")
    parser.add_argument("--worker", choices=["keras"], help=argparse.SUPPRESS)
    parser.add_argument("--jit-compile", action="store_true", help=argparse.SUPPRESS)
    return parser


def batching_flag(args):
    """The worker's `--bucket-width`."""
    return ["--bucket-width", str(args.bucket_width).lower()]


def checked_engines(args):
    """`--engines` as a list, each one known, OpenNMT-py's venv there if it is asked for."""
    engines = args.engines.split(",")
    unknown = set(engines) - {*KERAS_ENGINES, "opennmt"}
    if unknown:
        raise ValueError(f"Invalid value for argument --engines: unknown {sorted(unknown)}")
    if "opennmt" in engines and not os.path.exists(args.onmt_python):
        raise ValueError(f"No OpenNMT-py Python at {args.onmt_python}: run `make onmt-venv`")
    compiled = sorted({"jax", "tensorflow-xla"} & set(engines))
    if args.bucket_width is None and compiled:
        raise ValueError(
            "Invalid value for argument --bucket-width: none compiles a train step for almost "
            f"every batch on {compiled}. Received: --bucket-width none"
        )
    return engines


def write_output(args, text):
    print(text)
    if args.output:
        with open(args.output, "a") as f:
            f.write(text + "\n\n")


def build_onmt_vocabulary(args, config, env):
    build = "from onmt.bin.build_vocab import main; main()"
    subprocess.run([args.onmt_python, "-c", build, "-config", config, "-n_sample", "-1"], env=env,
                   check=True, capture_output=True)  # fmt: skip


# ----------------------------------------------------------------------------- the data


def prepare(args):
    """The corpus' texts, one SentencePiece model, and the pieces written for OpenNMT-py."""
    from benchmarks.harness import corpus
    from keras_luong import SubwordVocabulary

    os.makedirs(args.workdir, exist_ok=True)
    (train_src, train_tgt), (valid_src, valid_tgt) = corpus(
        args.data, args.corpus, args.train_pairs, args.valid_pairs
    )
    vocabulary = SubwordVocabulary.train(
        train_src + train_tgt, vocabulary_size=args.vocabulary_size, seed=0
    )
    with open(path(args, "pieces.model"), "wb") as f:
        f.write(vocabulary.model)
    texts = {"train.src": train_src, "train.tgt": train_tgt}
    texts.update({"valid.src": valid_src, "valid.tgt": valid_tgt})
    for name, lines in texts.items():
        with open(path(args, name + ".txt"), "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
        with open(path(args, name), "w", encoding="utf-8") as f:
            f.writelines(" ".join(vocabulary.tokenize(line)) + "\n" for line in lines)
    return len(train_src)


# glibc's malloc reusing large blocks from a process's start: the thresholds that
# keras_luong.training.allocator.reuse_large_blocks() sets in a running one (1 GiB).
REUSE_LARGE_BLOCKS = {
    "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
}


def set_allocator(args):
    """With `--reuse-large-blocks`, puts glibc's thresholds in this process's environment,
    which every engine's process starts from (`thread_env`)."""
    if args.reuse_large_blocks:
        os.environ.update(REUSE_LARGE_BLOCKS)


def allocator_note():
    """How glibc's malloc runs in the engines' processes, as the environment sets it."""
    set_here = {k: v for k, v in sorted(os.environ.items()) if k.startswith("MALLOC_")}
    if not set_here:
        return "glibc's malloc as it starts"
    return "glibc's malloc with " + ", ".join(f"{k}={v}" for k, v in set_here.items())


def pinned(threads):
    """`taskset` for `threads` cores (core 1 alone, or cores 0-1)."""
    return ["taskset", "-c", "1" if threads == 1 else ",".join(map(str, range(threads)))]


def thread_env(engine, threads):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    backend = backend_of(engine)
    if engine in KERAS_ENGINES:
        env["KERAS_BACKEND"] = backend
    if backend == "tensorflow":
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads))
    if engine == "jax" and threads == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    return env


# ----------------------------------------------------------------------------- keras-luong


def validation_accuracy(model, subwords, valid_sources, valid_targets):
    """A function of no arguments giving `model`'s teacher-forced token accuracy on the
    validation pairs, over the real target tokens and the end token, as OpenNMT-py counts its
    validation accuracy."""
    import keras
    import numpy as np

    pad = keras.utils.pad_sequences
    valid_source = pad([subwords.encode(s) for s in valid_sources], padding="post")
    valid_ids = [subwords.encode(t) for t in valid_targets]
    valid_in = pad([[1, *t] for t in valid_ids], padding="post")
    valid_out = pad([[*t, 2] for t in valid_ids], padding="post")

    def accuracy():
        correct = total = 0
        for start in range(0, len(valid_source), 100):
            rows = slice(start, start + 100)
            logits = model((valid_source[rows], valid_in[rows]), training=False)
            predicted = np.argmax(keras.ops.convert_to_numpy(logits), -1)
            real = valid_out[rows] != 0
            correct += int(((predicted == valid_out[rows]) & real).sum())
            total += int(real.sum())
        return correct / total

    return accuracy


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


# ----------------------------------------------------------------------------- OpenNMT-py


def onmt_recipe(hidden_size=256, word_vec_size=128, tokens_per_batch=2048):
    """The translation recipe's model and training in OpenNMT-py's options, one a line."""
    return f"""\
encoder_type: brnn
decoder_type: rnn
rnn_type: LSTM
enc_layers: 1
dec_layers: 1
hidden_size: {hidden_size}
word_vec_size: {word_vec_size}
global_attention: general
input_feed: 1
dropout: [0.3]
param_init: 0.1
optim: adam
learning_rate: 0.002
max_grad_norm: 5
label_smoothing: 0.1
batch_type: tokens
batch_size: {tokens_per_batch}
"""


def onmt_config(args, threads, train_steps, vocabulary, bucket_size=None):
    """OpenNMT-py's configuration of the recipe; `bucket_size`, if given, the examples it reads
    into a bucket before it sorts and batches them (its default, 262,144, is 87 passes over
    3,000 pairs, read in minutes between two steps).

    Its vocabulary is padded to `--vocabulary-size` entries (`vocab_size_multiple`), the size
    of keras-luong's: OpenNMT-py keeps only the pieces its corpus holds, plus its four special
    tokens, rounded up to a multiple of 8 by default (7,280 of the 8,000 on the long corpus's
    first 3,000 pairs), which would leave its embeddings and output layer narrower than the
    model it is compared with."""
    w = os.path.abspath(args.workdir)
    # Reports end at every validation, so that the sentences counted so far are exact there.
    report_every = 25 if args.valid_steps % 25 == 0 else args.valid_steps
    bucket = "" if bucket_size is None else f"bucket_size: {bucket_size}\n"
    return f"""\
save_data: {w}/onmt-{threads}
src_vocab: {vocabulary}
tgt_vocab: {vocabulary}
share_vocab: true
overwrite: true
data:
    corpus_1:
        path_src: {w}/train.src
        path_tgt: {w}/train.tgt
    valid:
        path_src: {w}/valid.src
        path_tgt: {w}/valid.tgt
save_model: {w}/onmt-{threads}/model
save_checkpoint_steps: 1000000
{onmt_recipe()}valid_batch_size: 2048
num_workers: 0
train_steps: {train_steps}
valid_steps: {args.valid_steps}
report_every: {report_every}
seed: {args.seed}
vocab_size_multiple: {args.vocabulary_size}
{bucket}"""


ONMT_STEP = re.compile(
    r"Step\s+(\d+)/\s*\d+; acc:\s*([\d.]+);.*?sents:\s*(\d+);"
    r".*?([\d.]+)/\s*([\d.]+) tok/s;\s*(\d+) sec"
)
ONMT_VALID = re.compile(r"Validation accuracy: ([\d.]+)")
ONMT_PARAMETERS = re.compile(r"\* number of parameters: (\d+)")
ONMT_VOCABULARY = re.compile(r"\* tgt vocab size = (\d+)")


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


def read_onmt_log(log, pairs, epochs, wall):
    """Accuracy at each epoch's end and the training speed, from OpenNMT-py's log."""
    sentences = 0
    # Target tokens/s of each log interval after the first (which holds the start-up), and
    # of those the ones without a validation in them, if any.
    intervals, plain, validations = [], [], [(0.0, 0.0)]  # (epochs done, accuracy)
    first, after_validation = True, False
    for line in log.splitlines():
        step = ONMT_STEP.search(line)
        if step:
            sentences += int(step.group(3))
            if not first:
                intervals.append(float(step.group(5)))
                if not after_validation:
                    plain.append(intervals[-1])
            first = after_validation = False
        valid = ONMT_VALID.search(line)
        if valid:
            validations.append((sentences / pairs, float(valid.group(1)) / 100))
            after_validation = True
    curve = []
    for epoch in range(1, epochs + 1):
        later = [i for i, (e, _) in enumerate(validations) if e >= epoch]
        if not later:
            break
        (e0, a0), (e1, a1) = validations[later[0] - 1], validations[later[0]]
        curve.append(a0 + (a1 - a0) * (epoch - e0) / (e1 - e0))
    return {
        "parameters": int(ONMT_PARAMETERS.search(log).group(1)),
        "vocabulary": int(ONMT_VOCABULARY.search(log).group(1)),
        "val_accuracy": curve,
        "tokens_per_second": statistics.median(plain or intervals),
        "first_epoch_tokens_per_second": None,
        "epochs_done": sentences / pairs,
        "wall_seconds": wall,
    }


# ----------------------------------------------------------------------------- the table


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
