"""When does attention lock on? Short training runs over seeds, attentions and recipes.

    python -m benchmarks.seed_study --data ../shared/data/multi30k-en-de --corpus long \\
        --attentions global-general --recipes page,global-clip --seeds 0,1,2 --epochs 3

Each cell trains `LuongSeq2Seq(units=256, embedding_dim=128, dropout=0.3)` on subword ids
(one SentencePiece vocabulary of `--vocabulary-size` pieces for both sides) in
`BucketedBatches(tokens_per_batch=2048)` for `--epochs` epochs, and logs per epoch the training
and validation loss, the token accuracy on the validation pairs, and `AttentionCallback`'s
alignment entropy, diagonal and span on them; after the last epoch, greedy validation BLEU and
where the attention's centroids sit in the source (percentiles of their share of it). A cell
"locks on" at the first epoch whose diagonal reaches `--lock-on` (0.5 by default).

Corpora: `multi30k` (its training pairs as they are, about 13 words a sentence) and `long`
(consecutive training pairs joined two by two on both sides, about 26 words a sentence, up to
about 80: a corpus of longer sentences that nothing was tuned on).

Recipes are the translation page's (`page`: Adam 2e-3 with `clipnorm=5`, label smoothing 0.1,
`ReduceLROnPlateau(patience=1)`) and one change to it each (see `RECIPES`). Each cell appends
one JSON line to `--output`; `--table` prints the table of a results file.
"""

import argparse
import json
import time

from benchmarks.harness import bucketed, corpus

RECIPES = {
    # The translation page's recipe before this study.
    "page": {},
    # Clip the whole gradient's norm at 5 (OpenNMT-py's max_grad_norm), not each variable's.
    "global-clip": {"clip": "global"},
    "no-clip": {"clip": None},
    "no-smoothing": {"label_smoothing": 0.0},
    "lr-1e-3": {"learning_rate": 1e-3},
    "warmup": {"warmup_steps": 250},
    "patience-3": {"patience": 3},
    "no-dropout": {"dropout": 0.0},
    # Every weight uniform in ±0.1 (OpenNMT-py's param_init, the paper's):
    # LuongSeq2Seq(initializer=keras.initializers.RandomUniform(-0.1, 0.1)).
    "uniform-init": {"init": 0.1},
    # The translation page's recipe after this study: both of the above.
    "uniform-global-clip": {"init": 0.1, "clip": "global"},
    # The recipe above with one change each.
    "uniform-global-clip-no-smoothing": {"init": 0.1, "clip": "global", "label_smoothing": 0.0},
    "uniform-global-clip-no-dropout": {"init": 0.1, "clip": "global", "dropout": 0.0},
    # A learned scalar (initialised to 1) on the attention's scores.
    "uniform-global-clip-use-scale": {"init": 0.1, "clip": "global", "use_scale": True},
    # The output layer's kernel as Keras' Dense starts it (Glorot), as before 0.3.0.
    "glorot-output": {"init": "glorot-output"},
    # The page's recipe before 0.2.0: plain Adam, Keras' cross-entropy, no schedule.
    "previous": {
        "learning_rate": 1e-3,
        "clip": None,
        "label_smoothing": 0.0,
        "patience": None,
        "loss": "keras",
    },
}
BASE = {
    "learning_rate": 2e-3,
    "clip": "variable",
    "label_smoothing": 0.1,
    "patience": 1,
    "dropout": 0.3,
    "warmup_steps": 0,
    "init": None,
    "loss": "sequence",
    "use_scale": False,
}
ATTENTIONS = {
    "global-general": {"alignment": "global", "score_mode": "general"},
    "global-dot": {"alignment": "global", "score_mode": "dot"},
    "local-m": {"alignment": "local-m", "score_mode": "general"},
    "local-p": {"alignment": "local-p", "score_mode": "general"},
    # local-p whose window (D = 25, sigma 12.5) covers nearly every source of the long corpus
    # from the first step: does local-p's slow start come from targets outside the window?
    "local-p-wide": {"alignment": "local-p", "score_mode": "general", "window": 25},
    # local-p whose Gaussian-weighted alignments are renormalised to sum to one: does the
    # context's shrinking, where p_t is off the aligned words, slow its start?
    "local-p-renormalized": {
        "alignment": "local-p",
        "score_mode": "general",
        "attention_arguments": {"renormalize": True},
    },
    # local-p whose decoder starts from zeros (bridge="zeros"): does the learned bridge, which
    # hands the decoder the encoder's final states (the backward one sits at the source's
    # first word), leave the first target words no need to attend to the source's start?
    "local-p-zeros-bridge": {"alignment": "local-p", "score_mode": "general", "bridge": "zeros"},
    # local-p whose predicted position has a learned bias, initialised to zero (the paper's
    # has none): p_t = (S_i - 1) · sigmoid(v_p · tanh(W_p h_t) + b_p). Does the first target
    # word's position sit at the source's middle because v_p · tanh(W_p h_t) can give no
    # offset that the decoder state does not carry?
    "local-p-position-bias": {"alignment": "local-p-position-bias", "score_mode": "general"},
    # local-p whose Gaussian starts wide and narrows epoch by epoch (sigma 40, 20, 10, then 5,
    # the paper's D / 2 for D = 10, over a window of half-width 40; SigmaSchedule(epochs=3)):
    # does a start close to global attention, which locks on over the whole source, lead p_t
    # over the whole source?
    "local-p-annealed": {
        "alignment": "local-p",
        "score_mode": "general",
        "window": 40,
        "attention_arguments": {"initial_sigma": 40.0, "sigma": 5.0},
    },
    "bahdanau": {"alignment": "global", "score_mode": "additive", "attention_timing": "bahdanau"},
}
# local-p-annealed stopped at sigma 10 (40, 20, then 10 from the third epoch on): the same
# first three epochs, then a Gaussian twice as wide as the paper's. On Multi30k the diagonal
# fell as sigma reached 5: is the paper's sigma too narrow for its short sentences?
ATTENTIONS["local-p-annealed-10"] = {
    **ATTENTIONS["local-p-annealed"],
    "attention_arguments": {"initial_sigma": 40.0, "sigma": 10.0},
    "sigma_epochs": 2,  # SigmaSchedule's epochs (3 where an attention does not say)
}


