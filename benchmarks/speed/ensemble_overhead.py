"""What decoding an `Ensemble` costs over decoding its members one after another, step for
step: the ensemble's time over the sum of its members' times, in one run.

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.speed ensemble_overhead

`--members` models of the translation page's size (`LuongSeq2Seq(8000, 8000, units=256,
embedding_dim=128)`, one seed each) decode a batch of 64 sentences of 10-30 tokens, each
member alone and all of them as one `Ensemble`, with greedy search and with beam 5 (length
penalty 1.0). No stop token (`stop_token_ids=None`): every decoder runs all `--max-length`
steps, so the ratio compares the same work, where trained models' outputs (and so their
steps) differ from their ensemble's. Every decoder is compiled first, then timed in rounds
whose order alternates (medians). `--json FILE` writes the results file a page quotes: per
decoding, the members' summed time in ms (`greedy_sum`) and the ensemble's over it
(`greedy_ratio`, `beam_5_ratio`). Run nothing else beside it.
"""

import argparse

from benchmarks import harness
from benchmarks.harness import interleaved_medians
from benchmarks.speed.export_latency import sources


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)
    import keras

    from keras_luong import BeamSearchSampler, Ensemble, LuongSeq2Seq

    batch = sources()["64 sentences"]
    members = []
    for seed in range(args.members):
        keras.utils.set_random_seed(seed)
        member = LuongSeq2Seq(8000, 8000, units=256, embedding_dim=128)
        member((batch[:1], batch[:1, :2]))
        members.append(member)
    decoders = {f"member {i}": m for i, m in enumerate(members)}
    decoders["ensemble"] = Ensemble(members)
    cases = {"greedy": "greedy", "beam 5": BeamSearchSampler(5, length_penalty=1.0)}

    def decode(decoder, sampler):
        return lambda: decoder.generate(
            batch, args.max_length, stop_token_ids=None, sampler=sampler
        )

    versions = {
        name: {case: decode(decoder, sampler) for case, sampler in cases.items()}
        for name, decoder in decoders.items()
    }
    medians = interleaved_medians(versions, list(cases), args.rounds, calls=1)
    print(
        f"backend {keras.backend.backend()}, {args.members} members, 64 sentences, "
        f"{args.max_length} steps, medians of {args.rounds} rounds (ms)"
    )
    print("| decoding | " + " | ".join(decoders) + " | members' sum | ensemble over the sum |")
    print("|---|" + "---:|" * (len(decoders) + 2))
    figures, rows = {}, []
    for case in cases:
        times = [medians[(name, case)] * 1e3 for name in decoders]
        total = sum(times[:-1])
        cells = " | ".join(f"{t:.0f}" for t in times)
        print(f"| {case} | {cells} | {total:.0f} | {times[-1] / total:.3f} |")
        key = case.replace(" ", "_")
        figures[f"{key}_sum"], figures[f"{key}_ensemble"] = f"{total:.0f}", f"{times[-1]:.0f}"
        figures[f"{key}_ratio"] = f"{times[-1] / total:.2f}"
        rows.append({"decoding": case, "sum": f"{total:.0f}", "ratio": figures[f"{key}_ratio"]})
    if args.json:
        settings = harness.settings_of(args, "members", "max_length", "rounds")
        harness.write_results(args.json, rows, figures=figures, settings=settings)


if __name__ == "__main__":
    main()
