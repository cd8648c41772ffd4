"""Does `keras_luong.training.losses.sequence_loss` equal tensorflow-addons' `sequence_loss` (and
`SequenceLoss` its class) on the same logits, for every combination of its flags?

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.tfa_sequence_loss_parity \
        [--tfa-python .venv-tfa/bin/python]

The tensorflow-addons side (its own venv, see benchmarks/tfa_parity.py) computes
`tfa.seq2seq.sequence_loss` for each valid combination of the four flags on random logits
`(3, 5, 7)` with random weights, one row of zero weights included, and `tfa.seq2seq.SequenceLoss()`
with 0/1 weights; this side computes the same and prints the largest difference.
"""

import itertools
import sys

import numpy as np

from benchmarks.tfa_parity import run_both_sides

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


def main():
    saved = run_both_sides(__spec__.name, __doc__.split("\n\n")[0], tensorflow_addons_side)
    if saved is None:
        return
    import keras

    from keras_luong.training.losses import SequenceLoss, sequence_loss

    logits, targets, weights = inputs()
    worst = 0.0
    for flags in FLAGS:
        name = "".join("TF"[not f] for f in flags)
        ours = keras.ops.convert_to_numpy(sequence_loss(logits, targets, weights, *flags))
        worst = max(worst, float(np.max(np.abs(ours - saved[name]))))
    ours = keras.ops.convert_to_numpy(SequenceLoss()(targets, logits))
    worst = max(worst, float(np.max(np.abs(ours - saved["class"]))))
    print(
        f"keras-luong ({keras.backend.backend()}) vs tensorflow-addons 0.23: sequence_loss over "
        f"{len(FLAGS)} flag combinations and SequenceLoss(): max |difference| {worst:.2e}"
    )
    if worst > 1e-6:
        sys.exit(f"the losses differ by {worst:.2e}")


if __name__ == "__main__":
    main()
