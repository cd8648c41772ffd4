"""Collect the results.json of several `benchmarks/g2p.py` runs into one table.

    python -m benchmarks.g2p_table g2p_output/variants [--json docs/results/g2p_variants.json]

Each sub-folder of the argument is one run (`make g2p-variants` writes them); the table gives
its variant, the epochs it trained, the best validation WER, and the test PER and WER of greedy
decoding and of beam search. `--json FILE` writes the results file docs/g2p.md quotes: the
table, each variant's figures (`global_dot_beam_wer`, ...), the gaps its text names, and the
paper's BLEU gain from input feeding.
"""

import argparse
import json
import os
import re

from benchmarks import published
from benchmarks.harness import figure_key, markdown, write_results

# `make g2p-variants`' folders, in the page's order, and the label of each.
VARIANTS = {
    "global-dot": "global, dot, feeding on",
    "global-general": "global, general, feeding on",
    "global-general-no-feeding": "global, general, feeding off",
    "local-m-general": "local-m, general, feeding on",
    "local-p-general": "local-p, general, feeding on",
    "bahdanau-2015": "Bahdanau's decoder, additive score",
}
COLUMNS = (
    ("variant", "variant", False),
    ("epochs", "epochs", True),
    ("validation_wer", "best validation WER %", True),
    ("greedy_per", "greedy PER %", True),
    ("greedy_wer", "greedy WER %", True),
    ("beam_per", "beam PER %", True),
    ("beam_wer", "beam WER %", True),
)
# The gaps of test WER with beam search the page's text names: `(figure, worse, better)`,
# each `worse`'s WER less `better`'s, in points with one decimal.
GAPS = (
    ("local_m_behind_global", "local-m-general", "global-general"),
    ("global_behind_local_p", "global-general", "local-p-general"),
    ("general_behind_dot", "global-general", "global-dot"),
    ("feeding_on_behind_off", "global-general", "global-general-no-feeding"),
    ("dot_behind_bahdanau", "global-dot", "bahdanau-2015"),
    ("general_behind_bahdanau", "global-general", "bahdanau-2015"),
)


def read_runs(root):
    """`{folder: results.json}` of each run under `root`, in `VARIANTS`' order (others after,
    by name)."""
    names = [n for n in os.listdir(root) if os.path.exists(os.path.join(root, n, "results.json"))]
    order = list(VARIANTS)
    names.sort(key=lambda n: (order.index(n) if n in order else len(order), n))
    runs = {}
    for name in names:
        with open(os.path.join(root, name, "results.json")) as f:
            runs[name] = json.load(f)
    return runs


def row_of(name, result):
    """The table's row of one run's results.json (percentages with two decimals)."""
    (greedy_name, greedy), (beam_name, beam) = result["test"].items()
    assert greedy_name.endswith("greedy") and "beam" in beam_name, result["test"]
    best = min(point["wer"] for point in result["curve"])
    return {
        "variant": VARIANTS.get(name, name),
        "epochs": str(result["curve"][-1]["epoch"]),
        "validation_wer": f"{100 * best:.2f}",
        "greedy_per": f"{100 * greedy['per']:.2f}",
        "greedy_wer": f"{100 * greedy['wer']:.2f}",
        "beam_per": f"{100 * beam['per']:.2f}",
        "beam_wer": f"{100 * beam['wer']:.2f}",
    }


def beam_settings(result):
    """`(beam width, length penalty)` of a run's beam-search row ("ours, beam 5 (length
    penalty 0.5)")."""
    beam_name = list(result["test"])[1]
    found = re.fullmatch(r"ours, beam (\d+) \(length penalty ([\d.]+)\)", beam_name)
    if found is None:
        raise ValueError(f"Invalid results.json: a beam-search row named {beam_name!r}")
    return found.groups()


def figures_of(rows):
    """Each run's row figures (`<folder as key>_<column>`, from `{folder: row}`) and the
    `GAPS` whose runs are all there."""
    figures = {}
    for name, row in rows.items():
        for column, value in row.items():
            if column != "variant":
                figures[f"{figure_key(name)}_{column}"] = value
    for gap, worse, better in GAPS:
        if worse in rows and better in rows:
            points = float(rows[worse]["beam_wer"]) - float(rows[better]["beam_wer"])
            figures[gap] = f"{points:.1f}"
    return figures


def settings_of(runs):
    """What every run shares: epochs, beam width, length penalty and the local runs' window
    half-width D (an error where they differ, since the table compares the runs at one
    budget)."""
    shared = {}
    for name, result in runs.items():
        width, penalty = beam_settings(result)
        found = {
            "epochs": str(result["curve"][-1]["epoch"]),
            "beam_width": width,
            "length_penalty": penalty,
        }
        window = re.search(r" D=(\d+),", result["recipe"])
        if window is not None:
            found["window"] = window.group(1)
        for key, value in found.items():
            if shared.setdefault(key, value) != value:
                raise ValueError(
                    f"Invalid runs: {name} has {key} {value}, the others {shared[key]}"
                )
    return shared


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="a folder of runs, one sub-folder each")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)
    runs = read_runs(args.root)
    if not runs:
        raise SystemExit(f"no results.json under {args.root}")
    rows = {name: row_of(name, result) for name, result in runs.items()}
    print("\n".join(markdown(COLUMNS, list(rows.values()))))
    if args.json:
        (_, _, without), (_, _, with_feeding) = published.LUONG_2015_INPUT_FEEDING
        write_results(
            args.json,
            list(rows.values()),
            settings=settings_of(runs),
            figures=figures_of(rows),
            published={"luong_input_feeding_gain": f"{with_feeding - without:.1f}"},
            tables={"variants": {"columns": COLUMNS}},
        )


if __name__ == "__main__":
    main()
