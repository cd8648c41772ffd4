"""The same outputs on two checkouts of keras-luong: does a change keep every model's values?

    git worktree add /tmp/baseline <commit>
    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.same_outputs --baseline /tmp/baseline

Both versions load side by side in one process (`harness.load_baseline`). For each variant
(the default model, local-m, local-p, hard-monotonic, Bahdanau's timing, Bahdanau's
hard-monotonic attention) the baseline builds the model from a seed, and
this checkout's model of the same config takes its weights; both then give the logits of one
batch (with padding), greedy ids and beam-4 ids. It prints the largest logit difference and
whether the ids are equal, and exits with status 1 if any ids differ or a logit differs by
more than `--atol`.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

from benchmarks.harness import load_baseline

VARIANTS = {
    "default": {},
    "local-m": {"alignment": "local-m", "window": 2},
    "local-p": {"alignment": "local-p", "window": 2},
    "hard-monotonic": {"alignment": "hard-monotonic"},
    "bahdanau": {"attention_timing": "bahdanau", "score_mode": "additive"},
    "bahdanau-monotonic": {"alignment": "hard-monotonic", "score_mode": "additive"},
    "no-feeding": {"input_feeding": False},
}


def outputs_of(model, package, source, target_in):
    logits = np.asarray(model.predict((source, target_in), verbose=0))
    greedy = np.asarray(model.generate(source, 12))
    beam_sampler = package.BeamSearchSampler(4, length_penalty=0.0)  # the same in every version
    beam = np.asarray(model.generate(source, 12, sampler=beam_sampler))
    return logits, greedy, beam


def spelled_for(checkout, arguments):
    """`arguments` as the checkout at `checkout` spells them: one from before keras-luong 0.4
    (no `keras_luong/attention/names.py`) takes the old spellings of the renamed names."""
    if os.path.exists(os.path.join(checkout, "keras_luong", "attention", "names.py")):
        return arguments
    from keras_luong.attention.names import RENAMED

    before = {
        name: {new: spelling for spelling, (new, _) in renames.items()}
        for name, renames in RENAMED.items()
    }
    return {name: before.get(name, {}).get(value, value) for name, value in arguments.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the other checkout's root folder")
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    import keras

    import keras_luong

    rng = np.random.default_rng(0)
    source = rng.integers(3, 40, (6, 9)).astype("int32")
    target_in = rng.integers(3, 40, (6, 10)).astype("int32")
    target_in[:, 0] = 1
    source[3:, 6:] = 0
    target_in[4:, 7:] = 0
    failed = False
    print(f"backend {keras.backend.backend()}")
    print(f"{'variant':<20} {'max |logit diff|':>17} {'greedy':>7} {'beam 4':>7}")
    with tempfile.TemporaryDirectory() as folder:
        baseline = load_baseline(args.baseline, folder)
        for name, arguments in VARIANTS.items():
            keras.utils.set_random_seed(0)
            old = baseline.LuongSeq2Seq(
                40, 40, units=16, embedding_dim=8, **spelled_for(args.baseline, arguments)
            )
            old((source, target_in))
            new = keras_luong.LuongSeq2Seq(40, 40, units=16, embedding_dim=8, **arguments)
            new((source, target_in))
            new.set_weights(old.get_weights())
            before = outputs_of(old, baseline, source, target_in)
            after = outputs_of(new, keras_luong, source, target_in)
            difference = float(np.max(np.abs(before[0] - after[0])))
            greedy = np.array_equal(before[1], after[1])
            beam = np.array_equal(before[2], after[2])
            failed |= difference > args.atol or not (greedy and beam)
            print(f"{name:<20} {difference:17.2e} {str(greedy):>7} {str(beam):>7}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
