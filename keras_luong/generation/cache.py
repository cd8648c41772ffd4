"""The compiled generators a model keeps: at most a few, the most recently used, keyed by
decoding setting (`generator.get_generator` makes the key)."""

import collections
import json


class GeneratorCache:
    """The generators of one model, keyed by decoding setting, the most recently used kept
    (at most `capacity`). Not a dict: Keras tracks the layers in a model's dicts as its
    sublayers, and a generator holds the model, it is not part of it (nor of its `.keras`
    file)."""

    def __init__(self, capacity=8):
        self.capacity = capacity
        self._by_key = collections.OrderedDict()

    def __len__(self):
        return len(self._by_key)

    def __contains__(self, key):
        return key in self._by_key

    def get(self, key, make):
        """The generator kept under `key`, or a new one from `make()`, kept."""
        if key in self._by_key:
            self._by_key.move_to_end(key)
            return self._by_key[key]
        generator = self._by_key[key] = make()
        while len(self._by_key) > self.capacity:
            self._by_key.popitem(last=False)
        return generator

    def discard(self, key):
        self._by_key.pop(key, None)

    def clear(self):
        self._by_key.clear()


def sampler_key(sampler):
    """What a compiled generator depends on of its sampler: its class and its config."""
    config = sampler.get_config() if hasattr(sampler, "get_config") else {}
    cls = type(sampler)
    return f"{cls.__module__}.{cls.__qualname__}", json.dumps(config, sort_keys=True, default=repr)
