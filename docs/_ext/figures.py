"""An mkdocs hook: the figures a page quotes from a results file, filled in when the site is
built, so that a figure is written once (by the script that measured it) and two pages cannot
disagree.

- `{{ name.key }}` becomes the figure `key` of `docs/results/name.json` (its `figures`, its
  `settings` or its `published` rows);
- a line `<!-- results rows: name -->` becomes the table of that file's `rows`, one row of the
  page's table for each of its `columns`;
- a line `<!-- results table: name.key -->` becomes the table `key` of that file's `tables`: its
  `columns` (key, header, aligned right) across, its `rows` (else the file's) down.

A name or key that no results file holds stops the build with an error.
"""

import importlib.util
import json
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
# The benchmarks' harness, which writes the results files, renders their tables too (the hook
# runs outside the repository's root, where `benchmarks` is not importable).
_spec = importlib.util.spec_from_file_location(
    "benchmarks_harness", RESULTS.parents[1] / "benchmarks" / "harness.py"
)
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
FIGURE = re.compile(r"\{\{ *(\w+)\.(\w+) *\}\}")
ROWS = re.compile(r"^<!-- results rows: (\w+) -->$", re.MULTILINE)
TABLE = re.compile(r"^<!-- results table: (\w+)\.(\w+) -->$", re.MULTILINE)
SECTIONS = ("figures", "settings", "published")


def results(name):
    """The results file `docs/results/<name>.json`, read."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"Invalid figure: no results file {path.name} in {RESULTS}")
    return json.loads(path.read_text(encoding="utf-8"))


def figure(name, key):
    """The figure `key` of the results file `name`, as the script that measured it wrote it."""
    record = results(name)
    for section in SECTIONS:
        if key in record.get(section, {}):
            return record[section][key]
    raise ValueError(
        f"Invalid figure: {name}.json has no {key!r}. Expected one of "
        f"{sorted(k for section in SECTIONS for k in record.get(section, {}))}"
    )


def rows_table(name):
    """The markdown table of the results file's rows: its columns down, its rows across."""
    record = results(name)
    lines = []
    for number, (key, label) in enumerate(record["columns"]):
        cells = [row[key] for row in record["rows"]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        if number == 0:
            lines.append("|---|" + "---:|" * len(cells))
    return "\n".join(lines)


def table(name, key):
    """The markdown table `key` of the results file's `tables`: a row for each of its rows."""
    record = results(name)
    if key not in record.get("tables", {}):
        raise ValueError(
            f"Invalid table: {name}.json has no table {key!r}. Expected one of "
            f"{sorted(record.get('tables', {}))}"
        )
    spec = record["tables"][key]
    return "\n".join(harness.markdown(spec["columns"], spec.get("rows", record["rows"])))


def on_page_markdown(markdown, **kwargs):
    markdown = ROWS.sub(lambda match: rows_table(match.group(1)), markdown)
    markdown = TABLE.sub(lambda match: table(*match.groups()), markdown)
    return FIGURE.sub(lambda match: figure(*match.groups()), markdown)
