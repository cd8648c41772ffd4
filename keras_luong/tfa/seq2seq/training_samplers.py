"""tensorflow-addons' samplers' interface and teacher forcing: `Sampler`, `TrainingSampler`
and the scheduled samplers built on it, with the draws they share, in `keras.ops`."""

import keras
import numpy as np
from keras import ops

from keras_luong.tfa.seq2seq.decoder import check_callable


class Sampler:
    """tensorflow-addons' interface of a sampler: `initialize(inputs, **kwargs) -> (finished,
    next_inputs)`, `sample(time, outputs, state) -> sample_ids`, `next_inputs(time, outputs,
    state, sample_ids) -> (finished, next_inputs, next_state)`, and the properties
    `batch_size`, `sample_ids_shape` and `sample_ids_dtype`."""

    sample_ids_shape = ()
    sample_ids_dtype = "int32"

    def initialize(self, inputs, **kwargs):
        raise NotImplementedError

    def sample(self, time, outputs, state):
        raise NotImplementedError

    def next_inputs(self, time, outputs, state, sample_ids):
        raise NotImplementedError

    @property
    def batch_size(self):
        return self._batch_size


def argmax_ids(outputs):
    """The id of each row's largest output, int32: greedy sampling."""
    if not ops.is_tensor(outputs) and not hasattr(outputs, "shape"):
        raise TypeError(f"Expected outputs to be a single tensor. Received: {type(outputs)}")
    return ops.cast(ops.argmax(outputs, axis=-1), "int32")


def categorical_sample(logits, dtype="int32", sample_shape=(), seed=None):
    """Ids drawn from the softmax of `logits` `[..., classes]`: tensorflow-addons'
    `categorical_sample` (one draw per row unless `sample_shape` asks for more)."""
    logits = ops.convert_to_tensor(logits)
    count = int(np.prod(sample_shape)) if sample_shape else 1
    rows = ops.reshape(logits, (-1, logits.shape[-1]))
    draws = ops.transpose(keras.random.categorical(rows, count, seed=seed))  # [count, rows]
    draws = ops.reshape(draws, (*tuple(sample_shape), *ops.shape(logits)[:-1]))
    return ops.cast(draws, dtype)


def bernoulli_sample(probs=None, logits=None, dtype="int32", sample_shape=(), seed=None):
    """0/1 draws of probability `probs` (or `sigmoid(logits)`): tensorflow-addons'
    `bernoulli_sample`."""
    probs = ops.sigmoid(logits) if probs is None else ops.convert_to_tensor(probs)
    shape = (*tuple(sample_shape), *ops.shape(probs))
    uniform = keras.random.uniform(shape, seed=seed, dtype=probs.dtype)
    return ops.cast(ops.less(uniform, probs), dtype)


def batch_major(x):
    """`x` `[time, batch, ...]` as `[batch, time, ...]` (and back)."""
    return x if len(x.shape) < 2 else ops.swapaxes(x, 0, 1)


