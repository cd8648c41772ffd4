"""The README's code blocks run as written and print what it says. Also a script:
`python tests/readme_test.py` runs the same checks without pytest, in the fresh virtual
environment where `make readme-venv` installs only `keras-luong[jax]`."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def check_readme():
    """Executes every python block of the README, each on its own (a reader copies one block
    at a time), and checks their output."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace, output = {}, io.StringIO()
    with contextlib.redirect_stdout(output):
        for block in blocks:
            alone = {}  # nothing from the blocks before
            exec(compile(block, str(README), "exec"), alone)
            namespace.update(alone)
    printed = output.getvalue()
    # The example learns its five pairs, greedy and beam search alike.
    assert "['2', '12']\n['4']" in printed, printed
    model, source, target = namespace["model"], namespace["source"], namespace["target"]
    assert model.translate(["one", "three"], source, target, max_length=4) == ["1", "3"]
    return printed


def test_readme_example_runs_as_written():
    import keras
    import pytest  # here: the fresh environment of the script below has no pytest

    if keras.backend.backend() == "jax":
        pytest.skip("on JAX, `make readme-venv` runs the README from the installed wheel and sdist")
    check_readme()


if __name__ == "__main__":
    import importlib.util

    # The environment holds keras-luong[jax] and nothing optional.
    absent = ("tensorflow", "torch", "keras_hub", "matplotlib", "babel", "pytest")
    present = [name for name in absent if importlib.util.find_spec(name) is not None]
    assert not present, f"expected a bare keras-luong[jax] environment; found {present}"
    import keras_luong

    assert "site-packages" in keras_luong.__file__, keras_luong.__file__  # the installed one
    import os

    expected = os.environ.get("KERAS_LUONG_VERSION")
    assert expected in (None, keras_luong.__version__), (expected, keras_luong.__version__)
    print(check_readme(), end="")
    print("README checked with only keras-luong[jax] installed")
