"""What every benchmark shares: the data (random batches, Multi30k and its long corpus, the
recipe's bucketed batches), the translation recipe's model, timing interleaved in one process,
worker processes, a second checkout loaded beside this one, and results as JSON.

The benchmarks are a package: run each from the repository's root as `python -m
benchmarks.<name>`, so that this checkout's `keras_luong` and this module are the ones
imported.
"""

import argparse
import datetime
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ----------------------------------------------------------------------------- data


def batch_data(vocabulary=1000, batch=64, length=30):
    """Random source and target ids `(batch, length)` and `(batch, length + 1)`, each row
    padded after a random length of at least half."""
    rng = np.random.default_rng(0)
    source = rng.integers(3, vocabulary, (batch, length)).astype("int32")
    target = rng.integers(3, vocabulary, (batch, length + 1)).astype("int32")
    padding = np.arange(length)[None] >= rng.integers(length // 2, length + 1, batch)[:, None]
    source[padding] = 0
    target[:, 1:][padding] = 0
    return source, target


def corpus(data, name, train_pairs, valid_pairs):
    """Multi30k's training and validation pairs read from `data` (`None`: its download):
    `name="long"` joins each sentence to the next (the long corpus, about 30 words a
    sentence); `train_pairs` (if given) and `valid_pairs` the first pairs kept."""
    from keras_luong.datasets import multi30k

    splits = multi30k.load_data(data)
    train, valid = splits["train"], splits["validation"]
    if name == "long":
        train = tuple(join_pairs(side) for side in train)
        valid = tuple(join_pairs(side) for side in valid)
    if train_pairs:
        train = tuple(side[:train_pairs] for side in train)
    return train, tuple(side[:valid_pairs] for side in valid)


def join_pairs(sentences):
    """Sentences 0+1, 2+3, ...: each joined to the next one (an odd last one dropped)."""
    return [f"{a} {b}" for a, b in zip(sentences[0::2], sentences[1::2], strict=False)]


def bucketed(vocabulary, sources, targets, shuffle, seed, bucket_width=8, **kwargs):
    """The recipe's batches: `BucketedBatches` of 2,048 tokens of the texts' subword ids
    (`kwargs`: `BucketedBatches`' others, `workers` say)."""
    from keras_luong import BucketedBatches

    return BucketedBatches(
        [vocabulary.encode(s) for s in sources],
        [vocabulary.encode(t) for t in targets],
        tokens_per_batch=2048,
        bucket_width=bucket_width,
        shuffle=shuffle,
        seed=seed,
        **kwargs,
    )


def path(args, name):
    """The file `name` in the benchmark's working folder (`args.workdir`)."""
    return os.path.join(args.workdir, name)


def read_lines(args, name):
    with open(path(args, name), encoding="utf-8") as f:
        return f.read().splitlines()


# ----------------------------------------------------------------------------- the recipe


def recipe_model(vocabulary, seed=0, xla=False):
    """The translation recipe's model (`keras_luong.models.recipe`) at `vocabulary`
    subwords a side (a size, or a vocabulary), seeded, compiled by the recipe (with
    `jit_compile=True` if `xla`, else Keras' default)."""
    import keras

    from keras_luong.models.recipe import recipe_model as build

    size = vocabulary if isinstance(vocabulary, int) else len(vocabulary)
    keras.utils.set_random_seed(seed)
    return build(size, size, jit_compile=True if xla else "auto")


def recipe_train_step(vocabulary, batch, length):
    """A function of no arguments that trains `recipe_model(vocabulary)` on one batch of
    `batch_data(vocabulary, batch, length)`."""
    model = recipe_model(vocabulary)
    source, target = batch_data(vocabulary, batch, length)

    def step():
        model.train_on_batch((source, target[:, :-1]), target[:, 1:])

    return step


def bucket_width(text):
    """`--bucket-width`: `auto`, a width, or `none`, as `python -m keras_luong.train` reads it."""
    from keras_luong.train import bucket_width_argument

    return bucket_width_argument(text)


# ----------------------------------------------------------------------------- timing


def timing_arguments(doc, parser=None, rounds=5, calls=3, vocabulary=8000):
    """The options of a benchmark that times two or more ways of one thing in one run:
    `--rounds`, `--calls`, `--vocabulary` and `--json` (a file the results are written to),
    added to `parser` if given; the parsed arguments."""
    parser = parser or argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--calls", type=int, default=calls, help="calls per way and round")
    parser.add_argument("--vocabulary", type=int, default=vocabulary)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    return parser.parse_args()


def interleaved_medians(versions, cases, rounds, calls):
    """`{(version, case): median seconds}` of every version's calls (`versions[version][case]`,
    functions of no arguments), compiled first, then timed in rounds whose order of versions
    alternates, so that each ratio is taken over the same stretch of the machine's noise."""
    times = {(version, case): [] for version in versions for case in cases}
    for runs in versions.values():
        for case in cases:
            runs[case]()  # compiles
    for round_ in range(rounds):
        order = list(versions) if round_ % 2 == 0 else list(versions)[::-1]
        for case in cases:
            for version in order:
                for _ in range(calls):
                    start = time.perf_counter()
                    versions[version][case]()
                    times[(version, case)].append(time.perf_counter() - start)
    return {key: float(np.median(value)) for key, value in times.items()}


def print_ratios(medians, cases, this, other, rounds, calls, json_path=None, settings=None):
    """Prints each case's medians of `this` and `other` and their ratio; with `json_path`,
    writes them there too (`write_ratios`, with `settings` beside the rounds and calls).
    Returns the rows (strings, as a results file holds them)."""
    import keras

    print(f"backend {keras.backend.backend()}, {rounds} rounds of {calls} calls, medians")
    print(f"{'case':<12} {this + ' ms':>14} {other + ' ms':>14} {'ratio':>7}")
    rows = []
    for case in cases:
        a, b = medians[(this, case)] * 1e3, medians[(other, case)] * 1e3
        print(f"{case:<12} {a:14.1f} {b:14.1f} {a / b:7.3f}")
        rows.append(
            {"case": case, "this": this, "other": other,
             "this ms": f"{a:.1f}", "other ms": f"{b:.1f}", "ratio": f"{a / b:.2f}"}
        )  # fmt: skip
    if json_path:
        write_ratios(json_path, rows, rounds, calls, settings)
    return rows


def write_ratios(json_path, rows, rounds, calls, settings=None):
    """The results file of `print_ratios`' rows: each row's ratio is the figure `<case>_over_
    <other>` (`train_step_over_one_hot`), its times `<case>_<this>_ms` and `<case>_<other>_ms`;
    `settings` (strings) are recorded beside the rounds and calls."""
    figures = {}
    for row in rows:
        case = figure_key(row["case"])
        figures[f"{case}_over_{figure_key(row['other'])}"] = row["ratio"]
        for side in ("this", "other"):
            figures[f"{case}_{figure_key(row[side])}_ms"] = row[f"{side} ms"]
    settings = {"rounds": str(rounds), "calls": str(calls), **(settings or {})}
    write_results(json_path, rows, figures=figures, settings=settings)


# ----------------------------------------------------------------------------- results


def markdown(columns, rows):
    """The Markdown lines of a table of `rows` (dicts of strings) in `columns`, each `(key,
    header, aligned right)`: the table docs/_ext/figures.py renders from a results file's
    `tables`."""
    lines = ["| " + " | ".join(header for _, header, _ in columns) + " |"]
    lines.append("|" + "|".join("---:" if right else "---" for _, _, right in columns) + "|")
    lines += ["| " + " | ".join(row[key] for key, _, _ in columns) + " |" for row in rows]
    return lines


def figure_key(label):
    """A label as a results file's key: `"beam 5, prefix of 5"` is `beam_5_prefix_of_5`,
    `"Bahdanau (2015)"` is `bahdanau_2015`."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def settings_of(args, *names):
    """The options `names` of `args` as a results file's `settings` (strings)."""
    return {name: str(getattr(args, name)) for name in names}


def write_results(json_path, rows, **settings):
    """Writes `rows` (a list of dicts) to `json_path` as JSON, with what produced them: the
    command, the backend, the versions, the date and `settings`."""
    import keras

    import keras_luong

    record = {
        "command": command_line(),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "keras_luong": keras_luong.__version__,
        "date": datetime.date.today().isoformat(),
        **settings,
        "rows": rows,
    }
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def write_figures(json_path, figures, settings):
    """A results file of named figures only: `figures` as they are, and as its rows (one
    `{"figure", "value"}` a figure)."""
    rows = [{"figure": key, "value": value} for key, value in figures.items()]
    write_results(json_path, rows, figures=figures, settings=settings)


# The program that runs this process as a page names it, where `python -m <module>` does not
# (`python -m benchmarks.speed <case>` sets it).
PROGRAM = None


def command_line():
    """The command that runs this process, as a page quotes it: `KERAS_BACKEND=... python -m
    benchmarks.<name> ...` (or `python -m benchmarks.speed <case> ...`), after
    `OMP_NUM_THREADS=...` where it is set (a CPU's timings depend on it)."""
    import keras

    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = PROGRAM or (["-m", spec.name] if spec is not None else [sys.argv[0]])
    threads = os.environ.get("OMP_NUM_THREADS")
    environment = [f"OMP_NUM_THREADS={threads}"] if threads else []
    environment.append(f"KERAS_BACKEND={keras.backend.backend()}")
    return " ".join([*environment, "python", *program, *sys.argv[1:]])


def run_named(package, names, argv, listing):
    """`python -m benchmarks.<package> <name> [options]`: runs the `main()` of module
    `benchmarks.<package>.<name>` on the options, its help and the command its results record
    naming it so; without a name (or with `--help`) prints `listing`."""
    global PROGRAM
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(listing)
        return 0
    name, *rest = argv
    if name not in names:
        raise SystemExit(f"Unknown {package} name {name!r}: expected one of {', '.join(names)}")
    PROGRAM = ["-m", f"benchmarks.{package}", name]
    sys.argv = [" ".join(["python", *PROGRAM]), *rest]  # argparse's `prog`
    if "--processes" in rest:
        return run_processes(PROGRAM, rest)
    module = importlib.import_module(f"benchmarks.{package}.{name}")
    return module.main()


# ----------------------------------------------------------------------------- processes


# A figure that is a measure: a number, then a unit or none (`"1.35"`, `"1,890"`, `"25%"`).
MEASURE = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)(%|×| ms| s)?")