class TrainingSampler(Sampler):
    """Teacher forcing: the next inputs are read from the given ones, each row until its
    `sequence_length` (or the count of its `mask`), tensorflow-addons' `TrainingSampler`.

    Args:
        time_major: Whether the inputs are `[time, batch, ...]`. Defaults to `False`.
    """

    def __init__(self, time_major=False):
        self.time_major = time_major

    def initialize(self, inputs, sequence_length=None, mask=None):
        """Sets up the inputs; returns `(finished, first_inputs)`.

        Args:
            inputs: The inputs `[batch, time, ...]` (or a structure of them).
            sequence_length: Optional lengths `[batch]`.
            mask: Optional boolean mask `[batch, time]`, right padded, in place of the
                lengths.
        """
        if sequence_length is not None and mask is not None:
            raise ValueError(
                "sequence_length and mask cannot be given together. Received: "
                f"sequence_length={sequence_length!r}, mask={mask!r}"
            )
        inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
        if not self.time_major:
            inputs = keras.tree.map_structure(batch_major, inputs)
        self.inputs = inputs
        first = keras.tree.flatten(inputs)[0]
        self._batch_size = first.shape[1] or ops.shape(first)[1]
        self.max_time = first.shape[0]
        if sequence_length is not None:
            sequence_length = ops.convert_to_tensor(sequence_length)
            if len(sequence_length.shape) != 1:
                raise ValueError(
                    "Invalid value for argument sequence_length. Expected a vector. "
                    f"Received: sequence_length.shape={tuple(sequence_length.shape)}"
                )
        elif mask is not None:
            mask = ops.convert_to_tensor(mask)
            if len(mask.shape) != 2 or keras.backend.standardize_dtype(mask.dtype) != "bool":
                raise ValueError(
                    "Invalid value for argument mask. Expected a boolean 2D tensor. "
                    f"Received: mask.shape={tuple(mask.shape)}, mask.dtype={mask.dtype}"
                )
            sequence_length = ops.sum(ops.cast(mask, "int32"), axis=0 if self.time_major else 1)
        else:
            sequence_length = ops.full((self._batch_size,), ops.shape(first)[0], "int32")
        self.sequence_length = ops.cast(sequence_length, "int32")
        self.zero_inputs = keras.tree.map_structure(lambda x: ops.zeros_like(x[0]), inputs)
        return ops.equal(self.sequence_length, 0), self._read(0)

    def _read(self, time):
        if self.max_time is not None and isinstance(time, int) and time >= self.max_time:
            return self.zero_inputs
        last = ops.shape(keras.tree.flatten(self.inputs)[0])[0] - 1
        index = ops.minimum(time, last)
        return keras.tree.map_structure(lambda x: ops.take(x, index, axis=0), self.inputs)

    def sample(self, time, outputs, state):
        return argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished = ops.greater_equal(time + 1, self.sequence_length)
        next_inputs = self._read(time + 1)
        everyone_done = ops.all(finished)
        next_inputs = keras.tree.map_structure(
            lambda x, zero: ops.where(everyone_done, zero, x), next_inputs, self.zero_inputs
        )
        return finished, next_inputs, state


def _check_sampling_probability(sampling_probability):
    """`sampling_probability` as a tensor, a scalar or one probability per row."""
    probability = ops.convert_to_tensor(sampling_probability, "float32")
    if len(probability.shape) not in (0, 1):
        raise ValueError(
            "Invalid value for argument sampling_probability. Expected a scalar or a vector "
            f"[batch_size]. Received: sampling_probability.shape={tuple(probability.shape)}"
        )
    return probability


class ScheduledEmbeddingTrainingSampler(TrainingSampler):
    """Teacher forcing where, with probability `sampling_probability` per row and step, the
    next input is instead the embedding of an id drawn from the step's outputs (Bengio et
    al., 2015): tensorflow-addons' `ScheduledEmbeddingTrainingSampler`. The sample ids are
    the drawn ids, `-1` where the row was not sampled. keras-luong's own models take
    `LuongSeq2Seq(scheduled_sampling="sample", sampling_probability=p)`.

    Args:
        sampling_probability: The probability of sampling a row, a scalar or `[batch_size]`.
        embedding_fn: Optional function from ids to inputs. Without it, `initialize` takes
            an `embedding` matrix.
        time_major: Whether the inputs are `[time, batch, ...]`. Defaults to `False`.
        seed: Optional seed of the drawn ids.
        scheduling_seed: Optional seed of the choice of rows.
    """

    def __init__(
        self,
        sampling_probability,
        embedding_fn=None,
        time_major=False,
        seed=None,
        scheduling_seed=None,
    ):
        check_callable("embedding_fn", embedding_fn)
        super().__init__(time_major=time_major)
        self.sampling_probability = _check_sampling_probability(sampling_probability)
        self.embedding_fn = embedding_fn
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.scheduling_seed_generator = keras.random.SeedGenerator(scheduling_seed)

    def initialize(self, inputs, sequence_length=None, mask=None, embedding=None):
        """`TrainingSampler.initialize`, with the `embedding` matrix where no `embedding_fn`
        was given; returns `(finished, first_inputs)`.

        Args:
            inputs: The inputs `[batch, time, ...]`.
            sequence_length: Optional lengths `[batch]`.
            mask: Optional boolean mask `[batch, time]`, in place of the lengths.
            embedding: The embedding matrix `[vocabulary, depth]`.
        """
        if self.embedding_fn is None:
            if embedding is None:
                raise ValueError(
                    "embedding is required as a keyword argument for "
                    "ScheduledEmbeddingTrainingSampler (or give embedding_fn)."
                )
            matrix = ops.convert_to_tensor(embedding)
            self.embedding_fn = lambda ids: ops.take(matrix, ids, axis=0)
        return super().initialize(inputs, sequence_length=sequence_length, mask=mask)

    def sample(self, time, outputs, state):
        probability = ops.broadcast_to(self.sampling_probability, (self.batch_size,))
        chosen = bernoulli_sample(
            probs=probability, dtype="bool", seed=self.scheduling_seed_generator
        )
        drawn = categorical_sample(outputs, seed=self.seed_generator)
        return ops.where(chosen, drawn, -1)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)
        sampled = ops.greater(sample_ids, -1)
        embedded = self.embedding_fn(ops.maximum(sample_ids, 0))
        next_inputs = ops.where(
            ops.logical_and(sampled, ops.logical_not(ops.all(finished)))[:, None],
            ops.cast(embedded, base_next_inputs.dtype),
            base_next_inputs,
        )
        return finished, next_inputs, state


