"""Trains the small dates model kept in tests/data/ (the mixed-precision generation test
compares its float32 and half-precision decodings: it needs a trained model, whose
predictions have margins, and CI has no time to train one).

    KERAS_BACKEND=jax python -m benchmarks.train_dates_model [--output tests/data/dates_model.keras]
"""

import argparse
import time

import keras
import numpy as np

from keras_luong import LuongSeq2Seq
from keras_luong.datasets import dates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="tests/data/dates_model.keras")
    parser.add_argument("--examples", type=int, default=6000)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--units", type=int, default=32)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    data = dates.load_data(args.examples, seed=0)
    train, test = data["train"], data["test"]
    model = LuongSeq2Seq(
        len(data["source_vocabulary"]),
        len(data["target_vocabulary"]),
        units=args.units,
        embedding_dim=16,
    )
    steps = args.epochs * (len(train["source"]) // 64)
    model.compile(
        optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(1e-2, steps)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    started = time.perf_counter()
    model.fit(
        (train["source"], train["target_in"]),
        train["target_out"],
        batch_size=64,
        epochs=args.epochs,
        verbose=2,
    )
    generated = model.generate(test["source"], dates.TARGET_LENGTH)
    exact = (generated == test["target_out"]).all(1).mean()
    print(f"trained in {time.perf_counter() - started:.0f}s; test exact match {exact:.2%}")
    # Saved without the optimizer's state: a third of the size.
    inference = LuongSeq2Seq.from_config(model.get_config())
    inference((test["source"][:1], test["target_in"][:1]))
    inference.set_weights(model.get_weights())
    inference.save(args.output)
    # The test split's source ids, for the tests (the vocabulary depends on the whole set).
    sources = args.output.replace(".keras", "_test_source.npy")
    np.save(sources, test["source"].astype("uint8"))
    print(f"saved {args.output} and {sources}")


if __name__ == "__main__":
    main()
