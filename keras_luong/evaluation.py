"""Scores of generated sequences against several references, as the G2P papers count them."""

import numpy as np


def edit_distance(hypothesis, reference):
    """Levenshtein distance between two sequences (insertion, deletion and substitution each
    cost 1), by the textbook dynamic programme, one row at a time."""
    previous = list(range(len(reference) + 1))
    for i, symbol in enumerate(hypothesis, 1):
        current = [i]
        for j, target in enumerate(reference, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (symbol != target))
            )
        previous = current
    return previous[-1]


def closest_reference(hypothesis, references):
    """`(distance, reference)` of the reference closest to `hypothesis` (the first on ties)."""
    return min(((edit_distance(hypothesis, r), r) for r in references), key=lambda pair: pair[0])


def word_error_rate(hypotheses, references):
    """Share of words whose hypothesis equals none of their references. `hypotheses[i]` is a
    token sequence (e.g. `"K AE T".split()`), `references[i]` a list of them."""
    _check(hypotheses, references)
    wrong = [
        list(h) not in [list(r) for r in refs]
        for h, refs in zip(hypotheses, references, strict=True)
    ]
    return float(np.mean(wrong))


def phoneme_error_rate(hypotheses, references):
    """Edit distance to the closest reference over that reference's length, summed over the
    words: `Σ d(h, r*) / Σ |r*|`."""
    _check(hypotheses, references)
    errors = length = 0
    for hypothesis, refs in zip(hypotheses, references, strict=True):
        distance, reference = closest_reference(hypothesis, refs)
        errors += distance
        length += len(reference)
    return errors / max(length, 1)


def _check(hypotheses, references):
    if len(hypotheses) != len(references):
        raise ValueError(
            "Expected one list of references per hypothesis. Received: "
            f"{len(hypotheses)} hypotheses and {len(references)} reference lists"
        )
    for refs in references:
        if isinstance(refs, str) or not len(refs):
            raise ValueError(
                "Each entry of references must be a non-empty list of token sequences. "
                f"Received: {refs!r}"
            )
