"""Luong's attention against Bahdanau's on the dates task, at one budget.

    KERAS_BACKEND=jax python -m benchmarks.luong_vs_bahdanau [--epochs 8] [--examples 12000] \
        [--seeds 0,1,2] [--output tables.md] [--json docs/results/luong_vs_bahdanau.json] \
        [--figure docs/luong_vs_bahdanau_attention.png]

Seven models trained with the same data, epochs and optimizer, from each seed of `--seeds`:
Luong's decoder (attend with h_t after the RNN step, input feeding, h̃ = tanh(W_c [c; h]))
with the dot, general and concat scores and local-p; Bahdanau's additive score in that
decoder (tensorflow-addons' AttentionWrapper: its timing is Luong's); and Bahdanau, Cho and
Bengio's own decoder (attend with s_{t-1}, [y; c] into the LSTM, maxout deep output) with
the additive and the general score, so that the score and the timing are seen apart.

Prints (and writes as Markdown, or as the results file the page reads) held-out exact match
of greedy decoding, alignment accuracy and AER of the teacher-forced attention, the trainable
weights and the training time, for each seed and then each model's mean and range over the
seeds; then
the train-step and greedy-decoding times of each trained model, the fastest of rounds
interleaved in this one process, as ratios to Luong's general score (the first seed's
models). With `--figure`, draws each model's attention (first seed) on one test example side
by side. The data are the same for every seed (`--data-seed`); notebook 07 trains three of
these models exactly as this script does with seed 0. Not run in CI: about a minute per
model and seed on 2 CPU cores.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness import figure_key, markdown, write_results  # noqa: E402
from keras_luong import LuongSeq2Seq, SequenceLoss  # noqa: E402
from keras_luong.datasets import dates  # noqa: E402

# name -> LuongSeq2Seq arguments
MODELS = {
    "Luong, dot": {"score_mode": "dot"},
    "Luong, general": {"score_mode": "general"},
    "Luong, concat": {"score_mode": "concat"},
    "Luong, local-p general": {"alignment": "local-p", "score_mode": "general"},
    "Bahdanau score, Luong timing": {"score_mode": "additive"},
    "Bahdanau (2015)": {"score_mode": "additive", "attention_timing": "bahdanau"},
    "Bahdanau timing, general": {"score_mode": "general", "attention_timing": "bahdanau"},
}
REFERENCE = "Luong, general"


def train(data, options, args, seed):
    keras.utils.set_random_seed(seed)
    train_split = data["train"]
    model = LuongSeq2Seq(
        len(data["source_vocabulary"]),
        len(data["target_vocabulary"]),
        units=args.units,
        window=args.window,
        **options,
    )
    steps = args.epochs * (len(train_split["source"]) // 64)
    model.compile(
        optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(3e-3, steps)),
        loss=SequenceLoss(),  # the mean over the target tokens that are not padding
    )
    start = time.perf_counter()
    model.fit(
        (train_split["source"], train_split["target_in"]),
        train_split["target_out"],
        batch_size=64,
        epochs=args.epochs,
        verbose=0,
    )
    return model, time.perf_counter() - start


def evaluate(model, test):
    generated = model.generate(test["source"], max_length=dates.TARGET_LENGTH)
    exact = float(np.mean(np.all(generated == test["target_out"], axis=1)))
    _, weights = model((test["source"], test["target_in"]), return_attention_scores=True)
    weights = keras.ops.convert_to_numpy(weights)
    accuracy, aer = dates.alignment_scores(weights, test["gold"], test["sure"])
    return exact, accuracy, aer, weights


def step_times(models, data, rounds):
    """Seconds of one train step (batch 64) and of greedy decoding of 64 sources, for every
    model: the fastest of interleaved rounds after a warm-up call of each (as `timeit`
    advises: the least disturbed by whatever else the machine runs)."""
    train_split, test = data["train"], data["test"]
    x = (train_split["source"][:64], train_split["target_in"][:64])
    y = train_split["target_out"][:64]
    source = test["source"][:64]
    times = {name: {"train": [], "greedy": []} for name in models}
    for model in models.values():
        model.train_on_batch(x, y)
        model.generate(source, max_length=dates.TARGET_LENGTH)
    for _ in range(rounds):
        for name, model in models.items():
            start = time.perf_counter()
            for _ in range(5):
                model.train_on_batch(x, y)
            times[name]["train"].append((time.perf_counter() - start) / 5)
            start = time.perf_counter()
            keras.ops.convert_to_numpy(model.generate(source, max_length=dates.TARGET_LENGTH))
            times[name]["greedy"].append(time.perf_counter() - start)
    return {name: {k: min(v) for k, v in t.items()} for name, t in times.items()}


def draw(attention, data, path, example=0):
    from matplotlib.figure import Figure

    from keras_luong.plotting import plot_attention

    test = data["test"]
    source_tokens = list(test["examples"][example]["source"])
    target = test["target_out"][example]
    vocabulary = data["target_vocabulary"]
    # The target characters, then the end token, as the rows of the weights are.
    target_tokens = [vocabulary.decode([i]) for i in target if i > 2] + ["</s>"]
    figure = Figure(figsize=(4.2 * 4, 4.4 * 2))
    for i, (name, weights) in enumerate(attention.items()):
        ax = figure.add_subplot(2, 4, i + 1)
        plot_attention(weights[example], source_tokens, target_tokens, ax=ax, title=name)
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def summary(values, spec):
    """`mean (lowest–highest)` of the seeds' values, or the value of one seed."""
    if len(values) == 1:
        return format(values[0], spec)
    return (
        f"{format(values.mean(), spec)} ({format(values.min(), spec)}–{format(values.max(), spec)})"
    )


