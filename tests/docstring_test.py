"""Every example in the API reference runs, on JAX and torch, and prints what it shows.

The reference is generated from the docstrings of the objects named on the pages under
docs/api/ (`::: name` lines); this test reads the same list, so an object added to the
reference has its examples run with no change here. Every public class has an example, and
every default a docstring states is the one in the signature.
"""

import ast
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

from tests.test_case import in_jax_run_only, outside_tensorflow_run

API_PAGES = Path(__file__).resolve().parents[1] / "docs" / "api"


def documented_objects():
    """The `::: name` objects of the API pages, imported."""
    names = []
    for page in sorted(API_PAGES.glob("*.md")):
        names += re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M)
    objects = {}
    for name in names:
        module_name, _, attribute = name.rpartition(".")
        try:
            objects[name] = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError):
            objects[name] = importlib.import_module(name)  # a module page
    return objects


OBJECTS = documented_objects()


def examples(obj):
    """The doctests of `obj`'s docstring and of its public members' own docstrings (for a
    class: those defined in keras_luong; for a module: its public functions and classes)."""
    finder = doctest.DocTestFinder(recurse=False)
    module = inspect.getmodule(obj)
    globs = dict(vars(module))
    found = finder.find(obj, obj.__name__, module=module, globs=globs)
    if inspect.isclass(obj):
        members = [
            m
            for klass in obj.__mro__
            if klass.__module__.startswith("keras_luong")
            for n, m in vars(klass).items()
            if not n.startswith("_") and inspect.isfunction(m)
        ]
    elif inspect.ismodule(obj):
        members = [
            m for n, m in vars(obj).items() if not n.startswith("_") and inspect.getmodule(m) is obj
        ]
    else:
        members = []
    for member in members:
        found += finder.find(member, member.__qualname__, module=module, globs=dict(globs))
    return [test for test in found if test.examples]


CASES = [(name, test) for name, obj in OBJECTS.items() for test in examples(obj)]


def test_the_reference_lists_the_public_api():
    import keras_luong

    for name in keras_luong.__all__:
        assert f"keras_luong.{name}" in OBJECTS, f"{name} has no API page"


@pytest.mark.parametrize("name", [n for n, obj in OBJECTS.items() if inspect.isclass(obj)])
def test_every_public_class_has_an_example(name):
    assert any(test.docstring and ">>>" in test.docstring for test in examples(OBJECTS[name])), (
        f"{name}'s docstring has no `>>>` example"
    )


# Like the pages' code (docs_test.py): in TensorFlow's run they took 89 s of worker time on a
# 2-core machine.
@outside_tensorflow_run("the API reference's examples")
@pytest.mark.parametrize("name,test", CASES, ids=[test.name for _, test in CASES])
def test_docstring_example(name, test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # for examples that save files
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    output = []
    runner.run(test, out=output.append)
    assert runner.failures == 0, "".join(output)


def stated_defaults(obj):
    """`(argument, stated, signature default)` for each argument of `obj`'s docstring whose
    "Defaults to ..." names a Python literal, against the default in `obj`'s signature. A
    default of `None` in the signature stands for one worked out at the call (the docstring
    then says which), so it is left out unless the docstring states `None` itself."""
    function = obj.__init__ if inspect.isclass(obj) else obj
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return
    section = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", inspect.getdoc(obj) or "", re.S | re.M)
    described, name = {}, None
    for line in section.group(1).split("\n") if section else ():
        start = re.match(r"^    (\w+): (.*)", line)
        if start:
            name = start.group(1)
            described[name] = start.group(2)
        elif name:
            described[name] += " " + line.strip()
    for argument, text in described.items():
        stated = re.search(r"Defaults to (`[^`]*`|[^\s,;:)]+)", text)
        if argument not in parameters or not stated:
            continue
        try:
            value = ast.literal_eval(stated.group(1).strip("`").rstrip("."))
        except (ValueError, SyntaxError):
            continue  # prose ("the units of the layer")
        default = parameters[argument].default
        if default is not None or value is None:
            yield argument, value, default


def callables_of(obj):
    """`obj` and, for a class, its public methods defined in keras_luong."""
    yield obj
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield member


@in_jax_run_only("docstrings against signatures (no backend)")
def test_every_stated_default_is_the_signatures():
    wrong, checked = [], 0
    for name, obj in OBJECTS.items():
        members = [obj] if inspect.ismodule(obj) else callables_of(obj)
        for member in members:
            for argument, value, default in stated_defaults(member):
                checked += 1
                if value != default or isinstance(value, bool) != isinstance(default, bool):
                    wrong.append(f"{name}: {argument} says {value!r}, the code has {default!r}")
    assert not wrong, "\n".join(wrong)
    assert checked > 100  # the docstrings' "Defaults to" are read


def test_stated_defaults_find_a_wrong_one():
    def example(tokenize="13a"):
        """Scores.

        Args:
            tokenize: The tokenizer. Defaults to `"none"`.
        """

    assert list(stated_defaults(example)) == [("tokenize", "none", "13a")]
