"""Generation for `LuongSeq2Seq`: the generator model that runs a sampler over the decoder, the
bounded cache of compiled generators kept on a model, `generate`, `translate` and the
SavedModel export of the decoding loop.

The model keeps one `Seq2SeqGenerator` per decoding setting: the maximum length, the stop
tokens, and the sampler's class and config (two equal samplers share one compiled function).
In-memory inputs go to the compiled function batch by batch (`predict_on_batch`), with no
per-call input pipeline; a generator is kept only once a call through it has succeeded.
"""

import collections
import json
import numbers
import sys

import keras
import numpy as np
from keras import ops

from keras_luong import samplers
from keras_luong.batching import length_sorted_batches
from keras_luong.checks import MASKED_SCORE, check_integer, check_texts, check_token_ids
from keras_luong.compat import resolve_sampler
from keras_luong.samplers import pad_after_end
from keras_luong.vocabulary_assets import check_vocabulary_size

MAX_LENGTH = 65536  # generate's largest max_length: the loop's buffers are allocated for it


class Seq2SeqGenerator(keras.Model):
    """Source ids `(B, S)` -> generated target ids `(B, max_length)`, by a sampler over
    `LuongSeq2Seq.next_token_logits`: the RNN states and `h̃` live in the sampler's cache, the
    memory in the closure. Every position after one of `stop_token_ids` is padding (0)."""

    def __init__(self, seq2seq, max_length, sampler, stop_token_ids=(), row_bounds=False, **kwargs):
        super().__init__(**kwargs)
        self.seq2seq = seq2seq
        self.max_length = max_length
        self.sampler = sampler
        self.stop_token_ids = tuple(stop_token_ids)
        # Each row ends by its own source's bound (`default_max_length` of its tokens): from
        # that position on its only possible token is the first stop token. One generator
        # then serves sources of every length, the buffers sized by `max_length`.
        self.row_bounds = bool(row_bounds) and bool(self.stop_token_ids)
        # The whole decoding loop is compiled with XLA on TensorFlow, as it always is on JAX;
        # torch stays eager (its compile takes minutes).
        self.jit_compile = keras.backend.backend() != "torch"

    def call(self, source):
        model = self.seq2seq
        batch = ops.shape(source)[0]
        value, value_mask, cell_states = model.encode(source)
        beams = getattr(self.sampler, "num_beams", 1)
        if beams > 1:
            # The sampler repeats the prompt and the cache per beam; the memory is prepared
            # from the repeated value (see `BaseLuongAttention.prepare`).
            value = ops.repeat(value, beams, axis=0)
            value_mask = ops.repeat(value_mask, beams, axis=0)
        memory = model.decoder.prepare(value, value_mask)
        # One state per source (the sampler repeats it per beam), the attention's included.
        states = model.decoder.get_initial_state(batch, cell_states, memory)
        # Padding and the start token are never generated: fed back, they would be read as
        # padding or as a new sentence.
        ids = ops.arange(model.target_vocabulary_size)
        never = ops.logical_or(ids == 0, ids == model.start_token)
        # Added to the logits rather than a `where`: XLA fuses an add into the output
        # layer's result once, where a select was recomputed by each reader of the logits
        # (greedy decoding 0.87x the time on JAX, benchmarks/decoding_vs_tfa.py's sizes).
        # MASKED_SCORE + a logit is MASKED_SCORE in float32 (its spacing there is 64).
        never_bias = ops.where(never, MASKED_SCORE, 0.0)
        if self.row_bounds:  # (rows,): the memory's rows, repeated per beam
            tokens = ops.sum(ops.cast(value_mask, "int32"), axis=1)
            bounds = row_bound(tokens)
            only_stop = ops.where(ids == self.stop_token_ids[0], 0.0, MASKED_SCORE)

        # A sampler with a coverage penalty reads each step's attention from the cache.
        keep_attention = getattr(self.sampler, "needs_attention", False)

        def next(prompt, cache, index):
            token = prompt[:, index - 1]
            states = cache["states"] if keep_attention else cache
            # The logits in float32 (so that the mask constant fits under mixed precision
            # too), plus never_bias.
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
            if keep_attention:
                attention = ops.cast(weights[0], "float32")
                return logits, attentional, {"states": tuple(states), "attention": attention}
            return logits, attentional, tuple(states)

        start = ops.full((batch, 1), model.start_token, dtype="int32")
        prompt = ops.concatenate([start, ops.zeros((batch, self.max_length), "int32")], axis=1)
        cache = tuple(states)
        if keep_attention:
            attention = ops.zeros((batch, ops.shape(value)[1]), "float32")
            cache = {"states": cache, "attention": attention}
        outputs = self.sampler(
            next,
            prompt,
            cache=cache,
            index=1,
            stop_token_ids=self.stop_token_ids or None,
            model=self,
        )
        if isinstance(outputs, tuple):  # all beams, with their scores
            prompts, scores = outputs
            return pad_after_end(prompts[..., 1:], self.stop_token_ids), scores
        return pad_after_end(outputs[:, 1:], self.stop_token_ids)

    def generate(self, source, batch_size):
        """Runs the compiled generator on int32 source ids, `batch_size` rows at a time."""
        if source.shape[0] == 0:
            return self._empty_output()
        outputs = [
            self.predict_on_batch(source[start : start + batch_size])
            for start in range(0, source.shape[0], batch_size)
        ]
        if isinstance(outputs[0], tuple):
            return tuple(np.concatenate(parts) for parts in zip(*outputs, strict=True))
        return np.concatenate(outputs)

    def _empty_output(self):
        if getattr(self.sampler, "return_all_beams", False):
            beams = self.sampler.num_beams
            return np.zeros((0, beams, self.max_length), "int32"), np.zeros((0, beams), "float32")
        return np.zeros((0, self.max_length), "int32")


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