class ScheduledOutputTrainingSampler(TrainingSampler):
    """Teacher forcing where, with probability `sampling_probability` per row and step, the
    next input is instead the step's output (through `next_inputs_fn`, and followed by the
    `auxiliary_inputs` of the next step): tensorflow-addons' `ScheduledOutputTrainingSampler`,
    for models whose outputs are their inputs (continuous outputs). The sample ids are 1 where
    a row was sampled, 0 elsewhere.

    Args:
        sampling_probability: The probability of sampling a row, a scalar or `[batch_size]`.
        time_major: Whether the inputs are `[time, batch, ...]`. Defaults to `False`.
        seed: Optional seed of the choice of rows.
        next_inputs_fn: Optional function from the outputs to the next inputs.
    """

    def __init__(self, sampling_probability, time_major=False, seed=None, next_inputs_fn=None):
        check_callable("next_inputs_fn", next_inputs_fn)
        super().__init__(time_major=time_major)
        self.sampling_probability = _check_sampling_probability(sampling_probability)
        self.next_inputs_fn = next_inputs_fn
        self.seed_generator = keras.random.SeedGenerator(seed)

    def initialize(self, inputs, sequence_length=None, mask=None, auxiliary_inputs=None):
        """`TrainingSampler.initialize` on the inputs followed by the auxiliary inputs, which
        also follow a sampled output; returns `(finished, first_inputs)`.

        Args:
            inputs: The inputs `[batch, time, ...]`.
            sequence_length: Optional lengths `[batch]`.
            mask: Optional boolean mask `[batch, time]`, in place of the lengths.
            auxiliary_inputs: Optional `[batch, time, depth]`.
        """
        self.auxiliary_inputs = None
        if auxiliary_inputs is not None:
            auxiliary_inputs = ops.convert_to_tensor(auxiliary_inputs)
            inputs = ops.concatenate([ops.convert_to_tensor(inputs), auxiliary_inputs], axis=-1)
            self.auxiliary_inputs = (
                auxiliary_inputs if self.time_major else batch_major(auxiliary_inputs)
            )
        return super().initialize(inputs, sequence_length=sequence_length, mask=mask)

    def sample(self, time, outputs, state):
        probability = ops.broadcast_to(self.sampling_probability, (self.batch_size,))
        return bernoulli_sample(probs=probability, dtype="int32", seed=self.seed_generator)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)
        sampled = outputs if self.next_inputs_fn is None else self.next_inputs_fn(outputs)
        if self.auxiliary_inputs is not None:
            last = ops.shape(self.auxiliary_inputs)[0] - 1
            following = ops.take(self.auxiliary_inputs, ops.minimum(time + 1, last), axis=0)
            sampled = ops.concatenate([sampled, following], axis=-1)
        chosen = ops.logical_and(ops.cast(sample_ids, "bool"), ops.logical_not(ops.all(finished)))
        next_inputs = ops.where(
            chosen[:, None], ops.cast(sampled, base_next_inputs.dtype), base_next_inputs
        )
        return finished, next_inputs, state
