"""Does code written for tensorflow-addons give tensorflow-addons' numbers when its import is
changed to `keras_luong.tfa`? The same function runs on both sides, against tensorflow-addons
itself, not its equations.

    make tfa-parity  # tests/tfa_parity_test.py, on every backend, with .venv-tfa

`tutorial(tfa, keras)` is the decoder of tensorflow-addons' NMT tutorial: an attention
mechanism (Luong's, then Bahdanau's normalised) over two sources of lengths 7 and 4, an
`AttentionWrapper(LSTMCell, attention_layer_size=...)` started from an encoder's state by
`clone(cell_state=...)`, an output `Dense`, and three decoders: `BasicDecoder` with
`TrainingSampler` (teacher forcing over 5 steps: the logits), with `GreedyEmbeddingSampler`
(greedy ids) and `BeamSearchDecoder` (3 beams, length penalty 0 and 1, coverage penalty 0.2:
the ids `(batch, time, beam)` and the scores). The tensorflow-addons side (TensorFlow 2.15,
tensorflow-addons 0.23, Keras 2: its own venv, see ../shared/bench/README.md; not a dependency
of this project) runs it with `import tensorflow_addons as tfa` and saves its weights and
results; this side runs it with `import keras_luong.tfa as tfa`, gives it the same weights under
tensorflow-addons' names; the test checks the logits and scores at float32 round-off and the
ids equal.
"""

import sys

import numpy as np

BATCH, SOURCE, TARGET, EMBED, UNITS, VOCAB = 2, 7, 5, 8, 16, 30
LENGTHS = np.array([7, 4], "int32")
BEAMS, STEPS, START, END = 3, 8, 1, 2
LENGTH_PENALTIES = (0.0, 1.0)
MECHANISMS = {
    "luong": ("LuongAttention", {}),
    "bahdanau": ("BahdanauAttention", {"normalize": True}),
}


def inputs():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(BATCH, SOURCE, UNITS)).astype("float32")
    h, c = rng.normal(size=(2, BATCH, UNITS)).astype("float32")
    targets = rng.normal(size=(BATCH, TARGET, EMBED)).astype("float32")
    embedding = rng.normal(size=(VOCAB, EMBED)).astype("float32")
    return memory, h, c, targets, embedding


def tutorial(tfa, keras, constant, to_numpy, mechanism, weights=None):
    """The tutorial's decoders, as tensorflow-addons' users wrote them. Returns the results
    and the weights (each layer's, under tensorflow-addons' names); `weights` given, they
    replace the drawn ones first. `constant` makes the framework's tensor of an array."""
    memory, h, c, targets, embedding = map(constant, inputs())
    name, options = MECHANISMS[mechanism]
    attention = getattr(tfa.seq2seq, name)(UNITS, memory=None, **options)
    lstm = keras.layers.LSTMCell(UNITS)
    cell = tfa.seq2seq.AttentionWrapper(lstm, attention, attention_layer_size=UNITS)
    projection = keras.layers.Dense(VOCAB)
    start_tokens = np.full(BATCH, START, "int32")

    def initial_state(rows, encoder_state):
        state = cell.get_initial_state(batch_size=rows, dtype="float32")
        return state.clone(cell_state=encoder_state)

    lengths = constant(LENGTHS)
    attention.setup_memory(memory, memory_sequence_length=lengths)
    teacher = tfa.seq2seq.BasicDecoder(cell, tfa.seq2seq.TrainingSampler(), output_layer=projection)
    forced = lambda: teacher(  # noqa: E731
        targets, initial_state=initial_state(BATCH, [h, c]), sequence_length=[TARGET] * BATCH
    )
    forced()  # builds every layer
    layers = {"lstm": lstm, "attention_layer": cell._attention_layers[0], "projection": projection}
    if weights is not None:
        for key, layer in layers.items():
            for variable, value in zip(layer.weights, weights[key], strict=True):
                variable.assign(value)
        assign_mechanism(attention, weights)
        # The keys are the memory through the memory layer, taken at setup_memory (as in
        # tensorflow-addons): set the memory up again under the new weights.
        attention.setup_memory(memory, memory_sequence_length=lengths)
    results = {"logits": to_numpy(forced()[0].rnn_output)}
    greedy = tfa.seq2seq.BasicDecoder(
        cell,
        tfa.seq2seq.GreedyEmbeddingSampler(),
        output_layer=projection,
        maximum_iterations=STEPS,
    )
    outputs, _, _ = greedy(
        embedding,
        start_tokens=start_tokens,
        end_token=END,
        initial_state=initial_state(BATCH, [h, c]),
    )
    results["greedy_ids"] = to_numpy(outputs.sample_id)

    tiled = tfa.seq2seq.tile_batch
    attention.setup_memory(tiled(memory, BEAMS), memory_sequence_length=tiled(lengths, BEAMS))
    for penalty in LENGTH_PENALTIES:
        beam_search = tfa.seq2seq.BeamSearchDecoder(
            cell,
            beam_width=BEAMS,
            output_layer=projection,
            length_penalty_weight=penalty,
            coverage_penalty_weight=0.2,
            maximum_iterations=STEPS,
        )
        final, _, _ = beam_search(
            embedding,
            start_tokens=start_tokens,
            end_token=END,
            initial_state=initial_state(BATCH * BEAMS, tiled([h, c], BEAMS)),
        )
        results[f"beam_ids_{penalty}"] = to_numpy(final.predicted_ids)
        results[f"beam_scores_{penalty}"] = to_numpy(final.beam_search_decoder_output.scores)
    drawn = {key: [to_numpy(w) for w in layer.weights] for key, layer in layers.items()}
    return results, drawn, attention


def assign_mechanism(attention, weights):
    """tensorflow-addons' mechanism weights into the adapter's (its layer's names)."""
    inner = attention.attention
    inner.key_kernel.assign(weights["memory_kernel"])
    if "query_kernel" in weights:
        inner.query_kernel.assign(weights["query_kernel"])
        inner.score_kernel.assign(weights["attention_v"])
        inner.score_gain.assign(weights["attention_g"])
        inner.score_offset.assign(weights["attention_b"])


def tensorflow_addons_side(path):
    """Run in the tensorflow-addons venv: each mechanism's results and weights to `path`."""
    import tensorflow as tf
    import tensorflow_addons as tfa

    arrays = {}
    for mechanism in MECHANISMS:
        tf.keras.utils.set_random_seed(0)
        results, drawn, attention = tutorial(tfa, tf.keras, tf.constant, np.asarray, mechanism)
        own = {"memory_kernel": attention.memory_layer.kernel.numpy()}
        if mechanism == "bahdanau":
            own.update(
                query_kernel=attention.query_layer.kernel.numpy(),
                attention_v=attention.attention_v.numpy(),
                attention_g=attention.attention_g.numpy(),
                attention_b=attention.attention_b.numpy(),
            )
        for key, values in drawn.items():
            own.update({f"{key}.{i}": value for i, value in enumerate(values)})
        arrays.update({f"{mechanism}/{k}": v for k, v in {**results, **own}.items()})
    np.savez(path, **arrays)


if __name__ == "__main__":  # in the tensorflow-addons venv: the arrays to sys.argv[1]
    tensorflow_addons_side(sys.argv[1])
