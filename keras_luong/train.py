"""`python -m keras_luong.train`: a model trained on a prepared corpus by the documented recipe.

    python -m keras_luong.prepare --source train.fr.gz --target train.en.gz --out fr-en
    python -m keras_luong.train --corpus fr-en --valid-source valid.fr --valid-target valid.en \\
        --out fr_en.keras

trains `LuongSeq2Seq` (global attention, general score, input feeding) by the recipe of the
translation guide: every weight uniform in ±0.1, Adam at 2e-3 with the gradient clipped at
global norm 5, `SequenceLoss` with label smoothing 0.1, batches of about 2048 tokens. With a
validation set it also logs the validation loss, `val_bleu` and `val_attention_diagonal`,
halves the rate when the validation loss stops falling, stops when `val_bleu` has not risen
for `--patience` epochs, and keeps the best epoch's weights. The `.keras` file written holds
the corpus's vocabulary: `python -m keras_luong.translate --model` takes it as it is.

On torch it first has glibc's `malloc` reuse large blocks (`keras_luong.training.allocator`): the
tensors of the logits and of their gradient then come from its heap, where by default each is
mapped afresh at every step, which costs a training step on a CPU about a fifth of its time.
"""

import argparse
import os
import sys

from keras_luong.models.recipe import RECIPE, recipe_model
from keras_luong.training.allocator import reuse_large_blocks

R = RECIPE  # the defaults of the recipe's options


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return run(parser, args)