def register_position_bias():
    """Registers `alignment="local-p-position-bias"` (see `ATTENTIONS`), through the
    package's own extension point, `register_alignment`."""
    from keras import ops

    from keras_luong import LocalAttention, register_alignment

    class PositionBias(LocalAttention):
        def build(self, query_shape, value_shape):
            super().build(query_shape, value_shape)
            self.position_bias = self.add_weight(
                name="position_bias", shape=(), initializer="zeros"
            )

        def aligned_positions(self, query, lengths, step=None, starts=None):
            hidden = ops.tanh(ops.matmul(query, self.position_kernel))
            logit = ops.matmul(hidden, self.position_vector) + self.position_bias
            positions = ops.expand_dims(lengths - 1.0, -1) * ops.sigmoid(ops.cast(logit, "float32"))
            if starts is None:
                return positions
            return positions + ops.expand_dims(ops.cast(starts, "float32"), -1)

    def make(score_mode, window, **arguments):
        return PositionBias(alignment="local-p", window=window, score_mode=score_mode, **arguments)

    register_alignment("local-p-position-bias", make)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the Multi30k files (default: download)")
    parser.add_argument("--corpus", default="long", choices=["multi30k", "long"])
    parser.add_argument("--attentions", default="global-general")
    parser.add_argument("--recipes", default="page")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-pairs", type=int, default=None, help="first pairs only")
    parser.add_argument("--valid-pairs", type=int, default=500)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--lock-on", type=float, default=0.5)
    parser.add_argument("--output", default="seed_study.jsonl")
    parser.add_argument("--table", metavar="RESULTS", help="print the table of a results file")
    return parser.parse_args(argv)


def settings(recipe):
    unknown = set(recipe) - set(BASE)
    if unknown:
        raise ValueError(f"unknown recipe keys {unknown}")
    return {**BASE, **recipe}