# The results file's tables: (key, header, aligned right) of each column.
TABLES = {
    "seeds": [
        ("model", "model", False),
        ("seed", "seed", True),
        ("exact", "exact match", True),
        ("accuracy", "alignment accuracy", True),
        ("aer", "AER", True),
        ("weights", "weights", True),
        ("seconds", "train time", True),
    ],
    "summary": [
        ("model", "model", False),
        ("exact", "exact match", True),
        ("accuracy", "alignment accuracy", True),
        ("aer", "AER", True),
        ("weights", "weights", True),
    ],
    "speed": [
        ("model", "model", False),
        ("train", "train step", True),
        ("train_ratio", f"× {REFERENCE}", True),
        ("greedy", "greedy", True),
        ("greedy_ratio", f"× {REFERENCE}", True),
    ],
}


def figures(scores, seeds, times):
    """The figures the page's text quotes, by model: the mean, lowest and highest over `seeds`
    of exact match and alignment accuracy (in %, one decimal), each seed's, the mean AER, and
    the step-time ratios to `REFERENCE`."""
    found = {}
    reference = times[REFERENCE]
    for name, rows in scores.items():
        key = figure_key(name)
        exact, accuracy, aer = np.array(rows).T
        for measure, values in (("exact", exact), ("accuracy", accuracy)):
            found[f"{key}_{measure}_mean"] = f"{100 * values.mean():.1f}"
            found[f"{key}_{measure}_lowest"] = f"{100 * values.min():.1f}"
            found[f"{key}_{measure}_highest"] = f"{100 * values.max():.1f}"
            for seed, value in zip(seeds, values, strict=True):
                found[f"{key}_{measure}_{seed}"] = f"{100 * value:.1f}"
        found[f"{key}_aer_mean"] = f"{aer.mean():.3f}"
        found[f"{key}_train_ratio"] = f"{times[name]['train'] / reference['train']:.2f}"
        found[f"{key}_greedy_ratio"] = f"{times[name]['greedy'] / reference['greedy']:.2f}"
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--examples", type=int, default=12000)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--seeds", default="0", help="comma-separated (default: 0)")
    parser.add_argument("--data-seed", type=int, default=0, help="the dates' seed (default: 0)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--output", help="write the tables as Markdown to this file")
    parser.add_argument("--json", metavar="FILE", help="write the tables and figures to this file")
    parser.add_argument("--figure", help="draw the attention of every model to this PNG")
    args = parser.parse_args()

    seeds = [int(seed) for seed in args.seeds.split(",")]
    data = dates.load_data(args.examples, seed=args.data_seed)
    settings = {
        "train_examples": f"{len(data['train']['source']):,}",
        "test_examples": f"{len(data['test']['source']):,}",
        "epochs": str(args.epochs),
        "units": str(args.units),
        "seeds": ", ".join(map(str, seeds)),
        "rounds": str(args.rounds),
    }
    header = (
        f"Dates task, {settings['train_examples']} training / {settings['test_examples']} "
        f"test examples, {args.epochs} epochs, units {args.units}, batch 64, Adam with cosine "
        f"decay from 3e-3, backend {keras.backend.backend()}, data seed {args.data_seed}, "
        f"model seeds {settings['seeds']}."
    )
    print(header, flush=True)
    print("\n".join(markdown(TABLES["seeds"], [])), flush=True)
    tables = {key: [] for key in TABLES}
    models, attention, scores = {}, {}, {name: [] for name in MODELS}
    for seed in seeds:
        for name, options in MODELS.items():
            model, seconds = train(data, options, args, seed)
            exact, accuracy, aer, weights = evaluate(model, data["test"])
            scores[name].append((exact, accuracy, aer))
            if seed == seeds[0]:
                models[name], attention[name] = model, weights
            row = {
                "model": name,
                "seed": str(seed),
                "exact": f"{exact:.2%}",
                "accuracy": f"{accuracy:.2%}",
                "aer": f"{aer:.3f}",
                "weights": f"{model.count_params():,}",
                "seconds": f"{seconds:.0f} s",
            }
            tables["seeds"].append(row)
            print(markdown(TABLES["seeds"], [row])[-1], flush=True)
    for name, rows in scores.items():
        exact, accuracy, aer = np.array(rows).T
        tables["summary"].append(
            {
                "model": name,
                "exact": summary(exact, ".2%"),
                "accuracy": summary(accuracy, ".2%"),
                "aer": summary(aer, ".3f"),
                "weights": f"{models[name].count_params():,}",
            }
        )
    print("\n".join(markdown(TABLES["summary"], tables["summary"])), flush=True)
    times = step_times(models, data, args.rounds)
    reference = times[REFERENCE]
    for name, t in times.items():
        tables["speed"].append(
            {
                "model": name,
                "train": f"{1000 * t['train']:.1f} ms",
                "train_ratio": f"{t['train'] / reference['train']:.2f}",
                "greedy": f"{1000 * t['greedy']:.1f} ms",
                "greedy_ratio": f"{t['greedy'] / reference['greedy']:.2f}",
            }
        )
    print("\n".join(markdown(TABLES["speed"], tables["speed"])), flush=True)
    if args.figure:
        draw(attention, data, args.figure)
    if args.json:
        write_results(
            args.json,
            tables["seeds"],
            settings=settings,
            figures=figures(scores, seeds, times),
            # The runs are the file's rows; the tables derived from them carry their own.
            tables={
                key: {"columns": TABLES[key]} | ({} if key == "seeds" else {"rows": rows})
                for key, rows in tables.items()
            },
        )
    if args.output:
        with open(args.output, "w") as f:
            f.write(f"{header}\n\n" + "\n".join(markdown(TABLES["seeds"], tables["seeds"])))
            f.write(f"\n\nMean (lowest–highest) over the {len(seeds)} seeds:\n\n")
            f.write("\n".join(markdown(TABLES["summary"], tables["summary"])))
            f.write(
                f"\n\nStep times of the trained models, the fastest of {args.rounds} "
                "interleaved rounds in one process:\n\n"
            )
            f.write("\n".join(markdown(TABLES["speed"], tables["speed"])) + "\n")


if __name__ == "__main__":
    main()
