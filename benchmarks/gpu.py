"""The GPU check: the default model's training and decoding speed on one GPU, beside OpenNMT-py.

    python -m benchmarks.gpu --prepare --data ../shared/data/multi30k-en-de   # on a CPU
    bash benchmarks/gpu.sh                                                    # on the GPU

`--prepare` trains the SentencePiece model of the translation recipe (8,000 pieces shared by
both languages) on Multi30k's training pairs and writes their ids under `--workdir`
(`pairs.npz`); a run writes the training pairs it uses as text for OpenNMT-py (each id a word).
The pairs kept are those whose longer side, end token included, is at most `--longest` pieces
(32: 99% of Multi30k's pairs), so that JAX compiles its train step for 4 bucket shapes.

The check then runs one process per engine, one after the other (`--engines`, default
`torch,jax,opennmt`), and prints one table, every figure of which was taken in this one run:

- **training**, the recipe's model (`keras_luong.models.recipe`: biLSTM encoder, global
  attention with the general score, input feeding, 256 units) on the pairs, in target tokens
  (real tokens and the end token) per second, over one epoch after a warm-up that runs one batch
  of each shape (every compile done); at the recipe's batches of 2,048 tokens, at GPU batches of
  `--gpu-batch` tokens, and at GPU batches under `mixed_bfloat16`; each beside OpenNMT-py 3.5.1
  trained on the same pieces by the same recipe (`encoder_type brnn`, `global_attention general`,
  `input_feed 1`) at the same batch size, in the same run;
- **decoding**, greedy and beam-5 sentences per second over `--decode-sentences` validation
  sources, 64 a batch, each decoded to its full length bound (`stop_token_ids=None`: the same
  work on any machine, whatever the weights, so that a GPU's figure and a CPU's compare);
- **peak GPU memory** of each case (torch: `torch.cuda.max_memory_allocated`, reset per case;
  JAX: the device's `peak_bytes_in_use`, the process's peak so far, the cases running from the
  smallest batch up).

Run with no GPU, the same command measures the CPU (`--engines torch,jax`); `--dry-run` runs
every part at tiny sizes on synthetic pairs, as the test suite does, so that the check cannot
rot between the sessions that have a GPU.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks.harness import ROOT

KERAS_ENGINES = ("torch", "jax", "tensorflow")
# (label, tokens per batch or "gpu", dtype policy)
CASES = (("recipe", 2048, "float32"), ("gpu", "gpu", "float32"), ("gpu-bf16", "gpu", "bfloat16"))
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=os.path.join(ROOT, ".cache", "gpu"))
    parser.add_argument("--data", help="Multi30k's folder, for --prepare")
    parser.add_argument("--prepare", action="store_true", help="write the pieces and stop")
    parser.add_argument("--longest", type=int, default=32)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--engines", default="torch,jax,opennmt")
    parser.add_argument(
        "--cases",
        default=",".join(label for label, _, _ in CASES),
        help="comma-separated training cases: recipe, gpu, gpu-bf16; none: skip",
    )
    parser.add_argument("--train-pairs", type=int, default=12000)
    parser.add_argument("--gpu-batch", type=int, default=16384, help="tokens per GPU batch")
    parser.add_argument("--decode-sentences", type=int, default=512)
    parser.add_argument(
        "--decode-batches", default="64", help="comma-separated sentences a batch; none: skip"
    )
    parser.add_argument("--units", type=int, default=None, help="replaces the recipe's 256")
    parser.add_argument("--onmt-python", default=sys.executable)
    parser.add_argument("--onmt-steps", type=int, default=150)
    parser.add_argument(
        "--engine-timeout", type=float, default=None, help="seconds an engine may run at most"
    )
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, synthetic pairs")
    parser.add_argument("--output", help="write the results (JSON) to this file")
    parser.add_argument("--worker", choices=KERAS_ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.dry_run:
        args.train_pairs, args.gpu_batch, args.units = 96, 512, 8
        args.decode_sentences, args.decode_batches, args.onmt_steps = 8, "4", 4
        args.vocabulary_size = 40
    return args


# ----------------------------------------------------------------------------- the data


def prepare(args):
    """The pieces of Multi30k's training and validation pairs, written to `--workdir`."""
    from keras_luong import SubwordVocabulary
    from keras_luong.datasets import multi30k

    splits = multi30k.load_data(args.data)
    (train_src, train_tgt), (valid_src, valid_tgt) = splits["train"], splits["validation"]
    vocabulary = SubwordVocabulary.train(
        train_src + train_tgt, vocabulary_size=args.vocabulary_size, seed=0
    )
    os.makedirs(args.workdir, exist_ok=True)
    kept, files = 0, {}
    for split, sources, targets in (
        ("train", train_src, train_tgt),
        ("valid", valid_src, valid_tgt),
    ):
        pairs = [
            (vocabulary.encode(s), vocabulary.encode(t))
            for s, t in zip(sources, targets, strict=True)
        ]
        files[split] = [(s, t) for s, t in pairs if max(len(s), len(t) + 1) <= args.longest]
    kept, total = len(files["train"]), len(train_src)
    np.savez(
        os.path.join(args.workdir, "pairs.npz"),
        vocabulary_size=len(vocabulary),
        **{f"{split}_{side}": np.array([p[k] for p in pairs], dtype=object)
           for split, pairs in files.items() for k, side in enumerate(("source", "target"))},
    )  # fmt: skip
    print(
        f"{kept} of {total} training pairs ({kept / total:.1%}) kept, vocabulary {len(vocabulary)}"
    )


