"""Collect the results.json of several `benchmarks/g2p.py` runs into one Markdown table.

    python -m benchmarks.g2p_table g2p_output/variants

Each sub-folder of the argument is one run (`make g2p-variants` writes them); the table gives
its recipe, the epochs and minutes it trained, the best validation WER, and the test PER and
WER of greedy decoding and of beam search.
"""

import json
import os
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    root = argv[0]
    rows = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "results.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            result = json.load(f)
        greedy, beam = (result["test"][k] for k in result["test"])
        last = result["curve"][-1]
        best = min(point["wer"] for point in result["curve"])
        rows.append((name, result["recipe"].split(",")[:2], last, best, greedy, beam))
    print("| variant | attention, input feeding | epochs | minutes | validation WER % "
          "| greedy PER % | greedy WER % | beam 5 PER % | beam 5 WER % |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, recipe, last, best, greedy, beam in rows:
        print(
            f"| {name} | {','.join(recipe)} | {last['epoch']} | {last['minutes']:.1f} "
            f"| {best * 100:.2f} | {greedy['per'] * 100:.2f} | {greedy['wer'] * 100:.2f} "
            f"| {beam['per'] * 100:.2f} | {beam['wer'] * 100:.2f} |"
        )


if __name__ == "__main__":
    main()
