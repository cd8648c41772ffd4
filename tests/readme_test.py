import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_as_written(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    # The install section's example learns its five pairs.
    assert "['2', '12']\n['4']" in printed
    assert "(2, 16) (2, 7)" in printed
    assert "(2, 5, 16) (2, 5, 9)" in printed
    assert "(3, 4, 6) (3, 4)" in printed
    scores, greedy = namespace["scores"], namespace["greedy"]
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    ended = np.cumsum(greedy == 2, axis=1) - (greedy == 2) > 0
    assert np.all(greedy[ended] == 0)  # padding after the end token
    # The first decoding step equals the first teacher-forced output.
    np.testing.assert_allclose(
        namespace["keras"].ops.convert_to_numpy(namespace["step_output"]),
        namespace["keras"].ops.convert_to_numpy(namespace["outputs"])[:, 0],
        atol=1e-5,
    )
    weights = np.asarray(namespace["keras"].ops.convert_to_numpy(namespace["weights"]))
    np.testing.assert_array_equal(weights[1, 4:], 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-6)
