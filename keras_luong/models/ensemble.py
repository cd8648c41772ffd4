"""Several trained models decoded as one: at every step, their log-probabilities combined."""

import math
import numbers

import keras
from keras import ops

from keras_luong.checks import check_one_of
from keras_luong.generation.mixin import GenerationMixin

COMBINE = ("log_probabilities", "probabilities")


@keras.saving.register_keras_serializable(package="keras_luong")
class Ensemble(GenerationMixin, keras.Model):
    """Decodes several sequence-to-sequence models as one, as OpenNMT-py and fairseq decode
    ensembles: every member encodes the source with its own encoder and keeps its own decoder
    states (in the sampler's cache, reordered with the beams), and at every step the members'
    log-probabilities are combined before the sampler picks:

    ```
    combine="log_probabilities":  log p(y) = Σ_m w_m log p_m(y)     (OpenNMT-py's default)
    combine="probabilities":      log p(y) = log Σ_m w_m p_m(y)     (fairseq's)
    ```

    with the weights `w_m` scaled to sum to one. The first is a weighted geometric mean of the
    members' distributions, which the samplers normalise again (their softmax of the
    combination); the second, an arithmetic mean, is normalised already. `generate`,
    `translate` and every sampler work as for one model; `generate(...,
    return_attention_scores=True)` returns the members' attention weights averaged with the
    same weights (so members must attend over states of the source's length).

    Members may differ in architecture, attention and size; they read the same source ids
    (one source vocabulary) and write the same target ids: their vocabulary sizes, start and
    end tokens, and their vocabularies where they have them, must agree (members trained on
    vocabularies of their own cannot share ids). `translate` uses the vocabularies of the
    first member that has them.
    Any model that meets the generation contract (`GenerationMixin`) can be a member.

    Args:
        models: The members: built models (trained, or loaded from `.keras` files).
        weights: Optional weight of each member (positive numbers). Defaults to equal.
        combine: `"log_probabilities"` (the default) or `"probabilities"`.
        **kwargs: Base model keyword arguments.

    Example:

    >>> import numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> source = np.array([[4, 5, 6], [7, 8, 0]])
    >>> target_in = np.array([[1, 4, 5], [1, 7, 0]])
    >>> members = [
    ...     LuongSeq2Seq(10, 8, units=16, embedding_dim=8),
    ...     LuongSeq2Seq(10, 8, units=8, embedding_dim=8, alignment="local-m"),
    ... ]
    >>> for member in members:  # trained models in practice
    ...     _ = member((source, target_in))
    >>> ensemble = Ensemble(members)
    >>> ensemble.generate(source, max_length=5, sampler="beam").shape
    (2, 5)
    """

    def __init__(self, models, weights=None, combine="log_probabilities", **kwargs):
        super().__init__(**kwargs)
        models = check_members(models)
        self.members = models
        self.combine = check_one_of("combine", combine, COMBINE)
        self.member_weights = check_weights(weights, len(models))
        first = models[0]
        self.source_vocabulary_size = first.source_vocabulary_size
        self.target_vocabulary_size = first.target_vocabulary_size
        self.start_token, self.end_token = first.start_token, first.end_token
        self.built = True

    @property
    def source_vocabulary(self):
        """The first member's source vocabulary that has one (`translate` reads it)."""
        return self._members_vocabulary("source")

    @property
    def target_vocabulary(self):
        """The first member's target vocabulary that has one."""
        return self._members_vocabulary("target")

    def _members_vocabulary(self, side):
        vocabularies = (getattr(m, f"{side}_vocabulary", None) for m in self.members)
        return next((v for v in vocabularies if v is not None), None)

    @property
    def longest_source(self):
        """The fewest source positions a member's attention scores, or `None` (any number)."""
        longest = [getattr(member, "longest_source", None) for member in self.members]
        return min((n for n in longest if n is not None), default=None)

    def start_decoding(self, source, beams=1):
        """Each member's `start_decoding`: the memories as a tuple (with each member's count
        of states), the states one flat list, the first member's mask."""
        memories, states, counts, masks = [], [], [], []
        for member in self.members:
            memory, member_states, mask = member.start_decoding(source, beams)
            memories.append(memory)
            member_states = list(member_states)
            states.extend(member_states)
            counts.append(len(member_states))
            masks.append(mask)
        return {"members": tuple(memories), "counts": tuple(counts)}, states, masks[0]

    def next_token_logits(
        self, token, states, memory, step, return_attention_scores=False, logits_bias=None
    ):
        """One step of every member from the previous token: the logits `(rows, V)` of the
        combination in float32 (plus `logits_bias`), the first member's hidden state, every
        member's new states (one flat list), and the weighted mean attention if asked for.
        With `combine="log_probabilities"` these are the members' logits weighted and summed:
        their log-softmax is the combination, as the samplers normalise it (a member's
        log-softmax differs from its logits by one number per row), so a step makes no
        log-softmax per member (`benchmarks/speed/ensemble_overhead.py`)."""
        states = list(states)
        outputs, new_states, hidden, start = [], [], None, 0
        for member, member_memory, count in zip(
            self.members, memory["members"], memory["counts"], strict=True
        ):
            logits, member_hidden, member_states, *weights = member.next_token_logits(
                token,
                states[start : start + count],
                member_memory,
                step,
                return_attention_scores=return_attention_scores,
            )
            start += count
            hidden = member_hidden if hidden is None else hidden
            new_states.extend(member_states)
            outputs.append((logits, *weights))
        combined, attention = self.combined(outputs, normalized=False)
        if logits_bias is not None:
            combined = combined + logits_bias
        result = (combined, hidden, new_states)
        return (*result, attention) if return_attention_scores else result

    def call(self, inputs, training=False, return_attention_scores=False):
        """The combined log-probabilities `(B, T, V)` of every target step under teacher
        forcing (and the weighted mean attention weights `(B, T, S)`)."""
        source, target_in = inputs
        outputs = []
        for member in self.members:
            if return_attention_scores:
                outputs.append(
                    member((source, target_in), training=False, return_attention_scores=True)
                )
            else:
                outputs.append((member((source, target_in), training=False),))
        combined, attention = self.combined(outputs)
        return (combined, attention) if return_attention_scores else combined

    def combined(self, outputs, normalized=True):
        """`(log-probabilities, attention or None)` from each member's `(logits, [attention])`
        in order: the combination of `combine`, in float32, and the weighted mean attention.
        With `combine="log_probabilities"` and not `normalized`, the weighted sum of the
        logits instead (it differs by one number per row); `"probabilities"` always
        normalises each member."""
        terms, attention = [], None
        for (logits, *weights), weight in zip(outputs, self.member_weights, strict=True):
            logits = ops.cast(logits, "float32")
            if self.combine == "log_probabilities":
                if normalized:
                    logits = ops.log_softmax(logits, axis=-1)
                terms.append(weight * logits)
            else:
                terms.append(ops.log_softmax(logits, axis=-1) + math.log(weight))
            if weights:
                weighted = weight * ops.cast(weights[0], "float32")
                attention = weighted if attention is None else attention + weighted
        if self.combine == "probabilities":
            return ops.logsumexp(ops.stack(terms, axis=0), axis=0), attention
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total, attention

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "models": [keras.saving.serialize_keras_object(m) for m in self.members],
                "weights": list(self.member_weights),
                "combine": self.combine,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["models"] = [keras.saving.deserialize_keras_object(m) for m in config["models"]]
        return cls(**config)


