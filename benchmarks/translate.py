"""Multi30k English→German: train a LuongSeq2Seq on subwords within a time budget, score BLEU.

    make translate                                  # the headline run (jax), data downloaded
    make translate DATA=/path/to/multi30k           # a local copy of the official files
    python -m benchmarks.translate --minutes 10 --alignment local-p --no-input-feeding

Trains one joint BPE vocabulary on both sides of the training text (the official lowercased,
tokenized files), trains the recipe's model (`keras_luong.models.recipe`) on length-bucketed
batches, translates the validation set greedily after every epoch (BLEU logged as `val_bleu`),
keeps the best epoch's weights, halves the learning rate when the validation loss stops
falling, and stops when another epoch would overrun `--minutes`. Then it picks beam search's
length penalty on the validation set and prints validation and test2016 BLEU (tokenized,
lowercased text: the published table's) for greedy and beam search, chrF, sacreBLEU on the raw
text, minutes and training tokens/s, beside the published rows. Its last two lines are
`test2016 greedy BLEU <x>` and `test2016 beam BLEU <y>`. The model (with its vocabularies
inside) and results.json go to
`--output-dir`.
"""

import argparse
import json
import os
import re
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the official files (default: download)")
    parser.add_argument(
        "--model",
        default="luong",
        choices=["luong", "keras-native"],
        help="keras-native: Embedding, LSTM, keras.layers.Attention, Dense (no input feeding)",
    )
    parser.add_argument(
        "--alignment",
        default="global",
        choices=["global", "local-m", "local-p", "hard-monotonic"],
    )
    parser.add_argument("--score-mode", default="general", choices=["dot", "general", "concat"])
    parser.add_argument(
        "--window", type=int, help="local window half-width D (default: the recipe's)"
    )
    parser.add_argument("--no-input-feeding", dest="input_feeding", action="store_false")
    parser.add_argument("--vocabulary-size", type=int, default=6000, help="joint BPE units")
    parser.add_argument("--subword-model", default="bpe", choices=["bpe", "unigram"])
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--layers", type=int, default=1, help="decoder LSTM layers")
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument(
        "--clip-norm", type=float, default=5.0, help="the gradient's global norm is clipped here"
    )
    parser.add_argument("--tokens-per-batch", type=int, default=2048)
    parser.add_argument(
        "--no-bucketing",
        dest="bucketing",
        action="store_false",
        help="batches of 64 pairs in corpus order, padded to the longest",
    )
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=60.0, help="training time budget")
    parser.add_argument("--beam-width", type=int, default=5)
    parser.add_argument("--length-penalties", default="0.6,1.0,1.4",
                        help="comma-separated alphas tried on the validation set")  # fmt: skip
    parser.add_argument("--max-train-pairs", type=int, help="train on fewer pairs (quick runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="translate_output")
    parser.add_argument(
        "--backend", choices=["tensorflow", "jax", "torch"], help="default: $KERAS_BACKEND"
    )
    return parser.parse_args(argv)


def smoothed_loss(label_smoothing):
    """Cross-entropy of logits against ids with label smoothing `ε`: `(1 - ε)·(-log p(y)) +
    ε·mean_v(-log p(v))` (Szegedy et al. 2016), the mean over the tokens that are not padding:
    keras-luong's `SequenceLoss`, which a saved model loads with."""
    from keras_luong.training.losses import SequenceLoss

    return SequenceLoss(label_smoothing=label_smoothing)


def keras_native_model(vocabulary_size, units, embedding_dim, dropout):
    """The recipe a Keras user writes without this package: a biLSTM encoder, an LSTM decoder
    started from the encoder's states, `keras.layers.Attention` (dot) over the encoder
    states, `Dense(tanh)` on `[c; h]`, a softmax layer. No input feeding. The layers are
    named for `greedy_keras_native`, which steps them one token at a time."""
    import keras

    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    embedded = keras.layers.Embedding(
        vocabulary_size, embedding_dim, mask_zero=True, name="source_embedding"
    )(source)
    embedded = keras.layers.Dropout(dropout)(embedded)
    memory, fh, fc, bh, bc = keras.layers.Bidirectional(
        keras.layers.LSTM(units // 2, return_sequences=True, return_state=True), name="encoder"
    )(embedded)
    h = keras.layers.Dense(units, "tanh", name="bridge_h")(keras.layers.Concatenate()([fh, bh]))
    c = keras.layers.Dense(units, "tanh", name="bridge_c")(keras.layers.Concatenate()([fc, bc]))
    decoded = keras.layers.Embedding(
        vocabulary_size, embedding_dim, mask_zero=True, name="target_embedding"
    )(target_in)
    decoded = keras.layers.Dropout(dropout)(decoded)
    states = keras.layers.LSTM(units, return_sequences=True, name="decoder")(
        decoded, initial_state=[h, c]
    )
    context = keras.layers.Attention(name="attention")([states, memory])
    attentional = keras.layers.Dense(units, "tanh", use_bias=False, name="attentional")(
        keras.layers.Concatenate()([context, states])
    )
    logits = keras.layers.Dense(vocabulary_size, name="logits")(
        keras.layers.Dropout(dropout)(attentional)
    )
    return keras.Model((source, target_in), logits, name="keras_native")


def greedy_keras_native(model, source, max_length, start, end, batch_size=256):
    """Greedy decoding of the Keras-native model, one step at a time as a Keras user writes
    it for inference: the encoder once, then the decoder's `LSTMCell`, the attention over
    the encoder states and the output layers for each new token (inference, no dropout)."""
    import numpy as np
    from keras import ops

    layer = model.get_layer
    outputs = []
    for first in range(0, len(source), batch_size):
        ids = source[first : first + batch_size]
        source_mask = ops.convert_to_tensor(ids != 0)
        embedded = layer("source_embedding")(ids)
        memory, fh, fc, bh, bc = layer("encoder")(embedded, mask=source_mask)
        h = layer("bridge_h")(ops.concatenate([fh, bh], -1))
        c = layer("bridge_c")(ops.concatenate([fc, bc], -1))
        token = np.full(len(ids), start, "int32")
        output = np.zeros((len(ids), max_length), "int32")
        done = np.zeros(len(ids), bool)
        for t in range(max_length):
            # The embedding row itself: the layer would attach a mask the cell warns about.
            x = ops.take(layer("target_embedding").embeddings, token, axis=0)
            state, (h, c) = layer("decoder").cell(x, [h, c])
            query = state[:, None]
            context = layer("attention")([query, memory], mask=[None, source_mask])
            attentional = layer("attentional")(ops.concatenate([context, query], -1))
            logits = layer("logits")(attentional)[:, 0]
            token = ops.convert_to_numpy(ops.argmax(logits, -1)).astype("int32")
            output[:, t] = np.where(done, 0, token)
            done |= token == end
            if done.all():
                break
        outputs.append(output)
    return np.concatenate(outputs) if outputs else np.zeros((0, max_length), "int32")


class TrainingClock:
    """Seconds spent in training batches (not in the validation decoding after them), the
    epochs done, and a stop once another epoch would overrun the budget."""

    def __new__(cls, minutes):
        import keras

        class Clock(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.seconds, self.epochs, self.started = 0.0, 0, time.perf_counter()

            def on_epoch_begin(self, epoch, logs=None):
                self.epoch_started = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                self.seconds += time.perf_counter() - self.epoch_started
                self.epochs += 1

            def overrun(self):
                elapsed = time.perf_counter() - self.started
                return elapsed * (1 + 1 / max(self.epochs, 1)) > minutes * 60

        return Clock()


def main(argv=None):
    args = parse_args(argv)
    if args.backend and os.environ.get("KERAS_BACKEND") != args.backend:
        env = dict(os.environ, KERAS_BACKEND=args.backend)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    import keras

    from keras_luong import BeamSearchSampler, SubwordVocabulary
    from keras_luong.data.batching import BucketedBatches
    from keras_luong.datasets import multi30k
    from keras_luong.evaluation import bleu_signature, corpus_bleu, corpus_chrf
    from keras_luong.models.recipe import recipe_model
    from keras_luong.training.callbacks import BleuCallback
    from keras_luong.training.sigma_schedule import SigmaSchedule

    keras.utils.set_random_seed(args.seed)
    started = time.perf_counter()
    data = multi30k.load_data(args.data)
    raw = multi30k.load_data(args.data, tokenized=False)
    train_en, train_de = data["train"]
    if args.max_train_pairs:
        train_en, train_de = train_en[: args.max_train_pairs], train_de[: args.max_train_pairs]
    subwords = SubwordVocabulary.train(
        train_en + train_de, args.vocabulary_size, model_type=args.subword_model
    )
    source_ids = [subwords.encode(s) for s in train_en]
    target_ids = [subwords.encode(t) for t in train_de]
    # Outputs at most 1.5 times the longest training target, and 10 more.
    max_length = int(1.5 * max(len(t) for t in target_ids)) + 10
    print(
        f"keras {keras.__version__}, backend {keras.backend.backend()}; Multi30k En→De: "
        f"{len(train_en)} training pairs, {len(data['validation'][0])} validation, "
        f"{len(data['test2016'][0])} test2016; joint {args.subword_model.upper()} vocabulary "
        f"of {len(subwords)} ids ({time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    if args.bucketing:
        train = BucketedBatches(
            source_ids, target_ids, args.tokens_per_batch, shuffle=True, seed=args.seed
        )
    else:  # the whole corpus padded to its longest pair, 64 pairs a batch, in corpus order
        longest = max(max(len(s), len(t) + 1) for s, t in zip(source_ids, target_ids, strict=True))
        train = BucketedBatches(
            source_ids, target_ids, 64 * longest, bucket_width=longest, shuffle=False
        )
    tokens = train.target_tokens()
    print(
        f"{len(train)} batches an epoch, {tokens} target tokens, "
        f"{train.padding_share():.1%} of target positions padding",
        flush=True,
    )

    if args.model == "keras-native":
        model = keras_native_model(len(subwords), args.units, args.embedding_dim, args.dropout)
        recipe = (
            f"Keras-native (biLSTM encoder, LSTM decoder, keras.layers.Attention dot, no input "
            f"feeding), {args.units} units, embeddings {args.embedding_dim}"
        )
    else:
        model = recipe_model(
            len(subwords),
            len(subwords),
            model_arguments={
                "input_feeding": args.input_feeding,
                "decoder_layers": args.layers,
                **({} if args.window is None else {"window": args.window}),
            },
            units=args.units,
            embedding_dim=args.embedding_dim,
            alignment=args.alignment,
            score_mode=args.score_mode,
            dropout=args.dropout,
            learning_rate=args.learning_rate,
            clip_norm=args.clip_norm,
            label_smoothing=args.label_smoothing,
        )
        model.set_vocabularies(subwords, subwords)
        recipe = (
            f"{args.alignment}/{args.score_mode}"
            + (f" D={args.window}" if args.window else "")
            + f", input feeding {'on' if args.input_feeding else 'off'}, biLSTM encoder, "
            f"{args.layers}x{args.units} decoder, embeddings {args.embedding_dim}"
        )
    recipe += (
        f", dropout {args.dropout}, label smoothing {args.label_smoothing}, Adam "
        f"{args.learning_rate} (halved when validation loss stalls), global clip norm "
        f"{args.clip_norm}, "
        f"{args.tokens_per_batch if args.bucketing else 'no'} tokens a batch"
        f"{'' if args.bucketing else ' (64 pairs, unbucketed)'}, joint "
        f"{args.subword_model.upper()} {args.vocabulary_size}"
    )
    print(recipe, flush=True)
    if args.model == "keras-native":  # the recipe's model is compiled by the recipe
        model.compile(
            optimizer=keras.optimizers.Adam(args.learning_rate, global_clipnorm=args.clip_norm),
            loss=smoothed_loss(args.label_smoothing),
        )

    validation_en, validation_de = data["validation"]
    test_en, test_de = data["test2016"]

    def translate(sentences, sampler="greedy"):
        if args.model == "keras-native":
            ids = greedy_keras_native(
                model, subwords.encode_batch(sentences), max_length, subwords.START, subwords.END
            )
            return [subwords.decode(row) for row in ids]
        return model.translate(sentences, max_length=max_length, sampler=sampler)

    class NativeBleu(BleuCallback):
        def score(self):
            return corpus_bleu(
                translate(self.sources), self.references, tokenize="none", return_details=True
            )

    clock = TrainingClock(args.minutes)
    bleu_class = NativeBleu if args.model == "keras-native" else BleuCallback
    bleu = bleu_class(validation_en, validation_de, max_length=max_length, tokenize="none")
    best = {"bleu": -1.0, "weights": None, "epoch": 0}
    curve = []

    class Selection(keras.callbacks.Callback):
        """Keeps the best validation BLEU's weights and stops when another epoch would
        overrun the budget."""

        def on_epoch_end(self, epoch, logs=None):
            score = logs["val_bleu"]
            minutes = (time.perf_counter() - clock.started) / 60
            curve.append({"epoch": epoch + 1, "minutes": round(minutes, 1),
                          "loss": round(logs["loss"], 4), "val_loss": round(logs["val_loss"], 4),
                          "val_bleu": round(score, 2)})  # fmt: skip
            if score > best["bleu"]:
                best.update(bleu=score, weights=self.model.get_weights(), epoch=epoch + 1)
            if clock.overrun():
                self.model.stop_training = True

    validation_batches = BucketedBatches(
        [subwords.encode(s) for s in validation_en],
        [subwords.encode(t) for t in validation_de],
        args.tokens_per_batch,
        shuffle=False,
    )
    # The learning rate is halved when the validation loss stops falling (BLEU, near 0 for
    # the first epochs, is too noisy to schedule on); BLEU picks the weights kept.
    schedule = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=1, min_lr=args.learning_rate / 16, verbose=1
    )

    model.fit(
        train,
        validation_data=validation_batches,
        epochs=args.epochs,
        # local-p's Gaussian narrowed from wide over the first epochs, as the recipe trains it
        callbacks=[clock, bleu, Selection(), schedule]
        + ([SigmaSchedule(epochs=3)] if args.alignment == "local-p" else []),
        verbose=1 if sys.stdout.isatty() else 2,
    )
    minutes = clock.seconds / 60
    tokens_per_second = tokens * clock.epochs / clock.seconds
    model.set_weights(best["weights"])
    print(
        f"trained {clock.epochs} epochs in {minutes:.1f} min of training batches "
        f"({(time.perf_counter() - clock.started) / 60:.1f} min with validation), "
        f"{tokens_per_second:.0f} target tokens/s; best epoch {best['epoch']}: "
        f"validation BLEU {best['bleu']:.2f}",
        flush=True,
    )

    results = {"recipe": recipe, "curve": curve, "best_epoch": best["epoch"]}
    rows = {}
    rows["greedy"] = {
        "validation": corpus_bleu(translate(validation_en), validation_de, tokenize="none"),
        "hypotheses": translate(test_en),
    }
    alpha = None
    if args.model != "keras-native":
        alphas = [float(a) for a in args.length_penalties.split(",")]
        by_alpha = {}
        for a in alphas:
            sampler = BeamSearchSampler(args.beam_width, length_penalty=a)
            by_alpha[a] = corpus_bleu(
                translate(validation_en, sampler), validation_de, tokenize="none"
            )
            print(f"beam {args.beam_width}, length penalty {a:g}: validation BLEU "
                  f"{by_alpha[a]:.2f}", flush=True)  # fmt: skip
        alpha = max(alphas, key=lambda a: by_alpha[a])
        sampler = BeamSearchSampler(args.beam_width, length_penalty=alpha)
        rows["beam"] = {"validation": by_alpha[alpha], "hypotheses": translate(test_en, sampler)}
        results["validation_beam"] = {str(a): by_alpha[a] for a in alphas}

    # sacreBLEU on raw text: the hypotheses are lowercased and tokenized, so they are
    # detokenized roughly (spaces before punctuation dropped) and scored case-insensitively.
    raw_test_de = raw["test2016"][1]
    signature = bleu_signature("13a", lowercase=True)
    print(f"\ntest2016 ({len(test_en)} sentences), {recipe}, best of {clock.epochs} epochs, "
          f"{minutes:.1f} min training, {tokens_per_second:.0f} target tokens/s")  # fmt: skip
    print(f"{'system':<60} {'val BLEU':>8} {'BLEU':>6} {'chrF':>6} {'sacreBLEU':>9}")
    for name, row in rows.items():
        hypotheses = row["hypotheses"]
        row["test"] = corpus_bleu(hypotheses, test_de, tokenize="none")
        row["chrf"] = corpus_chrf(hypotheses, test_de)
        row["sacrebleu"] = corpus_bleu(
            [_detokenize(h) for h in hypotheses], raw_test_de, tokenize="13a", lowercase=True
        )
        label = "ours, greedy" if name == "greedy" else (
            f"ours, beam {args.beam_width} (length penalty {alpha:g})")  # fmt: skip
        print(f"{label:<60} {row['validation']:8.2f} {row['test']:6.2f} {row['chrf']:6.2f} "
              f"{row['sacrebleu']:9.2f}")  # fmt: skip
    from benchmarks import published

    for system, direction, score, scored in published.MULTI30K:
        print(f"{system[:60]:<60} {'':>8} {score:6.2f}   ({direction}; {scored})")
    print(f"BLEU: sacreBLEU tok:none on the official lowercased tokenized text (multi-bleu); "
          f"sacreBLEU column: {signature} on the raw references")  # fmt: skip

    os.makedirs(args.output_dir, exist_ok=True)
    if args.model != "keras-native":
        model.save(os.path.join(args.output_dir, "translate.keras"))
    for name, row in rows.items():
        with open(os.path.join(args.output_dir, f"test2016.{name}.de"), "w") as f:
            f.write("\n".join(row.pop("hypotheses")) + "\n")
    results.update(
        {
            "minutes": round(minutes, 1),
            "epochs": clock.epochs,
            "target_tokens_per_second": round(tokens_per_second),
            "padding_share": train.padding_share(),
            "length_penalty": alpha,
            "test2016": rows,
            "sacrebleu_signature": signature,
        }
    )
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"saved the model (vocabularies inside) and results.json in {args.output_dir}")
    print(f"test2016 greedy BLEU {rows['greedy']['test']:.2f}")
    if "beam" in rows:
        print(f"test2016 beam BLEU {rows['beam']['test']:.2f}")


def _detokenize(text):
    """A rough inverse of the Moses tokenizer for scoring against raw text."""
    text = re.sub(r" ([.,!?;:)\]'\"])", r"\1", text)
    text = re.sub(r"([(\[\"]) ", r"\1", text)
    return text.replace(" &apos;", "'").replace("&apos; ", "'").replace("&quot;", '"')


if __name__ == "__main__":
    main()