def build_parser():
    """The command line's arguments, the recipe's options defaulting to `RECIPE`."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_luong.train",
        description="Train a LuongSeq2Seq model on a corpus prepared by python -m "
        "keras_luong.prepare, by the recipe of the translation guide, and save it (with its "
        "vocabulary) as a .keras file.",
    )
    parser.add_argument("--corpus", required=True, help="the folder keras_luong.prepare wrote")
    parser.add_argument("--out", required=True, help="the .keras file to write")
    parser.add_argument("--valid-source", help="validation source text, a sentence a line")
    parser.add_argument("--valid-target", help="validation references, aligned with it")
    parser.add_argument("--epochs", type=int, default=30, help="at most this many (default: 30)")
    parser.add_argument("--tokens-per-batch", type=int, default=2048, help="default: 2048")
    parser.add_argument(
        "--bucket-width",
        type=bucket_width_argument,
        default="auto",
        help="batches of sentences whose lengths round up to the same multiple of this; none: "
        "no buckets, each batch padded to its own longest; auto (the default): 8 where Keras "
        "compiles the training step with XLA (JAX; TensorFlow with a GPU), none elsewhere",
    )
    parser.add_argument(
        "--units", type=int, default=R["units"], help=f"LSTM units (default: {R['units']})"
    )
    parser.add_argument(
        "--embedding-dim",
        type=int,
        default=R["embedding_dim"],
        help=f"default: {R['embedding_dim']}",
    )
    parser.add_argument(
        "--dropout", type=float, default=R["dropout"], help=f"default: {R['dropout']}"
    )
    parser.add_argument(
        "--alignment",
        default=R["alignment"],
        help="global (the default), local-m, local-p (a window of "
        "half-width 40 whose Gaussian narrows from sigma 40 to 5 over the first three epochs, "
        "as the translation guide's seed study found it locks on), or another registered "
        "alignment",
    )
    parser.add_argument(
        "--score-mode",
        default=R["score_mode"],
        help="general (the default), dot, concat, additive",
    )
    parser.add_argument(
        "--attention-timing",
        choices=("luong", "bahdanau"),
        default=R["attention_timing"],
        help="luong (the default): attend after the step; bahdanau: before it, from the "
        "previous state (with --score-mode additive: Bahdanau et al.'s attention)",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=R["learning_rate"],
        help=f"Adam's; default: {R['learning_rate']}",
    )
    parser.add_argument(
        "--clip-norm",
        type=float,
        default=R["clip_norm"],
        help=f"the gradient's global norm (default: {R['clip_norm']})",
    )
    parser.add_argument(
        "--label-smoothing",
        type=float,
        default=R["label_smoothing"],
        help=f"default: {R['label_smoothing']}",
    )
    parser.add_argument(
        "--init-scale",
        type=float,
        default=R["init_scale"],
        help=f"every weight starts uniform in ±this (default: {R['init_scale']})",
    )
    parser.add_argument(
        "--patience", type=int, default=5, help="epochs without a better val_bleu (default: 5)"
    )
    parser.add_argument(
        "--tokenize",
        default="13a",
        help="sacreBLEU's tokenizer for val_bleu: 13a (the default) for raw text, none for "
        "text tokenized already",
    )
    parser.add_argument("--seed", type=int, default=0, help="weights and batch order (default: 0)")
    parser.add_argument("--log", help="a CSV file of each epoch's logs")
    parser.add_argument("--quiet", action="store_true", help="one line an epoch, no bar")
    return parser


def run(parser, args):
    """Checks `args` (errors through `parser`), then trains and saves."""
    for name in ("epochs", "tokens_per_batch", "units", "embedding_dim", "patience"):
        if getattr(args, name) < 1:
            parser.error(
                f"--{name.replace('_', '-')} must be at least 1. Received: {getattr(args, name)}"
            )
    for name in ("learning_rate", "clip_norm", "init_scale"):
        if not getattr(args, name) > 0:
            parser.error(
                f"--{name.replace('_', '-')} must be positive. Received: {getattr(args, name)}"
            )
    for name in ("dropout", "label_smoothing"):
        if not 0 <= getattr(args, name) < 1:
            parser.error(
                f"--{name.replace('_', '-')} must be in [0, 1). Received: {getattr(args, name)}"
            )
    if (args.valid_source is None) != (args.valid_target is None):
        parser.error("--valid-source and --valid-target go together: give both or neither")
    if not args.out.endswith(".keras"):
        parser.error(f"--out must name a .keras file. Received: {args.out!r}")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):  # said now, not after hours of training
        parser.error(f"--out: the folder {folder!r} does not exist")

    try:
        train(args)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    return 0


def bucket_width_argument(text):
    """`--bucket-width`'s value for `BucketedBatches`, as an argparse type: "auto", `None`
    for "none", or a positive width."""
    if text.lower() == "none":
        return None
    if text.lower() == "auto":
        return "auto"
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be auto, none or at least 1. Received: {text}")
    return int(text)


def tune_allocator(backend):
    """On torch, has glibc's malloc reuse large blocks (`keras_luong.training.allocator`): the
    tensors of the logits and of their gradient then come from the heap step after step, rather than
    from pages mapped afresh for each. Returns whether it did."""
    return backend == "torch" and reuse_large_blocks()


def train(args):
    """The recipe, from the parsed `args`."""
    import keras

    from keras_luong.data.batching import BucketedBatches
    from keras_luong.data.parallel_text import load_parallel_text
    from keras_luong.data.prepared import PreparedCorpus
    from keras_luong.training.callbacks import AttentionCallback, BleuCallback
    from keras_luong.training.sigma_schedule import SigmaSchedule

    tune_allocator(keras.backend.backend())
    corpus = PreparedCorpus(args.corpus)
    vocabulary = corpus.vocabulary
    keras.utils.set_random_seed(args.seed)
    batches = BucketedBatches(
        corpus,
        tokens_per_batch=args.tokens_per_batch,
        bucket_width=args.bucket_width,
        seed=args.seed,
    )
    local_p = args.alignment == "local-p"
    model = recipe_model(
        len(vocabulary),
        len(vocabulary),
        **{name: getattr(args, name) for name in RECIPE},
    )
    model.set_vocabularies(vocabulary, vocabulary)
    validation = None
    if args.valid_source is not None:
        sources, targets = load_parallel_text(args.valid_source, args.valid_target)
        source_ids = [vocabulary.encode(s) for s in sources]
        target_ids = [vocabulary.encode(t) for t in targets]
        validation = BucketedBatches(
            source_ids,
            target_ids,
            tokens_per_batch=args.tokens_per_batch,
            bucket_width=args.bucket_width,
            shuffle=False,
        )
        watched = keras.utils.pad_sequences(source_ids[:200], padding="post")
        watched_in = keras.utils.pad_sequences(
            [[model.start_token, *t] for t in target_ids[:200]], padding="post"
        )
        callbacks = [
            AttentionCallback(watched, watched_in),
            BleuCallback(sources, targets, tokenize=args.tokenize),
            keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=1),
            keras.callbacks.EarlyStopping(
                "val_bleu", mode="max", patience=args.patience, restore_best_weights=True
            ),
            # The best epoch so far on disk, should training be cut short.
            keras.callbacks.ModelCheckpoint(
                args.out, monitor="val_bleu", mode="max", save_best_only=True
            ),
        ]
    else:
        callbacks = [keras.callbacks.ModelCheckpoint(args.out)]
    if local_p:
        callbacks.insert(0, SigmaSchedule(epochs=3))
    if args.log:
        callbacks.append(keras.callbacks.CSVLogger(args.log))
    verbose = 2 if args.quiet or not sys.stdout.isatty() else 1
    model.fit(
        batches,
        validation_data=validation,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # the batches' own seeded order
    )
    model.save(args.out)  # with validation: the best epoch's weights, which EarlyStopping restores
    return model


if __name__ == "__main__":
    sys.exit(main())
