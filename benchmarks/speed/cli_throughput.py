"""What does `python -m keras_luong.translate` cost beside `translate()` in Python? Multi30k's
test2016 (1,000 English sentences) translated both ways by the same saved model, greedily and
with beam 5 (length penalty 1.0), in one run:

    KERAS_BACKEND=jax python -m benchmarks.speed cli_throughput --data ../shared/data/multi30k-en-de

The model is the translation recipe's (8,000 subwords a side, a vocabulary trained on the
training pairs), untrained: its outputs run to each sentence's bound (1.5 × its source tokens
+ 10), the most steps a sentence can cost. It is saved with its vocabularies to a `.keras`
file; this process loads it and times `translate` twice (the first call compiles), then the
command line translates the same file in a process of its own (its start, Keras' import, the
load and the compiles included). It prints the seconds and sentences a second of each, the
command line over Python's first call, and checks that both wrote the same translations. Run
nothing else beside it.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the official files (default: download)")
    parser.add_argument("--sentences", type=int, default=None, help="the first ones only")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args()
    import keras

    from benchmarks.harness import recipe_model, write_results
    from keras_luong import BeamSearchSampler, SubwordVocabulary
    from keras_luong.datasets import multi30k

    splits = multi30k.load_data(args.data, tokenized=False)
    texts = list(splits["test2016"][0][: args.sentences])
    train_sources, train_targets = splits["train"]
    vocabulary = SubwordVocabulary.train(
        list(train_sources) + list(train_targets), vocabulary_size=8000, seed=0
    )
    model = recipe_model(len(vocabulary))
    model.set_vocabularies(vocabulary, vocabulary)
    ids = vocabulary.encode_batch(texts[:2])
    model((ids, ids))  # builds its weights, which the file then holds
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path, source = os.path.join(folder, "model.keras"), os.path.join(folder, "test.en")
        model.save(path)
        with open(source, "w", encoding="utf-8") as f:
            f.writelines(text + "\n" for text in texts)
        loaded = keras.saving.load_model(path)
        for name, beam in (("greedy", 1), ("beam 5", 5)):
            sampler = BeamSearchSampler(beam, length_penalty=1.0) if beam > 1 else None
            seconds = []
            for _ in range(2):
                start = time.perf_counter()
                translations = loaded.translate(texts, sampler=sampler)
                seconds.append(time.perf_counter() - start)
            output = os.path.join(folder, "test.hyp")
            command = [sys.executable, "-m", "keras_luong.translate", "--model", path]
            command += ["--input", source, "--output", output, "--beam", str(beam), "--quiet"]
            start = time.perf_counter()
            subprocess.run(command, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
            seconds.append(time.perf_counter() - start)
            with open(output, encoding="utf-8") as f:
                same = f.read().splitlines() == translations
            rows.append(
                {
                    "decoding": name,
                    "python first call s": seconds[0],
                    "python second call s": seconds[1],
                    "command line s": seconds[2],
                    "command line / first call": seconds[2] / seconds[0],
                    "same translations": same,
                }
            )
    print(f"backend {keras.backend.backend()}, {len(texts)} sentences of test2016")
    print(f"{'decoding':<8} {'first s':>8} {'second s':>9} {'command s':>10} {'ratio':>6}  same")
    for row in rows:
        first, second = row["python first call s"], row["python second call s"]
        cli = row["command line s"]
        print(
            f"{row['decoding']:<8} {first:8.1f} {second:9.1f} {cli:10.1f} "
            f"{cli / first:6.2f}  {row['same translations']}"
        )
        print(
            f"{'':<8} {len(texts) / first:8.1f} {len(texts) / second:9.1f} "
            f"{len(texts) / cli:10.1f}  sentences a second"
        )
    if args.json:
        write_results(args.json, rows, sentences=len(texts))
    if not all(row["same translations"] for row in rows):
        sys.exit("the command line wrote other translations than translate()")


if __name__ == "__main__":
    main()
