"""The documentation's code runs as written, and every public argument is documented.

Each page below has its python blocks executed in order in one namespace (in a temporary
directory, for the files they save); blocks in a tab or after a comment that say they are
tensorflow-addons code are for reading only. The blocks assert their own values (against
numpy, or properties such as weights summing to one); this test checks they ran and printed
what the page says they print.
"""

import importlib
import inspect
import os
import re
import textwrap
from pathlib import Path

import keras
import pytest

import keras_luong
from keras_luong import base_attention, batching, callbacks, losses, samplers, vocabulary

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
    "guide/deployment.md": ["(2, 10)"],
    "migrating.md": [
        "(2, 5, 30)",
        "(2, 20)",
        "(2, 5, 16) (2, 12)",
        "(2, 5, 16)\n",
        "(2, 5, 12) (2, 5, 7)",
    ],
}
# pages whose code runs on one backend only -> why
ONE_BACKEND = {
    "guide/deployment.md": (
        "tensorflow",
        "ONNX is written from TensorFlow; export_test.py takes the other backends' models "
        "there through a .keras file",
    ),
}
BLOCK = re.compile(r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```", re.S | re.M)


def python_blocks(text):
    """The page's executable python blocks: fenced `python`, not tensorflow-addons code."""
    blocks = []
    for match in BLOCK.finditer(text):
        code = textwrap.dedent(match.group("code"))
        if code.lstrip().startswith("# tensorflow-addons"):
            continue
        blocks.append(code)
    return blocks


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_code_runs_as_written(page, tmp_path, capsys, monkeypatch):
    backend, reason = ONE_BACKEND.get(page, (keras.backend.backend(), ""))
    if keras.backend.backend() != backend:
        pytest.skip(reason)
    blocks = python_blocks((DOCS / page).read_text())
    assert blocks, f"{page} has no python block"
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for number, code in enumerate(blocks):
        exec(compile(code, f"{page} block {number + 1}", "exec"), namespace)
    printed = capsys.readouterr().out
    for expected in PAGES[page]:
        assert expected in printed, f"{page} should print {expected!r}; printed:\n{printed}"


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
    vocabulary.SubwordVocabulary,
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
        name = page.strip("/")
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
