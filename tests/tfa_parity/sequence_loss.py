"""Does `keras_luong.training.losses.sequence_loss` equal tensorflow-addons' `sequence_loss` (and
`SequenceLoss` its class) on the same logits, for every combination of its flags?

    make tfa-parity  # tests/tfa_parity_test.py, on every backend, with .venv-tfa

The tensorflow-addons side (its own venv, see tests/tfa_parity/decoder.py) computes
`tfa.seq2seq.sequence_loss` for each valid combination of the four flags on random logits
`(3, 5, 7)` with random weights, one row of zero weights included, and `tfa.seq2seq.SequenceLoss()`
with 0/1 weights; this side computes the same.
"""

import itertools
import sys

import numpy as np

FLAGS = [
    flags
    for flags in itertools.product([False, True], repeat=4)
    # (average_t, average_b, sum_t, sum_b): an average and a sum of the same axis, or of
    # different axes, are refused (tensorflow-addons' rule).
    if not (flags[0] or flags[1]) or not (flags[2] or flags[3])
]


def inputs():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(3, 5, 7)).astype("float32")
    targets = rng.integers(0, 7, (3, 5)).astype("int32")
    weights = rng.uniform(0, 2, (3, 5)).astype("float32")
    weights[1, 3:] = 0
    weights[2] = 0
    return logits, targets, weights


def tensorflow_addons_side(path):
    import tensorflow_addons as tfa

    logits, targets, weights = inputs()
    saved = {}
    for flags in FLAGS:
        value = tfa.seq2seq.sequence_loss(logits, targets, weights, *flags)
        saved["".join("TF"[not f] for f in flags)] = value.numpy()
    mask = (targets != 0).astype("float32")
    saved["class"] = tfa.seq2seq.SequenceLoss()(targets, logits, sample_weight=mask).numpy()
    np.savez(path, **saved)


if __name__ == "__main__":  # in the tensorflow-addons venv: the arrays to sys.argv[1]
    tensorflow_addons_side(sys.argv[1])
