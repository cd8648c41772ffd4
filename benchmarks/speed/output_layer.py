"""What does the output layer's matrix form buy in a training step? The default model at the
translation recipe's sizes (8,000 subwords a side, units 256, embeddings 128, dropout 0.3,
Adam 2e-3 with global norm 5, `SequenceLoss(label_smoothing=0.1)`) trained on one batch of
2,048-token size (B=64, S=T=30, with padding), its output layer applied as it is
(`sequence_logits`: the sequence multiplied as a `(B·T, units)` matrix, on torch with the bias
inside the product) against another form, the same weights:

- `--other sequence` (the default): the `Dense` called on the sequence itself (the product of
  the three-dimensional `(B, T, units)`);
- `--other separate-bias`: the `Dense` called on the matrix, which adds its bias in a pass of
  its own (the same as the package's form on every backend but torch).

Both versions are timed interleaved in one process, as the harness times every comparison:

    KERAS_BACKEND=jax python -m benchmarks.speed output_layer
    KERAS_BACKEND=torch python -m benchmarks.speed output_layer --other separate-bias

The ratio is matrix / other (below 1: faster). The two models' logits and first-step losses
are checked equal first.
"""

import argparse

import numpy as np


def main():
    from benchmarks.harness import (
        batch_data,
        interleaved_medians,
        print_ratios,
        recipe_model,
        timing_arguments,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", choices=["sequence", "separate-bias"], default="sequence")
    args = timing_arguments(__doc__, parser)
    import keras
    from keras import ops

    from keras_luong.models import seq2seq
    from keras_luong.training.losses import SequenceLoss

    source, target = batch_data(vocabulary=args.vocabulary)
    inputs, labels = (source, target[:, :-1]), target[:, 1:]
    other = args.other
    models = {name: recipe_model(args.vocabulary) for name in ("matrix", other)}
    matrix_form = seq2seq.sequence_logits
    other_layer = models[other].projection

    def other_form(dense, x):
        if other == "sequence":  # the output layer called on the sequence, as a `Dense` is
            return dense(x)
        rows = dense(ops.reshape(x, (-1, x.shape[-1])))  # Keras' matmul, then the add
        return ops.reshape(rows, (*ops.shape(x)[:2], rows.shape[-1]))

    seq2seq.sequence_logits = lambda dense, x: (
        other_form(dense, x) if dense is other_layer else matrix_form(dense, x)
    )
    for model in models.values():
        model(inputs)
    bias = models["matrix"].projection.bias  # not zero, so the bias's place in the sum shows
    bias.assign(np.random.default_rng(0).uniform(-0.1, 0.1, bias.shape))
    models[other].set_weights(models["matrix"].get_weights())
    logits = [ops.convert_to_numpy(model(inputs)) for model in models.values()]
    print(f"largest difference of the logits: {np.max(np.abs(logits[0] - logits[1])):.2e}")
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-5)

    versions = {}
    losses = []
    for name, model in models.items():
        model.compile(
            keras.optimizers.Adam(2e-3, global_clipnorm=5.0), SequenceLoss(label_smoothing=0.1)
        )
        losses.append(float(ops.convert_to_numpy(model.test_on_batch(inputs, labels))))

        def step(model=model):
            ops.convert_to_numpy(model.train_on_batch(inputs, labels))

        versions[name] = {"train step": step}
    print(f"the two losses on one batch: {losses[0]:.6f} {losses[1]:.6f}")
    assert np.isclose(losses[0], losses[1], rtol=1e-5), losses
    medians = interleaved_medians(versions, ["train step"], args.rounds, args.calls)
    print_ratios(medians, ["train step"], "matrix", other, args.rounds, args.calls, args.json)


if __name__ == "__main__":
    main()
