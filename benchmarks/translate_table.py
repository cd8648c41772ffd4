"""Collect the results.json of several `benchmarks/translate.py` runs into one Markdown table.

    python -m benchmarks.translate_table translate_output/variants

Each sub-folder of the argument is one run (`make translate-variants` writes them); the table
gives the variant, the epochs and minutes it trained, its training tokens/s, the best
validation BLEU (greedy), and test2016 BLEU of greedy decoding and of beam search; then a
second table of each run's validation BLEU (greedy) after every epoch, a column a run.
"""

import json
import os
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    root = argv[0]
    results = {}
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "results.json")
        if os.path.exists(path):
            with open(path) as f:
                results[name] = json.load(f)
    print("| variant | epochs | minutes | tokens/s | validation BLEU | greedy BLEU | beam 5 BLEU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, result in results.items():
        test = result["test2016"]
        beam = f"{test['beam']['test']:.2f}" if "beam" in test else "–"
        best = max(point["val_bleu"] for point in result["curve"])
        print(
            f"| {name} | {result['epochs']} | {result['minutes']:.1f} "
            f"| {result['target_tokens_per_second']} | {best:.2f} "
            f"| {test['greedy']['test']:.2f} | {beam} |"
        )
    epochs = max((len(result["curve"]) for result in results.values()), default=0)
    print()
    print("| epoch | " + " | ".join(results) + " |")
    print("|---|" + "---:|" * len(results))
    for epoch in range(epochs):
        scores = [
            f"{result['curve'][epoch]['val_bleu']:.2f}" if epoch < len(result["curve"]) else "–"
            for result in results.values()
        ]
        print(f"| {epoch + 1} | " + " | ".join(scores) + " |")


if __name__ == "__main__":
    main()