def check_members(models):
    """The members as a list: built models that meet the generation contract and agree on the
    ids they read and write."""
    if isinstance(models, keras.Model) or not isinstance(models, (list, tuple)) or not models:
        raise ValueError(
            "Invalid value for argument models. Expected a non-empty list of models. "
            f"Received: models={models!r}"
        )
    models = list(models)
    for index, model in enumerate(models):
        missing = [
            name
            for name in ("start_decoding", "next_token_logits", "target_vocabulary_size")
            if not hasattr(model, name)
        ]
        if missing:
            raise ValueError(
                f"Invalid value for argument models: member {index} "
                f"({type(model).__name__}) does not meet the generation contract (it has no "
                f"{', '.join(missing)}; see GenerationMixin). Received: models[{index}]={model!r}"
            )
        if not model.built:
            raise ValueError(
                f"Invalid value for argument models: member {index} ({type(model).__name__}) "
                "is not built: train it, load it, or call it on a batch first. "
                f"Received: models[{index}] unbuilt"
            )
    first = models[0]
    for name in ("target_vocabulary_size", "source_vocabulary_size", "start_token", "end_token"):
        for index, model in enumerate(models[1:], start=1):
            if getattr(model, name) != getattr(first, name):
                raise ValueError(
                    f"Invalid value for argument models: the members must agree on {name}, "
                    f"as they decode into the same ids. Received: {name}="
                    f"{getattr(first, name)!r} for member 0 and {getattr(model, name)!r} for "
                    f"member {index}"
                )
    for side in ("source", "target"):
        vocabularies = [
            (index, vocabulary)
            for index, model in enumerate(models)
            if (vocabulary := getattr(model, f"{side}_vocabulary", None)) is not None
        ]
        for index, vocabulary in vocabularies[1:]:
            if vocabulary != vocabularies[0][1]:
                raise ValueError(
                    f"Invalid value for argument models: members {vocabularies[0][0]} and "
                    f"{index} have different {side} vocabularies, so one id would mean two "
                    "things; an ensemble's members read and write the same ids. Received: "
                    f"models with {side}_vocabulary of {len(vocabularies[0][1])} and "
                    f"{len(vocabulary)} entries"
                )
    return models


def check_weights(weights, count):
    """The members' weights scaled to sum to one (equal when `None`)."""
    if weights is None:
        return tuple([1.0 / count] * count)
    weights = list(weights) if isinstance(weights, (list, tuple)) else weights
    if (
        not isinstance(weights, list)
        or len(weights) != count
        or not all(
            isinstance(w, numbers.Real) and not isinstance(w, bool) and w > 0 for w in weights
        )
    ):
        raise ValueError(
            f"Invalid value for argument weights. Expected {count} positive numbers, one per "
            f"member. Received: weights={weights!r}"
        )
    total = float(sum(weights))
    return tuple(float(w) / total for w in weights)
