"""Generation for `LuongSeq2Seq`: `compile(sampler=...)`, `generate`, `translate` and the
export of the decoding loop, over the compiled generators of `generator.py`."""

import keras

from keras_luong import samplers
from keras_luong.generation import export_formats
from keras_luong.generation.bounds import LENGTH_BOUND
from keras_luong.generation.cache import GeneratorCache
from keras_luong.generation.generator import get_generator, start_decoding
from keras_luong.generation.scoring import score_ids
from keras_luong.generation.translation import generate_checked, translate_texts


class GenerationMixin:
    """Generation for a sequence-to-sequence `keras.Model`: `compile`'s `sampler`, `generate`,
    `translate`, `score`, `generator` and `export_generator`, for `LuongSeq2Seq` and for any
    model that meets the generation contract.

    **The generation contract.** A model decodes with every sampler (greedy, beam search
    with its penalties, n-gram blocking, keras-hub's) when it has:

    - `encode(source)`: source ids `(B, S)` to `(value, value_mask, states)`: the encoder
      states `(B, S, d)`, their boolean mask `(B, S)` and the decoder's initial RNN states
      (a list, each `(B, n)`).
    - `decoder.prepare(value, value_mask)`: the memory the decoder attends to (a
      `LuongDecoder` or `BahdanauDecoder` has it).
    - `decoder.get_initial_state(batch_size, states, memory)`: every decoder state before
      the first step, the attention's included, for a memory of `batch_size` rows.
    - or, in place of those three, its own `start_decoding(source, beams)` (they serve the
      one written here; an `Ensemble` writes its own): `(memory, states, value_mask)`, the
      states one row per source, the memory (whatever `next_token_logits` reads) and the
      mask `(B × beams, S)` one row per source and beam.
    - `next_token_logits(token, states, memory, step, return_attention_scores=False,
      logits_bias=None)`: one step from the previous token `(rows,)` to `(logits, hidden,
      new_states)` (and the step's attention weights `(rows, S)` if asked for); the logits
      `(rows, V)` in float32, `logits_bias` `(V,)` added to them where given.
    - `source_vocabulary_size` (source ids are checked against it), `target_vocabulary_size`,
      `start_token` and `end_token`; and for `translate`, the
      vocabularies (`VocabularyAssetsMixin.set_vocabularies`).
    - `call((source, target_in), training=False, return_attention_scores=True)` returning
      `(logits, weights)`, for the alignments of `generate(..., return_attention_scores=True)`.

    Who repeats what per beam: the generator encodes each source once, makes the initial
    states from a memory of one row per source, prepares a second memory from the value
    repeated per beam, and hands the states to the sampler, which repeats its cache (the
    states) per beam and reorders it as beams are kept; `next_token_logits` sees
    `B × num_beams` rows. The compiled generators are kept in `generators` (made here on
    first use if the model has none).

    Example:

    A model of one's own (a GRU encoder, an attention decoder, its projection), decoded
    with beam search:

    >>> import keras
    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_luong import GlobalAttention, LuongDecoder
    >>> class Tiny(GenerationMixin, keras.Model):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.source_vocabulary_size = self.target_vocabulary_size = 10
    ...         self.start_token, self.end_token = 1, 2
    ...         self.embedding = keras.layers.Embedding(10, 8, mask_zero=True)
    ...         self.encoder = keras.layers.GRU(8, return_sequences=True, return_state=True)
    ...         attention = GlobalAttention(attentional_units=8)
    ...         self.decoder = LuongDecoder(keras.layers.GRUCell(8), attention)
    ...         self.projection = keras.layers.Dense(10)
    ...     def encode(self, source, training=None):
    ...         mask = ops.not_equal(source, 0)
    ...         value, state = self.encoder(self.embedding(source), mask=mask)
    ...         return value, mask, [state]
    ...     def call(self, inputs, training=None):
    ...         source, target_in = inputs
    ...         value, mask, states = self.encode(source)
    ...         embedded = self.embedding(target_in)
    ...         outputs = self.decoder(embedded, value, initial_state=states, value_mask=mask)
    ...         return self.projection(outputs)
    ...     def next_token_logits(
    ...         self, token, states, memory, step, return_attention_scores=False,
    ...         logits_bias=None,
    ...     ):
    ...         h, states, *weights = self.decoder.step(
    ...             self.embedding(token), states, memory, step=step,
    ...             return_attention_scores=return_attention_scores,
    ...         )
    ...         logits = ops.cast(self.projection(h), "float32")
    ...         logits = logits if logits_bias is None else logits + logits_bias
    ...         return (logits, h, states, *weights)
    >>> ids = Tiny().generate(np.array([[4, 5, 6], [7, 8, 0]]), max_length=5, sampler="beam")
    >>> ids.shape
    (2, 5)
    """

    def start_decoding(self, source, beams=1):
        """`(memory, states, value_mask)` to decode source ids `(B, S)` from: the memory and
        its mask one row per source and beam, the decoder's states one row per source (the
        sampler repeats them per beam). From `encode`, `decoder.prepare` and
        `decoder.get_initial_state`."""
        return start_decoding(self, source, beams)

    @property
    def longest_source(self):
        """The most source positions the decoder's attention scores (the `"location"`
        score's `max_source_length`), or `None` (any number). `generate` and `translate`
        refuse sources with tokens past it and cut the padding past it (a compiled loop
        that only knows the source length as it runs would give those positions no weight,
        with no error)."""
        attention = getattr(getattr(self, "decoder", None), "attention", None)
        return getattr(attention, "longest_source", None)

    @property
    def generators(self):
        """The model's compiled generators (a `GeneratorCache`), one per decoding setting."""
        cache = self.__dict__.get("_generator_cache")
        if cache is None:
            cache = GeneratorCache()
            # Not through `setattr`: Keras would track the cache as model state.
            self.__dict__["_generator_cache"] = cache
        return cache

    def compile(self, optimizer="rmsprop", loss=None, *, sampler="greedy", **kwargs):
        """Configures the model for training and its default sampler, as keras-hub's
        `CausalLM.compile` does.

        Args:
            optimizer: As in `keras.Model.compile`.
            loss: As in `keras.Model.compile`; `keras_luong.training.losses.SequenceLoss` leaves
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
        length_bound=LENGTH_BOUND,
        prefix=None,
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
                buffers of the loop are allocated for it). Defaults to `length_bound`'s
                `a ×` the longest source's tokens (its non-zero ids) `+ b`; decoding stops
                when every hypothesis has ended, so a generous bound costs nothing then.
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
                after the end token: the weights of the steps that generated them, recorded
                in the decoding loop (keras-luong's samplers); the outputs of a sampler that
                does not return its cache (keras-hub's) are decoded once more with teacher
                forcing for them, which gives the same weights.
            length_bound: `(a, b)`, the default `max_length` as `a ×` the source's tokens
                `+ b` (fairseq's `--max-len-a` and `--max-len-b`). Defaults to `(1.5, 10)`.
            prefix: Target ids `(B, P)`, 0 after each row's, that each output begins with
                (CTranslate2's `target_prefix`), whatever the sampler bans; beam scores count
                the tokens after them.

        Returns:
            The ids `(B, max_length)`; with a `BeamSearchSampler(return_all_beams=True)`, the
            ids `(B, num_beams, max_length)` of every hypothesis, best first, and their
            scores `(B, num_beams)` (about -1e9 for one never reached); then the alignments.
        """
        return generate_checked(
            self, inputs, max_length, stop_token_ids, sampler, batch_size,
            return_attention_scores, length_bound, prefix,
        )  # fmt: skip

    def translate(
        self,
        texts,
        source_vocabulary=None,
        target_vocabulary=None,
        max_length=None,
        sampler=None,
        batch_size=32,
        tokens_per_batch=None,
        verbose=0,
        length_bound=LENGTH_BOUND,
        prefixes=None,
        return_alignments=False,
        replace_unk=False,
        phrase_table=None,
        return_token_scores=False,
        **kwargs,
    ):
        """Strings in, strings out: `source_vocabulary.encode` makes the ids (unseen symbols
        become the OOV id), `generate` decodes them, `target_vocabulary.decode(ids)` reads
        the generated ones up to the end token.

        The texts are decoded in batches of `batch_size` sorted by source length, each padded
        to a multiple of 8 tokens (few shapes compile), and returned in the caller's order. A
        batch decodes until its last hypothesis ends: small batches waste least on a CPU,
        larger ones use an accelerator better.

        Args:
            texts: A list of strings. An empty list gives an empty list.
            source_vocabulary: A `keras_luong.Vocabulary` or `SubwordVocabulary`; by default
                the model's own (`set_vocabularies`).
            target_vocabulary: Likewise, for the output.
            max_length: The most tokens generated per text. Defaults to each text's own
                bound, `a ×` its source tokens `+ b` with `length_bound=(a, b)` (fairseq's
                `max_len_a * src_len + max_len_b`, `generate`'s rule for one row): each row of a
                batch ends at its own bound (a greedy output is the one the text gets
                alone), inside one compiled generator for the whole call, whose length is
                the largest bound rounded up to a power of two; a second call on texts of
                the same lengths compiles nothing.
            sampler: As in `generate`; `None` (the default) for the model's sampler.
            batch_size: Texts decoded at once. Defaults to 32.
            tokens_per_batch: If given, a batch also holds at most this many source
                positions (rows × padded length), so batches of long texts have fewer rows
                (memory bounded on an accelerator). Defaults to `None` (rows only).
            verbose: `1` shows a Keras progress bar of the texts translated, `2` one line
                at the end, `0` (the default) nothing.
            length_bound: `(a, b)` of the default `max_length`. Defaults to `(1.5, 10)`.
            prefixes: A string per text that its translation begins with (`generate`'s
                `prefix`; the bound at least its tokens + 1). Defaults to `None`.
            return_alignments: Also return each translation's `Alignment` to its source:
                the tokens, the attention weights of its steps and a link per target token
                (`.pharaoh()` for `"i-j"` pairs). Defaults to `False`.
            replace_unk: Write each unknown target token as the source token its attention
                weights are largest on (OpenNMT-py's `-replace_unk`). Defaults to `False`.
            phrase_table: With `replace_unk`, what to write for a source token in its place:
                a dict, or the path of a file of `source|||target` lines. Defaults to `None`.
            return_token_scores: Also return each translation's `TokenScores`: the
                log-probability of each of its tokens and of its end token, as `score` gives
                them (fairseq's positional scores). Defaults to `False`.
            **kwargs: `generate`'s other decoding arguments (`stop_token_ids`).

        Returns:
            One string per text; with a sampler that returns all beams, one n-best list of
            `(string, score)` per text (the hypotheses it reached: fewer than its beams where
            a text has fewer continuations). With `return_alignments` or
            `return_token_scores`, a tuple: the translations, then an `Alignment` per
            translation if asked, then a `TokenScores` per translation if asked (a list of
            them per n-best list).
        """
        return translate_texts(
            self, texts, source_vocabulary, target_vocabulary, max_length, sampler, batch_size,
            tokens_per_batch, verbose, length_bound, prefixes, return_alignments, replace_unk,
            phrase_table, return_token_scores, **kwargs,
        )  # fmt: skip

    def score(self, source_ids, target_ids, batch_size=64, return_token_scores=False):
        """The log-probability of each target given its source, teacher forced: the sum over
        its tokens and its end token of `log p(y_t | y_<t, x)` (fairseq's `--score-reference`),
        over the tokens decoding can generate (not padding or the start token): a beam
        search hypothesis scores what beam search scored it (with no length or coverage
        penalty).

        Args:
            source_ids: Source ids `(B, S)`, 0 for padding.
            target_ids: Target ids `(B, T)` without the start token, 0 for padding; the end
                token is scored after each row's last id unless the row ends with it already
                (as `generate`'s ids do).
            batch_size: Pairs scored at once. Defaults to 64.
            return_token_scores: Also return each token's log-probability, `(B, T + 1)`
                (the end token's at its position), 0 after it.

        Returns:
            The scores `(B,)`, float32 (and the token scores if asked for).
        """
        return score_ids(self, source_ids, target_ids, batch_size, return_token_scores)

    def generator(self, max_length, sampler=None, stop_token_ids="auto"):
        """The `keras.Model` from source ids to generated target ids that `generate` runs,
        for `predict` on a dataset and for export as a serving signature. Kept on the model
        per setting: its compiled function is reused. With a sampler that draws
        (`RandomSampler`), it takes `(source, noise)`: uniform numbers in (0, 1], `(B,
        max_length + 1)`, one per row and position.

        Args:
            max_length: The number of target tokens generated at most.
            sampler: As in `generate`; `None` (the default) for the model's sampler.
            stop_token_ids: As in `generate`. Defaults to `"auto"` (the end token).
        """
        generator, _ = get_generator(self, max_length, sampler, stop_token_ids)
        return generator

    def export_generator(
        self,
        filepath,
        max_length,
        format="tf_saved_model",
        text=False,
        source_length=None,
        **kwargs,
    ):
        """Exports the decoding loop, source ids in and generated ids out, for serving with
        no Python package of keras-luong, Keras or the training backend:

        - `"tf_saved_model"` (from TensorFlow and JAX): a SavedModel folder whose `serve`
          signature maps int32 source ids `(batch, S)` to target ids `(batch, max_length)`;
          TensorFlow (or TensorFlow Serving) runs it.
        - `"onnx"` (from TensorFlow and torch): an ONNX file with the same input and output,
          which onnxruntime runs. Needs `onnx` and the backend's converter, `tf2onnx` or
          `onnxscript` (`pip install keras-luong[export]`), and one of keras-luong's
          samplers. From torch, it is the `torch.export` program below, translated: its
          loop unrolled and its source length fixed.
        - `"litert"` (from TensorFlow): a `.tflite` file of LiteRT's builtin ops, which
          LiteRT's interpreter (`ai_edge_litert`) runs on int32 source ids `(batch,
          source_length)`.
        - `"torch"` (from torch): a `.pt2` file of `torch.export`, which
          `torch.export.load(filepath).module()` runs on the same input.

        Neither of the last two holds a loop whose length depends on the tokens, so the
        loop is unrolled: `max_length` steps, each row padded after its stop token (the ids
        of a loop that stops early), and a `source_length` fixed by the argument (pad
        shorter sources with 0). ONNX, LiteRT and torch need one of keras-luong's samplers.

        Batch and source length stay dynamic unless `source_length` is given; padding (id 0)
        follows each source. With a sampler that returns all beams, the outputs are the ids
        `(batch, num_beams, max_length)` and their scores `(batch, num_beams)`. From a backend
        that cannot write a format, save a `.keras` file, load it with the backend the error
        names and export there.

        A SavedModel also serves what takes more than the source (not the other formats):
        with `prefixed=True` its input is `(source, prefix)`, each row's target ids
        `(batch, max_length)` that its output begins with (0 after them), and with a sampler
        that draws (`RandomSampler`) it also takes `noise`, uniform numbers in (0, 1]
        `(batch, max_length + 1)` (what `generate` draws from the sampler's `seed`):
        `serve((source, prefix, noise))`, each part named in the `serve` signature.

        With `text=True` (a SavedModel of a model whose vocabularies are `SubwordVocabulary`),
        strings go in and out: the default signature (also named `translate`) takes a
        batch of texts `(batch,)` and returns `{"translations": (batch,)}` strings (with all
        beams, `(batch, num_beams)` and their `"scores"`), `translate`'s outputs for the same
        texts and `max_length`. The SentencePiece models are inside the SavedModel, read by
        TensorFlow Text's tokenizer, whose ops the serving process needs (`import
        tensorflow_text`); the `serve` signature takes ids and returns `{"ids": ...}`.

        Args:
            filepath: The SavedModel's folder, or the `.onnx`, `.tflite` or `.pt2` file.
            max_length: The number of target tokens generated at most.
            format: `"tf_saved_model"` (the default), `"onnx"`, `"litert"` or `"torch"`.
            text: Whether the SavedModel takes and returns strings. Defaults to `False`
                (ids). Needs `tensorflow-text` (`pip install keras-luong[export]`).
            source_length: The source length the artifact takes, or `None` (the default)
                for any; `"litert"`, `"torch"` and `"onnx"` from torch need it.
            **kwargs: `generate`'s `sampler` (and the beam settings it takes) and
                `stop_token_ids`; `prefixed=True` for a prefix input (above); `length_bound=(a,
                b)` for each row to end by `a ×` its source tokens `+ b` (`translate`'s rule:
                its end token there, padding after), within `max_length`.
        """
        export_formats.export_generator(
            self, filepath, max_length, format, text, source_length, **kwargs
        )
