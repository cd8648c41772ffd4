"""`GenerationMixin.score`: the log-probability a model gives each target of its source,
teacher forced (fairseq's `--score-reference`, OpenNMT-py's gold scores): for reranking
candidates, quality estimation, or a sentence's perplexity. The probabilities are decoding's:
over the tokens it can generate (padding and the start token never are), so that a beam
search hypothesis scores what beam search scored it (without a length penalty)."""

import collections

import numpy as np

from keras_luong.checks import check_integer, check_token_ids
from keras_luong.generation.bounds import check_right_padded
from keras_luong.generation.generator import teacher_forced_input


def score_ids(model, source_ids, target_ids, batch_size=64, return_token_scores=False):
    """See `GenerationMixin.score`."""
    source = check_token_ids("source_ids", source_ids, model.source_vocabulary_size, rank=2)
    target = check_token_ids("target_ids", target_ids, model.target_vocabulary_size, rank=2)
    for name, ids in (("source_ids", source), ("target_ids", target)):
        if not isinstance(ids, np.ndarray):
            raise TypeError(
                f"Invalid value for argument {name}. Expected ids as an array (batch_size, "
                f"length). Received: {name} of type {type(ids).__name__}"
            )
    if len(source) != len(target):
        raise ValueError(
            "Invalid value for argument target_ids. Expected one target per source: "
            f"{len(source)} sources. Received: target_ids with {len(target)} rows"
        )
    batch_size = check_integer("batch_size", batch_size)
    target_out = with_end_token(target, model.end_token)
    token_scores = np.zeros(target_out.shape, "float32")
    for start in range(0, len(source), batch_size):
        rows = slice(start, start + batch_size)
        out = target_out[rows]
        width = max(1, int(np.count_nonzero(out, axis=1).max(initial=1)))
        out = out[:, :width]
        src = source[rows]
        src = src[:, : max(1, int(np.count_nonzero(src, axis=1).max(initial=1)))]
        token_scores[rows, :width] = teacher_forced_scores(model, src, out)
    scores = token_scores.sum(axis=1, dtype="float64").astype("float32")
    return (scores, token_scores) if return_token_scores else scores


def teacher_forced_scores(model, source, target_out):
    """`log p(y_t | y_<t, x)` of each id of `target_out` `(B, T)` (ids then the end token, 0
    after it) given `source` `(B, S)`, one forward pass; 0 at the padding: float32 `(B, T)`."""
    target_in = teacher_forced_input(target_out, model.start_token)
    logits = np.asarray(model.predict_on_batch((source, target_in)), "float64")
    logits[..., [0, model.start_token]] = -np.inf  # as decoding: never generated
    log_probabilities = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    picked = np.take_along_axis(log_probabilities, target_out[..., None], axis=-1)[..., 0]
    return np.where(target_out != 0, picked, 0.0).astype("float32")


class TokenScores(collections.namedtuple("TokenScores", ["tokens", "scores", "end_score"])):
    """The log-probability the model gives each token of a translation, teacher forced
    through its ids as `score` computes it (fairseq's positional scores): the model's own,
    before a sampler's bans, temperature or length penalty.

    Attributes:
        tokens: The translation's tokens before its end token, as `Alignment.target_tokens`
            writes them.
        scores: float32 `(len(tokens),)`: `log p` of each token given the source and the
            tokens before it.
        end_score: `log p` of the end token after them, a float; `None` for a translation
            cut at its length bound, which generated no end token.

    With the end token's, they sum to the translation's log-probability: the score beam
    search gives a hypothesis without a length penalty.

    Example:

    >>> import numpy as np
    >>> found = TokenScores(["house", "burns"], np.array([-0.3, -1.2], "float32"), -0.1)
    >>> round(float(found.scores.sum() + found.end_score), 4)
    -1.6
    """

    __slots__ = ()


def generated_token_scores(model, source, ids, vocabulary):
    """A `TokenScores` for each hypothesis of `ids` `(B, T)` or `(B, beams, T)` (0 after its
    end token or its length bound) generated from `source` `(B, S)`: a list per row, a list
    of lists with beams."""
    flat = np.reshape(ids, (-1, ids.shape[-1]))
    repeated = np.repeat(source, len(flat) // len(source), axis=0)
    out = with_end_token(flat, model.end_token)  # one column more: the end of a cut row
    scores = teacher_forced_scores(model, repeated, out)
    found = []
    for hypothesis, token_scores in zip(flat, scores, strict=True):
        kept = vocabulary._kept_positions(hypothesis)  # the positions `decode` writes
        ends = np.flatnonzero(hypothesis == model.end_token)
        found.append(
            TokenScores(
                [vocabulary._symbol(int(hypothesis[t])) for t in kept],
                token_scores[kept],
                float(token_scores[ends[0]]) if len(ends) else None,
            )
        )
    if ids.ndim == 3:
        return [found[i : i + ids.shape[1]] for i in range(0, len(found), ids.shape[1])]
    return found


def with_end_token(target, end_token):
    """`target` `(B, T)` with the end token after each row's last non-zero id, unless the row
    ends with it already (as `generate`'s ids do), and zeros after it: `(B, T + 1)`."""
    lengths = check_right_padded("target_ids", target)
    out = np.zeros((len(target), target.shape[1] + 1), "int32")
    out[:, : target.shape[1]] = target
    ended = (lengths > 0) & (
        target[np.arange(len(target)), np.maximum(lengths - 1, 0)] == end_token
    )
    out[np.arange(len(target))[~ended], lengths[~ended]] = end_token
    return out
