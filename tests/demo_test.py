import re
import subprocess
import sys

from keras_luong.datasets import dates
from tests.test_case import BACKEND, command_line


@command_line
def test_demo_runs_end_to_end_with_small_settings(tmp_path):
    """`python -m keras_luong.demo` on a tiny budget: it trains, evaluates, decodes with
    greedy and beam search and draws the heatmap (export has its own test)."""
    result = subprocess.run(
        [
            sys.executable, "-m", "keras_luong.demo", "--backend", BACKEND,
            "--examples", "300", "--epochs", "1", "--units", "16", "--beam-width", "2",
            "--output-dir", str(tmp_path), "--no-export",
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"backend {BACKEND}" in result.stdout
    assert "held-out test (30 dates)" in result.stdout
    # The translation table shows the first test dates with their references.
    for example in dates.load_data(300, seed=0)["test"]["examples"][:6]:
        assert re.search(rf"{re.escape(example['source'])}\s.*\s{example['target']}$",
                         result.stdout, flags=re.M)  # fmt: skip
    # The n-best list: two hypotheses, ranked by score.
    nbest = re.findall(r"^  [12]\. \S* +score (-?[0-9.]+)$", result.stdout, flags=re.M)
    assert "2-best for" in result.stdout and len(nbest) == 2
    assert float(nbest[0]) >= float(nbest[1])
    assert (tmp_path / "attention.png").stat().st_size > 1000
