"""What keeps code and files written for keras-luong 0.1.0 working: the decoding settings
`generate` took before they moved to the sampler."""

import warnings

from keras_luong import samplers
from keras_luong.samplers import BeamSearchSampler, GreedySampler

# The decoding settings `generate` took before they moved to the sampler.
LEGACY_SAMPLER_ARGUMENTS = ("num_beams", "length_penalty", "min_length", "return_all_beams")


def resolve_sampler(sampler, legacy):
    """The sampler object for `generate`'s `sampler` argument (`samplers.get`), with the
    decoding settings older versions took as `generate` arguments (deprecated)."""
    unknown = sorted(set(legacy) - set(LEGACY_SAMPLER_ARGUMENTS))
    if unknown:
        raise TypeError(f"generate() got unexpected keyword arguments: {', '.join(unknown)}")
    if not legacy:
        return samplers.get(sampler)
    given = ", ".join(f"{name}={value!r}" for name, value in legacy.items())
    if not (isinstance(sampler, str) and sampler in ("greedy", "beam")):
        raise ValueError(
            f"The decoding settings {given} belong to the sampler: pass them to its "
            f"constructor. Received: sampler={sampler!r} with {given}"
        )
    warnings.warn(
        f"generate({given}) is deprecated: pass sampler=keras_luong.BeamSearchSampler("
        f"{given}) (or GreedySampler()) instead.",
        DeprecationWarning,
        stacklevel=4,
    )
    if sampler == "beam":
        return BeamSearchSampler(**{"num_beams": 4, **legacy})  # 4: the old default here
    if {"num_beams", "length_penalty"} & set(legacy):
        raise ValueError(
            f"Greedy decoding has no beams and no length penalty. Received: sampler='greedy' "
            f"with {given}"
        )
    if legacy.get("min_length") or legacy.get("return_all_beams"):
        # Beam search of width 1 is greedy decoding (a tested identity).
        return BeamSearchSampler(1, **legacy)
    return GreedySampler()
