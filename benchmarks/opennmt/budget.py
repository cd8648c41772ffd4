"""keras-luong's documented recipe beside OpenNMT-py 3.5.1's at an equal budget of CPU minutes:
validation BLEU per epoch, where the time goes, and test BLEU with beam search.

    make onmt-venv   # OpenNMT-py 3.5.1 in .venv-onmt, over the project's torch
    python -m benchmarks.opennmt budget --data ../shared/data/multi30k-en-de \\
        --corpus long --minutes 60 --output budget.md

The corpus, the SentencePiece pieces, the model, OpenNMT-py's configuration (a bucket of one
pass over the training pairs, its vocabulary padded to keras-luong's size) and the thread
settings are those of the `epochs` comparison (read `benchmarks/opennmt/epochs.py`), at
`--threads` (2 by default) for both. Each engine trains until `--minutes` have passed on its
clock, which runs from the start of its training loop (compiling included: keras-luong's
`on_train_begin`, OpenNMT-py's "Start training loop" line):

- keras-luong trains the translation page's recipe as written, callbacks included
  (`AttentionCallback`, `BleuCallback` with sacreBLEU's `tokenize="none"` for the corpus' tokenized
  text, `ReduceLROnPlateau`, `EarlyStopping` keeping the best `val_bleu` weights), and a clock
  that ends training after the step where the budget runs out; that epoch's validation and
  BLEU still run (the table gives the minutes it took in all). Each epoch's time is split into
  training, the validation loss, and `BleuCallback`; its validation token accuracy (teacher
  forced, over the real target tokens and the end token, as OpenNMT-py counts it) is measured
  off the clock. `--no-early-stopping` leaves `EarlyStopping` out: training then runs until
  the budget does, and the last weights are scored.
- OpenNMT-py validates (loss and accuracy) and saves a checkpoint every `--valid-steps` steps
  and is stopped when the budget runs out; its last checkpoint is the model scored.

Both then decode the test split (the long corpus: test2016's sentences joined two by two) with
beam `--beam` and length penalty `--length-penalty` (GNMT's, OpenNMT-py's `wu`), on the same
threads, timed; sacreBLEU scores the detokenized pieces against the references
(`tokenize="none"`). keras-luong's model is saved as `budget-<backend>.keras` in the workdir,
beside OpenNMT-py's checkpoints, for `python -m benchmarks.opennmt decode` to decode again. Run
nothing else beside it: on a 2-core machine any other job is measured too.
"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

from benchmarks import harness
from benchmarks.opennmt import common


def parse_args(argv=None):
    parser = common.common_parser(__doc__, ".cache/opennmt-budget", valid_pairs=None)
    parser.add_argument("--test-pairs", type=int, default=None, help="default: all")
    parser.add_argument("--threads", type=int, default=2, choices=[1, 2])
    parser.add_argument("--minutes", type=float, default=60.0, help="each engine's budget")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--length-penalty", type=float, default=1.0)
    parser.add_argument(
        "--no-early-stopping",
        action="store_true",
        help="keras-luong without the recipe's EarlyStopping: it trains until the budget runs "
        "out and its last weights are scored",
    )
    return parser.parse_args(argv)


def prepare(args):
    """The files of `common.prepare`, and the test split beside them."""
    from benchmarks.harness import join_pairs
    from keras_luong import SubwordVocabulary
    from keras_luong.datasets import multi30k

    args.valid_pairs = args.valid_pairs or 10**9
    pairs = common.prepare(args)
    sources, targets = multi30k.load_data(args.data)["test2016"]
    if args.corpus == "long":
        sources, targets = join_pairs(sources), join_pairs(targets)
    sources, targets = sources[: args.test_pairs], targets[: args.test_pairs]
    with open(harness.path(args, "pieces.model"), "rb") as f:
        vocabulary = SubwordVocabulary(f.read())
    for name, lines in (("test.src", sources), ("test.tgt", targets)):
        with open(harness.path(args, name + ".txt"), "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
    with open(harness.path(args, "test.src"), "w", encoding="utf-8") as f:
        f.writelines(" ".join(vocabulary.tokenize(line)) + "\n" for line in sources)
    return pairs


def bleu(args, hypotheses):
    import sacrebleu

    references = harness.read_lines(args, "test.tgt.txt")
    return sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score


# ----------------------------------------------------------------------------- keras-luong


def keras_worker(args):
    """The translation page's recipe under a clock; writes its figures as JSON to stdout."""
    import keras

    from benchmarks.harness import bucketed
    from keras_luong import (
        AttentionCallback,
        BeamSearchSampler,
        BleuCallback,
        SubwordVocabulary,
    )

    with open(harness.path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources = harness.read_lines(args, "train.src.txt")
    targets = harness.read_lines(args, "train.tgt.txt")
    valid_sources = harness.read_lines(args, "valid.src.txt")
    valid_targets = harness.read_lines(args, "valid.tgt.txt")
    model = harness.recipe_model(subwords, args.seed, xla=args.jit_compile)
    model.set_vocabularies(subwords, subwords)
    pad = keras.utils.pad_sequences
    watched = pad([subwords.encode(s) for s in valid_sources[:200]], padding="post")
    watched_in = pad([[1, *subwords.encode(t)] for t in valid_targets[:200]], padding="post")
    accuracy = common.validation_accuracy(model, subwords, valid_sources, valid_targets)

    def wait():  # JAX runs steps asynchronously: the clock waits for the last update
        keras.ops.convert_to_numpy(model.trainable_variables[-1])
        return time.perf_counter()

    class Clock(keras.callbacks.Callback):
        """Ends training after the step where the budget runs out; splits each epoch's time."""

        def __init__(self):
            super().__init__()
            self.epochs = []

        def on_train_begin(self, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            if time.perf_counter() - self.started > 60 * args.minutes:
                self.model.stop_training = True

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_started = time.perf_counter()

        def on_test_begin(self, logs=None):
            self.test_started = wait()

        def on_test_end(self, logs=None):
            self.test_ended = time.perf_counter()

    class BleuStart(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.started = time.perf_counter()

    class BleuEnd(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            now = time.perf_counter()
            clock.epochs.append(
                {
                    "train_seconds": clock.test_started - clock.epoch_started,
                    "validation_seconds": clock.test_ended - clock.test_started,
                    "bleu_seconds": now - bleu_start.started,
                    "minutes_so_far": (now - clock.started) / 60,
                    "loss": float(logs["loss"]),
                    "val_loss": float(logs["val_loss"]),
                    "val_bleu": float(logs["val_bleu"]),
                    "val_attention_diagonal": float(logs["val_attention_diagonal"]),
                    "val_accuracy": accuracy(),
                }
            )
            # The accuracy is measured for the table only: off the clock.
            clock.started += time.perf_counter() - now
            now = time.perf_counter()
            if now - clock.started > 60 * args.minutes:  # spent: no new epoch
                self.model.stop_training = True

    train_tokens = sum(len(subwords.encode(t)) + 1 for t in targets)  # and the end token
    clock, bleu_start = Clock(), BleuStart()
    early_stopping = []
    if not args.no_early_stopping:
        early_stopping.append(
            keras.callbacks.EarlyStopping(
                "val_bleu", mode="max", patience=5, restore_best_weights=True
            )
        )
    model.fit(
        bucketed(subwords, sources, targets, True, args.seed, args.bucket_width),
        validation_data=bucketed(
            subwords, valid_sources, valid_targets, False, args.seed, args.bucket_width
        ),
        epochs=1000,  # the clock ends it
        shuffle=False,
        callbacks=[
            clock,
            AttentionCallback(watched, watched_in),
            bleu_start,
            BleuCallback(valid_sources, valid_targets, tokenize="none"),
            BleuEnd(),
            keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=1),
            *early_stopping,
        ],
        verbose=0,
    )
    minutes = (time.perf_counter() - clock.started) / 60
    # The scored weights, for `python -m benchmarks.opennmt decode` to decode again.
    model.save(harness.path(args, f"budget-{keras.backend.backend()}.keras"))
    test_sources = harness.read_lines(args, "test.src.txt")
    started = time.perf_counter()
    sampler = BeamSearchSampler(num_beams=args.beam, length_penalty=args.length_penalty)
    hypotheses = model.translate(test_sources, sampler=sampler)
    return {
        "parameters": model.count_params(),
        "epochs": clock.epochs,
        "minutes": minutes,
        "target_tokens_per_epoch": train_tokens,
        # The whole epochs after the first (which compiles one function per batch shape).
        "tokens_per_second": train_tokens
        / statistics.median([e["train_seconds"] for e in clock.epochs[1:-1] or clock.epochs]),
        "test_bleu": bleu(args, hypotheses),
        "test_seconds": time.perf_counter() - started,
    }


def run_keras(args, engine):
    command = [*common.pinned(args.threads), sys.executable, "-m", __spec__.name]
    command += ["--worker", "keras", "--workdir", args.workdir, "--minutes", str(args.minutes)]
    command += ["--seed", str(args.seed), "--beam", str(args.beam)]
    command += ["--length-penalty", str(args.length_penalty)]
    command += common.xla_flag(engine) + common.batching_flag(args)
    command += ["--no-early-stopping"] if args.no_early_stopping else []
    return harness.worker_result(
        command, common.thread_env(engine, args.threads), f"keras-luong on {engine}"
    )


# ----------------------------------------------------------------------------- OpenNMT-py


def run_opennmt(args, pairs):
    threads, w = args.threads, os.path.abspath(args.workdir)
    env = common.thread_env("opennmt", threads)
    env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    vocabulary = os.path.abspath(harness.path(args, "onmt.vocab"))
    config = common.onmt_config(args, threads, 10**7, vocabulary, bucket_size=pairs)
    config = config.replace(
        "save_checkpoint_steps: 1000000",
        f"save_checkpoint_steps: {args.valid_steps}\nkeep_checkpoint: 2",
    )
    config_path = harness.path(args, f"budget-{threads}.yaml")
    with open(config_path, "w") as f:
        f.write(config)
    onmt = [args.onmt_python, "-c"]
    common.build_onmt_vocabulary(args, config_path, env)
    for old in glob.glob(f"{w}/onmt-{threads}/model_step_*.pt"):
        os.remove(old)
    log_path = harness.path(args, f"budget-{threads}.log")
    with open(log_path, "w") as log:
        train = "from onmt.bin.train import main; main()"
        process = subprocess.Popen(
            [*common.pinned(threads), *onmt, train, "-config", config_path],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:  # the budget counts from its training loop's start, as keras-luong's does
            loop_started = wait_for_training_loop(log_path, process)
            remaining = 60 * args.minutes - (time.perf_counter() - loop_started)
            process.wait(timeout=max(0.0, remaining))
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait()
    wall = time.perf_counter() - loop_started
    with open(log_path) as f:
        log = f.read()
    checkpoint, step = last_checkpoint(args, threads)
    if checkpoint is None:
        raise RuntimeError(f"OpenNMT-py saved no checkpoint:\n{log[-3000:]}")
    test_seconds, hypotheses = onmt_translate(args, checkpoint, env, f"budget-{threads}.hyp")
    result = common.read_onmt_log(log, pairs, 10**6, wall)
    return {
        "parameters": result["parameters"],
        "val_accuracy": result["val_accuracy"],
        "tokens_per_second": result["tokens_per_second"],
        "checkpoint_step": step,
        "epochs_done": result["epochs_done"],
        "minutes": wall / 60,
        "test_bleu": bleu(args, hypotheses),
        "test_seconds": test_seconds,
    }


def last_checkpoint(args, threads):
    """`(path, step)` of OpenNMT-py's last checkpoint at `threads` in the workdir, or
    `(None, None)`."""
    checkpoints = glob.glob(f"{os.path.abspath(args.workdir)}/onmt-{threads}/model_step_*.pt")
    if not checkpoints:
        return None, None
    steps = {c: int(re.search(r"step_(\d+)", c).group(1)) for c in checkpoints}
    checkpoint = max(steps, key=steps.get)
    return checkpoint, steps[checkpoint]


def onmt_translate(args, checkpoint, env, output):
    """`(seconds, hypotheses)`: OpenNMT-py's `translate` command decoding the test split's
    pieces with `checkpoint` (beam `--beam`, GNMT's length penalty `--length-penalty`) into
    the workdir's `output`, timed as a whole process; the hypotheses detokenized."""
    translate = "from onmt.bin.translate import main; main()"
    output = harness.path(args, output)
    started = time.perf_counter()
    subprocess.run(
        [*common.pinned(args.threads), args.onmt_python, "-c", translate, "-model", checkpoint,
         "-src", harness.path(args, "test.src"), "-output", output, "-beam_size", str(args.beam),
         "-length_penalty", "wu", "-alpha", str(args.length_penalty), "-batch_size", "32"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    with open(output, encoding="utf-8") as f:
        return seconds, ["".join(line.split()).replace("▁", " ").strip() for line in f]


def wait_for_training_loop(log_path, process):
    """The time OpenNMT-py logs the start of its training loop (its model built by then)."""
    while process.poll() is None:
        with open(log_path) as f:
            if "Start training loop" in f.read():
                return time.perf_counter()
        time.sleep(0.2)
    raise RuntimeError("OpenNMT-py ended before its training loop")


# ----------------------------------------------------------------------------- the tables


def tables(args, results):
    lines = [
        f"{args.corpus} corpus, {args.minutes:g} minutes each, {args.threads} threads, seed "
        f"{args.seed}, beam {args.beam}, length penalty {args.length_penalty:g}, "
        f"keras-luong's bucket width {str(args.bucket_width).lower()}"
        f"{', without EarlyStopping' if args.no_early_stopping else ''}:",
        "",
    ]
    lines += [
        "| engine | parameters | minutes | epochs | target tok/s | test BLEU | test decoding s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for engine, r in results:
        if engine == "opennmt":
            name, epochs = "OpenNMT-py 3.5.1", f"{r['epochs_done']:.1f}"
        else:
            # The last epoch is the part the budget left: counted as its share of a whole one.
            seconds = [e["train_seconds"] for e in r["epochs"]]
            whole = statistics.median(seconds[1:-1] or seconds)
            epochs = f"{len(seconds) - 1 + min(1.0, seconds[-1] / whole):.1f}"
            name = f"keras-luong ({engine})"
        lines.append(
            f"| {name} | {r['parameters']:,} | {r['minutes']:.1f} | {epochs} | "
            f"{r['tokens_per_second']:,.0f} | {r['test_bleu']:.2f} | {r['test_seconds']:.0f} |"
        )
    for engine, r in results:
        lines.append("")
        if engine == "opennmt":
            accuracy = ", ".join(f"{100 * a:.1f}%" for a in r["val_accuracy"])
            lines.append(
                f"OpenNMT-py: validation accuracy at each epoch's end {accuracy}; "
                f"scored at step "
                f"{r['checkpoint_step']}."
            )
            continue
        lines += [f"keras-luong ({engine}), per epoch:", "",
                  "| epoch | train s | val loss s | BleuCallback s | minutes so far | loss | "
                  "val loss | val acc | val BLEU | diagonal |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for i, e in enumerate(r["epochs"], 1):
            # "-" for results written before the worker measured it.
            accuracy = f"{100 * e['val_accuracy']:.1f}%" if "val_accuracy" in e else "-"
            lines.append(
                f"| {i} | {e['train_seconds']:.0f} | {e['validation_seconds']:.0f} | "
                f"{e['bleu_seconds']:.0f} | {e['minutes_so_far']:.1f} | {e['loss']:.3f} | "
                f"{e['val_loss']:.3f} | {accuracy} | {e['val_bleu']:.2f} | "
                f"{e['val_attention_diagonal']:.2f} |"
            )
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(keras_worker(args)))
        return
    engines = common.checked_engines(args)
    pairs = prepare(args)
    results = []
    for engine in engines:
        result = run_opennmt(args, pairs) if engine == "opennmt" else run_keras(args, engine)
        print(json.dumps({"engine": engine, **result}), flush=True)
        results.append((engine, result))
    common.write_output(args, tables(args, results))


if __name__ == "__main__":
    main()
