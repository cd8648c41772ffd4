"""Do `BahdanauAttention` and `BahdanauMonotonicAttention` give tensorflow-addons' values, its
weights moved over one for one? Checked against tensorflow-addons itself.

    make tfa-parity  # tests/tfa_parity_test.py, on every backend, with .venv-tfa

The tensorflow-addons side (TensorFlow 2.15, tensorflow-addons 0.23: its own venv, see
tests/tfa_parity/decoder.py; not a dependency of this project) runs in a subprocess:
- `BahdanauAttention(12, normalize=...)` in an `AttentionWrapper(attention_layer_size=16)`
  decoder run by teacher forcing (tests/tfa_parity/decoder.py's decoder), both `normalize`
  settings, with a gain and offset of their own when normalised; it saves the logits;
- `BahdanauMonotonicAttention(12, normalize=..., mode=...)` queried step by step from its
  initial alignments over two sources of lengths 9 and 5, each mode; it saves the alignments.
This side builds the same layers, assigns the weights (`memory_layer` as `key_kernel`,
`query_layer` as `query_kernel`, `attention_v` as `score_kernel`, `attention_g` as
`score_gain`, `attention_b` as `score_offset`, `attention_score_bias` as `score_bias`) and
compares the values.
"""

import sys

import numpy as np

from tests.tfa_parity.decoder import tfa_decoder
from tests.tfa_parity.monotonic import MODES
from tests.tfa_parity.monotonic import inputs as monotonic_inputs

SCORE_UNITS = 12
SOURCE_LENGTHS = [9, 5]  # the monotonic sources
GAIN, OFFSET, SCORE_BIAS = 0.7, 0.3, 0.3


def bahdanau_weights(attention):
    weights = {
        "memory_kernel": attention.memory_layer.kernel.numpy(),
        "query_kernel": attention.query_layer.kernel.numpy(),
        "attention_v": attention.attention_v.numpy(),
    }
    if attention.normalize:
        weights["attention_g"] = attention.attention_g.numpy()
        weights["attention_b"] = attention.attention_b.numpy()
    return weights


def tensorflow_addons_side(path):
    """Run in the tensorflow-addons venv: the decoders' logits and the monotonic alignments,
    with the attention weights, saved to `path`."""
    import tensorflow as tf
    import tensorflow_addons as tfa

    saved = {}
    for normalize in (False, True):
        name = f"normalize_{normalize}"

        class Normalized(tfa.seq2seq.BahdanauAttention):
            def build(self, input_shape):  # gain and offset of their own, not 1/√U and 0
                super().build(input_shape)
                if self.normalize:
                    self.attention_g.assign(GAIN)
                    self.attention_b.assign(np.full(SCORE_UNITS, OFFSET, "float32"))

        arrays, attention = tfa_decoder(Normalized, SCORE_UNITS, normalize=normalize)
        for key, value in {**arrays, **bahdanau_weights(attention)}.items():
            saved[f"{name}/{key}"] = value

        memory, queries = monotonic_inputs()
        for mode in MODES:
            tf.keras.utils.set_random_seed(0)
            attention = tfa.seq2seq.BahdanauMonotonicAttention(
                SCORE_UNITS,
                memory=tf.constant(memory),
                memory_sequence_length=SOURCE_LENGTHS,
                normalize=normalize,
                mode=mode,
            )
            state = attention.initial_alignments(queries.shape[0], tf.float32)
            alignments = []
            for t in range(queries.shape[1]):
                if t == 0:  # built by the first call: now give r (and g, b) values of their own
                    attention([tf.constant(queries[:, 0]), state])
                    attention.attention_score_bias.assign(SCORE_BIAS)
                    if normalize:
                        attention.attention_g.assign(GAIN)
                        attention.attention_b.assign(np.full(SCORE_UNITS, OFFSET, "float32"))
                aligned, state = attention([tf.constant(queries[:, t]), state])
                alignments.append(aligned.numpy())
            prefix = f"{name}/{mode}"
            saved[f"{prefix}/alignments"] = np.stack(alignments, axis=1)
            for key, value in bahdanau_weights(attention).items():
                saved[f"{prefix}/{key}"] = value
    np.savez(path, **saved)


def assign(attention, saved, prefix):
    attention.key_kernel.assign(saved[f"{prefix}/memory_kernel"])
    attention.query_kernel.assign(saved[f"{prefix}/query_kernel"])
    attention.score_kernel.assign(saved[f"{prefix}/attention_v"])
    if attention.normalize:
        attention.score_gain.assign(saved[f"{prefix}/attention_g"])
        attention.score_offset.assign(saved[f"{prefix}/attention_b"])


if __name__ == "__main__":  # in the tensorflow-addons venv: the arrays to sys.argv[1]
    tensorflow_addons_side(sys.argv[1])
