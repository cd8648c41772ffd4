"""The built site shows what `mkdocs build --strict` lets through: no raw TeX, no docstring
section left unparsed, no `>>>` example rendered as nested quotes.

`test_built_site_is_clean` builds the site into a temporary folder and reads every page;
the tests above it show, on small pages made for the purpose, that each check fails on
the fault it looks for.
"""

import html
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_case import in_jax_run_only

# The site is built from the pages alone: no backend is involved.
pytestmark = in_jax_run_only("the built site")

ROOT = Path(__file__).resolve().parents[1]
# Section titles of the Keras / Google docstring styles: in the built HTML they must be the
# renderer's section titles, never text, an admonition or a paragraph that starts with one.
SECTION_TITLES = (
    "Args",
    "Arguments",
    "Call arguments",
    "Returns",
    "Raises",
    "Example",
    "Examples",
    "Yields",
)
# What MathJax typesets: the arithmatex wrappers. Code and scripts are left alone too.
NOT_TEXT = re.compile(
    r"<(script|style|pre|code)\b.*?</\1>|<(span|div) class=\"arithmatex\">.*?</\2>", re.S
)
TEX = re.compile(
    r"\$\$|\\[(\[]|\\(frac|sum|prod|tilde|bar|hat|mathrm|mathbf|operatorname|exp|log|sigma"
    r"|alpha|beta|left|right|cdot|quad|qquad|begin|end|text|le|ge|in|top)\b"
)
# Lab-notebook text: who ran what on which machine, goals and whether they were met, what CI
# or a test file does. None of it tells a user anything about the package.
PROCESS_TEXT = re.compile(
    r"\b(was|were) lent\b|\bgoals? (was|were|of)\b|\b(is|are|was|were),? met\b(?! by| with)"
    r"|\bwithin the [^ ]+ asked\b|\bCI runs\b|\bdocs_test\.py\b|\bthis session\b"
    r"|\bissue #?\d+|\bthe issue\b",
    re.I,
)


