"""The documentation's code runs as written, and every public argument is documented.

Each page below has its python blocks executed in order in one namespace (in a temporary
directory, for the files they save); blocks in a tab or after a comment that say they are
tensorflow-addons code are for reading only. The blocks assert their own values (against
numpy, or properties such as weights summing to one); this test checks they ran and printed
what the page says they print. The recipes for a user's own corpus run on tiny files written
under the names they read, their sizes made small; a block that cannot run here (a GPU
cluster's launcher) carries a marker saying why, and every other block of every page runs.
"""

import gzip
import importlib
import inspect
import os
import re
import textwrap
from pathlib import Path

import keras
import pytest

import keras_luong
from keras_luong import samplers
from keras_luong.attention import base as base_attention
from keras_luong.data import batching, vocabulary
from keras_luong.training import callbacks, losses
from tests.corpora import ENGLISH, GERMAN
from tests.test_case import BACKEND

DOCS = Path(__file__).resolve().parents[1] / "docs"
# page -> text the page's comments say its code prints
PAGES = {
    "quickstart.md": ["['2', '12']", "['4']", "1 2"],
    "guide/attention.md": [
        "(2, 3, 16)",
        "(None, None, 40)",
        "[0. 1. 2.]",
        "('dot', 'general', 'concat', 'location', 'cosine')",
        "(2, 3, 5)",
        "(2, 3, 5) [(2, 5), (2, 5)]",
        "(2, 5)",
    ],
    "guide/decoder.md": ["(2, 5, 16) (2, 5, 9)"],
    "guide/seq2seq.md": ["p = 0.4", "(8, 6) (8, 3, 6) (8, 3)", "(2, 6, 5)", "(8, 6) (8, 6)"],
    "guide/backends.md": ["float16"],
    "guide/deployment.md": ["(2, 4)"],  # the page's (2, 10) at the sizes RECIPES makes small
    "api/luong_seq2seq.md": [],
    "api/scheduled_sampling.md": [],
    "migrating.md": [
        "(2, 5, 30)\n2 3\n",
        "True\n8\n",
        "(2, 5, 30)",
        "(2, 20)",
        "(2, 5, 16) (2, 12)",
        "(2, 5, 16)\n",
        "(2, 5, 12) (2, 5, 7)",
    ],
}


def saved_members():
    """Four small models of one subword vocabulary saved as `member{seed}.keras` (and two
    epochs' weights of the first), as the own-corpus guide's ensemble code reads them."""
    from keras_luong import LuongSeq2Seq, SubwordVocabulary

    subwords = SubwordVocabulary.train(ENGLISH * 4 + GERMAN * 4, vocabulary_size=60)
    ids = subwords.encode_batch(ENGLISH[:2])
    for seed in range(4):
        keras.utils.set_random_seed(seed)
        model = LuongSeq2Seq(60, 60, units=8, embedding_dim=4)
        model.set_vocabularies(subwords, subwords)
        model((ids, ids))
        model.save(f"member{seed}.keras")
        if seed == 0:
            for epoch in (9, 10):
                model.save_weights(f"member0-epoch{epoch}.weights.h5")
    return {"sources": ENGLISH[:2]}