def default_max_length(lengths):
    """The decoding bound when none is given: 1.5 × the longest source's tokens, and 10."""
    return int(1.5 * max(lengths, default=0)) + 10


def row_bound(tokens):
    """`default_max_length` of each row's source tokens `(rows,)`, as int32 tensor ops."""
    return (ops.cast(tokens, "int32") * 3) // 2 + 10


def length_bucket(bound):
    """The generator length that holds outputs of `bound` tokens: the next power of two (at
    least 16), so that texts of any length share a few compiled generators."""
    return max(16, 1 << (int(bound) - 1).bit_length())


class GenerationMixin:
    """Generation for a sequence-to-sequence `keras.Model` (`LuongSeq2Seq`): `compile`'s
    `sampler`, `generate`, `translate`, `generator` and `export_generator`. The model provides
    `encode`, `next_token_logits`, `decoder`, its vocabulary sizes, `start_token`,
    `end_token` and a `GeneratorCache` as `generators`."""

    def compile(self, optimizer="rmsprop", loss=None, *, sampler="greedy", **kwargs):
        """Configures the model for training and its default sampler, as keras-hub's
        `CausalLM.compile` does.

        Args:
            optimizer: As in `keras.Model.compile`.
            loss: As in `keras.Model.compile`; `keras_luong.losses.SequenceLoss` leaves
                padding positions out.
            sampler: The sampler `generate`, `translate`, `generator` and `BleuCallback` use
                when given none: a name, a config or a sampler object, as their `sampler`
                argument takes. Defaults to `"greedy"`. Saved with the model's compile
                config; compiling again discards the compiled generators.
            **kwargs: The other arguments of `keras.Model.compile` (`metrics`,
                `jit_compile`, ...).
        """
        sampler = samplers.get(sampler)
        super().compile(optimizer=optimizer, loss=loss, **kwargs)
        self._default_sampler = sampler
        self.generators.clear()

    @property
    def sampler(self):
        """The sampler used when a decoding call names none (`compile`'s `sampler`)."""
        sampler = getattr(self, "_default_sampler", None)
        return samplers.get("greedy") if sampler is None else sampler

    def get_compile_config(self):
        config = super().get_compile_config()
        if config:
            config["sampler"] = samplers.serialize(self.sampler)
        return config

    def compile_from_config(self, config):
        # keras.Model's, with the sampler given back to `compile` (which Keras' own skips
        # for a model whose `compile` is overridden).
        config = dict(config)
        sampler = config.pop("sampler", "greedy")
        self.compile(**keras.saving.deserialize_keras_object(config), sampler=sampler)
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)

    def generate(
        self,
        inputs,
        max_length=None,
        *,
        stop_token_ids="auto",
        sampler=None,
        batch_size=256,
        return_attention_scores=False,
        **deprecated,
    ):
        """Decodes source ids `(B, S)` into target ids `(B, max_length)`.

        Decoding stops at the end token: every position after it is padding (0). The sampler
        runs in one compiled function (XLA on JAX and TensorFlow, eager on torch), called
        directly on the ids `batch_size` rows at a time; it is kept on the model per
        `(max_length, stop_token_ids, sampler class and config)`, so a later call with the
        same settings, or an equal sampler, does not trace again.

        Args:
            inputs: Source ids `(B, S)`, 0 for padding. An empty batch gives an empty result.
            max_length: Number of target tokens to generate at most (up to 65536: the
                buffers of the loop are allocated for it). Defaults to 1.5 × the longest
                source's tokens (its non-zero ids) + 10; decoding stops when every
                hypothesis has ended, so a generous bound costs nothing then.
            stop_token_ids: `"auto"` (the model's `end_token`), `None` (always decode
                `max_length` tokens) or a tuple of ids.
            sampler: `None` for the model's sampler (`compile`'s `sampler`, greedy unless
                set there), a name (`"greedy"`, `"beam"`, or one of keras-hub's: see
                `keras_luong.samplers.get`), a config from `samplers.serialize`, or a
                sampler object: `keras_luong.GreedySampler`, `keras_luong.BeamSearchSampler`
                (beam width, length penalty, minimum length, n-best), or a keras-hub sampler
                (all but its `ContrastiveSampler` and `SpeculativeSampler`).
            batch_size: Sources decoded at once.
            return_attention_scores: Also return the alignments of the decoded tokens,
                `(B, max_length, S)` (`(B, num_beams, max_length, S)` with all beams), zero
                after the end token: the decoder re-run over its own output, which gives the
                decoding steps' weights exactly (step decoding equals teacher forcing).

        Returns:
            The ids `(B, max_length)`; with a `BeamSearchSampler(return_all_beams=True)`, the
            ids `(B, num_beams, max_length)` of every hypothesis, best first, and their
            scores `(B, num_beams)`; then the alignments if asked for.

        The beam settings `num_beams`, `length_penalty`, `min_length` and `return_all_beams`
        given here (with `sampler="greedy"` or `"beam"`) still work, deprecated: they belong
        to the sampler.
        """
        source = check_token_ids("inputs", inputs, self.source_vocabulary_size, rank=2)
        if not isinstance(source, np.ndarray):
            raise TypeError(
                "Invalid value for argument inputs. Expected source ids as an array "
                "(batch_size, S); use generator().predict for a dataset. Received: inputs of "
                f"type {type(inputs).__name__}"
            )
        batch_size = check_integer("batch_size", batch_size)
        if max_length is None:
            max_length = default_max_length(np.count_nonzero(source, axis=1).tolist())
        generated = self._generate(
            source, max_length, sampler, batch_size, stop_token_ids=stop_token_ids, **deprecated
        )
        if not return_attention_scores:
            return generated
        return generated, generated_alignments(self, source, generated, max_length)

    def _generate(self, source, max_length, sampler, batch_size, row_bounds=False, **settings):
        """Runs the kept generator of these settings on int32 source ids."""
        generator, key = get_generator(self, max_length, sampler, row_bounds=row_bounds, **settings)
        try:
            return generator.generate(source, batch_size)
        except BaseException:
            # A call that raised may leave a broken compiled function behind: keep nothing.
            self.generators.discard(key)
            raise

    def translate(
        self,
        texts,
        source_vocabulary=None,
        target_vocabulary=None,
        max_length=None,
        sampler=None,
        batch_size=32,
        tokens_per_batch=None,
        **kwargs,
    ):
        """Strings in, strings out: `source_vocabulary.encode` makes the ids (unseen symbols
        become the OOV id), `generate` decodes them, `target_vocabulary.decode(ids)` reads
        the generated ones up to the end token.

        The texts are decoded in batches of `batch_size` sorted by source length, each padded
        to a multiple of 8 tokens (so one long text does not lengthen every batch, and few
        shapes compile), and returned in the caller's order. A batch decodes until its last
        hypothesis ends, so its rows cost as much as its longest output: small batches
        waste least on a CPU, larger ones use an accelerator better.

        Args:
            texts: A list of strings. An empty list gives an empty list.
            source_vocabulary: A `keras_luong.Vocabulary` or `SubwordVocabulary`; by default
                the model's own (`set_vocabularies`).
            target_vocabulary: Likewise, for the output.
            max_length: The most tokens generated per text. Defaults to each text's own
                bound, 1.5 × its source tokens + 10 (fairseq's `max_len_a * src_len +
                max_len_b` with 1.5 and 10, `generate`'s rule for one row): each row of a
                batch ends at its own bound (a greedy output is the one the text gets
                alone), inside one compiled generator for the whole call, whose length is
                the largest bound rounded up to a power of two; a second call on texts of
                the same lengths compiles nothing.
            sampler: As in `generate`; `None` (the default) for the model's sampler.
            batch_size: Texts decoded at once. Defaults to 32.
            tokens_per_batch: If given, a batch also holds at most this many source
                positions (rows × padded length), so batches of long texts have fewer rows
                (memory bounded on an accelerator). Defaults to `None` (rows only).
            **kwargs: `generate`'s other decoding arguments (`stop_token_ids`).

        Returns:
            One string per text; with a sampler that returns all beams, one n-best list of
            `(string, score)` per text.
        """
        vocabularies = {}
        for side, vocabulary, size in (
            ("source", source_vocabulary, self.source_vocabulary_size),
            ("target", target_vocabulary, self.target_vocabulary_size),
        ):
            if vocabulary is None:
                vocabulary = getattr(self, f"{side}_vocabulary", None)
                if vocabulary is None:
                    raise ValueError(
                        f"Invalid value for argument {side}_vocabulary. Expected a vocabulary: "
                        "the model has none (see set_vocabularies). "
                        f"Received: {side}_vocabulary=None"
                    )
            check_vocabulary_size(side, vocabulary, size)
            vocabularies[side] = vocabulary
        texts = check_texts("texts", texts)
        batch_size = check_integer("batch_size", batch_size)
        rows = [vocabularies["source"].encode(t) for t in texts]
        if max_length is None:  # each text's own bound
            bounds = np.array([default_max_length([len(r)]) for r in rows], "int64")
            # One generator whose length holds every text's bound, each row ending at its
            # own bound inside it: one compiled function per source shape, kept for the next
            # call (per-batch bounds would each compile a generator of their own).
            bound = length_bucket(bounds.max(initial=1))
        else:
            bound = check_integer("max_length", max_length)
            bounds = np.full(len(rows), bound, "int64")
        results = [None] * len(rows)
        decode = vocabularies["target"].decode
        plan = length_sorted_batches(
            [len(r) for r in rows], batch_size, tokens_per_batch=tokens_per_batch
        )
        for indices, length in plan:
            source = np.zeros((len(indices), length), "int32")
            for row, i in enumerate(indices):
                source[row, : len(rows[i])] = rows[i]
            generated = self._generate(
                source, bound, sampler, batch_size, row_bounds=max_length is None, **kwargs
            )
            cut = np.arange(bound) >= bounds[indices][:, None]  # (rows, bound)
            if isinstance(generated, tuple):  # every beam, with its score
                ids, scores = generated
                ids = np.where(cut[:, None, :], 0, ids)
                for i, beams, beam_scores in zip(indices, ids, scores, strict=True):
                    results[i] = [
                        (decode(b), float(s)) for b, s in zip(beams, beam_scores, strict=True)
                    ]
            else:
                for i, ids in zip(indices, np.where(cut, 0, generated), strict=True):
                    results[i] = decode(ids)
        return results

    def generator(self, max_length, sampler=None, stop_token_ids="auto", **deprecated):
        """The `keras.Model` from source ids to generated target ids that `generate` runs,
        for `predict` on a dataset and for export as a serving signature. Kept on the model
        per setting: its compiled function is reused.

        Args:
            max_length: The number of target tokens generated at most.
            sampler: As in `generate`; `None` (the default) for the model's sampler.
            stop_token_ids: As in `generate`. Defaults to `"auto"` (the end token).
        """
        generator, _ = get_generator(self, max_length, sampler, stop_token_ids, **deprecated)
        return generator

    def export_generator(self, filepath, max_length, **kwargs):
        """Exports a TensorFlow SavedModel whose `serve` signature maps int32 source ids
        `(batch, S)` to generated target ids `(batch, max_length)` (with a sampler that
        returns all beams: the ids `(batch, num_beams, max_length)` and their scores).
        Works from the TensorFlow and JAX backends; from torch, save a `.keras` file and
        export it on TensorFlow.

        Args:
            filepath: The SavedModel's folder.
            max_length: The number of target tokens generated at most.
            **kwargs: `generate`'s `sampler` and `stop_token_ids`.
        """
        if keras.backend.backend() == "torch":
            raise NotImplementedError(
                "export_generator writes a TensorFlow SavedModel, which the torch backend "
                "cannot trace. Save the model (model.save('model.keras')), load it with "
                "KERAS_BACKEND=tensorflow (or jax) and call export_generator there."
            )
        generator, _ = get_generator(self, max_length, **kwargs)
        generator(ops.ones((1, 1), dtype="int32"))  # export needs a built model
        generator.export(
            filepath,
            format="tf_saved_model",
            input_signature=[keras.InputSpec(shape=(None, None), dtype="int32")],
            verbose=False,
        )


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