def synthetic_pairs(count, vocabulary_size, seed):
    """Pairs of random ids and Multi30k-like lengths, for `--dry-run`."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 12, size=(count, 2))
    return [
        (rng.integers(3, vocabulary_size, n).tolist(), rng.integers(3, vocabulary_size, m).tolist())
        for n, m in lengths
    ]


def load_pairs(args):
    """(train pairs, validation pairs, vocabulary size) of the prepared pieces, or synthetic."""
    if args.dry_run:
        train = synthetic_pairs(args.train_pairs, args.vocabulary_size, 0)
        return (
            train,
            synthetic_pairs(args.decode_sentences, args.vocabulary_size, 1),
            args.vocabulary_size,
        )
    with np.load(os.path.join(args.workdir, "pairs.npz"), allow_pickle=True) as f:

        def pairs(split):
            return list(
                zip(f[f"{split}_source"].tolist(), f[f"{split}_target"].tolist(), strict=True)
            )

        return pairs("train")[: args.train_pairs], pairs("valid"), int(f["vocabulary_size"])


def write_pieces(args, train):
    """The training pairs as OpenNMT-py reads them: each id a word."""
    os.makedirs(args.workdir, exist_ok=True)
    for side, k in (("src", 0), ("tgt", 1)):
        with open(os.path.join(args.workdir, f"train.{side}"), "w") as f:
            f.writelines(" ".join(f"p{i}" for i in pair[k]) + "\n" for pair in train)


# ----------------------------------------------------------------------------- keras-luong


def device_kind(backend):
    """ "gpu" where the backend computes on a GPU by default, else "cpu"."""
    if backend == "torch":
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    if backend == "jax":
        import jax

        return jax.default_backend()
    import tensorflow as tf

    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


class PeakMemory:
    """The device's peak memory in bytes (None on a CPU)."""

    def __init__(self, backend):
        self.backend = backend

    def reset(self):
        if self.backend == "torch":
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()

    def read(self):
        if self.backend == "torch":
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
                return int(torch.cuda.max_memory_allocated())
        if self.backend == "jax":
            import jax

            stats = jax.local_devices()[0].memory_stats() or {}
            return stats.get("peak_bytes_in_use")
        return None


def wait_for(model):
    """Blocks until the steps dispatched so far have run (JAX and torch run asynchronously)."""
    import keras

    keras.ops.convert_to_numpy(model.trainable_variables[-1])