# Pages whose code is a recipe for the user's own files and sizes: it runs on tiny files
# written under the names it reads, with its sizes made small. Each `(page's text, test's
# text)` must be found in the page's code, so a page that changes fails here rather than
# running something else. `given`: names the page's code takes as defined (its data);
# `setup`: makes the files it reads that are models, and returns more such names.
RECIPES = {
    # Every step of the unrolled loop is written out, beam by beam: torch's export of the
    # page's 10 steps of 4 beams, then its ONNX translation, took 419 s on a 2-core machine.
    "guide/deployment.md": {
        "shrink": [("max_length=10", "max_length=4"), ("num_beams=4", "num_beams=2")],
    },
    "guide/own_corpus.md": {
        "setup": saved_members,
        "files": {
            "train.fr.gz": ENGLISH * 4,
            "train.en.gz": GERMAN * 4,
            "valid.fr": ENGLISH[:3],
            "valid.en": GERMAN[:3],
        },
        "shrink": [
            ("vocabulary_size=8000", "vocabulary_size=60"),
            ("units=256", "units=8"),
            ("embedding_dim=128", "embedding_dim=4"),
            ("tokens_per_batch=2048", "tokens_per_batch=64"),
            ("epochs=30", "epochs=1"),
        ],
        "written": ["fr_en.keras"],
    },
    "large_corpus.md": {
        "files": {
            "train.en.gz": ENGLISH * 4,
            "train.de.gz": GERMAN * 4,
            "newstest2013.en": ENGLISH[:2],
            "newstest2013.de": GERMAN[:2],
            "newstest2014.en": ENGLISH[2:4],
            "newstest2014.de": GERMAN[2:4],
        },
        "shrink": [
            ("vocabulary_size=32000", "vocabulary_size=60"),
            (
                "LuongSeq2Seq.paper(len(vocabulary), len(vocabulary),",
                "LuongSeq2Seq.paper(len(vocabulary), len(vocabulary), units=8, embedding_dim=4,",
            ),
            ("epochs=12", "epochs=1"),
            ('f"wmt14-{seed}.keras") for seed in range(8)', '"wmt14.keras") for seed in range(2)'),
        ],
        "written": ["wmt14.keras", "wmt14/corpus.json", "wmt14-valid/corpus.json"],
    },
    "scaling.md": {
        "given": {
            "source_size": 20,
            "target_size": 20,
            "source_ids": [[4, 5, 6], [7, 8], [9, 10, 11, 12], [5, 6]] * 3,
            "target_ids": [[5, 6], [8, 9, 7], [10, 11], [6, 5, 4]] * 3,
        },
        "shrink": [("epochs=10", "epochs=1")],
    },
}
# A python block the docs test does not run says so, with its reason, on the line before it:
#     <!-- not run by the docs test: needs torchrun and a GPU a process -->
# and one that runs on one backend only names it (and why):
#     <!-- run by the docs test on tensorflow only: ONNX is written from TensorFlow -->
# A page's blocks run in JAX's and torch's runs of the suite; in TensorFlow's, only a page with
# a block for TensorFlow alone runs (all its blocks for every backend with it). Keras code
# that runs on JAX and torch runs on TensorFlow too unless the library's own code differs
# there, which its tests check in every run; TensorFlow traces every `fit` and decoding
# function into a graph first, which made the pages its run's costliest file (320 s of worker
# time on a 2-core machine).
# The migration page runs there too: its readers come from tensorflow-addons.
SAME_ON_EVERY_BACKEND = "pages whose code is the same on every backend run on JAX and torch"
TENSORFLOW_READERS = {"migrating.md"}
MARKER = re.compile(
    r"^ *<!-- (?:not run by the docs test|run by the docs test on (?P<backend>\w+) only): "
    r"(?P<reason>\S.*?) -->\n(?: *\n)?\Z",
    re.M,
)
BLOCK = re.compile(r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```", re.S | re.M)


def python_blocks(text):
    """The page's python blocks, not tensorflow-addons code, as `(code, backend, reason)`:
    `backend` None for every backend, "" for none (the block's marker says why)."""
    blocks = []
    for match in BLOCK.finditer(text):
        code = textwrap.dedent(match.group("code"))
        if code.lstrip().startswith("# tensorflow-addons"):
            continue
        before = text[: match.start()].rsplit("\n", 3)
        marker = MARKER.search("\n".join(before[-3:]))
        if marker is None:
            blocks.append((code, None, ""))
        else:
            blocks.append((code, marker.group("backend") or "", marker.group("reason")))
    return blocks


def write_files(files):
    for name, lines in files.items():
        data = ("\n".join(lines) + "\n").encode("utf-8")
        with (gzip.open if name.endswith(".gz") else open)(name, "wb") as f:
            f.write(data)


@pytest.mark.parametrize("page", sorted({*PAGES, *RECIPES}))
def test_page_code_runs_as_written(page, tmp_path, capsys, monkeypatch):
    blocks = python_blocks((DOCS / page).read_text())
    assert blocks, f"{page} has no python block"
    has_own_code = "tensorflow" in {backend for _, backend, _ in blocks}
    if BACKEND == "tensorflow" and not (has_own_code or page in TENSORFLOW_READERS):
        pytest.skip(f"{page} has no block of TensorFlow's own: {SAME_ON_EVERY_BACKEND}")
    recipe = RECIPES.get(page, {})
    monkeypatch.chdir(tmp_path)
    write_files(recipe.get("files", {}))
    namespace = dict(recipe.get("given", {}))
    if "setup" in recipe:
        namespace.update(recipe["setup"]())
    shrink = [[old, new, 0] for old, new in recipe.get("shrink", [])]
    ran = 0
    try:
        for number, (code, backend, _) in enumerate(blocks):
            if backend is not None and backend != keras.backend.backend():
                continue
            for change in shrink:
                change[2] += code.count(change[0])
                code = code.replace(change[0], change[1])
            exec(compile(code, f"{page} block {number + 1}", "exec"), namespace)
            ran += 1
    finally:
        keras.distribution.set_distribution(None)  # a page may set one
    if not ran:
        reasons = "; ".join(dict.fromkeys(reason for _, _, reason in blocks))
        pytest.skip(f"{page}: no block runs on {keras.backend.backend()} ({reasons})")
    for old, _, found in shrink:
        assert found, f"{page} no longer has {old!r}: update RECIPES"
    printed = capsys.readouterr().out
    for expected in PAGES.get(page, []):
        assert expected in printed, f"{page} should print {expected!r}; printed:\n{printed}"
    for name in recipe.get("written", []):
        assert os.path.isfile(name), f"{page}'s code should write {name}"


def test_every_python_block_runs_or_says_why():
    """A page's python block is run by the test above, or its marker gives the reason."""
    for path in sorted(DOCS.rglob("*.md")):
        page = path.relative_to(DOCS).as_posix()
        for number, (_, backend, reason) in enumerate(python_blocks(path.read_text())):
            where = f"{page} block {number + 1}"
            if backend == "":
                assert len(reason) > 10, f"{where}: say why it is not run"
                continue
            assert page in PAGES or page in RECIPES, f"{where} is not run by the docs test"
            if backend is not None:
                assert backend in ("jax", "tensorflow", "torch"), f"{where}: {backend}?"


def test_migration_page_shows_both_sides():
    text = (DOCS / "migrating.md").read_text()
    every = [m.group("code") for m in BLOCK.finditer(text)]
    tfa = [code for code in every if "tensorflow-addons" in code.splitlines()[0]]
    assert len(tfa) == 2 and len(python_blocks(text)) >= 3


def documented_arguments(docstring):
    """The names listed under the docstring's `Args:` section."""
    section = re.search(r"^( *)Args:\n(.*?)(?=^\1[A-Z][\w ]*:\n|\Z)", docstring, re.S | re.M)
    if section is None:
        return set()
    indent = len(section.group(1)) + 4
    return set(re.findall(rf"^ {{{indent}}}(\*{{0,2}}\w+):", section.group(2), re.M))


def constructor_arguments(cls):
    """The arguments a user can pass to `cls(...)`, following `**kwargs` into the Luong base
    class where a subclass passes them on (as `LocalAttention` does)."""
    names = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("keras_luong"):
            break  # Keras' own base classes: name, dtype, trainable...
        if "__init__" not in vars(klass):
            continue
        parameters = inspect.signature(klass.__init__).parameters
        names.update(n for n, p in parameters.items() if n != "self" and p.kind != p.VAR_KEYWORD)
        if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            break
        if klass is base_attention.BaseLuongAttention:
            break
    return names


PUBLIC = [
    keras_luong.GlobalAttention,
    keras_luong.LocalAttention,
    keras_luong.BaseLuongAttention,
    keras_luong.BahdanauAttention,
    keras_luong.BahdanauMonotonicAttention,
    keras_luong.LocationSensitiveAttention,
    keras_luong.InputFeedingCell,
    keras_luong.LuongDecoder,
    keras_luong.LuongSeq2Seq,
    keras_luong.GreedySampler,
    keras_luong.BeamSearchSampler,
    samplers.Sampler,
    vocabulary.Vocabulary,
    keras_luong.SubwordVocabulary,
    batching.BucketedBatches,
    callbacks.BleuCallback,
    losses.SequenceLoss,
]


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda cls: cls.__name__)
def test_every_constructor_argument_is_documented(cls):
    """The API reference is generated from these docstrings: each argument of the
    constructor (and those a subclass passes on through `**kwargs`) has its line."""
    documented = documented_arguments(inspect.getdoc(cls))
    if cls is keras_luong.GreedySampler:  # its one argument is the base class's
        documented = documented_arguments(inspect.getdoc(samplers.Sampler))
    assert documented
    missing = constructor_arguments(cls) - documented
    assert not missing, f"{cls.__name__} does not document {sorted(missing)}"


def test_local_attention_documents_what_it_passes_on():
    """The case the rule above exists for: `LocalAttention(**kwargs)` reaches the base."""
    arguments = constructor_arguments(keras_luong.LocalAttention)
    assert {"alignment", "attentional_activation", "kernel_regularizer"} <= arguments


def test_site_configuration_lists_every_page():
    """Every markdown page is in mkdocs.yml's nav (a page left out is not reachable)."""
    config = (DOCS.parent / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        relative = page.relative_to(DOCS).as_posix()
        assert f": {relative}" in config, f"{relative} is not in mkdocs.yml's nav"
    for notebook in sorted(os.listdir(DOCS.parent / "examples")):
        if notebook.endswith(".ipynb"):
            assert f"notebooks/{notebook}" in config


def test_site_shows_the_package_version():
    """The footer of every page and the install page name the version the package says."""
    config = (DOCS.parent / "mkdocs.yml").read_text()
    assert f"copyright: keras-luong {keras_luong.__version__} " in config
    install = (DOCS / "install.md").read_text()
    assert f"These pages document keras-luong {keras_luong.__version__} " in install


def test_readme_links_work_on_a_package_index():
    """A package index shows the README alone: every link is absolute, and each link into
    the documentation site (mkdocs.yml's `site_url`) names a page the site has."""
    readme = (DOCS.parent / "README.md").read_text()
    site_url = re.search(r"^site_url: (\S+)$", (DOCS.parent / "mkdocs.yml").read_text(), re.M)
    site_url = site_url.group(1)
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links and all(link.startswith("https://") for link in links), links
    pages = [link[len(site_url) :] for link in links if link.startswith(site_url)]
    assert len(pages) >= 4
    for page in pages:
        name = page.split("#")[0].strip("/")  # a heading's anchor names a part of the page
        candidates = [DOCS / f"{name}.md", DOCS / name / "index.md", DOCS / f"{name}.ipynb"]
        assert any(c.is_file() for c in candidates), f"README links to {page}: no such page"
    assert "## From a clone" in readme and readme.index("## Install") < readme.index("make ")


# Methods Keras calls (their arguments are Keras'), never shown on the reference pages.
KERAS_HOOKS = {"build", "call", "compute_output_shape", "compute_output_spec", "get_config"}


def reference_entries():
    """`(page, dotted path, members shown or None for all)` for each `::: path` of the API
    reference, with mkdocstrings' `members` and `inherited_members` options read."""
    import ast

    for page in sorted((DOCS / "api").glob("*.md")):
        text = page.read_text()
        for entry in re.finditer(r"^::: (\S+)\n((?:    .*\n|\n(?=    ))*)", text, re.M):
            options = " ".join(entry.group(2).split())
            members = re.search(r"(?<!inherited_)members: (\[.*?\])", options)
            yield page.name, entry.group(1), ast.literal_eval(members.group(1)) if members else None


def resolve(path):
    try:
        return importlib.import_module(path)
    except ImportError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


def reference_callables():
    """Every callable the API reference shows: `(label, callable)`."""
    for page, path, members in reference_entries():
        obj = resolve(path)
        if inspect.ismodule(obj):
            names = members or [
                n for n, v in vars(obj).items()
                if not n.startswith("_") and getattr(v, "__module__", None) == obj.__name__
            ]  # fmt: skip
            objects = [(f"{path}.{n}", getattr(obj, n), None) for n in names]
        else:
            objects = [(path, obj, members)]
        for label, thing, shown in objects:
            yield f"{page}: {label}", thing
            if not inspect.isclass(thing):
                continue
            if shown is None:  # mkdocstrings shows the class's own public members
                shown = [n for n in vars(thing) if not n.startswith("_")]
            for name in shown:
                attribute = inspect.getattr_static(thing, name)
                if isinstance(attribute, property) or name in KERAS_HOOKS:
                    continue
                if isinstance(attribute, (staticmethod, classmethod)):
                    attribute = attribute.__func__
                if callable(attribute) and inspect.getdoc(attribute):
                    yield f"{page}: {label}.{name}", getattr(thing, name)


def test_every_argument_on_the_reference_pages_is_documented():
    """Each function and method the API reference shows has an `Args:` line for every
    argument of its signature (a class: of its constructor, through `**kwargs` where it
    passes them on); each page's object is importable where the page says."""
    missing = []
    seen = 0
    for label, thing in reference_callables():
        seen += 1
        if inspect.isclass(thing):
            arguments = constructor_arguments(thing)
            doc = inspect.getdoc(thing)
        else:
            parameters = inspect.signature(thing).parameters.values()
            arguments = {
                p.name for p in parameters
                if p.name not in ("self", "cls") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
            }  # fmt: skip
            doc = inspect.getdoc(thing) or ""
        if thing is keras_luong.GreedySampler:  # its one argument is the base class's
            doc = inspect.getdoc(samplers.Sampler)
        gap = arguments - {a.lstrip("*") for a in documented_arguments(doc)}
        if gap:
            missing.append(f"{label}: {sorted(gap)}")
    assert seen > 60  # every page was read
    assert not missing, "undocumented arguments:\n" + "\n".join(missing)


def test_the_guides_import_what_the_top_level_exports():
    """What the guides import from submodules is also importable from `keras_luong`, and the
    reference documents each class once, at that path."""
    for name in ("Vocabulary", "SubwordVocabulary", "BucketedBatches", "BleuCallback",
                 "SequenceLoss", "ScheduledSampling"):  # fmt: skip
        assert name in keras_luong.__all__ and getattr(keras_luong, name).__name__ == name
    paths = [path for _, path, _ in reference_entries()]
    names = [path.rsplit(".", 1)[-1] for path in paths]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for path in paths:
        name = path.rsplit(".", 1)[-1]
        if name in keras_luong.__all__:
            assert path == f"keras_luong.{name}", f"{path}: document it as keras_luong.{name}"


def test_the_changelog_dates_the_packages_version():
    """The version the package says has its dated section in CHANGELOG.md (Keep a
    Changelog's `## [X.Y.Z] - YYYY-MM-DD`), below the `Unreleased` one; the site's footer
    names the same version (see above)."""
    changelog = (DOCS.parent / "CHANGELOG.md").read_text()
    version = re.escape(keras_luong.__version__)
    assert re.search(rf"^## \[{version}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.M)
    assert headings[0] == "Unreleased" and keras_luong.__version__ in headings
