"""n-gram blocking: the tokens that would repeat an n-gram of their row, banned in the logits."""

from keras import ops

from keras_luong.backend.loops import take_along_rows
from keras_luong.checks import MASKED_SCORE


def repeated_ngram_tokens(prompt, index, n, logits):
    """Which tokens would repeat an n-gram: a boolean `(rows, vocabulary)` (the shape of
    `logits`), true for token `w` of row `r` when `prompt[r, index-n+1:index] + [w]` equals
    `prompt[r, j:j+n]` for some `j + n <= index`. `index` may be a tensor. (The samplers
    apply the ban directly, `mask_repeated_ngrams`; this is its mask.)"""
    masked = mask_repeated_ngrams(ops.zeros_like(logits, "float32"), prompt, index, n)
    return ops.equal(masked, MASKED_SCORE)


def mask_repeated_ngrams(logits, prompt, index, n, active=None):
    """`logits` `(rows, vocabulary)` with `MASKED_SCORE` on the tokens that
    `repeated_ngram_tokens` marks, in the rows where `active` (a boolean `(rows,)`) is true.

    Written into the logits by one scatter of `rows × (length - n + 1)` entries, without a
    `(rows, vocabulary)` mask: on torch each op over the whole vocabulary is one more pass,
    and XLA updates the logits in place. Every entry writes a value that does not depend on
    the order of duplicates: in a row with a repeat, each entry writes `MASKED_SCORE` to a
    token to ban (its own, or the row's first banned one); in a row without, each writes a
    logit back to its own place. Fixed shapes, so it compiles; `index` may be a tensor."""
    matches = _ngram_matches(prompt, index, n)
    if matches is None:
        return logits
    same, token = matches
    if active is not None:
        same = ops.logical_and(same, ops.cast(active, "bool")[:, None])
    any_repeat = ops.any(same, axis=1, keepdims=True)
    first = ops.argmax(ops.cast(same, "int32"), axis=1)[:, None]
    first_banned = take_along_rows(token, ops.cast(first, "int32"))
    target = ops.where(same, token, ops.where(any_repeat, first_banned, token))
    values = ops.where(any_repeat, MASKED_SCORE, take_along_rows(logits, target))
    rows, starts = ops.shape(target)[0], ops.shape(target)[1]
    row = ops.repeat(ops.arange(rows, dtype="int32")[:, None], starts, axis=1)
    indices = ops.reshape(ops.stack([row, target], axis=-1), (-1, 2))
    return ops.scatter_update(logits, indices, ops.reshape(ops.cast(values, logits.dtype), [-1]))


def _ngram_matches(prompt, index, n):
    """`(same, token)`, both `(rows, J)` for the `J = length - n + 1` n-grams
    `prompt[:, j:j+n]`: whether the n-gram ends before `index` and its first `n - 1` tokens
    are the `n - 1` before `index`, and its last token (int32). `None` when no n-gram fits."""
    rows, length = ops.shape(prompt)[0], ops.shape(prompt)[1]
    starts = length - n + 1
    if starts <= 0:
        return None
    windows = [ops.slice(prompt, [0, k], [rows, starts]) for k in range(n)]  # n x (rows, J)
    # The n - 1 tokens before `index` (clipped at 0: no n-gram fits before position n - 1).
    last = ops.take(prompt, ops.clip(index - n + 1 + ops.arange(n - 1), 0, length - 1), axis=1)
    same = ops.ones((rows, starts), "bool")
    for k in range(n - 1):
        same = ops.logical_and(same, ops.equal(windows[k], last[:, k : k + 1]))
    # An n-gram that ends before `index`, once the row holds n - 1 tokens before it.
    complete = ops.logical_and(ops.arange(starts) + n <= index, ops.greater_equal(index, n - 1))
    same = ops.logical_and(same, complete[None])
    return same, ops.cast(windows[n - 1], "int32")
