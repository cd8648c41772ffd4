"""The generator: the Keras model that runs a sampler over a sequence-to-sequence model's decoder
one step at a time. `generation.GenerationMixin` (`generate`, `translate`, the export) drives it.

The model keeps one `Seq2SeqGenerator` per decoding setting (`cache.GeneratorCache`): the
maximum length, the stop tokens, the row bounds, the prefix, whether it records the attention,
and the sampler's class and config (two equal samplers share one compiled function).
In-memory inputs go to the compiled function batch by batch (`predict_on_batch`), with no
per-call input pipeline; a generator is kept only once a call through it has succeeded.
"""

import numbers
import sys

import keras
import numpy as np
from keras import ops

from keras_luong import samplers
from keras_luong.backend.engine import compiles_with_xla
from keras_luong.backend.ops import write_column
from keras_luong.checks import MASKED_SCORE, check_integer
from keras_luong.generation.bounds import row_bound
from keras_luong.generation.cache import sampler_key
from keras_luong.samplers import pad_after_end
from keras_luong.samplers.sampling import uniform_noise

MAX_LENGTH = 65536  # generate's largest max_length: the loop's buffers are allocated for it


class Seq2SeqGenerator(keras.Model):
    """Source ids `(B, S)` -> generated target ids `(B, max_length)`, by a sampler over
    `LuongSeq2Seq.next_token_logits`: the RNN states and `h̃` live in the sampler's cache, the
    memory in the closure. Every position after one of `stop_token_ids` is padding (0)."""

    def __init__(
        self,
        seq2seq,
        max_length,
        sampler,
        stop_token_ids=(),
        row_bounds=None,
        prefixed=False,
        record_attention=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # With `record_attention` (for a sampler that `returns_cache`), the outputs are
        # `(ids, weights)`: each step's attention weights `(B, max_length, S)`, written into
        # the cache by the step that computes them, zero where the ids are padding.
        self.record_attention = record_attention
        # With `prefixed`, a second input `(B, max_length)`: the ids each row's output begins
        # with, 0 after them (`generate`'s `prefix`).
        self.prefixed = prefixed
        self.seq2seq = seq2seq
        self.max_length = max_length
        self.sampler = sampler
        # Refused here, before anything is traced.
        self.draws = "noise" in sampler_needs(sampler)
        self.stop_token_ids = tuple(stop_token_ids)
        # With `row_bounds=(a, b)` each row ends by its own source's bound (`row_bound` of its
        # tokens): from that position on its only possible token is the first stop token.
        # One generator then serves sources of every length, the buffers sized by
        # `max_length`.
        self.row_bounds = row_bounds if self.stop_token_ids else None
        # The whole decoding loop is compiled with XLA on TensorFlow, as it always is on JAX;
        # torch stays eager (its compile takes minutes).
        self.jit_compile = compiles_with_xla()
        # Its weights are the model's, built by `get_generator`: built, so that the first
        # `predict_on_batch` does not run the decoding loop once more to build it (on JAX,
        # Keras calls an unbuilt model in a stateless scope, compiling the loop twice).
        self.built = True

    def call(self, inputs):
        # After the source, the prefixes if `prefixed`, then the uniform numbers of a sampler
        # that draws (`needs` "noise"), `(B, max_length + 1)`, drawn by `generate` per call.
        inputs = list(inputs) if (self.prefixed or self.draws) else [inputs]
        source = inputs.pop(0)
        prefix = inputs.pop(0) if self.prefixed else None
        noise = inputs.pop(0) if self.draws else None
        model = self.seq2seq
        batch = ops.shape(source)[0]
        beams = getattr(self.sampler, "num_beams", 1)
        memory, states, value_mask = model.start_decoding(source, beams)
        # Padding and the start token are never generated: fed back, they would be read as
        # padding or as a new sentence.
        ids = ops.arange(model.target_vocabulary_size)
        never = ops.logical_or(ids == 0, ids == model.start_token)
        # Added to the logits rather than a `where`: XLA fuses an add into the output
        # layer's result once, where a select was recomputed by each reader of the logits
        # (greedy decoding 0.87x the time on JAX, benchmarks/speed/decoding_vs_tfa.py's sizes).
        # MASKED_SCORE + a logit is MASKED_SCORE in float32 (its spacing there is 64).
        never_bias = ops.where(never, MASKED_SCORE, 0.0)
        if self.row_bounds:  # (rows,): each source's tokens, repeated per beam
            tokens = ops.sum(ops.cast(ops.not_equal(source, 0), "int32"), axis=1)
            if beams > 1:
                tokens = ops.repeat(tokens, beams, axis=0)
            bounds = row_bound(tokens, self.row_bounds)
            only_stop = ops.where(ids == self.stop_token_ids[0], 0.0, MASKED_SCORE)
        # The prefix goes into the prompt, marked by the sampler's `mask`: keras-luong's
        # samplers keep the prompt's token where the mask is set, and beam search ranks
        # its hypotheses with that token's log-probability 0 (`BeamSearchSampler`), without
        # a pass over the logits to mask them. keras-hub's samplers are given masked logits
        # too, as their beam search picks its beams before it reads the mask.
        masks_logits = self.prefixed and not isinstance(self.sampler, samplers.Sampler)
        if masks_logits:

            def follow_prefix(logits, prompt, index):
                """The logits with MASKED_SCORE on every token but the one the row's prefix
                gives at position `index` of the prompt (where it gives one: not 0)."""
                forced = ops.take(prompt, index, axis=1)[:, None]
                others = ops.logical_and(ops.not_equal(forced, 0), ops.not_equal(ids, forced))
                return ops.where(others, MASKED_SCORE, logits)

        # What the sampler reads besides the logits (`Sampler.needs`): a coverage penalty
        # reads each step's attention from the cache, sampling its uniform numbers.
        needs = sampler_needs(self.sampler)
        record = self.record_attention
        keep_attention = "attention" in needs or record
        needs = needs + ("alignments",) if record else needs

        def next(prompt, cache, index):
            token = prompt[:, index - 1]
            states = cache["states"] if needs else cache
            # The logits in float32 (so that the mask constant fits under mixed precision
            # too), plus the bias.
            logits, attentional, states, *weights = model.next_token_logits(
                token,
                list(states),
                memory,
                index - 1,
                return_attention_scores=keep_attention,
                logits_bias=never_bias,
            )
            if self.row_bounds:  # the position generated now is index - 1
                ended = ops.greater_equal(index - 1, bounds)[:, None]
                logits = ops.where(ended, only_stop[None], logits)
            if masks_logits:  # a prefix may run past its row's bound
                logits = follow_prefix(logits, prompt, index)
            if not needs:
                return logits, attentional, tuple(states)
            cache = {**cache, "states": tuple(states)}
            if keep_attention:
                cache["attention"] = ops.cast(weights[0], "float32")
            if record:
                cache["alignments"] = write_column(
                    cache["alignments"], index - 1, cache["attention"]
                )
            return logits, attentional, cache

        start = ops.full((batch, 1), model.start_token, dtype="int32")
        if self.prefixed:  # (batch, max_length), 0 after each row's prefix
            prefix = ops.cast(prefix, "int32")
            prompt = ops.concatenate([start, prefix], axis=1)
            mask = ops.concatenate([ops.zeros((batch, 1), "bool"), ops.not_equal(prefix, 0)], 1)
        else:
            prompt = ops.concatenate([start, ops.zeros((batch, self.max_length), "int32")], axis=1)
            mask = None
        cache = tuple(states)
        if needs:
            cache = {"states": cache}
        if keep_attention:
            cache["attention"] = ops.zeros((batch, ops.shape(value_mask)[1]), "float32")
        if self.draws:
            cache["noise"] = ops.cast(noise, "float32")
        if record:
            cache["alignments"] = ops.zeros(
                (batch, self.max_length, ops.shape(value_mask)[1]), "float32"
            )
        outputs = self.sampler(
            next,
            prompt,
            cache=cache,
            index=1,
            mask=mask,
            stop_token_ids=self.stop_token_ids or None,
            model=self,
            **({"return_cache": True} if record else {}),
        )
        if record:
            outputs, cache = outputs
        scores = None
        if isinstance(outputs, tuple):  # all beams, with their scores
            outputs, scores = outputs
        ids = pad_after_end(outputs[..., 1:], self.stop_token_ids)
        outputs = ids if scores is None else (ids, scores)
        if not record:
            return outputs
        weights = ops.where(ops.not_equal(ids, 0)[..., None], cache["alignments"], 0.0)
        return outputs, weights

    def generate(self, source, batch_size, prefix=None):
        """Runs the compiled generator on int32 source ids, `batch_size` rows at a time (with
        the prefixes, `(B, P)` with `P <= max_length`, if `prefixed`; with a sampler that
        draws, the uniform numbers of the whole call from its `seed`)."""
        if source.shape[0] == 0:
            return self._empty_output(source.shape[1])
        inputs = [source]
        if self.prefixed:
            padded = np.zeros((source.shape[0], self.max_length), "int32")
            padded[:, : prefix.shape[1]] = prefix
            inputs.append(padded)
        if self.draws:
            rng = np.random.default_rng(self.sampler.seed)
            inputs.append(uniform_noise(rng, source.shape[0], self.max_length + 1))
        outputs = [
            self.predict_on_batch(
                tuple(x[rows] for x in inputs) if len(inputs) > 1 else source[rows]
            )
            for rows in (
                slice(start, start + batch_size) for start in range(0, source.shape[0], batch_size)
            )
        ]
        return keras.tree.map_structure(lambda *parts: np.concatenate(parts), *outputs)

    def _empty_output(self, source_length):
        ids = np.zeros((0, self.max_length), "int32")
        if getattr(self.sampler, "return_all_beams", False):
            beams = self.sampler.num_beams
            ids = np.zeros((0, beams, self.max_length), "int32"), np.zeros((0, beams), "float32")
        if self.record_attention:
            rows = (0, self.sampler.num_beams) if isinstance(ids, tuple) else (0,)
            return ids, np.zeros((*rows, self.max_length, source_length), "float32")
        return ids


def start_decoding(model, source, beams=1, training=None):
    """`(memory, states, value_mask)` to decode `source` `(B, S)` from, for a model that has
    `encode`, `decoder.prepare` and `decoder.get_initial_state` (the generation contract): the
    states one row per source (the sampler repeats them per beam), the memory and its mask one
    row per source and beam. Scheduled sampling starts its training loop here too
    (`training=True`)."""
    batch = ops.shape(source)[0]
    value, value_mask, cell_states = model.encode(source, training=training)
    memory = model.decoder.prepare(value, value_mask)
    # One state per source, made from a memory of one row per source (the attention's
    # `get_initial_state` gets the rows of the memory it is given); the sampler repeats
    # the states per beam with the rest of its cache.
    states = model.decoder.get_initial_state(batch, cell_states, memory)
    if beams > 1:
        # The steps attend from every beam: the memory is prepared again from the
        # repeated value (a memory is laid out per row, see `BaseLuongAttention.prepare`).
        value = ops.repeat(value, beams, axis=0)
        value_mask = ops.repeat(value_mask, beams, axis=0)
        memory = model.decoder.prepare(value, value_mask)
    return memory, states, value_mask


# What generation can keep in the cache for a sampler that names it in `needs`.
PROVIDED = ("attention", "noise")


def sampler_needs(sampler):
    """The sampler's `needs` (empty where it has none, as keras-hub's), each checked to be
    one generation provides."""
    needs = tuple(getattr(sampler, "needs", ()))
    unknown = [name for name in needs if name not in PROVIDED]
    if unknown:
        raise ValueError(
            f"{type(sampler).__name__} needs {unknown}, which generation does not provide: "
            f"a sampler's needs name entries of {PROVIDED}. Received: needs={needs!r}"
        )
    return needs


# keras-hub's samplers that a sequence-to-sequence decoder cannot run, and why.
UNSUPPORTED_SAMPLERS = {
    "ContrastiveSampler": "contrastive search runs the decoder on k candidates per row after a "
    "first step on the rows alone, so the source memory would be needed at two batch sizes",
    "SpeculativeSampler": "speculative decoding needs a draft model, which a LuongSeq2Seq "
    "does not have",
}


def check_supported(sampler):
    """Refuses keras-hub's samplers that cannot decode a sequence-to-sequence model."""
    keras_hub = sys.modules.get("keras_hub")
    for name, reason in UNSUPPORTED_SAMPLERS.items():
        cls = getattr(getattr(keras_hub, "samplers", None), name, None)
        if cls is not None and isinstance(sampler, cls):
            raise ValueError(
                f"Invalid value for argument sampler: keras-hub's {name} is not supported "
                f"({reason}). keras-luong's GreedySampler and BeamSearchSampler, and keras-hub's "
                "GreedySampler, BeamSampler, RandomSampler, TopKSampler and TopPSampler are. "
                f"Received: sampler={name}"
            )


def get_generator(
    model,
    max_length,
    sampler=None,
    stop_token_ids="auto",
    row_bounds=None,
    prefixed=False,
    record_attention=False,
):
    """`(generator, key)`: the model's generator for these settings, made and kept if new
    (recording the attention, if asked, where the sampler `returns_cache`)."""
    max_length = check_integer("max_length", max_length, maximum=MAX_LENGTH)
    sampler = samplers.get(model.sampler if sampler is None else sampler)
    check_supported(sampler)
    record_attention = bool(record_attention and getattr(sampler, "returns_cache", False))
    if not model.built:  # decoding an untrained model is valid (if useless): build it
        ones = ops.ones((1, 1), "int32")
        model((ones, ones))
    if isinstance(stop_token_ids, str) and stop_token_ids == "auto":
        stop_token_ids = (model.end_token,)
    if isinstance(stop_token_ids, numbers.Integral) and not isinstance(stop_token_ids, bool):
        stop_token_ids = (stop_token_ids,)  # one id
    if stop_token_ids is not None and not isinstance(stop_token_ids, (list, tuple)):
        raise ValueError(
            "Invalid value for argument stop_token_ids. Expected 'auto', None, an id or a "
            f"tuple of ids. Received: stop_token_ids={stop_token_ids!r}"
        )
    stop_token_ids = tuple(
        check_integer("stop_token_ids", i, minimum=0) for i in (stop_token_ids or ())
    )
    if any(i >= model.target_vocabulary_size for i in stop_token_ids):
        raise ValueError(
            "Invalid value for argument stop_token_ids. Expected ids in [0, "
            f"target_vocabulary_size={model.target_vocabulary_size}). "
            f"Received: stop_token_ids={stop_token_ids!r}"
        )
    key = (max_length, stop_token_ids, row_bounds, prefixed, record_attention)
    key += sampler_key(sampler)
    generator = model.generators.get(
        key,
        lambda: Seq2SeqGenerator(
            model,
            max_length,
            sampler,
            stop_token_ids,
            row_bounds,
            prefixed=prefixed,
            record_attention=record_attention,
        ),
    )
    return generator, key


def teacher_forced_input(target_out, start_token):
    """The decoder's input that teacher-forces `target_out` `(B, T)` (each row's tokens up to
    its end token, then 0): the start token, then `target_out` one step later, 0 wherever
    `target_out` is padding (a step that produced padding reads padding)."""
    start = np.full((target_out.shape[0], 1), start_token, dtype="int32")
    target_in = np.concatenate([start, target_out[:, :-1]], axis=1)
    return np.where(target_out == 0, 0, target_in).astype("int32")


def generate_ids(
    model,
    source,
    max_length,
    sampler,
    batch_size,
    row_bounds=None,
    prefix=None,
    record_attention=False,
    **settings,
):
    """Runs the model's kept generator of these settings on int32 source ids (each output
    beginning with its row of `prefix`, checked ids `(B, P)`, if given). With
    `record_attention`, `(outputs, weights)`: the steps' attention weights `(B, max_length, S)`
    as the loop recorded them, or `None` where the sampler does not return its cache."""
    generator, key = get_generator(
        model,
        max_length,
        sampler,
        row_bounds=row_bounds,
        prefixed=prefix is not None,
        record_attention=record_attention,
        **settings,
    )
    try:
        outputs = generator.generate(source, batch_size, prefix)
        if not record_attention:
            return outputs
        return outputs if generator.record_attention else (outputs, None)
    except BaseException:
        # A call that raised may leave a broken compiled function behind: keep nothing.
        model.generators.discard(key)
        raise
