"""What an ensemble and checkpoint averaging buy on Multi30k, and what they cost to decode.

    KERAS_BACKEND=jax python -m benchmarks.ensemble --data ../shared/data/multi30k-en-de \\
        --members 4 --epochs 6 --output-dir /tmp/ensemble

Trains `--members` models with the translation page's recipe (one per seed, 8,000 joint
subwords, every weight uniform in ±0.1, Adam 2e-3 with the gradient's global norm clipped at
5, label smoothing 0.1, the rate halved when the validation loss stops falling), saving each
epoch's weights; then decodes test2016 with beam search (`--beams`, length penalty
`--length-penalty`) by each member, by `Ensemble`s of the first 2 and of all members, and by
`average_models` of each member's last `--average` epochs, and prints the BLEU (tokenized,
lowercased text: the published table's) and the decoding seconds of each, with the ensembles'
time over the sum of their members'. Each decoder is timed on its second call (compiled).
Members already saved in `--output-dir` are reused, so the decoding part runs alone with
`--epochs 0`.
"""

import argparse
import json
import os
import time

from benchmarks.harness import bucketed


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the Multi30k files (default: download)")
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--average", type=int, default=2, help="last epochs averaged")
    parser.add_argument("--beams", type=int, default=5)
    parser.add_argument("--length-penalty", type=float, default=1.0)
    parser.add_argument("--output-dir", default="ensemble_runs")
    return parser.parse_args(argv)


def train_member(seed, data, vocabulary, epochs, directory):
    import keras

    from keras_luong import LuongSeq2Seq, SequenceLoss

    keras.utils.set_random_seed(seed)
    (train_src, train_tgt), (valid_src, valid_tgt) = data["train"], data["validation"]

    model = LuongSeq2Seq(
        len(vocabulary),
        len(vocabulary),
        units=256,
        embedding_dim=128,
        dropout=0.3,
        initializer=keras.initializers.RandomUniform(-0.1, 0.1),
    )
    model.set_vocabularies(vocabulary, vocabulary)
    model.compile(
        keras.optimizers.Adam(2e-3, global_clipnorm=5.0), SequenceLoss(label_smoothing=0.1)
    )
    checkpoints = keras.callbacks.ModelCheckpoint(
        os.path.join(directory, f"member{seed}-epoch{{epoch}}.weights.h5"),
        save_weights_only=True,
    )
    schedule = keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=1)
    started = time.perf_counter()
    model.fit(
        bucketed(vocabulary, train_src, train_tgt, True, seed),
        validation_data=bucketed(vocabulary, valid_src, valid_tgt, False, seed),
        epochs=epochs,
        callbacks=[checkpoints, schedule],
        verbose=2,
        shuffle=False,
    )
    model.save(os.path.join(directory, f"member{seed}.keras"))
    return time.perf_counter() - started


def averaged_member(seed, epochs, count, directory):
    import keras

    from keras_luong import average_models

    path = os.path.join(directory, f"member{seed}.keras")
    model = keras.saving.load_model(path)
    snapshots = []
    for epoch in range(epochs - count + 1, epochs + 1):
        snapshot = keras.saving.load_model(path)
        snapshot.load_weights(os.path.join(directory, f"member{seed}-epoch{epoch}.weights.h5"))
        snapshots.append(snapshot)
    averaged = average_models(snapshots)
    averaged.set_vocabularies(model.source_vocabulary, model.target_vocabulary)
    return averaged


def decode(model, sources, sampler):
    model.translate(sources, sampler=sampler, max_length=80)  # compiles every source shape
    started = time.perf_counter()
    hypotheses = model.translate(sources, sampler=sampler, max_length=80)
    return hypotheses, time.perf_counter() - started


def main(argv=None):
    args = parse_args(argv)
    import keras

    from keras_luong import BeamSearchSampler, Ensemble, SubwordVocabulary
    from keras_luong.datasets import multi30k
    from keras_luong.evaluation import corpus_bleu

    os.makedirs(args.output_dir, exist_ok=True)
    data = multi30k.load_data(args.data)
    train_src, train_tgt = data["train"]
    vocabulary = SubwordVocabulary.train(train_src + train_tgt, vocabulary_size=8000, seed=0)
    # Epochs trained: this run's, or with --epochs 0 the saved checkpoints' count.
    trained_epochs = args.epochs or len(
        [f for f in os.listdir(args.output_dir) if f.startswith("member0-epoch")]
    )
    for seed in range(args.members):
        if args.epochs and not os.path.exists(os.path.join(args.output_dir, f"member{seed}.keras")):
            seconds = train_member(seed, data, vocabulary, args.epochs, args.output_dir)
            print(f"member {seed}: trained {args.epochs} epochs in {seconds / 60:.1f} min")
    members = [
        keras.saving.load_model(os.path.join(args.output_dir, f"member{seed}.keras"))
        for seed in range(args.members)
    ]
    test_src, test_tgt = data["test2016"]
    sampler = BeamSearchSampler(args.beams, length_penalty=args.length_penalty)
    rows = []

    def score(name, model, parts):
        hypotheses, seconds = decode(model, test_src, sampler)
        bleu = corpus_bleu(hypotheses, test_tgt, tokenize="none")
        row = {"decoder": name, "bleu": bleu, "seconds": seconds}
        if len(parts) > 1:  # an ensemble: against its members
            row["over_best_member"] = row["bleu"] - max(rows[i]["bleu"] for i in parts)
            row["time_over_members"] = seconds / sum(rows[i]["seconds"] for i in parts)
        elif not name.startswith("member "):  # an average: against the member it came from
            row["over_best_member"] = row["bleu"] - rows[parts[0]]["bleu"]
        rows.append(row)
        print(json.dumps(row), flush=True)

    for seed, member in enumerate(members):
        score(f"member {seed}", member, [seed])
    score("ensemble of 2", Ensemble(members[:2]), [0, 1])
    if len(members) > 2:
        score(f"ensemble of {len(members)}", Ensemble(members), list(range(len(members))))
    if trained_epochs >= args.average > 1:
        for seed in range(min(2, args.members)):
            averaged = averaged_member(seed, trained_epochs, args.average, args.output_dir)
            score(f"average of member {seed}'s last {args.average} epochs", averaged, [seed])
    print(f"\ntest2016, beam {args.beams}, length penalty {args.length_penalty}")
    print("| decoder | BLEU | over its best member | decoding s | time over its members' sum |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        gain = f"{r['over_best_member']:+.2f}" if "over_best_member" in r else ""
        ratio = f"{r['time_over_members']:.2f}" if "time_over_members" in r else ""
        print(f"| {r['decoder']} | {r['bleu']:.2f} | {gain} | {r['seconds']:.1f} | {ratio} |")
    with open(os.path.join(args.output_dir, "results.json"), "w") as out:
        json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