def run_cell(args, data, vocabulary, attention, recipe, seed, starts=None):
    import keras

    from keras_luong import AttentionCallback, BleuCallback, LuongSeq2Seq, SigmaSchedule
    from keras_luong.training.losses import SequenceLoss

    config = settings(RECIPES[recipe])
    keras.utils.set_random_seed(seed)
    (train_src, train_tgt), (valid_src, valid_tgt) = data
    encode = vocabulary.encode
    train = bucketed(vocabulary, train_src, train_tgt, True, seed)
    valid = bucketed(vocabulary, valid_src, valid_tgt, False, seed)
    schedule = config["learning_rate"]
    if config["warmup_steps"]:
        schedule = keras.optimizers.schedules.CosineDecay(
            0.0, 10**9, warmup_target=schedule, warmup_steps=config["warmup_steps"]
        )
    clip = {"variable": {"clipnorm": 5.0}, "global": {"global_clipnorm": 5.0}, None: {}}
    optimizer = keras.optimizers.Adam(schedule, **clip[config["clip"]])
    if config["loss"] == "keras":
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        loss = SequenceLoss(label_smoothing=config["label_smoothing"])
    initializers = {}
    if config["init"] == "glorot-output":
        initializers["output_initializer"] = "glorot_uniform"
    elif config["init"]:  # every weight uniform in ±init, the model's own argument
        bound = config["init"]
        initializers["initializer"] = keras.initializers.RandomUniform(-bound, bound)
    attention_config = dict(ATTENTIONS[attention])
    sigma_epochs = attention_config.pop("sigma_epochs", 3)
    if config["use_scale"]:
        attention_config["attention_arguments"] = {
            **attention_config.get("attention_arguments", {}),
            "use_scale": True,
        }
    model = LuongSeq2Seq(
        len(vocabulary),
        len(vocabulary),
        units=256,
        embedding_dim=128,
        dropout=config["dropout"],
        **initializers,
        **attention_config,
    )
    model.set_vocabularies(vocabulary, vocabulary)
    model.compile(optimizer, loss, metrics=[keras.metrics.SparseCategoricalAccuracy("acc")])

    # The alignments of fixed validation pairs, padded to one shape.
    pad = keras.utils.pad_sequences
    source = pad([encode(s) for s in valid_src], padding="post")
    target_in = pad([[1, *encode(t)] for t in valid_tgt], padding="post")
    callbacks = [
        AttentionCallback(source, target_in, batch_size=100),
        BleuCallback(valid_src, valid_tgt, frequency=args.epochs, tokenize="none", verbose=0),
    ]
    if "initial_sigma" in attention_config.get("attention_arguments", {}):
        # First: the epoch's sigma, then the rest.
        callbacks.insert(0, SigmaSchedule(epochs=sigma_epochs))
    if config["patience"] is not None:
        callbacks.append(
            keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=config["patience"])
        )
    started = time.perf_counter()
    history = model.fit(
        train, validation_data=valid, epochs=args.epochs, callbacks=callbacks, verbose=2,
        shuffle=False,
    )  # fmt: skip
    logs = history.history
    sits = where_attention_sits(model, source[:200], target_in[:200], starts)
    diagonal = logs["val_attention_diagonal"]
    lock_on = next((e + 1 for e, d in enumerate(diagonal) if d >= args.lock_on), None)
    return {
        "corpus": args.corpus,
        "train_pairs": len(train_src),
        "attention": attention,
        "recipe": recipe,
        "seed": seed,
        "epochs": args.epochs,
        "backend": keras.backend.backend(),
        "loss": logs["loss"],
        "val_loss": logs["val_loss"],
        "val_acc": logs["val_acc"],
        "entropy": logs["val_attention_entropy"],
        "diagonal": diagonal,
        "span": logs["val_attention_span"],
        # The span as alignment_statistics now measures it (the median slope's walk); cells
        # without this key recorded the centroids' range.
        "span_measure": "median-slope",
        "lock_on": lock_on,
        "bleu": logs["val_bleu"][-1],
        "length_ratio": logs["val_bleu_length_ratio"][-1],
        "seconds": time.perf_counter() - started,
        "sits": sits,
    }


def sentence_starts(args, encode, pairs):
    """For the long corpus, where each validation pair joins two pairs: the subword position
    at which each of the first `pairs` pairs' second sentence starts, in the source and in the
    target (int arrays `(pairs,)`, -1 where the joined text's pieces do not begin with the
    first sentence's own); `None` for Multi30k as it is."""
    if args.corpus != "long":
        return None
    import numpy as np

    from keras_luong.datasets import multi30k

    valid_src, valid_tgt = multi30k.load_data(args.data)["validation"]
    starts = []
    for side in (valid_src, valid_tgt):
        first, second = side[0::2], side[1::2]
        side_starts = []
        for a, b in zip(first[:pairs], second, strict=False):
            pieces = encode(a)
            whole = encode(f"{a} {b}")
            side_starts.append(len(pieces) if whole[: len(pieces)] == pieces else -1)
        starts.append(np.array(side_starts))
    return tuple(starts)


