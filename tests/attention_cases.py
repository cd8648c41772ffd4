"""Random attention cases for the property tests (hypothesis): shapes, masks, lengths,
windows and score modes, with the layer each case makes.

Each property runs `EXAMPLES` examples per backend with no deadline: the first call of a new
shape traces on JAX and TensorFlow.
"""

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from keras_luong import GlobalAttention, LocalAttention
from tests.test_case import length_mask, to_numpy

# Six, for CI's 90 minutes on a 2-core machine: at ten, attention_protocol_test.py alone took
# 267 worker-seconds of the JAX stage.
EXAMPLES = 6


PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: a CI failure can be replayed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


SCORE_MODES = ("dot", "general", "concat")


KINDS = ("global", "local-m", "local-p")


@st.composite
def attention_cases(draw, kinds=KINDS):
    """A layer kind, score mode, window and data: query `(B, T, d)`, value `(B, S, d)` and
    per-row source lengths in `[0, S]` (0: a fully masked row)."""
    batch = draw(st.integers(1, 3))
    source_length = draw(st.integers(1, 6))
    steps = draw(st.integers(1, 4))
    dim = draw(st.integers(1, 4))
    lengths = draw(st.lists(st.integers(0, source_length), min_size=batch, max_size=batch))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    return {
        "kind": draw(st.sampled_from(kinds)),
        "score_mode": draw(st.sampled_from(SCORE_MODES)),
        "window": draw(st.integers(0, 3)),
        "attentional": draw(st.booleans()),
        "query": rng.uniform(-2, 2, (batch, steps, dim)).astype("float32"),
        "value": rng.uniform(-2, 2, (batch, source_length, dim)).astype("float32"),
        "mask": length_mask(lengths, source_length),
        "lengths": np.array(lengths),
    }


def make_layer(case, **kwargs):
    common = {
        "score_mode": case["score_mode"],
        "attentional_units": 3 if case["attentional"] else None,
        **kwargs,
    }
    if case["kind"] == "global":
        return GlobalAttention(**common)
    # local-p with D = 0 needs its own sigma (sigma = D / 2 = 0 is refused).
    sigma = 0.5 if case["window"] == 0 and case["kind"] == "local-p" else None
    return LocalAttention(case["kind"], window=case["window"], sigma=sigma, **common)


def attend(layer, case, value=None, mask=None):
    value = case["value"] if value is None else value
    mask = case["mask"] if mask is None else mask
    kwargs = {"value_mask": mask, "return_attention_scores": True}
    if isinstance(layer, LocalAttention):
        return [to_numpy(x) for x in layer(case["query"], value, return_positions=True, **kwargs)]
    return [to_numpy(x) for x in layer(case["query"], value, **kwargs)] + [None]