def build_model(args, vocabulary_size, policy):
    import keras

    from keras_luong.models.recipe import recipe_model

    keras.config.set_dtype_policy(POLICIES[policy])
    keras.utils.set_random_seed(0)
    settings = {} if args.units is None else {"units": args.units, "embedding_dim": args.units}
    return recipe_model(vocabulary_size, vocabulary_size, **settings)


def listed(batches):
    """A list of batches as a `keras.utils.PyDataset`, which `fit` reads."""
    import keras

    class Listed(keras.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, index):
            return batches[index]

    return Listed()


def train_case(args, train, vocabulary_size, tokens, policy, memory):
    """Target tokens per second of one epoch over `train`, after one batch of each shape."""
    from keras_luong import BucketedBatches

    model = build_model(args, vocabulary_size, policy)
    batches = BucketedBatches(
        [s for s, _ in train], [t for _, t in train], tokens_per_batch=tokens, seed=0
    )
    memory.reset()
    shapes, started = {}, time.perf_counter()
    for index in range(len(batches)):  # the warm-up: every compile, cuDNN's plans
        (source, target_in), target_out = batches[index]
        shapes.setdefault((source.shape, target_in.shape), batches[index])
    model.fit(listed(list(shapes.values())), epochs=1, shuffle=False, verbose=0)
    wait_for(model)
    warm = time.perf_counter() - started
    started = time.perf_counter()
    history = model.fit(batches, epochs=1, shuffle=False, verbose=0)
    wait_for(model)
    seconds = time.perf_counter() - started
    return {
        "tokens_per_second": batches.target_tokens() / seconds,
        "epoch_seconds": seconds,
        "warm_up_seconds": warm,
        "shapes": len(shapes),
        "steps": len(batches),
        "padding_share": batches.padding_share(),
        "loss": float(history.history["loss"][-1]),
        "peak_memory": memory.read(),
    }


def decode_case(args, model, valid, sampler, batch):
    """Sentences per second of `generate` over the validation sources, `batch` at a time, each
    to its length bound."""
    import keras

    sources = [s for s, _ in valid[: args.decode_sentences]]
    source = keras.utils.pad_sequences(sources, padding="post")

    def run(ids):
        return model.generate(ids, sampler=sampler, batch_size=batch, stop_token_ids=None,
                              max_length=max_length)  # fmt: skip

    max_length = int(1.5 * source.shape[1] + 10)  # the default bound of the longest source
    run(source[:batch])  # the warm-up: the compile (JAX), cuDNN's plans
    started = time.perf_counter()
    generated = run(source)
    seconds = time.perf_counter() - started
    return {
        "sentences_per_second": len(source) / seconds,
        "seconds": seconds,
        "tokens": int(generated.shape[-1]),
    }


def keras_worker(args):
    """One engine's cases; prints each result as a JSON line."""
    import keras

    train, valid, vocabulary_size = load_pairs(args)
    backend = keras.backend.backend()
    memory = PeakMemory(backend)
    kind = device_kind(backend)
    print(json.dumps({"engine": backend, "device": kind, "keras": keras.__version__}), flush=True)
    if decode_batches(args):
        # A float32 model as built: decoding to the length bound does the same work whatever
        # the weights.
        model = build_model(args, vocabulary_size, "float32")
        for batch in decode_batches(args):
            for sampler in ("greedy", "beam"):
                memory.reset()
                figures = decode_case(args, model, valid, sampler, batch)
                figures["peak_memory"] = memory.read()
                result = {"engine": backend, "decode": sampler, "batch": batch, **figures}
                report(result)
    for label, tokens, policy in selected_cases(args):
        tokens = args.gpu_batch if tokens == "gpu" else tokens
        figures = train_case(args, train, vocabulary_size, tokens, policy, memory)
        result = {"engine": backend, "case": label, "tokens_per_batch": tokens, "policy": policy}
        report({**result, "train": figures})
    keras.config.set_dtype_policy("float32")


