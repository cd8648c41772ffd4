"""Scores of generated sequences: error rates against several references (as the G2P papers count
them), and BLEU and chrF for translation (through sacreBLEU)."""

import collections

import numpy as np

from keras_luong.checks import check_texts


def edit_distance(hypothesis, reference):
    """Levenshtein distance between two sequences (insertion, deletion and substitution each
    cost 1), by the textbook dynamic programme, one row at a time.

    Args:
        hypothesis: A sequence (a string, a list of tokens).
        reference: Another.

    Returns:
        The distance, an int.
    """
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
    """`(distance, reference)` of the reference closest to `hypothesis` (the first on ties).

    Args:
        hypothesis: A sequence (a string, a list of tokens).
        references: A non-empty list of sequences.
    """
    return min(((edit_distance(hypothesis, r), r) for r in references), key=lambda pair: pair[0])


def word_error_rate(hypotheses, references):
    """Share of words whose hypothesis equals none of their references.

    Args:
        hypotheses: One token sequence per word (e.g. `"K AE T".split()`).
        references: One non-empty list of token sequences per word.

    Returns:
        A float in [0, 1].
    """
    _check(hypotheses, references)
    wrong = [
        list(h) not in [list(r) for r in refs]
        for h, refs in zip(hypotheses, references, strict=True)
    ]
    return float(np.mean(wrong))


def phoneme_error_rate(hypotheses, references):
    """Edit distance to the closest reference over that reference's length, summed over the
    words: `Σ d(h, r*) / Σ |r*|`.

    Args:
        hypotheses: One token sequence per word.
        references: One non-empty list of token sequences per word.

    Returns:
        A float (0 for no error).
    """
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


BleuScore = collections.namedtuple(
    "BleuScore",
    ["score", "brevity_penalty", "length_ratio", "hypothesis_length", "reference_length",
     "precisions"],
)  # fmt: skip
BleuScore.__doc__ = """`corpus_bleu(..., return_details=True)`: the BLEU score in percent,
sacreBLEU's brevity penalty (`exp(1 - r / h)` when the output is shorter than the references,
else 1), the length ratio `h / r` of the output's words to the references', both lengths, and
the four n-gram precisions in percent. A ratio well above 1 flags a decoder that runs on; well
below 1, one that stops early (and pays the brevity penalty)."""


def corpus_bleu(hypotheses, references, tokenize="13a", lowercase=False, return_details=False):
    """Corpus BLEU (Papineni et al. 2002) in percent, by sacreBLEU.

    `tokenize="13a"` (the default, as sacreBLEU's) splits punctuation off raw, detokenized
    text, so that scores compare across papers (quote `bleu_signature` beside them).
    `tokenize="none"` scores the text as it is, split on spaces: on text already tokenized,
    as the official Multi30k `lc.norm.tok` files are, this is `multi-bleu.perl`'s score, the
    one published tables on such text report.

    Args:
        hypotheses: The system's output, one string per sentence.
        references: One reference string per sentence, or a list of references per sentence.
        tokenize: A sacreBLEU tokenizer name: `"13a"` (the default), `"none"`, `"intl"`, ...
        lowercase: Lowercase both sides first.
        return_details: Return a `BleuScore` (the score with its brevity penalty, length
            ratio, lengths and n-gram precisions) instead of the score alone.

    Example:

    >>> corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])  # doctest: +ELLIPSIS
    53.7...
    >>> details = corpus_bleu(["the cat sat"], ["the cat sat on a mat"], return_details=True)
    >>> round(details.length_ratio, 2), round(details.brevity_penalty, 3)  # exp(1 - 6/3)
    (0.5, 0.368)
    """
    result = _bleu(tokenize, lowercase).corpus_score(
        _strings("hypotheses", hypotheses), _reference_streams(hypotheses, references)
    )
    if not return_details:
        return result.score
    return BleuScore(
        result.score,
        result.bp,
        result.sys_len / max(result.ref_len, 1),
        result.sys_len,
        result.ref_len,
        list(result.precisions),
    )


def bleu_signature(tokenize="13a", lowercase=False, num_references=1):
    """sacreBLEU's signature of `corpus_bleu` with these settings (what to quote beside a
    score), e.g. `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.5.1`.

    Args:
        tokenize: The tokenizer `corpus_bleu` was called with. Defaults to `"13a"`, as
            `corpus_bleu`'s own default.
        lowercase: Whether `corpus_bleu` lowercased. Defaults to `False`.
        num_references: The number of references per sentence. Defaults to 1.
    """
    bleu = _bleu(tokenize, lowercase)
    bleu.corpus_score(["a"], [["a"]] * num_references)  # sacreBLEU counts the references
    return str(bleu.get_signature())


def corpus_chrf(hypotheses, references):
    """Corpus chrF (Popović 2015; sacreBLEU's chrF2, character 6-grams) in percent.

    Args:
        hypotheses: The system's output, one string per sentence.
        references: One reference string per sentence, or a list of references per sentence.
    """
    from sacrebleu.metrics import CHRF

    return (
        CHRF()
        .corpus_score(
            _strings("hypotheses", hypotheses), _reference_streams(hypotheses, references)
        )
        .score
    )


def _bleu(tokenize, lowercase):
    from sacrebleu.metrics import BLEU

    try:
        return BLEU(tokenize=tokenize, lowercase=lowercase, force=True)
    except Exception:
        raise ValueError(
            "Invalid value for argument tokenize. Expected a sacreBLEU tokenizer name such as "
            f"'none', '13a' or 'intl'. Received: tokenize={tokenize!r}"
        ) from None


def _strings(name, texts):
    # BLEU of no sentence is undefined (sacreBLEU raises an IndexError on it).
    return check_texts(name, texts, allow_empty=False)


def _reference_streams(hypotheses, references):
    """sacreBLEU's layout: one stream per reference, each with one string per sentence."""
    if isinstance(references, str) or len(references) != len(hypotheses):
        raise ValueError(
            "Expected one reference (or list of references) per hypothesis. Received: "
            f"{len(hypotheses)} hypotheses and "
            f"{'a string' if isinstance(references, str) else len(references)} references"
        )
    for i, entry in enumerate(references):
        if not isinstance(entry, (str, list, tuple)):
            raise ValueError(
                "Invalid value for argument references. Expected a string or a list of strings "
                f"per sentence. Received: references[{i}]={entry!r:.80} of type "
                f"{type(entry).__name__}"
            )
    rows = [[r] if isinstance(r, str) else list(r) for r in references]
    if any(not row or not all(isinstance(r, str) for r in row) for row in rows):
        raise ValueError("Each entry of references must be a string or a non-empty list of them")
    count = max((len(row) for row in rows), default=1)
    # Sentences with fewer references than others: sacreBLEU skips None entries.
    return [[row[k] if k < len(row) else None for row in rows] for k in range(count)]
