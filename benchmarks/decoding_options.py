"""Decoding options on real text: BLEU and the length ratio of greedy and beam search with
length penalties, the three coverage-penalty forms and n-gram blocking, on Multi30k test2016
and on its longest third of sentences (by source words).

    make translate TRANSLATE_ARGS="--output-dir runs/multi30k"     # a trained model first
    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.decoding_options \\
        --model runs/multi30k/translate.keras --data /path/to/multi30k

The model is a `.keras` file with its vocabularies inside (`benchmarks/translate.py` saves
one). Every setting decodes the whole test set once; the longest third is scored from the same
output. BLEU is sacreBLEU `tok:none` on the official lowercased, tokenized references (the
published tables' number); the length ratio is the output's words over the references' (above
1: the decoder runs on; below 1: it stops early and pays the brevity penalty). `--quick`
decodes the first 300 sentences with fewer settings.
"""

import argparse
import time


def settings(beams, quick):
    """`(label, sampler)` rows: greedy; beam with each length penalty; each coverage form and
    weight at two length penalties; trigram blocking."""
    from keras_luong import BeamSearchSampler

    rows = [("greedy", "greedy")]
    penalties = (0.0, 0.6, 1.0) if quick else (0.0, 0.2, 0.6, 1.0)
    for width in beams:
        for alpha in penalties:
            rows.append((f"beam {width}, lp {alpha:g}", BeamSearchSampler(width, alpha)))
    width = beams[0]
    for alpha in (0.2, 1.0):
        for form in ("gnmt", "stepwise", "summary"):
            for beta in (0.2,) if quick else (0.1, 0.2, 0.4):
                sampler = BeamSearchSampler(width, alpha, coverage_penalty=beta, coverage_form=form)
                rows.append((f"beam {width}, lp {alpha:g}, {form} coverage {beta:g}", sampler))
    for alpha in (0.6, 1.0):
        sampler = BeamSearchSampler(width, alpha, no_repeat_ngram_size=3)
        rows.append((f"beam {width}, lp {alpha:g}, no repeated trigram", sampler))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a .keras file with its vocabularies")
    parser.add_argument("--data", help="folder of the official Multi30k files (else download)")
    parser.add_argument("--beams", default="5,10", help="comma-separated beam widths")
    parser.add_argument("--quick", action="store_true", help="300 sentences, fewer settings")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)

    import keras

    from keras_luong.datasets import multi30k
    from keras_luong.evaluation import corpus_bleu

    model = keras.saving.load_model(args.model, compile=False)  # decoding needs no loss
    sources, references = multi30k.load_data(args.data)["test2016"]
    if args.quick:
        sources, references = sources[:300], references[:300]
    by_length = sorted(range(len(sources)), key=lambda i: len(sources[i].split()))
    longest = by_length[-(len(sources) // 3) :]
    vocabulary = model.target_vocabulary
    longest_target = max(len(vocabulary.encode(r)) for r in references)
    max_length = int(1.5 * longest_target) + 10
    words = sum(len(sources[i].split()) for i in longest) / len(longest)
    print(
        f"test2016: {len(sources)} sentences; longest third: {len(longest)} sentences of "
        f"{words:.1f} source words on average; max_length {max_length}; "
        f"backend {keras.backend.backend()}",
        flush=True,
    )
    header = (
        f"{'setting':<48} {'BLEU':>6} {'ratio':>6} {'long BLEU':>9} {'long ratio':>10} {'s':>6}"
    )
    print(header)
    for label, sampler in settings([int(b) for b in args.beams.split(",")], args.quick):
        started = time.perf_counter()
        output = model.translate(
            sources, max_length=max_length, sampler=sampler, batch_size=args.batch_size
        )
        seconds = time.perf_counter() - started
        everything = corpus_bleu(output, references, tokenize="none", return_details=True)
        long = corpus_bleu(
            [output[i] for i in longest],
            [references[i] for i in longest],
            tokenize="none",
            return_details=True,
        )
        print(
            f"{label:<48} {everything.score:6.2f} {everything.length_ratio:6.3f} "
            f"{long.score:9.2f} {long.length_ratio:10.3f} {seconds:6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
