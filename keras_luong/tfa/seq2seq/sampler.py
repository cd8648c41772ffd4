"""tensorflow-addons' samplers: what `BasicDecoder` feeds the cell at each step and how it reads
the ids from the outputs, in `keras.ops`.

A sampler is set up by `initialize(...)` (the decoder passes its call's keyword arguments on),
then at each step gives the ids (`sample`) and the next inputs with the rows that have finished
(`next_inputs`). The adapter's samplers are tensorflow-addons' own; keras-luong's
(`keras_luong.samplers`) drive its compiled generator instead. This module holds the
inference samplers and, as tensorflow-addons' `sampler` module did, hands on the teacher-forcing
ones (`training_samplers`).
"""

import keras
from keras import ops

from keras_luong.checks import check_number
from keras_luong.tfa.seq2seq.decoder import check_callable
from keras_luong.tfa.seq2seq.training_samplers import (
    Sampler,
    ScheduledEmbeddingTrainingSampler,
    ScheduledOutputTrainingSampler,
    TrainingSampler,
    argmax_ids,
    bernoulli_sample,
    categorical_sample,
)

__all__ = [
    "CustomSampler",
    "GreedyEmbeddingSampler",
    "InferenceSampler",
    "SampleEmbeddingSampler",
    "Sampler",
    "ScheduledEmbeddingTrainingSampler",
    "ScheduledOutputTrainingSampler",
    "TrainingSampler",
    "bernoulli_sample",
    "categorical_sample",
]


class GreedyEmbeddingSampler(Sampler):
    """Greedy decoding: the next input is the embedding of the previous step's argmax,
    tensorflow-addons' `GreedyEmbeddingSampler`.

    Args:
        embedding_fn: Optional function from ids to inputs (an `Embedding` layer, say).
            Without it, `initialize`'s `embedding` is a matrix `[vocabulary, depth]` whose rows
            are the inputs.
    """

    def __init__(self, embedding_fn=None):
        check_callable("embedding_fn", embedding_fn)
        self.embedding_fn = embedding_fn

    def initialize(self, embedding, start_tokens=None, end_token=None):
        """Sets up the embedding and the tokens; returns `(finished, first_inputs)`.

        Args:
            embedding: The embedding matrix `[vocabulary, depth]`, used where `embedding_fn`
                is not given.
            start_tokens: The first ids `[batch]`.
            end_token: The id that ends a row.
        """
        if self.embedding_fn is None:
            matrix = ops.convert_to_tensor(embedding)
            self.embedding_fn = lambda ids: ops.take(matrix, ids, axis=0)
        self.start_tokens = ops.cast(start_tokens, "int32")
        self.end_token = ops.cast(end_token, "int32")
        if len(self.start_tokens.shape) != 1 or len(self.end_token.shape) != 0:
            raise ValueError(
                "Invalid value for arguments start_tokens and end_token. Expected a vector "
                f"and a scalar. Received: start_tokens.shape={tuple(self.start_tokens.shape)}, "
                f"end_token.shape={tuple(self.end_token.shape)}"
            )
        self._batch_size = self.start_tokens.shape[0] or ops.shape(self.start_tokens)[0]
        self.start_inputs = self.embedding_fn(self.start_tokens)
        finished = ops.zeros((self._batch_size,), dtype="bool")
        return finished, self.start_inputs

    def sample(self, time, outputs, state):
        return argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished = ops.equal(sample_ids, self.end_token)
        next_inputs = self.embedding_fn(sample_ids)
        next_inputs = ops.where(ops.all(finished), self.start_inputs, next_inputs)
        return finished, next_inputs, state


