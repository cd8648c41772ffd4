"""Draws the figures of the documentation from the tables the pages print.

The numbers come from the markdown tables of docs/benchmarks.md and docs/g2p.md as the site
shows them (the tables and figures of their results files filled in), read by their first
header cell, so a figure cannot disagree with its page: re-run a benchmark, update its table
or results file, then

    python -m benchmarks.charts          # writes docs/images/*.png

and commit the figures with the page.
"""

import argparse
import functools
import importlib.util
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs"


@functools.cache
def figures_hook():
    """The site's own hook (docs/_ext/figures.py), loaded once."""
    spec = importlib.util.spec_from_file_location("figures_hook", DOCS / "_ext" / "figures.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def rendered(page):
    """The markdown of `page` with its results files' figures and tables filled in, by the
    site's own hook."""
    return figures_hook().on_page_markdown((DOCS / page).read_text(encoding="utf-8"))


def table(page, first_header, *columns):
    """The markdown table of `page` whose header starts with `first_header` (and has the
    `columns`): a list of rows (lists of cell strings), the header first."""
    lines = rendered(page).splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header and set(columns) <= set(cells):
            rows = [cells]
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise ValueError(f"{page} has no table starting with {first_header!r}")


def number(cell):
    """The first number in a cell (`2.15 ms` -> 2.15, `**6.73**` -> 6.73, `–` -> None)."""
    match = re.search(r"-?\d+(\.\d+)?", cell.replace(",", ""))
    return float(match.group(0)) if match else None


def local_vs_global(path):
    rows = table("benchmarks.md", "S")
    sizes = [number(c) for c in rows[0][1:]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for row, marker in zip(rows[1:], "os", strict=True):
        ax.plot(sizes, [number(c) for c in row[1:]], marker=marker, label=f"{row[0]} attention")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="source length S",
        ylabel="forward + backward, ms",
        title="Local attention's cost does not grow with S (JAX, compiled)",
    )
    ax.set_xticks(sizes, [str(int(s)) for s in sizes])
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def decoder_step(path):
    rows = table("benchmarks.md", "backend", "(c)/(a) T=50")
    header = rows[0]
    column = header.index("(c)/(a) T=50")
    backends = [row[0] for row in rows[1:]]
    ratios = [number(row[column]) for row in rows[1:]]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bars = ax.barh(backends, ratios, color="#3f51b5")
    ax.axvline(1.0, color="black", lw=1)
    ax.bar_label(bars, [f"{r:.2f}×" for r in ratios], padding=3)
    ax.set(
        xlabel="train step time / Keras-native recipe's (1 = as fast)",
        title="Input feeding's cost in a train step (T = S = 50)",
        xlim=(0, max(ratios) * 1.2),
    )
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def g2p(path):
    rows = table("g2p.md", "system")
    systems = [re.sub(r"\*\*", "", row[0]) for row in rows[1:]]
    wer = [number(row[2]) for row in rows[1:]]
    ours = [s.startswith("ours") for s in systems]
    curve = table("g2p.md", "epoch")
    minutes = [number(c) for c in curve[2][1:]]
    validation = [number(c) for c in curve[1][1:]]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), width_ratios=(1.4, 1))
    colors = ["#3f51b5" if o else "#9e9e9e" for o in ours]
    bars = left.barh(systems, wer, color=colors)
    left.bar_label(bars, [f"{w:.2f}" for w in wer], padding=3, fontsize=8)
    left.invert_yaxis()
    left.tick_params(axis="y", labelsize=8)
    left.set(xlabel="test WER % (lower is better)", title="CMUdict g014b2b: ours and published")
    left.set_xlim(0, max(wer) * 1.2)
    right.plot(minutes, validation, marker="o")
    right.set(
        xlabel="minutes of training (2 CPU cores)",
        ylabel="validation WER %, greedy",
        title="Our run, epoch by epoch",
    )
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


CHARTS = {
    "local_vs_global.png": local_vs_global,
    "decoder_step.png": decoder_step,
    "g2p.png": g2p,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in CHARTS.items():
        draw(args.out / name)
        plt.close("all")
        print(args.out / name)


if __name__ == "__main__":
    main()
