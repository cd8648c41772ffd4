"""What does the label-smoothed `SequenceLoss` cost in a training step? The default model at
the translation recipe's sizes (8,000 subwords a side, units 256, embeddings 128, dropout 0.3,
Adam 2e-3 with global norm 5) trained on one batch of 2,048-token size (B=64, S=T=30, with
padding), its loss `SequenceLoss(label_smoothing=0.1)` against the two forms it replaced:
the one-hot form (Keras' `categorical_crossentropy` of a smoothed `one_hot` of the targets,
which builds two `(B, T, V)` tensors and reads them forward and backward) and the `logsumexp`
form (`logsumexp(z) - (1 - ε)·z_target - (ε/V)·Σ z`, no one-hot, but `logsumexp` and its
gradient as separate passes over the logits where the backend does not fuse them). The three
versions are timed interleaved in one process (`harness.interleaved_medians`):

    KERAS_BACKEND=jax python -m benchmarks.speed sequence_loss_speed

The ratios are SequenceLoss / each other form (below 1: faster). The three losses are checked
equal first.
"""

import numpy as np


def main():
    from benchmarks.harness import (
        batch_data,
        interleaved_medians,
        print_ratios,
        recipe_model,
        timing_arguments,
        write_ratios,
    )

    args = timing_arguments(__doc__)
    import keras
    from keras import ops

    from keras_luong import LuongSeq2Seq
    from keras_luong.training.losses import SequenceLoss

    class OneHotLoss(keras.losses.Loss):
        """The previous form: a smoothed one-hot of the targets, padding left out."""

        def call(self, y_true, y_pred):
            y_true = ops.cast(y_true, "int32")
            one_hot = ops.one_hot(y_true, y_pred.shape[-1], dtype="float32")
            crossent = keras.losses.categorical_crossentropy(
                one_hot, ops.cast(y_pred, "float32"), from_logits=True, label_smoothing=0.1
            )
            weights = ops.cast(ops.not_equal(y_true, 0), "float32")
            return ops.divide_no_nan(ops.sum(crossent * weights), ops.sum(weights))

    class LogsumexpLoss(keras.losses.Loss):
        """The form `SequenceLoss` took on every backend before (JAX's still): the same sum
        from `logsumexp` and the logits."""

        def call(self, y_true, y_pred):
            y_true, y_pred = ops.cast(y_true, "int32"), ops.cast(y_pred, "float32")
            target = ops.take_along_axis(y_pred, ops.expand_dims(y_true, -1), axis=-1)[..., 0]
            crossent = ops.logsumexp(y_pred, axis=-1) - 0.9 * target
            crossent = crossent - (0.1 / y_pred.shape[-1]) * ops.sum(y_pred, axis=-1)
            weights = ops.cast(ops.not_equal(y_true, 0), "float32")
            return ops.divide_no_nan(ops.sum(crossent * weights), ops.sum(weights))

    source, target = batch_data(vocabulary=args.vocabulary)
    inputs, labels = (source, target[:, :-1]), target[:, 1:]
    losses = {
        "SequenceLoss": SequenceLoss(label_smoothing=0.1),
        "one-hot": OneHotLoss(),
        "logsumexp": LogsumexpLoss(),
    }
    logits = LuongSeq2Seq(args.vocabulary, args.vocabulary, units=8)(inputs)
    values = [float(ops.convert_to_numpy(loss(labels, logits))) for loss in losses.values()]
    print("the losses on one batch: " + " ".join(f"{value:.6f}" for value in values))
    assert np.allclose(values, values[0], rtol=1e-5), values

    versions = {}
    for name, loss in losses.items():
        model = recipe_model(args.vocabulary)
        model.compile(keras.optimizers.Adam(2e-3, global_clipnorm=5.0), loss)

        def step(model=model):
            ops.convert_to_numpy(model.train_on_batch(inputs, labels))

        versions[name] = {"train step": step}
    medians = interleaved_medians(versions, ["train step"], args.rounds, args.calls)
    rows = [
        row
        for other in ("one-hot", "logsumexp")
        for row in print_ratios(
            medians, ["train step"], "SequenceLoss", other, args.rounds, args.calls
        )
    ]
    if args.json:
        write_ratios(args.json, rows, args.rounds, args.calls)


if __name__ == "__main__":
    main()
