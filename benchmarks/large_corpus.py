"""A corpus the size of the paper's (WMT'14 English-German, 4.5M pairs): prepared on disk, then
trained from, with each stage's wall time and peak resident memory.

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.large_corpus --work /tmp/large
    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.large_corpus --work /tmp/small --pairs 100000

Stages, each in a process of its own (so each peak is its own, read with `getrusage`):
1. `write`: a synthetic corpus shaped like WMT'14 (about 25.8 English and 24.4 German words
   a sentence, log-normal lengths with a long tail, Zipf-Mandelbrot word frequencies over
   200,000 word forms a language), `--pairs` pairs, and its first `--compare-pairs` pairs.
2. `prepare`: `prepare_corpus` on both (the vocabulary trained on its default 1M-sentence
   sample), printing time, peak memory and bytes on disk per id and per pair.
3. `train`: `LuongSeq2Seq` trained `--steps` steps from `BucketedBatches(PreparedCorpus)`
   (after one compiled step per bucket shape), printing target tokens/s, peak memory and the
   growth of resident memory from step 100 to the last; then the same from lists: the first
   `--memory-pairs` pairs of the corpus read into memory, as a small corpus is trained on.

The last lines print the goals' ratios. Needs about 2.5 GB of disk at 4.5M pairs.
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

LANGUAGES = {"en": 25.8, "de": 24.4}  # mean words a sentence (WMT'14: 116M / 4.5M, 110M / 4.5M)


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def resident_mb():
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def words_of(language, count=200_000):
    """`count` word forms made of syllables, frequent ones short, as a language's are (so that
    subwords split them about as they split real text)."""
    import numpy as np

    rng = np.random.default_rng(len(language))
    consonants = list("tnshrdlcmwfgypbvk" if language == "en" else "nsrtdhlcgmbwfkzvp")
    vowels = ["a", "e", "i", "o", "u", "ea", "ou"] if language == "en" else list("aeiouäü")
    syllables = [c + v + e for c in consonants for v in vowels for e in ["", *consonants[:8]]]
    rng.shuffle(syllables)
    words, seen = [], set()
    while len(words) < count:
        rank = len(words)
        parts = 1 + (rank > 300) + (rank > 5_000) + (rank > 50_000) * rng.integers(0, 2)
        # Frequent words from frequent syllables: a Zipf-like choice of syllables.
        picks = np.minimum(rng.zipf(1.1, parts) - 1, len(syllables) - 1)
        word = "".join(syllables[i] for i in picks)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def write(path, pairs, compare_pairs, path_compare):
    import numpy as np

    rng = np.random.default_rng(0)
    chunk = 100_000
    files = {language: open(f"{path}.{language}", "w", encoding="utf-8") for language in LANGUAGES}
    small = {
        language: open(f"{path_compare}.{language}", "w", encoding="utf-8")
        for language in LANGUAGES
    }
    vocabularies = {language: np.array(words_of(language), object) for language in LANGUAGES}
    ranks = np.arange(len(vocabularies["en"]))
    cumulative = np.cumsum(1 / (ranks + 2.7) ** 1.0)
    cumulative /= cumulative[-1]
    for start in range(0, pairs, chunk):
        n = min(chunk, pairs - start)
        base = rng.lognormal(math.log(22.5), 0.5, n)  # mean about 25.5
        for language, mean in LANGUAGES.items():
            lengths = np.clip(
                np.rint(base * mean / 25.8 * rng.lognormal(0, 0.1, n)), 1, 250
            ).astype(int)
            ids = np.searchsorted(cumulative, rng.random(lengths.sum()))
            words = vocabularies[language][ids].tolist()
            ends = np.cumsum(lengths).tolist()
            begins = [0] + ends[:-1]
            lines = [" ".join(words[a:b]) for a, b in zip(begins, ends, strict=True)]
            text = "\n".join(lines) + "\n"
            files[language].write(text)
            if start < compare_pairs:
                small[language].write("\n".join(lines[: compare_pairs - start]) + "\n")
    for f in (*files.values(), *small.values()):
        f.close()
    return {"bytes": sum(os.path.getsize(f"{path}.{lang}") for lang in LANGUAGES)}


def prepare(path, out):
    from keras_luong.data.prepared import prepare_corpus

    corpus = prepare_corpus(
        f"{path}.en", f"{path}.de", out, max_words=50, overwrite=True, verbose=2
    )
    info = corpus.info
    disk = {name: os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)}
    tokens = info["source"]["tokens"] + info["target"]["tokens"]
    ids = disk["source.ids"] + disk["target.ids"]
    per_pair = sum(size for name, size in disk.items() if name.endswith((".offsets", ".lengths")))
    return {
        "pairs": info["pairs"],
        "tokens": tokens,
        "bytes_per_id": ids / tokens,
        "index_bytes_per_pair": per_pair / info["pairs"],
        "vocabulary_bytes": disk["vocabulary.json"],
    }


def train(corpus_dir, steps, memory_pairs, tokens_per_batch, units):
    import keras
    import numpy as np

    from keras_luong import LuongSeq2Seq
    from keras_luong.data.batching import BucketedBatches
    from keras_luong.data.prepared import PreparedCorpus

    corpus = PreparedCorpus(corpus_dir)
    if memory_pairs:
        pairs = [corpus[i] for i in range(memory_pairs)]
        del corpus  # the lists only, as a small corpus is trained on
        batches = BucketedBatches(
            [s for s, _ in pairs], [t for _, t in pairs], tokens_per_batch=tokens_per_batch, seed=1
        )
    else:
        batches = BucketedBatches(corpus, tokens_per_batch=tokens_per_batch, seed=1)
    size = 8000
    model = LuongSeq2Seq(size, size, units=units, embedding_dim=units // 2)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    # One step per bucket shape first, so compiling is not timed.
    for length, _, _ in batches.buckets:
        position = next(i for i, batch in enumerate(batches.batches) if batch[0] == length)
        (source, target_in), target_out = batches[position]
        model.train_on_batch((source, target_in), target_out)
    resident = {}

    class Watch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch + 1 in (100, steps):
                resident[batch + 1] = resident_mb()

    tokens = 0
    for index in range(steps):
        tokens += int(np.count_nonzero(batches[index % len(batches)][1]))
    started = time.time()
    model.fit(batches, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[Watch()])
    seconds = time.time() - started
    return {
        "pairs": len(batches.pairs),
        "tokens_per_second": tokens / seconds,
        "seconds": seconds,
        "resident_mb_step_100": resident.get(100),
        "resident_mb_last": resident.get(steps),
    }


def stage(name, args):
    """Runs `name` in a process of its own; returns what it printed, with its peak memory
    (also kept in `work/results.json`, for a later run of other stages)."""
    command = [sys.executable, "-m", __spec__.name, "--stage", name, *args]
    started = time.time()
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["wall_s"] = time.time() - started
    print(f"{name} {' '.join(args[:1])}: {json.dumps(result)}", flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder for the corpus and its preparation")
    parser.add_argument("--pairs", type=int, default=4_500_000)
    parser.add_argument("--compare-pairs", type=int, default=1_000_000)
    parser.add_argument("--memory-pairs", type=int, default=30_000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--tokens-per-batch", type=int, default=1024)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument(
        "--stages",
        default="write,prepare,train",
        help="run these again (the others' results are read from the last run's results.json)",
    )
    args, rest = parser.parse_known_args(argv)
    text = os.path.join(args.work, "synthetic")
    compare = os.path.join(args.work, "synthetic-compare")
    if args.stage:
        runs = {
            "write": lambda: write(text, args.pairs, args.compare_pairs, compare),
            "prepare": lambda: prepare(rest[0], rest[1]),
            "train": lambda: train(
                rest[0], args.steps, int(rest[1]), args.tokens_per_batch, args.units
            ),
        }
        result = runs[args.stage]()
        print(json.dumps({**result, "peak_mb": peak_mb()}))
        return
    os.makedirs(args.work, exist_ok=True)
    common = ["--pairs", str(args.pairs), "--compare-pairs", str(args.compare_pairs),
              "--steps", str(args.steps), "--tokens-per-batch", str(args.tokens_per_batch),
              "--units", str(args.units), "--work", args.work]  # fmt: skip
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    print(f"{args.pairs:,} pairs (compared with {args.compare_pairs:,}); "
          f"backend {backend}, {os.cpu_count()} CPUs", flush=True)  # fmt: skip
    saved = os.path.join(args.work, "results.json")
    results = {}
    if os.path.exists(saved):
        with open(saved) as f:
            results = json.load(f)
    prepared = os.path.join(args.work, "prepared")
    runs = {
        "write": [("write", common)],
        "prepare": [("prepare", [text, prepared, *common]),
                    ("prepare-compare", [compare, prepared + "-compare", *common])],
        "train": [("train-disk", [prepared, "0", *common]),
                  ("train-lists", [prepared, str(args.memory_pairs), *common])],
    }  # fmt: skip
    for name in args.stages.split(","):
        for key, stage_args in runs[name]:
            results[key] = stage(key.split("-")[0], stage_args)
            with open(saved, "w") as f:
                json.dump(results, f, indent=1)
    full, small = results["prepare"], results["prepare-compare"]
    disk, memory = results["train-disk"], results["train-lists"]
    ratio = full["peak_mb"] / small["peak_mb"]
    print(
        f"prepare {args.pairs:,} pairs: {full['wall_s'] / 60:.1f} min, peak "
        f"{full['peak_mb']:.0f} MB; {args.compare_pairs:,} pairs: {small['wall_s'] / 60:.1f} "
        f"min, peak {small['peak_mb']:.0f} MB (ratio {ratio:.2f})"
    )
    print(
        f"on disk: {full['bytes_per_id']:.2f} bytes an id, "
        f"{full['index_bytes_per_pair']:.0f} bytes a pair of offsets and lengths"
    )
    growth = disk["resident_mb_last"] - disk["resident_mb_step_100"]
    print(
        f"train from disk ({disk['pairs']:,} pairs): {disk['tokens_per_second']:.0f} tokens/s, "
        f"peak {disk['peak_mb']:.0f} MB, resident growth from step 100 to {args.steps}: "
        f"{growth:+.0f} MB"
    )
    print(
        f"train from lists ({memory['pairs']:,} pairs): "
        f"{memory['tokens_per_second']:.0f} tokens/s, peak {memory['peak_mb']:.0f} MB"
    )
    speed = disk["tokens_per_second"] / memory["tokens_per_second"]
    print(
        f"ratios: tokens/s disk/lists {speed:.3f}, "
        f"peak memory disk/lists {disk['peak_mb'] / memory['peak_mb']:.2f}"
    )


if __name__ == "__main__":
    main()