def get_generator(
    model, max_length, sampler=None, stop_token_ids="auto", row_bounds=False, **legacy
):
    """`(generator, key)`: the model's generator for these settings, made and kept if new."""
    max_length = check_integer("max_length", max_length, maximum=MAX_LENGTH)
    if sampler is None:  # the model's; the deprecated settings still start from greedy
        sampler = "greedy" if legacy else model.sampler
    sampler = resolve_sampler(sampler, legacy)
    check_supported(sampler)
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
    key = (max_length, stop_token_ids, bool(row_bounds), *sampler_key(sampler))
    generator = model.generators.get(
        key, lambda: Seq2SeqGenerator(model, max_length, sampler, stop_token_ids, row_bounds)
    )
    return generator, key


def generated_alignments(model, source, generated, max_length):
    """The alignments of generated ids: the decoder re-run over its own output (step decoding
    equals teacher forcing), zero after the end token."""
    ids = generated[0] if isinstance(generated, tuple) else generated
    flat = np.reshape(ids, (-1, max_length))
    if flat.shape[0] == 0:
        return np.zeros((*ids.shape, source.shape[1]), "float32")
    repeated = np.repeat(source, flat.shape[0] // source.shape[0], axis=0)
    start = np.full((flat.shape[0], 1), model.start_token, dtype="int32")
    target_in = np.concatenate([start, flat[:, :-1]], axis=1)
    # Steps that generated padding are padding: their alignments are zeros.
    target_in = np.where(flat == 0, 0, target_in)
    _, weights = model((repeated, target_in), training=False, return_attention_scores=True)
    return np.reshape(ops.convert_to_numpy(weights), (*ids.shape, source.shape[1]))