class SampleEmbeddingSampler(GreedyEmbeddingSampler):
    """Sampling from the softmax of the outputs (over `softmax_temperature`), the next input
    the sampled id's embedding: tensorflow-addons' `SampleEmbeddingSampler`.

    Args:
        embedding_fn: As `GreedyEmbeddingSampler`'s.
        softmax_temperature: Optional temperature the logits are divided by. Defaults to 1.
        seed: Optional seed of the draws.
    """

    def __init__(self, embedding_fn=None, softmax_temperature=None, seed=None):
        super().__init__(embedding_fn)
        if softmax_temperature is not None:
            check_number("softmax_temperature", softmax_temperature, minimum=0, exclusive=True)
        self.softmax_temperature = softmax_temperature
        self.seed_generator = keras.random.SeedGenerator(seed)

    def sample(self, time, outputs, state):
        logits = outputs if self.softmax_temperature is None else outputs / self.softmax_temperature
        ids = keras.random.categorical(logits, 1, seed=self.seed_generator)[:, 0]
        return ops.cast(ids, "int32")


class InferenceSampler(Sampler):
    """Decoding with outputs of any kind: `sample_fn` reads the samples from the outputs,
    `end_fn` says which rows end, `next_inputs_fn` (the samples where not given) makes the
    next inputs: tensorflow-addons' `InferenceSampler`.

    Args:
        sample_fn: `outputs -> samples`.
        sample_shape: The shape of one row's samples.
        sample_dtype: Their dtype.
        end_fn: `samples -> finished`, a boolean vector.
        next_inputs_fn: Optional `samples -> next inputs`.
    """

    def __init__(self, sample_fn, sample_shape, sample_dtype, end_fn, next_inputs_fn=None):
        self.sample_fn, self.end_fn, self.next_inputs_fn = sample_fn, end_fn, next_inputs_fn
        self.sample_ids_shape = tuple(sample_shape)
        self.sample_ids_dtype = sample_dtype

    def initialize(self, start_inputs):
        """Returns `(finished, start_inputs)`.

        Args:
            start_inputs: The first inputs `[batch, ...]`.
        """
        self.start_inputs = ops.convert_to_tensor(start_inputs)
        self._batch_size = self.start_inputs.shape[0] or ops.shape(self.start_inputs)[0]
        return ops.zeros((self._batch_size,), dtype="bool"), self.start_inputs

    def sample(self, time, outputs, state):
        return self.sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished = self.end_fn(sample_ids)
        next_inputs = sample_ids if self.next_inputs_fn is None else self.next_inputs_fn(sample_ids)
        next_inputs = ops.where(ops.all(finished), self.start_inputs, next_inputs)
        return finished, next_inputs, state


class CustomSampler(Sampler):
    """A sampler of three functions: tensorflow-addons' `CustomSampler`.

    Args:
        initialize_fn: `(inputs, **kwargs) -> (finished, next_inputs)`.
        sample_fn: `(time, outputs, state) -> sample_ids`.
        next_inputs_fn: `(time, outputs, state, sample_ids) -> (finished, next_inputs,
            next_state)`.
        sample_ids_shape: The shape of one row's ids. Defaults to `()`.
        sample_ids_dtype: Their dtype. Defaults to `"int32"`.
    """

    def __init__(
        self,
        initialize_fn,
        sample_fn,
        next_inputs_fn,
        sample_ids_shape=None,
        sample_ids_dtype=None,
    ):
        self.initialize_fn, self.sample_fn = initialize_fn, sample_fn
        self.next_inputs_fn = next_inputs_fn
        self.sample_ids_shape = tuple(sample_ids_shape or ())
        self.sample_ids_dtype = sample_ids_dtype or "int32"
        self._batch_size = None

    def initialize(self, inputs, **kwargs):
        finished, next_inputs = self.initialize_fn(inputs, **kwargs)
        if self._batch_size is None:
            self._batch_size = finished.shape[0] or ops.shape(finished)[0]
        return finished, next_inputs

    def sample(self, time, outputs, state):
        return self.sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids):
        return self.next_inputs_fn(time=time, outputs=outputs, state=state, sample_ids=sample_ids)
