"""Is a model composed from parts as fast as the built-in one? The default `LuongSeq2Seq`
against the same model with its encoder given as a layer of one's own (a biLSTM under the
encoder contract, with the built-in encoder's weights), timed interleaved in one process as
`compare_checkouts.py` times two checkouts:

    KERAS_BACKEND=jax python -m benchmarks.speed composed_model

Cases: a train step (B=64, S=T=30, with padding), greedy and beam-4 `generate` (20 steps).
The ratio is composed / built-in (1.00: the same speed); the two give the same logits, which
the script checks first.
"""

import argparse

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args()
    import keras
    from keras import ops

    from benchmarks.compare_checkouts import CASES
    from benchmarks.harness import batch_data, interleaved_medians, print_ratios
    from keras_luong import BeamSearchSampler, LuongSeq2Seq

    class BiLSTMEncoder(keras.layers.Layer):
        """A user's encoder: one biLSTM, its final states concatenated per direction."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.rnn = keras.layers.Bidirectional(
                keras.layers.LSTM(units // 2, return_sequences=True, return_state=True)
            )

        def call(self, embedded, mask=None, training=None):
            sequence, fh, fc, bh, bc = self.rnn(embedded, mask=mask, training=training)
            h, c = ops.concatenate([fh, bh], -1), ops.concatenate([fc, bc], -1)
            return sequence, mask, [[h, c]]

    source, target = batch_data()
    models = {}
    for name, arguments in (("built-in", {}), ("composed", {"encoder": BiLSTMEncoder(256)})):
        keras.utils.set_random_seed(0)
        model = LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128, **arguments)
        model((source, target[:, :-1]))
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
            jit_compile=keras.backend.backend() != "torch",
        )
        models[name] = model
    # The same weights, in the same order of layers: the two compute the same function.
    models["composed"].set_weights(models["built-in"].get_weights())
    inputs = (source, target[:, :-1])
    difference = np.abs(
        ops.convert_to_numpy(models["composed"](inputs))
        - ops.convert_to_numpy(models["built-in"](inputs))
    ).max()
    print(f"largest logit difference, composed vs built-in: {difference:.2e}")
    beam = BeamSearchSampler(4)

    def runs(model):
        return {
            "train step": lambda: model.train_on_batch(inputs, target[:, 1:]),
            "greedy": lambda: model.generate(source, 20),
            "beam 4": lambda: model.generate(source, 20, sampler=beam),
        }

    versions = {name: runs(model) for name, model in models.items()}
    medians = interleaved_medians(versions, CASES, args.rounds, args.calls)
    print_ratios(medians, CASES, "composed", "built-in", args.rounds, args.calls, args.json)


if __name__ == "__main__":
    main()