def report(result):
    """A result: a JSON line on stdout for the driver, and on stderr for the log."""
    print(json.dumps(result), flush=True)
    print(json.dumps(result), file=sys.stderr, flush=True)


def decode_batches(args):
    return [] if args.decode_batches == "none" else [int(b) for b in args.decode_batches.split(",")]


def selected_cases(args):
    if args.cases == "none":
        return []
    wanted = args.cases.split(",")
    unknown = sorted(set(wanted) - {label for label, _, _ in CASES})
    if unknown:
        raise ValueError(f"Invalid value for argument --cases: unknown {unknown}")
    return [case for case in CASES if case[0] in wanted]


# ----------------------------------------------------------------------------- OpenNMT-py


def onmt_run(args, tokens, gpu):
    """OpenNMT-py's training tokens per second on the pieces, batches of `tokens` tokens."""
    from benchmarks.opennmt.common import ONMT_STEP

    workdir = os.path.abspath(args.workdir)
    config = os.path.join(workdir, f"onmt-{tokens}.yaml")
    units = args.units or 256
    with open(config, "w") as f:
        f.write(
            onmt_config(
                workdir,
                tokens,
                units,
                args.onmt_steps,
                args.vocabulary_size,
                gpu,
                pairs=args.train_pairs,
            )  # fmt: skip
        )
    env = dict(os.environ, PYTHONUNBUFFERED="1", TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    python = [args.onmt_python, "-c"]
    build = "from onmt.bin.build_vocab import main; main()"
    subprocess.run([*python, build, "-config", config, "-n_sample", "-1"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    started = time.perf_counter()
    train = "from onmt.bin.train import main; main(); import torch\n" + (
        "if torch.cuda.is_available(): print('PEAK', torch.cuda.max_memory_allocated())"
    )
    done = subprocess.run([*python, train, "-config", config],
                          env=env, capture_output=True, text=True, check=False,
                          timeout=args.engine_timeout)  # fmt: skip
    log = done.stdout + done.stderr
    with open(os.path.join(workdir, f"onmt-{tokens}.log"), "w") as f:
        f.write(log)
    if done.returncode:
        raise RuntimeError(f"OpenNMT-py failed:\n{log[-3000:]}")
    rates = [float(m.group(5)) for m in map(ONMT_STEP.search, log.splitlines()) if m]
    peak = [int(line.split()[-1]) for line in log.splitlines() if line.startswith("PEAK ")]
    return {
        # the log's intervals after the first (start-up, cuDNN's plans)
        "tokens_per_second": statistics.median(rates[1:] or rates),
        "intervals": len(rates),
        "wall_seconds": time.perf_counter() - started,
        "peak_memory": peak[0] if peak else None,
    }


def onmt_config(workdir, tokens, units, steps, vocabulary_size, gpu, pairs):
    """The recipe in OpenNMT-py's terms (`benchmarks.opennmt.common.onmt_recipe`), on one GPU if
    `gpu`; a bucket of all the `pairs` (its default, 262,144 examples, reads a small corpus
    over and over before the first step)."""
    from benchmarks.opennmt.common import onmt_recipe

    device = "world_size: 1\ngpu_ranks: [0]\n" if gpu else ""
    return f"""\
save_data: {workdir}/onmt
src_vocab: {workdir}/onmt.vocab
tgt_vocab: {workdir}/onmt.vocab
share_vocab: true
overwrite: true
data:
    corpus_1:
        path_src: {workdir}/train.src
        path_tgt: {workdir}/train.tgt
save_model: {workdir}/onmt/model
save_checkpoint_steps: 1000000
{onmt_recipe(units, units if units != 256 else 128, tokens)}num_workers: 0
train_steps: {steps}
report_every: {max(1, min(10, steps // 4))}
bucket_size: {pairs}
seed: 0
vocab_size_multiple: {vocabulary_size}
{device}"""


# ----------------------------------------------------------------------------- the driver


def run_keras_engine(args, engine):
    command = [sys.executable, "-m", __spec__.name, "--worker", engine]
    command += args.argv
    env = dict(os.environ, KERAS_BACKEND=engine, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    # The worker's messages go straight to this process' stderr; its results come on stdout.
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=False,
                              timeout=args.engine_timeout)  # fmt: skip
        stdout, error = done.stdout, done.returncode and f"exit status {done.returncode}"
    except subprocess.TimeoutExpired as expired:  # the cases done so far
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        stdout, error = stdout or "", f"stopped by --engine-timeout {args.engine_timeout:g}"
    results = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    if error:
        results.append({"engine": engine, "error": error})
    return results


def run_onmt_engine(args, gpu):
    """OpenNMT-py at each batch size of the cases, in float32 (its recipe's precision)."""
    results = []
    sizes = {args.gpu_batch if tokens == "gpu" else tokens for _, tokens, _ in selected_cases(args)}
    for tokens in sorted(sizes):
        try:
            figures = onmt_run(args, tokens, gpu)
        except (RuntimeError, subprocess.SubprocessError, OSError) as error:
            results.append({"engine": "opennmt", "tokens_per_batch": tokens,
                            "error": str(error)[-500:]})  # fmt: skip
            continue
        result = {"engine": "opennmt", "case": "recipe" if tokens == 2048 else "gpu",
                  "tokens_per_batch": tokens, "policy": "float32", "train": figures}  # fmt: skip
        print(json.dumps(result), file=sys.stderr, flush=True)
        results.append(result)
    return results


def table(results):
    """The markdown table: each keras-luong figure beside OpenNMT-py's at the same batch."""
    onmt = {
        r["tokens_per_batch"]: r["train"]
        for r in results
        if r.get("engine") == "opennmt" and "train" in r
    }
    lines = [
        "| engine | case | tokens/batch | train tok/s | × OpenNMT-py | peak GiB | epoch s "
        "| warm-up s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    decode = [
        "| engine | sampler | batch | sentences/s | peak GiB |",
        "| --- | --- | ---: | ---: | ---: |",
    ]

    def gib(value):
        return "–" if value is None else f"{value / 2**30:.2f}"

    for r in results:
        if "error" in r:
            lines.append(f"| {r['engine']} | {r.get('case', '')} | failed: {r['error']} |")
        elif "train" in r:
            t = r["train"]
            peer = onmt.get(r["tokens_per_batch"])
            ratio = "–"
            if peer and r["engine"] != "opennmt":
                ratio = f"{t['tokens_per_second'] / peer['tokens_per_second']:.2f}"
            lines.append(
                f"| {r['engine']} | {r['case']} | {r['tokens_per_batch']} | "
                f"{t['tokens_per_second']:,.0f} | {ratio} | {gib(t['peak_memory'])} | "
                f"{t.get('epoch_seconds', t.get('wall_seconds', 0)):.1f} | "
                f"{t.get('warm_up_seconds', 0):.1f} |"
            )
        elif "decode" in r:
            decode.append(
                f"| {r['engine']} | {r['decode']} | {r['batch']} | "
                f"{r['sentences_per_second']:,.1f} | {gib(r['peak_memory'])} |"
            )
    return "\n".join(lines) + "\n\n" + "\n".join(decode)


def main(argv=None):
    args = parse_args(argv)
    if args.prepare:
        return prepare(args)
    if args.worker:
        return keras_worker(args)
    engines = args.engines.split(",")
    unknown = sorted(set(engines) - {*KERAS_ENGINES, "opennmt"})
    if unknown:
        raise ValueError(f"Invalid value for argument --engines: unknown {unknown}")
    train, _, _ = load_pairs(args)
    write_pieces(args, train)
    results, gpu = [], False
    for engine in engines:
        started = time.perf_counter()
        if engine == "opennmt":
            results += run_onmt_engine(args, gpu)
        else:
            results += run_keras_engine(args, engine)
            gpu = gpu or any(r.get("device") == "gpu" for r in results)
        print(f"{engine}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results))
    return results


if __name__ == "__main__":
    main()
