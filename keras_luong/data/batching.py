"""Length-bucketed batches of sentence pairs for `model.fit`, on every backend."""

import math

import keras
import numpy as np

from keras_luong.backend.engine import loader_workers, replica_count, train_step_compiles_with_xla
from keras_luong.checks import check_integer, check_sentences
from keras_luong.data.prepared import PreparedCorpus


class BucketedBatches(keras.utils.PyDataset):
    """Batches of sentence pairs of similar length, bounded by a token budget.

    Sentences of 4 to 50 tokens padded to the longest of a corpus are mostly padding, and a
    recurrent decoder runs every padded step. Here each pair goes to the bucket of its length
    (the longer of its source and its target with the end id, rounded up to a multiple of
    `bucket_width`); each bucket is cut into batches of `tokens_per_batch // length` pairs,
    padded to the bucket's length. The pairs are shuffled within their buckets and the batches
    shuffled across buckets at every epoch. Every pair is in exactly one batch per epoch, with
    its ids unchanged. A bucket's batches are of equal size (as close to the budget as
    dividing the bucket evenly allows) and its last batch is filled up with rows of padding
    (an empty source and target, which the loss masks out), so each bucket has one batch
    shape and a compiled train step (JAX, TensorFlow) is traced once per bucket.

    With `bucket_width=None` there are no buckets, and no lengths shared between batches: the
    pairs are sorted by length (in a new order among equal lengths every epoch) and cut into
    batches as each fills the budget, each batch padded to its own longest source and its own
    longest target (as OpenNMT-py batches). Batches then hold more real tokens and less
    padding, at the price of a new shape for almost every batch: for a train step that is not
    compiled per shape (torch; TensorFlow without XLA, whose traced step Keras generalises to
    any shape), not for XLA (JAX; TensorFlow with `jit_compile=True`), which compiles the
    step anew for every shape. The default, `"auto"`, follows Keras' own default for
    `jit_compile`: 8 where it compiles the train step with XLA (JAX; TensorFlow with a GPU or
    TPU), `None` where it does not (torch, whose steps run op by op; TensorFlow on CPUs
    alone or within a `tf.distribute` strategy's scope). Pass 8 if you compile with
    `jit_compile=True` on a CPU.

    Yields `((source, target_in), target_out)` int32 arrays: `target_in` is the target after
    the start id, `target_out` the target before the end id, as `LuongSeq2Seq` trains on.

    Args:
        source_ids: The source sentences, each a sequence of ids at its own length (no start
            or end id, no padding: a `ValueError` says which sentence holds a 0); or a
            `keras_luong.data.prepared.PreparedCorpus`, batched from its lengths and
            read from disk a batch at a time (the same batches as its pairs in lists).
        target_ids: The target sentences, as `source_ids`; `None` with a `PreparedCorpus`.
        tokens_per_batch: Token budget of a batch: batch size times padded length is at most
            this (a batch has at least one pair). Defaults to 4096.
        bucket_width: Bucket lengths are multiples of this; `None`: no buckets, every batch
            padded to its own longest source and target (see above). Defaults to `"auto"`:
            8 on JAX and on TensorFlow with a GPU or TPU, `None` on torch and on TensorFlow
            with CPUs alone or within a `tf.distribute` strategy's scope.
        shuffle: Shuffle the pairs and the batches every epoch. Defaults to `True`. (Keras'
            `fit` shuffles a `PyDataset`'s batches once more with Python's `random` unless
            called with `shuffle=False`: pass it for the seed's order.)
        seed: Seed of the shuffles (epoch `e` uses `seed + e`; `None`: a new order every
            run). Defaults to 0.
        start_token: The id that starts `target_in` (not 0, the padding id). Defaults to 1.
        end_token: The id that ends `target_out` (not 0, the padding id). Defaults to 2.
        batch_multiple: Every batch's row count is a multiple of this (filler rows make it
            up), as data parallelism over that many devices needs. `None` (the default):
            the replica count of the active `keras.distribution` (JAX) or `tf.distribute`
            strategy, 1 when none is set.
        **kwargs: `keras.utils.PyDataset` arguments (`workers`, `use_multiprocessing`,
            `max_queue_size`). On TensorFlow, `workers` defaults to 2 (threads) unless
            `workers` or `use_multiprocessing` is given: Keras then reads the batches through
            its own queue, with tf.data's autotuning off. With it on (Keras' reading of a
            `PyDataset` with one worker), the end of each epoch waits for tf.data's
            autotuning thread to wake from its sleep (seconds) before the next
            epoch's first batch.

    Example:

    >>> source = [[5, 6, 7], [8], [9, 10], [9] * 10]
    >>> target = [[4, 5], [6, 7, 8], [11], [9] * 9]
    >>> batches = BucketedBatches(source, target, tokens_per_batch=8, bucket_width=4,
    ...                           shuffle=False)
    >>> [batch[1].shape for batch in batches]  # bucket 12: the long pair; bucket 4: three
    [(1, 12), (2, 4), (2, 4)]
    >>> (source_batch, target_in), target_out = batches[1]
    >>> target_in.tolist(), target_out.tolist()
    ([[1, 4, 5, 0], [1, 6, 7, 8]], [[4, 5, 2, 0], [6, 7, 8, 2]])
    >>> batches[2][1].tolist()  # the last batch of its bucket, with one filler row
    [[11, 2, 0, 0], [0, 0, 0, 0]]
    >>> round(batches.padding_share(), 2)  # 1 - (3 + 4 + 2 + 10) / (12 + 8 + 8)
    0.32
    """

    def __init__(
        self,
        source_ids,
        target_ids=None,
        tokens_per_batch=4096,
        bucket_width="auto",
        shuffle=True,
        seed=0,
        start_token=1,
        end_token=2,
        batch_multiple=None,
        **kwargs,
    ):
        workers = loader_workers()
        if workers and not {"workers", "use_multiprocessing"} & set(kwargs):
            kwargs["workers"] = workers
        super().__init__(**kwargs)
        if isinstance(source_ids, PreparedCorpus):
            if target_ids is not None:
                raise ValueError(
                    "Invalid value for argument target_ids. Expected None with a "
                    "PreparedCorpus, which holds the targets. Received: target_ids of type "
                    f"{type(target_ids).__name__}"
                )
            self.pairs = source_ids
            source_lengths, target_lengths = source_ids.source_lengths, source_ids.target_lengths
        else:
            if target_ids is None:
                raise ValueError(
                    "Invalid value for argument target_ids. Expected the target sentences "
                    "(or a PreparedCorpus as source_ids). Received: target_ids=None"
                )
            source_ids = check_sentences("source_ids", source_ids)
            target_ids = check_sentences("target_ids", target_ids)
            if len(source_ids) != len(target_ids):
                raise ValueError(
                    "Expected as many targets as sources. Received: "
                    f"{len(source_ids)} source_ids and {len(target_ids)} target_ids"
                )
            self.pairs = _Pairs(source_ids, target_ids)
            source_lengths = np.array([len(s) for s in source_ids], "int64")
            target_lengths = np.array([len(t) for t in target_ids], "int64")
        if not len(self.pairs):
            raise ValueError("Invalid value for argument source_ids. Received: no pairs")
        check_integer("tokens_per_batch", tokens_per_batch)
        if isinstance(bucket_width, str) and bucket_width == "auto":
            bucket_width = auto_bucket_width()
        try:
            bucket_width = check_integer("bucket_width", bucket_width, allow_none=True)
        except ValueError:
            raise ValueError(
                "Invalid value for argument bucket_width. Expected a positive integer, None "
                f'(no buckets) or "auto". Received: bucket_width={bucket_width!r}'
            ) from None
        check_integer("seed", seed, minimum=0, allow_none=True)
        check_integer("start_token", start_token)
        check_integer("end_token", end_token)
        if batch_multiple is None:
            batch_multiple = replica_count()
        self.batch_multiple = check_integer("batch_multiple", batch_multiple)
        self.shard_index, self.shard_count = 0, 1
        self.source_lengths, self.target_lengths = source_lengths, target_lengths
        self.tokens_per_batch = tokens_per_batch
        self.bucket_width = bucket_width
        self.shuffle = shuffle
        self.seed = seed
        self.start_token = start_token
        self.end_token = end_token
        # A pair's length: the longer of its source and its target with the end id.
        self.lengths = np.maximum(np.maximum(source_lengths, target_lengths.astype("int64") + 1), 1)
        self.buckets = [] if bucket_width is None else self._buckets()
        self.epoch = 0
        self._plan()

    def _buckets(self):
        """`(length, batch size, pair indices)` per bucket, longest first. A bucket of n pairs
        needs k = ceil(n / most) batches of at most `most` pairs; they are made equal,
        ceil(n / k) pairs each, so that at most k - 1 rows of a bucket are filler. Sizes are
        rounded up to a multiple of `batch_multiple` (beyond the budget if the budget holds
        fewer rows than that)."""
        width, multiple = self.bucket_width, self.batch_multiple
        bucket_of = width * -(-self.lengths // width)
        buckets = []
        for length in np.unique(bucket_of)[::-1].tolist():
            indices = np.flatnonzero(bucket_of == length)
            most = max(1, self.tokens_per_batch // length)
            size = math.ceil(len(indices) / math.ceil(len(indices) / most))
            size = multiple * math.ceil(size / multiple)
            buckets.append((length, size, indices))
        return buckets

    def _plan(self):
        """The epoch's batches: `(length, batch size, pair indices)`, in the order served."""
        rng = np.random.default_rng(None if self.seed is None else self.seed + self.epoch)
        batches = [] if self.bucket_width is not None else self._sorted_batches(rng)
        for length, size, indices in self.buckets:
            if self.shuffle:
                indices = rng.permutation(indices)
            for start in range(0, len(indices), size):
                batches.append((length, size, indices[start : start + size]))
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        if self.shard_count > 1:
            # Every host takes the same number of steps: batches of filler rows only (the
            # shortest bucket's length) make the count a multiple of the hosts.
            length = self.buckets[-1][0] if self.buckets else 1
            empty = (length, self.batch_multiple, np.zeros((0,), "int64"))
            batches += [empty] * (-len(batches) % self.shard_count)
            batches = batches[self.shard_index :: self.shard_count]
        self.batches = batches

    def _sorted_batches(self, rng):
        """`bucket_width=None`'s batches, `(length, batch size, pair indices)` in length order:
        the pairs sorted by length (ties in the order of `rng`'s permutation when shuffling),
        cut greedily at the budget, each batch's size a multiple of `batch_multiple`."""
        order = rng.permutation(len(self.lengths)) if self.shuffle else np.arange(len(self.lengths))
        most = max(1, self.tokens_per_batch // int(self.lengths.min()))
        batches = []
        for indices, length in length_sorted_batches(
            self.lengths[order], most, multiple=1, tokens_per_batch=self.tokens_per_batch
        ):
            size = self.batch_multiple * math.ceil(len(indices) / self.batch_multiple)
            batches.append((length, size, order[indices]))
        return batches

    def shard(self, index, count):
        """This host's part of every epoch's batches, for training on `count` hosts: batches
        `index`, `index + count`, ... of the epoch's order (the same seed on every host gives
        the same order), each host taking the same number of steps.

        Args:
            index: This host's index, from 0 to `count - 1`.
            count: The number of hosts.

        Returns:
            `self`.
        """
        count = check_integer("count", count)
        index = check_integer("index", index, minimum=0, maximum=count - 1)
        self.shard_index, self.shard_count = index, count
        self._plan()
        return self

    @property
    def largest_ids(self):
        """`(largest source id, largest target id)` of the batches, the start and end ids
        included: found once, and checked by `LuongSeq2Seq.fit` and `evaluate` against the
        model's vocabulary sizes before training (an id past them would be read as the
        unknown id, with no error). A prepared corpus's ids are below its vocabulary's size."""
        if getattr(self, "_largest_ids", None) is None:
            ends = max(self.start_token, self.end_token)
            if isinstance(self.pairs, PreparedCorpus):
                top = len(self.pairs.vocabulary) - 1
                self._largest_ids = (top, max(top, ends))
            else:
                source = max((int(max(s)) for s in self.pairs.sources if len(s)), default=0)
                target = max((int(max(t)) for t in self.pairs.targets if len(t)), default=0)
                self._largest_ids = (source, max(target, ends))
        return self._largest_ids

    @property
    def longest_length(self):
        """The padded source length of the longest batches (their bucket's length; the
        longest source with `bucket_width=None`): checked by `LuongSeq2Seq.fit` and
        `evaluate` against an attention with a longest source (the `"location"` score's
        `max_source_length`) before training."""
        if self.bucket_width is None:
            return max(1, int(self.source_lengths.max()))
        return int(self.buckets[0][0])

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        source_length, target_length, size, indices = self._shape(self.batches[index])
        source = np.zeros((size, source_length), "int32")
        target_in = np.zeros((size, target_length), "int32")
        target_out = np.zeros((size, target_length), "int32")
        for row, i in enumerate(indices):
            s, t = self.pairs[i]
            source[row, : len(s)] = s
            target_in[row, 0] = self.start_token
            target_in[row, 1 : len(t) + 1] = t
            target_out[row, : len(t)] = t
            target_out[row, len(t)] = self.end_token
        return (source, target_in), target_out

    def _shape(self, batch):
        """A planned batch's `(source length, target length, size, indices)`: the bucket's
        length on both sides, or with `bucket_width=None` each side's longest (the target's
        with its end id), at least 1."""
        length, size, indices = batch
        if self.bucket_width is not None:
            return length, length, size, indices
        source_length = max(1, int(self.source_lengths[indices].max(initial=0)))
        target_length = 1 + int(self.target_lengths[indices].max(initial=0))
        return source_length, target_length, size, indices

    def on_epoch_end(self):
        self.epoch += 1
        self._plan()

    def padding_share(self):
        """The share of target positions (batch size × length, over an epoch's batches) that
        are padding, filler rows included."""
        real = self.target_tokens()
        total = sum(batch[1] * self._shape(batch)[1] for batch in self.batches)
        return 1 - real / total

    def target_tokens(self):
        """The real target tokens of an epoch (each target and its end id)."""
        return int(self.target_lengths.sum()) + len(self.target_lengths)


class _Pairs:
    """In-memory sentence pairs, indexed as a `PreparedCorpus` is."""

    def __init__(self, sources, targets):
        self.sources, self.targets = sources, targets

    def __len__(self):
        return len(self.sources)

    def __getitem__(self, index):
        return self.sources[index], self.targets[index]


def length_sorted_batches(
    lengths, batch_size, multiple=8, tokens_per_batch=None, power_of_two=False
):
    """Batches of at most `batch_size` indices of `lengths` with similar lengths, for
    decoding: `[(indices, padded_length), ...]`, the indices sorted by length (stable: equal
    lengths keep their order) and each batch's length rounded up to a multiple of `multiple`
    (at least `multiple`), so that few shapes reach a compiled function; with `power_of_two`,
    to a power of two (at least `multiple`), fewer shapes still. With `tokens_per_batch`, a
    batch also ends before its rows × padded length would pass it (a batch has at least one
    index). Every index is in exactly one batch."""
    check_integer("batch_size", batch_size)
    check_integer("multiple", multiple)
    check_integer("tokens_per_batch", tokens_per_batch, allow_none=True)
    lengths = np.asarray(lengths, "int64").reshape(-1)
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = np.maximum(lengths[order], 1)
    if power_of_two:
        padded = np.maximum(multiple, 2 ** np.ceil(np.log2(sorted_lengths))).astype("int64")
    else:
        padded = multiple * np.ceil(sorted_lengths / multiple).astype("int64")
    batches, start = [], 0
    while start < len(order):
        stop = min(start + batch_size, len(order))
        if tokens_per_batch is not None:  # rows × the longest so far (sorted: the last)
            fits = np.arange(1, stop - start + 1) * padded[start:stop] <= tokens_per_batch
            stop = start + max(1, int(fits.sum()))  # `fits` is True, then False
        batches.append((order[start:stop], int(padded[stop - 1])))
        start = stop
    return batches


def auto_bucket_width():
    """`BucketedBatches`' `bucket_width="auto"`: 8 (a few shapes, each compiled once) where
    Keras compiles the train step with XLA by default (JAX; TensorFlow with a GPU or TPU);
    `None` (every batch a shape of its own, less padding) where it does not (torch, whose
    step runs op by op; TensorFlow on a machine of CPUs alone, or within a `tf.distribute`
    strategy's scope, where Keras leaves XLA off and its traced step takes any shape)."""
    return 8 if train_step_compiles_with_xla() else None