def where_attention_sits(model, source, target_in, starts=None):
    """Where the attention's mass sits after training: each real target step's centroid
    `Σ_s s · a_t(s) / Σ_s a_t(s)` over its source's positions `0 … S_i - 1`, as a share of
    `S_i - 1`; its 10th, 50th and 90th percentiles, the first target word's median and the
    shares of steps within 5% of either end. (Local-p's predicted position saturating at an
    end of the source, where the sigmoid's gradient vanishes, shows as mass at 0 or 1.)
    With `starts` (the long corpus' second sentences' first positions, source and target,
    see `sentence_starts`): the share of each target sentence's steps whose centroid lies in
    the source's same sentence, and their centroids' medians."""
    import numpy as np
    from keras import ops

    _, weights = model((source, target_in), return_attention_scores=True)
    weights = ops.convert_to_numpy(weights).astype("float64")  # (B, T, S)
    lengths = (source != 0).sum(1)
    positions = np.arange(source.shape[1])[None, None, :]
    total = weights.sum(-1)
    centroid = (weights * positions).sum(-1) / np.maximum(total, 1e-12)
    relative = centroid / np.maximum(lengths - 1, 1)[:, None]
    real = (target_in != 0) & (lengths[:, None] > 1)
    values = relative[real]
    by_sentence = {}
    if starts is not None:
        source_start, target_start = starts
        known = (source_start > 0) & (target_start > 0)
        steps = np.arange(target_in.shape[1])[None, :]
        # Step t predicts the target's piece t: the second sentence's from its start on
        # (the end token included).
        second = steps >= target_start[:, None]
        in_second = centroid >= source_start[:, None] - 0.5
        sentences = (
            ("first_sentence", ~second, ~in_second),
            ("second_sentence", second, in_second),
        )
        for name, mask, same in sentences:
            chosen = real & known[:, None] & mask
            by_sentence[name] = {
                "same": float(np.mean(same[chosen])),
                "p50": float(np.median(relative[chosen])),
            }
        # Where the source's second sentence starts, as a share of S_i - 1 (median).
        share = source_start / np.maximum(lengths - 1, 1)
        by_sentence["boundary"] = float(np.median(share[known]))
    return {
        **by_sentence,
        # The first target word's centroid, median over the pairs.
        "first": float(np.median(relative[:, 0][real[:, 0]])),
        "p10": float(np.percentile(values, 10)),
        "p50": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "start": float(np.mean(values < 0.05)),
        "end": float(np.mean(values > 0.95)),
    }


def table(path):
    rows = [json.loads(line) for line in open(path)]
    print(
        "| corpus | attention | recipe | seed | lock-on epoch | BLEU | span | centroids "
        "| len ratio | min | diagonal by epoch | val acc by epoch |"
    )
    print("|---|---|---|---:|---:|---:|---:|---|---:|---:|---|---|")
    for r in rows:
        # The last epoch's span; "-" for cells run before it was the median slope's walk.
        measured = r.get("span_measure") == "median-slope"
        span = f"{r['span'][-1]:.2f}" if measured else "-"
        # The 10th and 90th percentiles of the target words' centroids, as shares of the
        # source; "-" for cells run before they were recorded.
        sits = r.get("sits")
        band = f"{sits['p10']:.0%}–{sits['p90']:.0%}" if sits else "-"
        print(
            f"| {r['corpus']} {r['train_pairs']} | {r['attention']} | {r['recipe']} | "
            f"{r['seed']} | {r['lock_on'] or '-'} | {r['bleu']:.2f} | {span} | {band} | "
            f"{r['length_ratio']:.2f} | {r['seconds'] / 60:.1f} | "
            f"{' '.join(f'{d:.2f}' for d in r['diagonal'])} | "
            f"{' '.join(f'{a:.3f}' for a in r['val_acc'])} |"
        )


def main(argv=None):
    args = parse_args(argv)
    if args.table:
        table(args.table)
        return
    from keras_luong import SubwordVocabulary

    register_position_bias()

    data = corpus(args.data, args.corpus, args.train_pairs, args.valid_pairs)
    (train_src, train_tgt), _ = data
    vocabulary = SubwordVocabulary.train(
        train_src + train_tgt, vocabulary_size=args.vocabulary_size, seed=0
    )
    # Where the watched validation pairs' second sentences start: once, for every cell.
    starts = sentence_starts(args, vocabulary.encode, min(200, len(data[1][0])))
    for attention in args.attentions.split(","):
        for recipe in args.recipes.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                result = run_cell(args, data, vocabulary, attention, recipe, seed, starts)
                with open(args.output, "a") as out:
                    out.write(json.dumps(result) + "\n")
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
