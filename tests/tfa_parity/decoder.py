"""Does a tensorflow-addons decoder's weights, moved over as docs/migrating.md says, give the
same logits in keras-luong? Checked against tensorflow-addons itself, not its equations.

    make tfa-parity  # tests/tfa_parity_test.py, on every backend, with .venv-tfa

The tensorflow-addons side (TensorFlow 2.15, tensorflow-addons 0.23, Keras 2: its own venv, see
../shared/bench/README.md; not a dependency of this project) runs in a subprocess: a random
`LuongAttention` + `AttentionWrapper(attention_layer_size=...)` + `BasicDecoder` with
`TrainingSampler` over two sources of lengths 7 and 4 (so the memory mask matters), teacher
forcing over 5 steps; it saves its weights and logits. This side builds
`LuongDecoder(LSTMCell, GlobalAttention("general", attentional_activation=None))` + `Dense`,
moves the weights over (the LSTM's kernels and the output layer unchanged, `memory_layer` as
`key_kernel`, the attention layer's two row blocks swapped into `attentional_kernel`) and
compares the logits, which must agree at float32 round-off.
"""

import sys

import numpy as np

BATCH, SOURCE, TARGET, EMBED, UNITS, VOCAB = 2, 7, 5, 8, 16, 30
SOURCE_LENGTHS = [7, 4]


def inputs():
    rng = np.random.default_rng(0)
    encoder_outputs = rng.normal(size=(BATCH, SOURCE, UNITS)).astype("float32")
    encoder_h, encoder_c = rng.normal(size=(2, BATCH, UNITS)).astype("float32")
    target_embedded = rng.normal(size=(BATCH, TARGET, EMBED)).astype("float32")
    return encoder_outputs, encoder_h, encoder_c, target_embedded


def tensorflow_addons_side(path):
    """Run in the tensorflow-addons venv: the decoder of docs/migrating.md, weights and logits
    saved to `path`."""
    import tensorflow_addons as tfa

    saved, attention = tfa_decoder(tfa.seq2seq.LuongAttention, UNITS)
    np.savez(path, memory_kernel=attention.memory_layer.kernel.numpy(), **saved)


def tfa_decoder(attention_class, *args, **kwargs):
    """`(arrays, attention)`: a tensorflow-addons `AttentionWrapper` decoder with
    `attention_class(*args, memory=..., **kwargs)` run by teacher forcing; the arrays hold its
    logits and the weights of everything but the attention mechanism."""
    import tensorflow as tf
    import tensorflow_addons as tfa

    tf.keras.utils.set_random_seed(0)
    encoder_outputs, encoder_h, encoder_c, target_embedded = map(tf.constant, inputs())
    attention = attention_class(
        *args, memory=encoder_outputs, memory_sequence_length=SOURCE_LENGTHS, **kwargs
    )
    lstm = tf.keras.layers.LSTMCell(UNITS)
    cell = tfa.seq2seq.AttentionWrapper(lstm, attention, attention_layer_size=UNITS)
    projection = tf.keras.layers.Dense(VOCAB)
    decoder = tfa.seq2seq.BasicDecoder(cell, tfa.seq2seq.TrainingSampler(), output_layer=projection)
    state = cell.get_initial_state(batch_size=BATCH, dtype=tf.float32)
    state = state.clone(cell_state=[encoder_h, encoder_c])
    outputs, _, _ = decoder(target_embedded, initial_state=state, sequence_length=[TARGET] * BATCH)
    saved = dict(
        logits=outputs.rnn_output.numpy(),
        lstm_kernel=lstm.kernel.numpy(),
        lstm_recurrent_kernel=lstm.recurrent_kernel.numpy(),
        lstm_bias=lstm.bias.numpy(),
        attention_layer_kernel=cell._attention_layers[0].kernel.numpy(),
        projection_kernel=projection.kernel.numpy(),
        projection_bias=projection.bias.numpy(),
    )
    return saved, attention


def keras_luong_side(saved):
    from keras_luong import GlobalAttention

    attention = GlobalAttention(
        score_mode="general", attentional_units=UNITS, attentional_activation=None
    )

    def assign():
        attention.key_kernel.assign(saved["memory_kernel"])

    return keras_luong_decoder(attention, saved, assign)


def keras_luong_decoder(attention, saved, assign_attention):
    """The logits of `LuongDecoder(LSTMCell, attention)` + `Dense`, with the weights
    `tfa_decoder` saved and `assign_attention()` giving the attention its own."""
    import keras

    from keras_luong import LuongDecoder

    encoder_outputs, encoder_h, encoder_c, target_embedded = inputs()
    source_mask = np.arange(SOURCE) < np.array(SOURCE_LENGTHS)[:, None]
    lstm = keras.layers.LSTMCell(UNITS)
    decoder = LuongDecoder(lstm, attention, input_feeding=True)
    projection = keras.layers.Dense(VOCAB)
    run = lambda: projection(  # noqa: E731
        decoder(
            target_embedded,
            encoder_outputs,
            initial_state=[encoder_h, encoder_c],
            value_mask=source_mask,
        )
    )
    run()  # builds every layer
    lstm.kernel.assign(saved["lstm_kernel"])
    lstm.recurrent_kernel.assign(saved["lstm_recurrent_kernel"])
    lstm.bias.assign(saved["lstm_bias"])
    assign_attention()
    # tensorflow-addons' attention layer reads [h; c]; attentional_kernel reads [c; h].
    tfa_kernel = saved["attention_layer_kernel"]
    attention.attentional_kernel.assign(np.concatenate([tfa_kernel[UNITS:], tfa_kernel[:UNITS]]))
    projection.kernel.assign(saved["projection_kernel"])
    projection.bias.assign(saved["projection_bias"])
    return keras.ops.convert_to_numpy(run())


if __name__ == "__main__":  # in the tensorflow-addons venv: the arrays to sys.argv[1]
    tensorflow_addons_side(sys.argv[1])
