"""Greedy decoding, sampling and beam search in keras-hub's `Sampler` call convention, in
`keras.ops` only (keras-hub is not needed; its samplers are accepted too), and the look-up of a
sampler by name: `get("beam")`, `serialize(sampler)`, `deserialize(config)`, as
`keras_hub.samplers` has.

One module a job: `base` (the decoding loop), `greedy`, `sampling` (top-k, top-p, seeded),
`beam_search`, `penalties` (length and coverage), `ngrams` (n-gram blocking), `top_k` (the
exact top-k beam search selects with) and `registry` (look-up by name, serialisation).
"""

from keras_luong.samplers.base import Sampler, pad_after_end
from keras_luong.samplers.beam_search import BeamSearchSampler
from keras_luong.samplers.greedy import GreedySampler
from keras_luong.samplers.ngrams import mask_repeated_ngrams, repeated_ngram_tokens
from keras_luong.samplers.registry import deserialize, get, is_sampler, serialize
from keras_luong.samplers.sampling import RandomSampler

__all__ = [
    "BeamSearchSampler",
    "GreedySampler",
    "RandomSampler",
    "Sampler",
    "deserialize",
    "get",
    "is_sampler",
    "mask_repeated_ngrams",
    "pad_after_end",
    "repeated_ngram_tokens",
    "serialize",
]
