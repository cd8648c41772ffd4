"""`GenerationMixin.score`: the log-probability a model gives each target of its source,
teacher forced (fairseq's `--score-reference`, OpenNMT-py's gold scores): for reranking
candidates, quality estimation, or a sentence's perplexity. The probabilities are decoding's:
over the tokens it can generate (padding and the start token never are), so that a beam
search hypothesis scores what beam search scored it (without a length penalty)."""

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
        target_in = teacher_forced_input(out, model.start_token)
        src = source[rows]
        src = src[:, : max(1, int(np.count_nonzero(src, axis=1).max(initial=1)))]
        logits = np.asarray(model.predict_on_batch((src, target_in)), "float64")
        logits[..., [0, model.start_token]] = -np.inf  # as decoding: never generated
        log_probabilities = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
        picked = np.take_along_axis(log_probabilities, out[..., None], axis=-1)[..., 0]
        token_scores[rows, :width] = np.where(out != 0, picked, 0.0)
    scores = token_scores.sum(axis=1, dtype="float64").astype("float32")
    return (scores, token_scores) if return_token_scores else scores


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
