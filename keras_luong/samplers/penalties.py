"""The penalties beam search ranks its hypotheses with (Wu et al., 2016, section 7)."""

from keras import ops


def length_normalize(log_probs, lengths, alpha):
    """GNMT's length normalisation, `log_probs / ((5 + lengths) / 6) ** alpha` (the log
    probabilities themselves at `alpha = 0`)."""
    if not alpha:
        return log_probs
    lengths = ops.cast(lengths, "float32")
    return log_probs / ops.power((5.0 + lengths) / 6.0, alpha)


def gnmt_coverage(attention_sums, beta):
    """GNMT's coverage penalty `beta · Σ_s log(min(sum_s, 1))` of attention sums `(rows, S)`,
    positions that got no attention at all (padding) left out, as tensorflow-addons does."""
    sums = ops.where(ops.equal(attention_sums, 0.0), 1.0, attention_sums)
    return beta * ops.sum(ops.log(ops.minimum(sums, 1.0)), axis=-1)


def summary_coverage(attention_sums, beta):
    """OpenNMT-py's summary penalty, as a score term: `-beta · Σ_s (max(sum_s, 1) - 1)` of
    attention sums `(rows, S)`: attention beyond one in total on a source position lowers
    the score (positions attended to less, padding included, add nothing)."""
    return -beta * ops.sum(ops.maximum(attention_sums, 1.0) - 1.0, axis=-1)


COVERAGE_FORMS = {
    # form: (score term, applied to running hypotheses at every step)
    "gnmt": (gnmt_coverage, False),
    "stepwise": (gnmt_coverage, True),
    "summary": (summary_coverage, True),
}