def faults(page):
    """What is wrong with one built page's HTML, as a list of short descriptions."""
    found = []
    for quote in re.findall(r"<blockquote>(.*?)</blockquote>", page, re.S):
        if "&gt;&gt;&gt;" in quote:
            found.append("a >>> example rendered as a blockquote")
    titles = "|".join(SECTION_TITLES)
    for match in re.finditer(
        rf"<p>\s*({titles}):|<p class=\"admonition-title\">\s*({titles})\s*</p>"
        rf"|<summary>\s*({titles})\s*</summary>",
        page,
    ):
        found.append(f"an unparsed docstring section: {match.group(0)!r}")
    text = html.unescape(re.sub(r"<[^>]+>", " ", NOT_TEXT.sub(" ", page)))
    for match in TEX.finditer(text):
        context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
        found.append(f"raw TeX outside a math block: ...{context}...")
    for paragraph in re.findall(r"<p>(.*?)</p>", page, re.S):
        if re.search(r"\n\s*(-|\*|\d+\.) \S", paragraph):
            found.append(f"a list rendered as a paragraph: {paragraph[:80]!r}")
    everything = html.unescape(re.sub(r"<[^>]+>", " ", page))  # code and comments included
    for match in PROCESS_TEXT.finditer(everything):
        context = everything[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
        found.append(f"process text: ...{context}...")
    return found


def test_checks_find_a_blockquoted_example():
    page = "<blockquote><blockquote><blockquote><p>&gt;&gt;&gt; x = 1</p>"
    page += "</blockquote></blockquote></blockquote>"
    assert faults(page) == ["a >>> example rendered as a blockquote"]
    assert faults('<div class="highlight"><pre>&gt;&gt;&gt; x = 1</pre></div>') == []


@pytest.mark.parametrize(
    "page",
    [
        "<p>Call arguments: query: the decoder states. value: the encoder states.</p>",
        '<div class="admonition call-arguments"><p class="admonition-title">Call arguments'
        "</p><p>query: ...</p></div>",
        "<details><summary>Example</summary><p>x</p></details>",
        "<p>Returns:\nthe context</p>",
    ],
)
def test_checks_find_an_unparsed_section(page):
    assert len(faults(page)) == 1 and "unparsed docstring section" in faults(page)[0]


@pytest.mark.parametrize(
    "sentence",
    [
        "No GPU machine was lent to this project.",
        "The goal was 35 BLEU: 37.85, met.",
        "# CI runs every notebook with QUICK=1",
        "This page runs as written (tests/docs_test.py executes it).",
        "PER is met (6.73%).",
    ],
)
def test_checks_find_process_text(sentence):
    page = f"<p>{html.escape(sentence)}</p>"
    assert any(f.startswith("process text") for f in faults(page)), sentence
    assert not faults("<p>The test set is scored as a whole; each case is met by a mask.</p>")


def test_checks_find_a_list_run_into_its_paragraph():
    assert any("list rendered" in f for f in faults("<p>What this shows:\n- one\n- two</p>"))
    assert not faults("<p>What this shows:</p>\n<ul>\n<li>one</li>\n</ul>")


def test_checks_find_raw_tex_and_leave_math_blocks_alone():
    assert len(faults(r"<li><p>\[ p_t = S \cdot \sigma(v_p) \]</p></li>")) >= 1
    assert len(faults(r"<p>where $$c_t = \sum_s a_t(s)$$</p>")) >= 1
    typeset = r'<div class="arithmatex">\[ c_t = \sum_s a_t(s) \bar h_s \]</div>'
    typeset += r'<p>with <span class="arithmatex">\(\tilde h_t\)</span> and <code>\frac</code></p>'
    assert faults(typeset) == []


def test_built_site_is_clean(tmp_path):
    site = tmp_path / "site"
    build = subprocess.run(
        # Not `--quiet`: it hides the warnings that `--strict` turns into a failed build.
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr[-3000:]
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    api = (site / "api" / "global_attention" / "index.html").read_text()
    # The Keras sections are rendered as the renderer's own sections.
    for title in ("Parameters:", "Call arguments:", "Returns:", "Examples:"):
        assert f'doc-section-title">{title}</span>' in api
    # Every notebook page links to its notebook, which the site holds.
    notebooks = sorted((site / "notebooks").glob("*/index.html"))
    assert len(notebooks) == len(list((ROOT / "examples").glob("*.ipynb")))
    for page in notebooks:
        link = re.search(r'href="([^"]+\.ipynb)" download>Download this notebook', page.read_text())
        assert link, f"{page.parent.name} has no download link"
        relative = "notebooks/" + link.group(1).split("/notebooks/", 1)[1]
        assert (site / relative).is_file(), relative
    problems = {
        page.relative_to(site).as_posix(): found
        for page in pages
        if (found := faults(page.read_text()))
    }
    # The contributing page is for working on the package: it may say what CI and the tests do.
    contributing = problems.pop("contributing/index.html", [])
    assert all(fault.startswith("process text") for fault in contributing), contributing
    assert not problems, problems


def load_charts():
    spec = importlib.util.spec_from_file_location("charts", ROOT / "benchmarks" / "charts.py")
    charts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(charts)
    return charts


def load_hook(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_ext" / f"{name}.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_charts_read_the_pages_tables():
    """The figures are drawn from the pages' tables as the site shows them: the parser reads
    the numbers of the results file the page renders, and the script draws every figure the
    pages embed."""
    import json

    charts = load_charts()
    rows = charts.table("benchmarks.md", "S")
    record = json.loads((ROOT / "docs" / "results" / "local_vs_global.json").read_text())
    assert rows == [
        [label, *(row[key] for row in record["rows"])]
        for key, label in (("S", "S"), ("local", "local"), ("global", "global"))
    ]
    assert rows[0] == ["S", "256", "1024", "4096", "16384"]
    assert [charts.number(c) for c in ("2.15 ms", "**6.73**", "–", "1,415 ms")] == [
        2.15,
        6.73,
        None,
        1415.0,
    ]
    embedded = set()
    for markdown in (ROOT / "docs").rglob("*.md"):
        embedded |= set(re.findall(r"\]\(images/([\w.]+\.png)\)", markdown.read_text()))
    assert embedded == set(charts.CHARTS)
    for name in charts.CHARTS:
        assert (ROOT / "docs" / "images" / name).stat().st_size > 10_000


def test_charts_script_draws_every_figure(tmp_path):
    charts = load_charts()
    for name, draw in charts.CHARTS.items():
        draw(tmp_path / name)
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_line_page_lists_every_option_of_the_four_commands():
    """docs/_ext/command_lines.py writes each command's options from its parser into the
    page when the site is built: every option of the four parsers is there, with its default."""
    hook = load_hook("command_lines")
    page = (ROOT / "docs" / "guide" / "command_lines.md").read_text(encoding="utf-8")
    commands = hook.MARKER.findall(page)
    assert commands == [f"keras_luong.{c}" for c in ("prepare", "train", "translate", "evaluate")]
    rendered = hook.on_page_markdown(page)
    assert "<!-- options" not in rendered
    for command in commands:
        parser = importlib.import_module(command).build_parser()
        options = [o for a in parser._actions for o in a.option_strings]
        options = [o for o in options if o not in ("-h", "--help")]
        assert len(options) > 3
        section = rendered[rendered.index(f"## {command.split('.')[1]}") :]
        for option in options:
            assert f"| `{option}`" in section, (command, option)
    # Rows checked by hand: a default, a pair of values, choices, a required option.
    assert "| `--beam` `BEAM` | `1` | beam size; 1 (the default) decodes greedily |" in rendered
    assert "| `--max-length-ratio` `A` `B` | `1.5 10` |" in rendered
    assert "| `--attention-timing` `{luong,bahdanau}` | `luong` |" in rendered
    assert "| `--references` `REFERENCES` | required |" in rendered
    assert "as 'score&lt;TAB&gt;translation'" in rendered  # not read as an HTML tag
    assert "docs/_ext/command_lines.py" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_one_matrix_of_export_formats_and_the_backends_that_write_them():
    """The deployment page's matrix is the one that says which backend writes which format; it
    agrees with what `export_generator` accepts, and the pages that mention formats link to it
    rather than stating their own."""
    from keras_luong.generation.export_formats import EXPORT_FORMATS

    names = {"TensorFlow": "tensorflow", "JAX": "jax", "PyTorch": "torch"}
    page = (ROOT / "docs" / "guide" / "deployment.md").read_text(encoding="utf-8")
    matrix = page[page.index("## Which backend writes which format") :]
    rows = {}
    for line in matrix.splitlines()[4:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split("`")[1].strip('"')] = {names[n] for n in cells[1].split(", ")}
    assert rows == {name: set(backends) for name, backends in EXPORT_FORMATS.items()}
    for path in ("README.md", "docs/install.md", "docs/guide/backends.md", "docs/index.md"):
        text = (ROOT / path).read_text(encoding="utf-8")
        link = "deployment/" if path == "README.md" else "deployment.md"  # the site's address
        assert f"{link}#which-backend-writes-which-format" in text, path


# The statements whose every figure comes from a results file: (page, where the statement
# starts, where it ends, the results file).
RESULTS_STATEMENTS = [
    ("index.md", "**Translation, Multi30k", "- **Grapheme", "multi30k"),
    (
        "translation.md",
        "## The recipe's model and the published rows",
        "`make translate",
        "multi30k",
    ),
    ("luong_vs_bahdanau.md", "## On the dates task", "## Reproduce", "luong_vs_bahdanau"),
    ("results.md", "Every variant", "AER is Och and Ney's", "dates_variants"),
    ("index.md", "- **Grapheme", "- **Local attention", "g2p"),
    # (the validation words' sentence between them names the length penalties tried)
    ("g2p.md", "The test words, beam search", "Beam search on the validation words", "g2p"),
    ("g2p.md", "Validation WER (greedy) after", "## The variants at one equal budget", "g2p"),
    ("opennmt.md", "## Decoding: the first call", "## Given an hour", "opennmt_decode"),
    ("g2p.md", "## Coverage penalty and n-gram", "Neither helps here", "g2p_decoding_options"),
    ("g2p.md", "The same small budget with", "Their alignments on three", "g2p_small_global"),
    ("g2p.md", "## The variants at one equal budget", "The published 3x512", "g2p_variants"),
    ("benchmarks.md", "## Local vs global attention", "## Decoder train step", "local_vs_global"),
    ("benchmarks.md", "## Local attention inside a model", "## Decoding (", "source_length"),
    ("benchmarks.md", "## Decoding (", "### Against tensorflow-addons", "decoding_jax"),
    ("benchmarks.md", "## The decoder's run paths", "## What the decoding", "run_paths_jax"),
    ("benchmarks.md", "### An ensemble's decoding", "## The decoder's", "ensemble_overhead_jax"),
    (
        "benchmarks.md",
        "### Against tensorflow-addons",
        "`torch.compile`, which",
        "decoding_vs_tfa_jax_64",
    ),
    ("benchmarks.md", "`torch.compile`, which", "### Against the same model", "torch_compile_1"),
    (
        "opennmt.md",
        "## Where the speed comes from",
        "- **On torch the decoder attends through",
        "sequence_loss_speed_jax",
    ),
    ("benchmarks.md", "A torch user compares", "What brings the torch backend", "plain_torch_2"),
    (
        "benchmarks.md",
        "### Coverage penalty and n-gram blocking",
        "The n-gram check compares",
        "decoding_extras_jax",
    ),
    ("migrating.md", "**Speed.** On JAX", "**Local attention**", "decoding_vs_tfa_jax_64"),
    ("guide/own_corpus.md", "## Faster training on each", "On PyTorch on a CPU", "compile_cache"),
    ("guide/own_corpus.md", "On PyTorch on a CPU", "you; `python -m", "torch_allocator"),
]
# The rows of the benchmarks page's summary that quote results files (each ends at its line's
# end).
RESULTS_STATEMENTS += [
    ("benchmarks.md", f"| {question}", "\n", name)
    for question, name in [
        ("What does `generate` add", "decoding_sentence_jax"),
        ("On torch, against the same model in plain PyTorch", "plain_torch_2"),
        ("A second `generate`", "decoding_jax"),
        ("Is decoding as fast as tensorflow-addons'", "decoding_vs_tfa_jax_64"),
        ("Does the label-smoothed loss", "sequence_loss_speed_jax"),
        ("Does the output layer's matrix form", "output_layer_jax"),
        ("Does adding the output layer's bias", "output_layer_separate_bias_torch"),
        ("Does local attention cost O(D)", "local_vs_global"),
        ("What does decoding four models", "ensemble_overhead_jax"),
        ("How much faster does torch train", "torch_allocator"),
        ("On JAX, what does the persistent", "compile_cache"),
        ("Does `translate`'s first call", "opennmt_decode"),
    ]
]
NUMBER = r"(?<![\w.])\d[\d,]*\.\d+"


# Sections whose decimal numbers are not measurements: parameters and defaults, versions,
# sizes, and the papers' published figures.
NOT_MEASURED = {
    ("api/tfa.md", "# tensorflow-addons adapter"),
    ("g2p.md", "## Our run and the published rows"),
    ("guide/attention.md", "## Monotonic attention"),
    ("guide/deployment.md", "## Formats the loop does not go to"),
    ("guide/own_corpus.md", "## The recipe in Python"),
    ("guide/own_corpus.md", "## Local-p attention"),
    ("guide/own_corpus.md", "## Decoding"),
    ("guide/seq2seq.md", "## Variants"),
    ("guide/seq2seq.md", "## Decoding"),
    ("guide/seq2seq.md", "## Strings in, strings out"),
    ("index.md", "# keras-luong"),
    ("install.md", "# Install"),
    ("large_corpus.md", "# Large corpora: the paper's WMT'14"),
    ("large_corpus.md", "## 3. Train from it"),
    ("large_corpus.md", "## 4. Evaluate with sacreBLEU"),
    ("large_corpus.md", "## What the paper reports"),
    ("maths.md", "### The paper's best single model"),
    ("migrating.md", "## Change the import"),
    ("migrating.md", "## What maps to what"),
    ("migrating.md", "## What differs in numbers, and why"),
    ("translation.md", "## The recipe's model and the published rows"),
}
# Sections that state measured figures typed by hand: what is left to come from results files
# (each benchmark's `--json`), where `test_the_figures_a_page_quotes_come_from_one_results_file`
# can check them. A section leaves this list when its last such figure does.
BY_HAND = {
    ("api/luong_seq2seq.md", "## Built from parts"),
    ("bad_inputs.md", "## Bucketed batches (`BucketedBatches`)"),
    ("benchmarks.md", "## In short"),
    ("benchmarks.md", "## Decoder train step (`benchmarks/speed/decoder_step.py`)"),
    ("benchmarks.md", "### Against the same model in plain PyTorch (torch backend)"),
    (
        "benchmarks.md",
        "### Coverage penalty and n-gram blocking (`benchmarks/speed/decoding_extras.py`)",
    ),
    (
        "benchmarks.md",
        "## What the decoding controls cost (`benchmarks/speed/decoding_controls.py`)",
    ),
    ("benchmarks.md", "## On a GPU (`benchmarks/gpu.py`)"),
    ("guide/command_lines.md", "# Command lines"),
    ("guide/deployment.md", "## Latency"),
    ("guide/own_corpus.md", "## Check that attention locks on"),
    ("index.md", "## In numbers"),
    ("large_corpus.md", "## What a run on one machine measured"),
    ("opennmt.md", "# Beside OpenNMT-py"),
    ("opennmt.md", "## Training speed"),
    ("opennmt.md", "## Where the speed comes from"),
    ("opennmt.md", "## Translation quality at one budget"),
    ("opennmt.md", "## Given an hour"),
    ("scaling.md", "## What is tested"),
    ("scaling.md", "## TensorFlow: `tf.distribute`"),
    ("studies/batching.md", "## Buckets against one padded array"),
    ("studies/batching.md", "## Without buckets"),
    ("studies/batching.md", "## TensorFlow's reading threads"),
    ("studies/decoder_loop.md", "## Two per-step costs that grow with T"),
    ("studies/decoder_loop.md", "## The alternatives"),
    ("studies/recipe.md", "# How the translation recipe was chosen"),
    ("studies/seed_study.md", "## What it found"),
    ("studies/seed_study.md", "## The runs behind it"),
    ("translation.md", "## Decoding options"),
    ("translation.md", "### How `translate` batches"),
    ("translation.md", "## Ensembles and averaged checkpoints"),
}


def typed_figures(page, text, statements=RESULTS_STATEMENTS):
    """`{heading: [numbers]}`: the decimal numbers of a page's text typed on the page, by the
    heading of their section: not a results file's figure (`{{ name.key }}`), not code (a
    fenced block or a code span), not inside one of the `statements` the figures test checks."""
    checked = []
    for name, start, end, _ in statements:
        if name == page:
            begin = text.index(start)
            checked.append((begin, text.index(end, begin)))
    found, heading, position, fenced = {}, "(top)", 0, False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            heading = line.strip()
        elif not fenced:
            prose = re.sub(r"\{\{.*?\}\}|`[^`]*`", lambda m: " " * len(m.group(0)), line)
            for number in re.finditer(NUMBER, prose):
                at = position + number.start()
                if not any(begin <= at < end for begin, end in checked):
                    found.setdefault(heading, []).append(number.group(0))
        position += len(line)
    return found


def test_typed_figures_leave_out_results_figures_code_and_checked_statements():
    page = (
        "# Title\n\nversion 0.4.0 of it\n\n## Speed\n\n{{ a.b }}× at `rate=0.1`, then 1.25×,\n"
        "```python\nx = 2.5\n# 7.5 in a comment\n```\n## Decoding\nchecked 3.75 here\n"
        "### Next\n6.5\n"
    )
    assert typed_figures("a.md", page, []) == {"# Title": ["0.4"], "## Speed": ["1.25"],
        "## Decoding": ["3.75"], "### Next": ["6.5"]}  # fmt: skip
    statements = [("a.md", "## Decoding", "### Next", "a"), ("b.md", "## Speed", "\n", "b")]
    assert typed_figures("a.md", page, statements) == {
        "# Title": ["0.4"], "## Speed": ["1.25"], "### Next": ["6.5"]
    }  # fmt: skip


def test_every_measured_figure_comes_from_a_results_file_or_is_listed_as_typed():
    """A section that states decimal numbers typed on its page is a section of parameters,
    versions and published figures (`NOT_MEASURED`) or one whose measured figures are still
    typed by hand (`BY_HAND`): a new one fails here until its figures come from a results file,
    and a listed one that no longer types any fails until it leaves the list."""
    found = set()
    for path in sorted((ROOT / "docs").rglob("*.md")):
        page = path.relative_to(ROOT / "docs").as_posix()
        for heading, numbers in typed_figures(page, path.read_text(encoding="utf-8")).items():
            found.add((page, heading))
            assert (page, heading) in NOT_MEASURED | BY_HAND, (
                f"{page}, {heading!r} types {numbers}: quote them from a results file"
            )
    assert not NOT_MEASURED & BY_HAND
    assert (NOT_MEASURED | BY_HAND) <= found, (
        f"no typed figures now: {(NOT_MEASURED | BY_HAND) - found}"
    )


def test_the_figures_a_page_quotes_come_from_one_results_file():
    """docs/_ext/figures.py fills `{{ name.key }}` from docs/results/name.json: every page's
    placeholders name a figure a results file holds, the Multi30k statements state no figure
    that the results file does not hold, and the file holds what the notebook's saved run
    printed (benchmarks/notebook_figures.py reads it again here)."""
    import json

    from benchmarks import notebook_figures

    hook = load_hook("figures")
    for path in sorted((ROOT / "docs").rglob("*.md")):
        rendered = hook.on_page_markdown(path.read_text(encoding="utf-8"))
        assert "{{" not in rendered and "<!-- results rows" not in rendered, path
    with pytest.raises(ValueError, match="no 'nothing'"):
        hook.on_page_markdown("{{ multi30k.nothing }}")
    for page, start, end, name in RESULTS_STATEMENTS:
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        raw = text[text.index(start) : text.index(end, text.index(start))]
        assert f"{{{{ {name}." in raw, page  # the statement quotes the file
        held = set()  # what the files the statement quotes hold
        for quoted in set(hook.FIGURE.findall(raw)) | set(hook.TABLE.findall(raw)):
            record = hook.results(quoted[0])
            held |= {v for section in hook.SECTIONS for v in record.get(section, {}).values()}
            rows = record["rows"] + [
                r for t in record.get("tables", {}).values() for r in t.get("rows", [])
            ]
            held |= {value for row in rows for value in row.values()}
        held = {number for value in held for number in re.findall(NUMBER, value)}  # 98.5% -> 98.5
        section = hook.on_page_markdown(raw)
        for number in re.findall(NUMBER, section):
            assert number in held, f"{page} states {number}, which no results file it quotes holds"
    # The comparison's summary rows and the figures its text quotes are its runs' means.
    from benchmarks.harness import figure_key

    record = json.loads((ROOT / "docs" / "results" / "luong_vs_bahdanau.json").read_text())
    for row in record["tables"]["summary"]["rows"]:
        runs = [run for run in record["rows"] if run["model"] == row["model"]]
        assert len(runs) == len(record["settings"]["seeds"].split(", "))
        for measure in ("exact", "accuracy"):
            mean = sum(float(run[measure].rstrip("%")) for run in runs) / len(runs)
            assert float(row[measure].split("%")[0]) == pytest.approx(mean, abs=0.01)
            figure = record["figures"][f"{figure_key(row['model'])}_{measure}_mean"]
            assert float(figure) == pytest.approx(mean, abs=0.06), row["model"]
    # Notebook 07 trains three of the models as the script does with seed 0: its saved run
    # printed those rows.
    printed = re.findall(
        r"([\w ,]+): exact match ([\d.]+)%, alignment accuracy ([\d.]+)%, AER ([\d.]+), ([\d,]+)",
        notebook_figures.saved_outputs(ROOT / "examples" / "07_luong_vs_bahdanau.ipynb"),
    )
    names = {
        "Luong, general": "Luong, general",
        "Bahdanau, additive": "Bahdanau (2015)",
        "Bahdanau, general": "Bahdanau timing, general",
    }
    assert sorted(name.strip() for name, *_ in printed) == sorted(names)
    for name, exact, accuracy, aer, weights in printed:
        (run,) = [
            r for r in record["rows"] if r["model"] == names[name.strip()] and r["seed"] == "0"
        ]
        assert float(exact) == pytest.approx(float(run["exact"].rstrip("%")), abs=0.051), name
        assert float(accuracy) == pytest.approx(float(run["accuracy"].rstrip("%")), abs=0.051)
        assert (aer, weights) == (run["aer"], run["weights"]), name
    # The results file holds what the saved notebook printed.
    found, rows = notebook_figures.figures(
        notebook_figures.saved_outputs(notebook_figures.NOTEBOOK)
    )
    record = json.loads((ROOT / "docs" / "results" / "multi30k.json").read_text())
    assert record["figures"] == found and record["rows"] == rows
    assert record["published"] == notebook_figures.PUBLISHED
    # A hand-made run's outputs give the figures by hand.
    text = (
        "Epoch 1: val_bleu 6.00\n287/287 - 178s - 620ms/step - val_attention_diagonal: 0.8493"
        " - val_bleu: 5.9977 - lr: 0.002\n287/287 - 139s - x - val_attention_diagonal: 0.7843"
        " - val_bleu: 21.3134 - lr: 0.002\n1000 test sentences, BLEU: greedy 35.74, beam 37.28"
    )
    found, rows = notebook_figures.figures(text)
    assert [row["val_bleu"] for row in rows] == ["6.00", "21.31"]
    assert found["best_epoch"] == "2" and found["minutes"] == f"{(178 + 139) / 60:.1f}"
    assert found["below_lium"] == "1.72" and found["test_sentences"] == "1,000"
    with pytest.raises(ValueError, match="epoch lines"):
        notebook_figures.figures("no run here")