def run_processes(program, argv):
    """`--processes N --json FILE`: runs the benchmark N times, each in a fresh process (one
    after the other) with its own results file, and writes FILE with each figure's median
    over the processes (`median_figures`): a process's compiled kernels, allocator and memory
    layout are its own, so that one process's ratios can be off by more than its rounds show."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--json", required=True)
    known, rest = parser.parse_known_args(argv)
    if known.processes < 2:
        raise ValueError(f"Invalid value for argument --processes: {known.processes} (at least 2)")
    folder = tempfile.mkdtemp(prefix="processes_")
    try:
        records = []
        for number in range(known.processes):
            path = os.path.join(folder, f"{number}.json")
            print(f"process {number + 1} of {known.processes}", flush=True)
            subprocess.run([sys.executable, *program, *rest, "--json", path], check=True)
            with open(path, encoding="utf-8") as f:
                records.append(json.load(f))
    finally:
        shutil.rmtree(folder)
    figures, settings = median_figures(records)
    write_figures(known.json, figures, {**settings, "processes": str(known.processes)})
    return 0


def median_figures(records):
    """`(figures, settings)` of several runs' results files of named figures: each figure the
    median of the runs' values, written with the first run's decimals and unit, and its lowest
    and highest (`<key>_low`, `<key>_high`); a figure that is not a measure (`"never"`) must
    read the same in every run, as must the settings."""
    settings = records[0]["settings"]
    figures = {}
    for record in records[1:]:
        if record["settings"] != settings:
            raise ValueError(f"Invalid runs: settings {record['settings']} and {settings}")
    for key, first in records[0]["figures"].items():
        values = [record["figures"][key] for record in records]
        found = [MEASURE.fullmatch(value) for value in values]
        if not all(found) or len({match.group(2) for match in found}) > 1:
            if len(set(values)) > 1:
                raise ValueError(f"Invalid runs: {key} reads {values}")
            figures[key] = first
            continue
        numbers = sorted(float(match.group(1).replace(",", "")) for match in found)
        decimals = len(found[0].group(1).partition(".")[2])
        grouped, unit = "," if "," in first else "", found[0].group(2) or ""
        median = float(np.median(numbers))
        for suffix, number in (("", median), ("_low", numbers[0]), ("_high", numbers[-1])):
            figures[key + suffix] = f"{number:{grouped}.{decimals}f}{unit}"
    return figures, settings


def worker_result(command, env, name):
    """Runs a worker process; the JSON it prints on its last line (its error, if it fails)."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_baseline(checkout, folder):
    """Another checkout's `keras_luong`, imported beside this one as `keras_luong_baseline`
    from a copy in `folder` with its imports renamed: both versions then share one process,
    one set of compiled kernels and one stretch of the machine's noise."""
    target = os.path.join(folder, "keras_luong_baseline")
    shutil.copytree(os.path.join(checkout, "keras_luong"), target)
    for root, _, files in os.walk(target):
        for name in files:
            if name.endswith(".py"):
                file = os.path.join(root, name)
                with open(file, encoding="utf-8") as f:
                    text = f.read()
                with open(file, "w", encoding="utf-8") as f:
                    f.write(re.sub(r"\bkeras_luong\b", "keras_luong_baseline", text))
    sys.path.insert(0, folder)  # the copy's folder: where `keras_luong_baseline` is found
    import keras_luong_baseline

    return keras_luong_baseline
