"""The figures of the translation notebook's saved run, written once for every page that quotes
them.

    make notebooks NOTEBOOKS=examples/06_translation.ipynb   # the run (JAX, about 16 minutes)
    python -m benchmarks.notebook_figures                     # then its figures

Reads `examples/06_translation.ipynb`'s saved outputs (each epoch's log line and the test set's
BLEU) and writes `docs/results/multi30k.json`: the headline figures, each epoch's validation
BLEU, attention diagonal and seconds, the settings the pages name, and the published rows
they are compared with. The pages quote its figures as `{{ multi30k.<name> }}`, and a table of
its rows as `<!-- results rows: multi30k -->` (`docs/_ext/figures.py`), so a figure is
written in one place and two pages cannot disagree.
"""

import argparse
import json
import os
import re

from benchmarks.harness import write_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "06_translation.ipynb")
RESULTS = os.path.join(ROOT, "docs", "results", "multi30k.json")
# The published rows of Multi30k's test2016 the page compares with, as their sources give them.
PUBLISHED = {
    "lium_validation_bleu": "39.17",  # LIUM-CVC monomodal NMT, WMT'16 multimodal task
    "lium_test_bleu": "39.00",
    "bentrevett_gru_test_bleu": "28.30",  # bentrevett/pytorch-seq2seq 3, De->En
    "bentrevett_transformer_test_bleu": "36.52",  # bentrevett/pytorch-seq2seq 6, De->En
    "bentrevett_transformer_parameters": "9.0",  # millions
}
# What the run trained, as the notebook's code sets it at full size.
SETTINGS = {
    "vocabulary_size": "6,000",
    "length_penalty": "1.0",
    "num_beams": "5",
    "dropout": "0.3",
}
# An epoch's log line: Keras writes the logs in the order the callbacks added them.
EPOCH = re.compile(r"^\d+/\d+ - (\d+)s - .*val_attention_diagonal: ([\d.]+) - .*val_bleu: ([\d.]+)")
TEST = re.compile(r"(\d+) test sentences, BLEU: greedy ([\d.]+), beam ([\d.]+)")


def saved_outputs(path):
    """The text the notebook's code cells printed, in order."""
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    text = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text.append("".join(output.get("text", "")))
    return "\n".join(text)


def figures(text):
    """`(figures, rows)` of the run whose printed text is `text`."""
    rows = []
    for line in text.splitlines():
        match = EPOCH.match(line.strip())
        if match:
            seconds, diagonal, bleu = match.groups()
            rows.append(
                {
                    "epoch": str(len(rows) + 1),
                    "val_bleu": f"{float(bleu):.2f}",
                    "diagonal": f"{float(diagonal):.2f}",
                    "seconds": seconds,
                }
            )
    test = TEST.search(text)
    if not rows or test is None:
        raise ValueError(
            f"Invalid notebook outputs: expected each epoch's log line and the test BLEU line. "
            f"Received: {len(rows)} epoch lines and {'a' if test else 'no'} test line"
        )
    best = max(rows, key=lambda row: float(row["val_bleu"]))  # the first of the best
    sentences, greedy, beam = test.groups()
    found = {
        "epochs": str(len(rows)),
        "best_epoch": best["epoch"],
        "best_validation_bleu": best["val_bleu"],
        "test_sentences": f"{int(sentences):,}",
        "test_greedy_bleu": greedy,
        "test_beam_bleu": beam,
        "minutes": f"{sum(int(row['seconds']) for row in rows) / 60:.1f}",
        "below_lium": f"{float(PUBLISHED['lium_test_bleu']) - float(beam):.2f}",
    }
    return found, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", default=NOTEBOOK)
    parser.add_argument("--output", default=RESULTS)
    args = parser.parse_args(argv)
    found, rows = figures(saved_outputs(args.notebook))
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    write_results(
        args.output,
        rows,
        run="make notebooks NOTEBOOKS=examples/06_translation.ipynb",
        columns=[["epoch", "epoch"], ["val_bleu", "validation BLEU"], ["diagonal", "diagonal"]],
        figures=found,
        settings=SETTINGS,
        published=PUBLISHED,
    )
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
