"""The package's layout as DESIGN.md draws it: packages by concern on floors, imports running
downward only (a module imports its own package or the floors below it; only the command
lines use the package's public face), no import circle between modules, and no module over
400 lines."""

import ast
import collections
import pathlib

import pytest

from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the package's layout (source files, no backend)")

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "keras_luong"

# Each top-level module or package of keras_luong, and its floor: a module may import from
# its own package and from lower floors.
FLOORS = {
    "version": 0,
    "backend": 0,  # the loops and every backend-specific fast path
    "checks": 1,
    "data": 2,
    "evaluation": 2,
    "plotting": 2,
    "attention": 3,
    "samplers": 3,
    "datasets": 3,
    "training": 3,
    "decoders": 4,
    "generation": 4,
    "models": 5,
    # The package's public face (`keras_luong/__init__.py`), then the command lines, which
    # may use it (`translate` imports every public class so that `load_model` finds them).
    "": 6,
    "tfa": 6,  # the tensorflow-addons adapter, over the layers below
    "prepare": 7,
    "train": 7,
    "translate": 7,
    "evaluate": 7,
    "demo": 7,
}
LONGEST = 400


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(("keras_luong", *parts)), path


def imported(path):
    """The keras_luong modules a file imports, at its top or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "keras_luong":
                continue
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / (candidate.replace(".", "/") + ".py")).exists() or (
                    PACKAGE.parent / candidate.replace(".", "/")
                ).is_dir()
                names.add(candidate if is_module else node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "keras_luong")
    return names


def top(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_top_level_module_has_a_floor():
    assert {top(module) for module, _ in modules()} == set(FLOORS)


def test_imports_run_downward():
    upward = []
    for module, path in modules():
        here = top(module)
        for name in imported(path):
            there = top(name)
            if there != here and FLOORS[there] >= FLOORS[here]:
                upward.append(f"{module} imports {name}")
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    graph = {module: imported(path) - {module, "keras_luong"} for module, path in modules()}
    state, circles = {}, []

    def visit(module, stack):
        state[module] = "open"
        stack.append(module)
        for name in sorted(graph.get(module, ())):
            if state.get(name) == "open":
                circles.append(" -> ".join([*stack[stack.index(name) :], name]))
            elif name not in state:
                visit(name, stack)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not circles, "\n".join(circles)


def test_no_module_is_too_long():
    lengths = collections.Counter()
    for _, path in modules():
        lengths[str(path.relative_to(PACKAGE))] = len(path.read_text(encoding="utf-8").split("\n"))
    too_long = {name: count for name, count in lengths.items() if count > LONGEST}
    assert not too_long, too_long


@pytest.mark.parametrize("package", ["attention", "decoders", "generation", "models", "data"])
def test_a_subpackage_init_only_hands_names_on(package):
    tree = ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8"))
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}, kinds


# Modules that may ask which backend runs: the backend package (`keras_luong/backend/`, where
# every fast path and engine question lives), the export formats (each format's converter
# works from some backends only; the text SavedModel is TensorFlow Text's) and the command
# lines that print or tune it.
ASKS_THE_BACKEND = {
    "generation/export_formats.py",
    "generation/text_export.py",
    "demo.py",
    "train.py",
}


ENGINES = {"tensorflow", "jax", "torch"}


def backend_questions(path):
    """The lines of a file that ask for the backend's name or read an engine's module."""
    asks = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            argument = ast.unparse(node.args[0]) if node.args else ""
            engine = name == "sys.modules.get" and argument.strip("'\"") in ENGINES
            if name in ("keras.backend.backend", "backend.backend") or engine:
                asks.append(node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules.append(getattr(node, "module", None) or "")
            if any(m.split(".")[0] in ENGINES for m in modules):
                asks.append(node.lineno)
    return asks


def test_backend_questions_are_asked_in_the_backend_package():
    """A layer, loss, sampler or batcher calls the backend package's functions by name; it
    does not branch on the backend's name itself, nor import or read an engine."""
    found = {}
    for _, path in modules():
        name = str(path.relative_to(PACKAGE))
        if name.startswith("backend/") or name in ASKS_THE_BACKEND:
            continue
        if lines := backend_questions(path):
            found[name] = lines
    assert not found, found
    # The check sees what it looks for.
    assert backend_questions(PACKAGE / "backend" / "engine.py")
