"""What the comparisons with OpenNMT-py share: the command-line arguments, the corpus and
its SentencePiece pieces, OpenNMT-py's configuration of the recipe's model, how each engine's
process is pinned and threaded, and how OpenNMT-py's log is read."""

import argparse
import os
import re
import statistics
import subprocess

from benchmarks.harness import ROOT, bucket_width, path

KERAS_ENGINES = ("jax", "tensorflow", "tensorflow-xla", "torch")


def backend_of(engine):
    """The Keras backend an engine runs on: `tensorflow-xla` is TensorFlow with
    `jit_compile=True`, which Keras leaves off by default on a machine without a GPU."""
    return engine.removesuffix("-xla")


def xla_flag(engine):
    """The worker's flag for an engine that compiles with XLA."""
    return ["--jit-compile"] if engine.endswith("-xla") else []


def common_parser(doc, workdir, valid_pairs):
    """The arguments both comparisons take, `epochs` and `budget`."""
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
