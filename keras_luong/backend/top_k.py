"""An exact top-k of small k that reads each row once and exports from every backend, and
the selections the samplers make with it (greedy's first maximum, sampling's k-th largest),
each by the op its backend runs fastest."""

import keras
from keras import ops

from keras_luong.backend.loops import take_along_rows, take_rows


def top_k_indices(x, k):
    """The indices of the `k` largest entries of each row of `x` `(rows, size)`, largest
    first (the first index on ties), without `ops.top_k`: JAX exports `top_k` as a StableHLO
    composite that TensorFlow's SavedModel reader cannot load, and XLA's CPU `argmax` (a
    two-operand reduction) is slow. `k`, the beam width, is small.

    A row of a beam step holds `num_beams * vocabulary` scores, and each round of max and
    min-index reads all of them. So the row is cut into blocks of about `sqrt(size / k)`
    entries: one pass takes each block's maximum, the `k` best blocks are found among those
    maxima, and the `k` best entries among the `k * block` entries of those blocks. The `k`
    best entries of a row lie in the `k` blocks whose best entries rank highest (ties
    broken by the lower index in both stages), so this is exact, and reads the row once
    rather than `2k` times."""
    size = x.shape[-1]
    block = _block_size(size, k)
    if block is None:
        return _top_k_rounds(x, k, ops.arange(size, dtype="int32")[None], size)
    blocks = -(-size // block)
    if blocks * block != size:
        x = ops.pad(x, [[0, 0], [0, blocks * block - size]], constant_values=float("-inf"))
    grouped = ops.reshape(x, (-1, blocks, block))
    best_blocks = _top_k_rounds(
        ops.max(grouped, axis=-1), k, ops.arange(blocks, dtype="int32")[None], blocks
    )
    best_blocks = ops.sort(best_blocks, axis=-1)  # the candidates in the row's order
    candidates = take_along_rows(grouped, best_blocks)  # (rows, k, block)
    positions = best_blocks[..., None] * block + ops.arange(block, dtype="int32")[None, None]
    rows = ops.shape(candidates)[0]
    return _top_k_rounds(
        ops.reshape(candidates, (rows, k * block)),
        k,
        ops.reshape(positions, (rows, k * block)),
        blocks * block,
    )


def _block_size(size, k):
    """The block length for `top_k_indices` (a divisor of `size` near `sqrt(size / k)` when
    there is one, so no padding is needed), or `None` when blocks would not save reads."""
    if size is None or size < 64 * k:
        return None
    target = max(1, round((size / k) ** 0.5))
    for block in range(target, max(1, target // 2) - 1, -1):
        if size % block == 0:
            return block
    return target


def _top_k_rounds(x, k, positions, sentinel):
    """`k` rounds of max, then the smallest of `positions` (int32, broadcast to `x`) among
    the entries equal to it: the positions of the `k` largest entries, largest first.
    `sentinel` is larger than every position, and positions increase along each row.

    An entry found drops to `-inf`; the row's own `-inf` entries (a beam with no hypothesis
    yet) are raised to a finite lowest value first, so that one found never ties with one
    not found yet."""
    lowest = -65504.0 if keras.backend.standardize_dtype(x.dtype) == "float16" else -3.0e38
    x = ops.maximum(x, ops.cast(lowest, x.dtype))
    indices = []
    if keras.backend.backend() == "torch":
        # torch's argmax gives the first of equal maxima, which is the smallest position
        # here: a round is one argmax, then the entry found is out of the next rounds.
        columns = ops.arange(x.shape[-1], dtype="int32")[None]
        for i in range(k):
            best = ops.argmax(x, axis=-1)[:, None]
            indices.append(best)
            if i < k - 1:
                x = ops.where(ops.equal(columns, best), float("-inf"), x)
        best = ops.concatenate(indices, axis=1)
        if positions.shape[0] == 1:
            return take_rows(positions[0], best)
        return take_along_rows(positions, best)
    for i in range(k):
        largest = ops.max(x, axis=-1, keepdims=True)
        best = ops.min(ops.where(ops.equal(x, largest), positions, sentinel), axis=-1)
        indices.append(best)
        if i < k - 1:  # the entry found is out of the next rounds
            x = ops.where(ops.equal(positions, best[:, None]), float("-inf"), x)
    return ops.stack(indices, axis=1)


def first_max_index(x):
    """The first index of each row's maximum of `x` `(rows, size)`, `(rows,)`: greedy
    decoding's choice. Compiled backends take it by a max and a min-index
    (`top_k_indices(x, 1)`: XLA's CPU argmax, a two-operand reduction, is the slower); eager
    torch by its argmax, one op where those are a dozen (torch documents the first maximal
    index too)."""
    if keras.backend.backend() == "torch":
        return ops.argmax(x, axis=-1)
    return top_k_indices(x, 1)[:, 0]


def kth_largest(x, k):
    """The `k`-th largest entry of each row of `x` `(rows, size)`, as `(rows, 1)`: a value
    only, so ties do not matter. torch's own `topk` on torch (sampling's top-k cost 1.36x
    greedy decoding's time on a 2-core CPU, against 1.65x by `top_k_indices`);
    `top_k_indices` elsewhere (XLA's `top_k` on a CPU took 45x)."""
    if keras.backend.backend() == "torch":
        return ops.top_k(x, k, sorted=True)[0][:, -1:]
    return take_along_rows(x, top_k_indices(x, k)[:, -1:])
