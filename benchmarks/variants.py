"""Every Luong variant on the dates task with the same budget: our Tables 4 and 6.

    KERAS_BACKEND=jax python -m benchmarks.variants [--epochs 8] [--examples 12000] \
        [--json docs/results/dates_variants.json] [--output table.md]

Global attention with the dot, general, concat and location scores, local-m (general) and
local-p (dot, general), each with input feeding on and off, trained with the same data, seed,
epochs and optimizer. Prints (and writes as Markdown, or as the results file that
docs/results.md reads) held-out exact match of greedy decoding, alignment accuracy and AER of
the teacher-forced attention against the gold field spans, and the training time. Not run in
CI: about a minute per variant on 2 CPU cores.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness import markdown, write_results  # noqa: E402
from keras_luong import LuongSeq2Seq  # noqa: E402
from keras_luong.datasets import dates  # noqa: E402

VARIANTS = [
    ("global", "dot"),
    ("global", "general"),
    ("global", "concat"),
    ("global", "location"),
    ("local-m", "general"),
    ("local-p", "dot"),
    ("local-p", "general"),
]
# The table's (key, header, aligned right) of each column.
COLUMNS = [
    ("attention", "attention", False),
    ("score", "score", False),
    ("input_feeding", "input feeding", False),
    ("exact", "exact match", True),
    ("accuracy", "alignment accuracy", True),
    ("aer", "AER", True),
    ("seconds", "train time", True),
]


def run(data, alignment, score_mode, input_feeding, args):
    keras.utils.set_random_seed(args.seed)
    train, test = data["train"], data["test"]
    model = LuongSeq2Seq(
        len(data["source_vocabulary"]),
        len(data["target_vocabulary"]),
        units=args.units,
        alignment=alignment,
        score_mode=score_mode,
        window=args.window,
        max_source_length=train["source"].shape[1],
        input_feeding=input_feeding,
    )
    steps = args.epochs * (len(train["source"]) // 64)
    model.compile(
        optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(3e-3, steps)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    start = time.perf_counter()
    model.fit(
        (train["source"], train["target_in"]),
        train["target_out"],
        batch_size=64,
        epochs=args.epochs,
        verbose=0,
    )
    seconds = time.perf_counter() - start
    generated = model.generate(test["source"], max_length=dates.TARGET_LENGTH)
    exact = float(np.mean(np.all(generated == test["target_out"], axis=1)))
    _, weights = model((test["source"], test["target_in"]), return_attention_scores=True)
    accuracy, aer = dates.alignment_scores(
        keras.ops.convert_to_numpy(weights), test["gold"], test["sure"]
    )
    return exact, accuracy, aer, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--examples", type=int, default=12000)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="write the table as Markdown to this file")
    parser.add_argument("--json", metavar="FILE", help="write the table and figures to this file")
    args = parser.parse_args()

    data = dates.load_data(args.examples, seed=args.seed)
    settings = {
        "train_examples": f"{len(data['train']['source']):,}",
        "test_examples": f"{len(data['test']['source']):,}",
        "epochs": str(args.epochs),
        "units": str(args.units),
        "window": str(args.window),
        "seed": str(args.seed),
    }
    header = (
        f"Dates task, {settings['train_examples']} training / {settings['test_examples']} test "
        f"examples, {args.epochs} epochs, units {args.units}, D = {args.window}, "
        f"backend {keras.backend.backend()}, seed {args.seed}."
    )
    print(header)
    print("\n".join(markdown(COLUMNS, [])), flush=True)
    rows, found = [], {}
    for alignment, score_mode in VARIANTS:
        for input_feeding in (True, False):
            exact, accuracy, aer, seconds = run(data, alignment, score_mode, input_feeding, args)
            row = {
                "attention": alignment,
                "score": score_mode,
                "input_feeding": "yes" if input_feeding else "no",
                "exact": f"{exact:.2%}",
                "accuracy": f"{accuracy:.2%}",
                "aer": f"{aer:.3f}",
                "seconds": f"{seconds:.0f} s",
            }
            rows.append(row)
            print(markdown(COLUMNS, [row])[-1], flush=True)
            # The figures the page's text quotes: `global_general_feeding_exact` (%, one
            # decimal), `..._accuracy` (%, one decimal), `..._aer`.
            feeding = "feeding" if input_feeding else "no_feeding"
            key = f"{alignment.replace('-', '_')}_{score_mode}_{feeding}"
            found[f"{key}_exact"] = f"{100 * exact:.1f}"
            found[f"{key}_accuracy"] = f"{100 * accuracy:.1f}"
            found[f"{key}_aer"] = f"{aer:.3f}"
    if args.json:
        write_results(
            args.json,
            rows,
            settings=settings,
            figures=found,
            tables={"variants": {"columns": COLUMNS}},
        )
    if args.output:
        with open(args.output, "w") as f:
            f.write(header + "\n\n" + "\n".join(markdown(COLUMNS, rows)) + "\n")


if __name__ == "__main__":
    main()
