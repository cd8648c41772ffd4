"""How many decoding functions `translate` compiles, and what a second call costs.

    KERAS_BACKEND=jax python -m benchmarks.translate_compiles --data ../shared/data/multi30k-en-de

Translates the same texts twice with `translate`'s default bounds (each text's own, 1.5 × its
source tokens + 10), in one process:

- "per-batch": the rule before 0.3.0, emulated here: each length-sorted batch decodes with a
  generator of its own bound (the batch's largest, rounded up to a multiple of 8), so texts of
  many lengths meet many generators and the model's cache of 8 evicts them in turn;
- "translate": `model.translate` as it is: one generator for the call, each row ending at its
  own bound inside it.

It prints the seconds of each call, the traces of the generator's `call` (each one an XLA
compile on JAX and TensorFlow) and the ratio of the second calls. The model is untrained (its
outputs run to their bounds: the most steps a text can cost); its sizes are the translation
page's (8,000 subwords, 256 units, embeddings 128). Texts: Multi30k's validation and test2016
English sentences joined two by two (about 26 words, up to about 80).
"""

import argparse
import math
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the Multi30k files (default: download)")
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--texts", type=int, default=1000)
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    from benchmarks.harness import join_pairs
    from keras_luong import LuongSeq2Seq, SubwordVocabulary
    from keras_luong.data.batching import length_sorted_batches
    from keras_luong.datasets import multi30k
    from keras_luong.generation.bounds import default_max_length
    from keras_luong.generation.generator import Seq2SeqGenerator

    data = multi30k.load_data(args.data)
    vocabulary = SubwordVocabulary.train(
        join_pairs(data["train"][0]) + join_pairs(data["train"][1]),
        vocabulary_size=args.vocabulary_size,
    )
    texts = join_pairs(data["validation"][0] + data["test2016"][0])[: args.texts]
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(len(vocabulary), len(vocabulary), units=256, embedding_dim=128)
    model.set_vocabularies(vocabulary, vocabulary)

    traces = []
    call = Seq2SeqGenerator.call

    def counted(self, source):
        traces.append(1)
        return call(self, source)

    Seq2SeqGenerator.call = counted

    def per_batch(texts):
        rows = [vocabulary.encode(t) for t in texts]
        outputs = [None] * len(rows)
        for indices, length in length_sorted_batches([len(r) for r in rows], 32):
            source = np.zeros((len(indices), length), "int32")
            for row, i in enumerate(indices):
                source[row, : len(rows[i])] = rows[i]
            bound = default_max_length([len(rows[i]) for i in indices])
            ids = model.generate(source, 8 * math.ceil(bound / 8))
            for i, row in zip(indices, ids, strict=True):
                outputs[i] = row[: default_max_length([len(rows[i])])]
        return outputs

    def timed(name, function):
        for attempt in ("first", "second"):
            before, started = len(traces), time.perf_counter()
            function(texts)
            seconds = time.perf_counter() - started
            print(
                f"{name:10s} {attempt} call: {seconds:7.1f} s, {len(traces) - before} traces, "
                f"{len(model.generators)} generators kept",
                flush=True,
            )
        return seconds

    bounds = {default_max_length([len(vocabulary.encode(t))]) for t in texts}
    print(f"{len(texts)} texts, {len(bounds)} distinct bounds, backend {keras.backend.backend()}")
    old = timed("per-batch", per_batch)
    model.generators.clear()
    new = timed("translate", model.translate)
    print(f"second call: translate / per-batch = {new / old:.3f} ({old / new:.1f}x faster)")


if __name__ == "__main__":
    main()
