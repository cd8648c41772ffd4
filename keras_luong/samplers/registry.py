"""The look-up of a sampler by name or config, and its serialisation, as `keras_hub.samplers`
has: `get("beam")`, `serialize(sampler)`, `deserialize(config)`."""

import sys

import keras

from keras_luong.samplers.base import Sampler
from keras_luong.samplers.beam_search import BeamSearchSampler
from keras_luong.samplers.greedy import GreedySampler
from keras_luong.samplers.sampling import RandomSampler

# The samplers `get` knows by name, built with their defaults.
_BY_NAME = {"greedy": GreedySampler, "beam": BeamSearchSampler, "random": RandomSampler}


def is_sampler(sampler):
    """Whether `sampler` is keras-luong's or keras-hub's (keras-hub is not imported for this:
    if it is not imported yet, no object can be one of its samplers)."""
    if isinstance(sampler, Sampler):
        return True
    keras_hub = sys.modules.get("keras_hub")
    return keras_hub is not None and isinstance(sampler, keras_hub.samplers.Sampler)


def get(identifier):
    """A sampler from a name, a config or a sampler.

    `"greedy"`, `"beam"` and `"random"` are keras-luong's `GreedySampler()`,
    `BeamSearchSampler()` and `RandomSampler()` with their defaults; any other name is looked
    up in `keras_hub.samplers` (`"top_k"`, `"top_p"`, ..., when keras-hub is installed). A
    dict is a config from `serialize`. A sampler object (keras-luong's or keras-hub's) is
    returned as it is.

    Args:
        identifier: A name, a config from `serialize`, or a sampler object.

    Example:

    >>> get("beam").num_beams
    5
    >>> config = serialize(BeamSearchSampler(num_beams=3))  # a dict, JSON-safe
    >>> sampler = get(config)
    >>> type(sampler).__name__, sampler.num_beams
    ('BeamSearchSampler', 3)
    """
    if is_sampler(identifier):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _BY_NAME:
            return _BY_NAME[identifier]()
        try:
            import keras_hub
        except ImportError:
            keras_hub = None
        if keras_hub is not None:
            try:
                sampler = keras_hub.samplers.get(identifier)
            except ValueError:
                sampler = None
            if is_sampler(sampler):  # keras-hub hands an unknown name back as it is
                return sampler
    raise ValueError(
        f"Invalid value for argument sampler. Expected one of {tuple(_BY_NAME)}, the name of "
        "a keras_hub sampler, a sampler config, or a keras_luong or keras_hub Sampler. "
        f"Received: sampler={identifier!r}"
    )


def serialize(sampler):
    """A sampler's config, for `deserialize` (or `get`).

    Args:
        sampler: A keras-luong or keras-hub sampler.

    Returns:
        A JSON-safe dict.
    """
    return keras.saving.serialize_keras_object(sampler)


def deserialize(config):
    """The sampler a `serialize` config describes.

    Args:
        config: A dict from `serialize`.
    """
    sampler = keras.saving.deserialize_keras_object(config)
    if not is_sampler(sampler):
        raise ValueError(
            f"Invalid sampler config: it describes a {type(sampler).__name__}, not a sampler. "
            f"Received: config={config!r}"
        )
    return sampler
