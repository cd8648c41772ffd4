"""What decoding is bounded by, checked before anything is compiled: the default length
bound (`a` × the source's tokens `+ b`), the prefixes outputs begin with, and the source
positions a model's attention scores."""

import numpy as np
from keras import ops

from keras_luong.checks import check_integer, check_number, check_token_ids

# The decoding bound when none is given: `a · source tokens + b` (fairseq's `max_len_a` and
# `max_len_b`), with `length_bound=(a, b)`.
LENGTH_BOUND = (1.5, 10)


def check_length_bound(length_bound):
    """`length_bound` as `(a, b)`: a number `a >= 0` and an integer `b >= 1`."""
    try:
        a, b = length_bound
        a = check_number("length_bound", a, minimum=0)
        b = check_integer("length_bound", b)
    except (TypeError, ValueError):
        raise ValueError(
            "Invalid value for argument length_bound. Expected (a, b): at most a × the "
            "source's tokens + b tokens, with a number a >= 0 and an integer b >= 1. "
            f"Received: length_bound={length_bound!r}"
        ) from None
    return float(a), int(b)


def default_max_length(lengths, length_bound=LENGTH_BOUND):
    """The decoding bound when none is given: `a ·` the longest source's tokens `+ b`, in
    float32 as `row_bound` computes it (1.5 × and 10 by default)."""
    a, b = length_bound
    return int(np.floor(np.float32(a) * np.float32(max(lengths, default=0)))) + b


def row_bound(tokens, length_bound=LENGTH_BOUND):
    """`default_max_length` of each row's source tokens `(rows,)`, as int32 tensor ops."""
    a, b = length_bound
    return ops.cast(ops.floor(ops.cast(tokens, "float32") * a), "int32") + b


def length_bucket(bound):
    """The generator length that holds outputs of `bound` tokens: the next power of two (at
    least 16), so that texts of any length share a few compiled generators."""
    return max(16, 1 << (int(bound) - 1).bit_length())


def check_right_padded(name, ids):
    """Checks that each row of the int array `ids` `(B, T)` holds its ids, then padding (0)
    alone; returns the rows' lengths (their non-zero ids)."""
    lengths = np.count_nonzero(ids, axis=1)
    for i, row in enumerate(ids):
        if np.any(row[: lengths[i]] == 0):
            raise ValueError(
                f"Invalid value for argument {name}. Expected each row's ids followed by "
                f"padding (0) alone. Received: {name}[{i}]={row.tolist()!r:.200}"
            )
    return lengths


def check_prefix(model, prefix, rows, max_length):
    """`generate`'s `prefix` as int32 ids `(rows, P)`, right-padded, at most `max_length` ids
    a row, without the start token (or `None`)."""
    if prefix is None:
        return None
    prefix = check_token_ids("prefix", prefix, model.target_vocabulary_size, rank=2)
    if not isinstance(prefix, np.ndarray) or len(prefix) != rows:
        raise ValueError(
            f"Invalid value for argument prefix. Expected target ids (batch_size, P), one row "
            f"for each of the {rows} sources. Received: prefix of shape "
            f"{getattr(prefix, 'shape', None)}"
        )
    lengths = check_right_padded("prefix", prefix)
    if np.any(prefix == model.start_token):
        raise ValueError(
            "Invalid value for argument prefix. Expected the ids after the start token "
            f"({model.start_token}), which decoding puts first. "
            f"Received: prefix={prefix.tolist()!r:.200}"
        )
    if lengths.max(initial=0) > max_length:
        raise ValueError(
            f"Invalid value for argument prefix. Expected at most max_length={max_length} ids "
            f"a row. Received: a prefix of {lengths.max()} ids"
        )
    return prefix


def cut_to_longest_source(source, longest):
    """Source ids `(B, S)` without their padding past `longest` source positions (`None`:
    any number); a `ValueError` naming `inputs` if a row has tokens past it."""
    if longest is None or source.shape[1] <= longest:
        return source
    rows = np.flatnonzero(np.any(source[:, longest:] != 0, axis=1))
    if rows.size:
        row = int(rows[0])
        end = int(np.flatnonzero(source[row])[-1]) + 1
        raise ValueError(
            f"Invalid value for argument inputs: inputs[{row}] has tokens up to position "
            f"{end}, past the {longest} source positions the model's attention scores "
            f"(max_source_length). Received: inputs of shape {source.shape}"
        )
    return source[:, :longest]
