"""Does `MonotonicAttention` give tensorflow-addons' `LuongMonotonicAttention` alignments, its
weights moved over? Checked against tensorflow-addons itself, in each of its three modes.

    make tfa-parity  # tests/tfa_parity_test.py, on every backend, with .venv-tfa

The tensorflow-addons side (TensorFlow 2.15, tensorflow-addons 0.23: its own venv, see
tests/tfa_parity/decoder.py; not a dependency of this project) runs in a subprocess: a
`LuongMonotonicAttention(scale=True)` over two sources of lengths 9 and 5 (so the memory mask
matters), with a random scale `g` and score bias `r`, queried step by step from its initial
alignments for 6 steps; it saves its weights and every step's alignments. This side builds
`MonotonicAttention(score_mode="general", use_scale=True, mode=...)`, assigns the same
`memory_layer` kernel (as `key_kernel`), `g` and `r`, attends with the 6 queries at once, and
compares the alignments.
"""

import sys

import numpy as np

BATCH, SOURCE, STEPS, UNITS = 2, 9, 6, 16
SOURCE_LENGTHS = [9, 5]
MODES = ("parallel", "recursive", "hard")


def inputs():
    rng = np.random.default_rng(1)
    memory = rng.normal(size=(BATCH, SOURCE, UNITS)).astype("float32")
    queries = rng.normal(size=(BATCH, STEPS, UNITS)).astype("float32")
    return memory, queries


def tensorflow_addons_side(path):
    """Run in the tensorflow-addons venv: every mode's alignments, saved to `path`."""
    import tensorflow as tf
    import tensorflow_addons as tfa

    tf.keras.utils.set_random_seed(0)
    memory, queries = inputs()
    saved = {}
    for mode in MODES:
        attention = tfa.seq2seq.LuongMonotonicAttention(
            UNITS,
            memory=tf.constant(memory),
            memory_sequence_length=SOURCE_LENGTHS,
            scale=True,
            mode=mode,
        )
        state = attention.initial_alignments(BATCH, tf.float32)
        alignments = []
        for t in range(STEPS):
            if t == 0:  # built by the first call: now give g and r values of their own
                attention([tf.constant(queries[:, 0]), state])
                attention.attention_g.assign(1.3)
                attention.attention_score_bias.assign(-0.4)
            aligned, state = attention([tf.constant(queries[:, t]), state])
            alignments.append(aligned.numpy())
        saved[f"{mode}_alignments"] = np.stack(alignments, axis=1)
        saved[f"{mode}_memory_kernel"] = attention.memory_layer.kernel.numpy()
    np.savez(path, **saved)


def keras_luong_side(saved, mode):
    import keras

    from keras_luong import MonotonicAttention

    memory, queries = inputs()
    source_mask = np.arange(SOURCE) < np.array(SOURCE_LENGTHS)[:, None]
    attention = MonotonicAttention(score_mode="general", use_scale=True, mode=mode)
    attention.build(queries.shape, memory.shape)
    attention.key_kernel.assign(saved[f"{mode}_memory_kernel"])
    attention.scale.assign(1.3)
    attention.score_bias.assign(-0.4)
    _, alignments = attention(queries, memory, value_mask=source_mask, return_attention_scores=True)
    return keras.ops.convert_to_numpy(alignments)


if __name__ == "__main__":  # in the tensorflow-addons venv: the arrays to sys.argv[1]
    tensorflow_addons_side(sys.argv[1])
