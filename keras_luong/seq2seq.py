import numbers
import sys

import keras
import numpy as np
from keras import ops

from keras_luong.decoder import LuongDecoder
from keras_luong.global_attention import GlobalAttention
from keras_luong.local_attention import LocalAttention
from keras_luong.samplers import BeamSearchSampler, GreedySampler, Sampler, pad_after_end

ALIGNMENTS = ("global", "monotonic", "predictive")


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongSeq2Seq(keras.Model):
    """A Luong attention translation model: (bi)LSTM encoder, bridge, LuongDecoder, softmax.

    ```
    h̄_s          = encoder(embed(source))                      (a biLSTM by default)
    h_0, c_0     = tanh(W_h [h→; h←]), tanh(W_c [c→; c←])      the bridge
    h̃_t          = LuongDecoder(embed(target_in), h̄, (h_0, c_0))
    p(y_t | ...) = softmax(W_s h̃_t)
    ```

    Train it with `model.fit` on `(source_ids, target_in_ids) -> target_out_ids` (0 is
    padding on both sides); decode with `generate()`, which runs a greedy or beam search
    sampler over `LuongDecoder.step`, the same code as training.

    Args:
        source_vocabulary_size: Source token ids are in `[0, source_vocabulary_size)`.
        target_vocabulary_size: Target token ids are in `[0, target_vocabulary_size)`.
        units: Size of the encoder states, the decoder's LSTM and `h̃`. Defaults to 128.
        embedding_dim: Size of both embeddings. Defaults to 64.
        alignment: `"global"`, `"monotonic"` (local-m) or `"predictive"` (local-p).
        score_mode: `"dot"`, `"general"`, `"concat"` or (global only) `"location"`.
        window: Half-width `D` of a local window. Defaults to 10.
        max_source_length: Needed by the `"location"` score.
        input_feeding: Feed `h̃_{t-1}` to the decoder at step `t`. Defaults to `True`.
        bidirectional: A biLSTM encoder (else a forward LSTM). Defaults to `True`.
        decoder_layers: Number of stacked LSTM layers in the decoder. Defaults to 1.
        dropout: Dropout on the embeddings and `h̃` during training. Defaults to 0.
        attention_dropout: Dropout on the attention weights during training. Defaults to 0.
        start_token: The id that starts every target. Defaults to 1.
        end_token: The id that ends every target. Defaults to 2.
        **kwargs: Base model keyword arguments.

    Reference:
        Luong, Pham and Manning, "Effective Approaches to Attention-based Neural Machine
        Translation", EMNLP 2015 (arXiv:1508.04025).
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        units=128,
        embedding_dim=64,
        alignment="global",
        score_mode="general",
        window=10,
        max_source_length=None,
        input_feeding=True,
        bidirectional=True,
        decoder_layers=1,
        dropout=0.0,
        attention_dropout=0.0,
        start_token=1,
        end_token=2,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("source_vocabulary_size", source_vocabulary_size),
            ("target_vocabulary_size", target_vocabulary_size),
            ("units", units),
            ("embedding_dim", embedding_dim),
            ("decoder_layers", decoder_layers),
        ):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"Invalid value for argument {name}. Expected a positive integer. "
                    f"Received: {name}={value!r}"
                )
        for name, value in (("start_token", start_token), ("end_token", end_token)):
            if not isinstance(value, numbers.Integral) or not 0 < value < target_vocabulary_size:
                raise ValueError(
                    f"Invalid value for argument {name}. Expected a target id in "
                    f"[1, target_vocabulary_size={target_vocabulary_size}). "
                    f"Received: {name}={value!r}"
                )
        if alignment not in ALIGNMENTS:
            raise ValueError(
                f"Invalid value for argument alignment. Expected one of {ALIGNMENTS}. "
                f"Received: alignment={alignment!r}"
            )
        if bidirectional and units % 2:
            raise ValueError(
                "A bidirectional encoder splits units between its two directions, so units "
                f"must be even. Received: units={units!r}"
            )
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.units = units
        self.embedding_dim = embedding_dim
        self.alignment = alignment
        self.score_mode = score_mode
        self.window = window
        self.max_source_length = max_source_length
        self.input_feeding = input_feeding
        self.bidirectional = bidirectional
        self.decoder_layers = decoder_layers
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.start_token = start_token
        self.end_token = end_token
        # One generator per decoding setting (see `generator`).
        self._generators = _Generators()
        dtype = self.dtype_policy

        self.source_embedding = keras.layers.Embedding(
            source_vocabulary_size,
            embedding_dim,
            mask_zero=True,
            dtype=dtype,
            name="source_embedding",
        )
        encoder = keras.layers.LSTM(
            units // 2 if bidirectional else units,
            return_sequences=True,
            return_state=True,
            dtype=dtype,
            name="encoder",
        )
        if bidirectional:
            encoder = keras.layers.Bidirectional(encoder, dtype=dtype, name="bidirectional")
        self.encoder = encoder
        self.bridge_h = keras.layers.Dense(units, "tanh", dtype=dtype, name="bridge_h")
        self.bridge_c = keras.layers.Dense(units, "tanh", dtype=dtype, name="bridge_c")
        self.target_embedding = keras.layers.Embedding(
            target_vocabulary_size,
            embedding_dim,
            mask_zero=True,
            dtype=dtype,
            name="target_embedding",
        )
        if alignment == "global":
            attention = GlobalAttention(
                score_mode=score_mode,
                attentional_units=units,
                max_source_length=max_source_length,
                dropout=attention_dropout,
                dtype=dtype,
                name="attention",
            )
        else:
            attention = LocalAttention(
                alignment=alignment,
                window=window,
                score_mode=score_mode,
                attentional_units=units,
                dropout=attention_dropout,
                dtype=dtype,
                name="attention",
            )
        cells = [keras.layers.LSTMCell(units, dtype=dtype) for _ in range(decoder_layers)]
        if decoder_layers > 1:
            cell = keras.layers.StackedRNNCells(cells, dtype=dtype)
        else:
            cell = cells[0]
        self.decoder = LuongDecoder(
            cell, attention, input_feeding=input_feeding, dtype=dtype, name="decoder"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=dtype)
        self.projection = keras.layers.Dense(target_vocabulary_size, dtype=dtype, name="logits")

    def encode(self, source, training=None):
        """`(memory, memory_mask, decoder_cell_states)` for source ids `(B, S)`."""
        source_mask = ops.not_equal(source, 0)
        embedded = self.dropout_layer(self.source_embedding(source), training=training)
        memory, *states = self.encoder(embedded, mask=source_mask, training=training)
        if self.bidirectional:
            forward_h, forward_c, backward_h, backward_c = states
            h = ops.concatenate([forward_h, backward_h], axis=-1)
            c = ops.concatenate([forward_c, backward_c], axis=-1)
        else:
            h, c = states
        h, c = self.bridge_h(h), self.bridge_c(c)
        return memory, source_mask, [h, c] * self.decoder_layers

    def call(self, inputs, training=None, return_attention_scores=False):
        source, target_in = _unpack(inputs)
        memory, memory_mask, states = self.encode(source, training=training)
        target_mask = ops.not_equal(target_in, 0)
        embedded = self.dropout_layer(self.target_embedding(target_in), training=training)
        decoded = self.decoder(
            embedded,
            memory,
            initial_state=states,
            inputs_mask=target_mask,
            memory_mask=memory_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        attentional, weights = decoded if return_attention_scores else (decoded, None)
        logits = self.projection(self.dropout_layer(attentional, training=training))
        if return_attention_scores:
            return logits, weights
        return logits

    def next_token_logits(self, token, states, memory, step):
        """One decoding step from the previous token: `(logits, h̃, new_states)`; `memory`
        is `self.decoder.prepare(memory, memory_mask)`, prepared once per source."""
        # A one-token sequence, sliced: the padding mask of a single step means nothing here.
        embedded = self.target_embedding(token[:, None])[:, 0]
        attentional, states = self.decoder.step(embedded, states, memory, step=step)
        return self.projection(attentional), attentional, states

    def generate(
        self,
        source,
        max_length,
        sampler="greedy",
        num_beams=4,
        length_penalty=0.0,
        min_length=0,
        return_all_beams=False,
        stop_token_ids="auto",
        batch_size=256,
        return_attention_scores=False,
    ):
        """Decodes source ids `(B, S)` into target ids `(B, max_length)`.

        Decoding stops at the end token: every position after it is padding (0). It runs a
        sampler (`keras_luong.samplers`, or one of keras-hub's) through `predict`,
        jit-compiled on JAX and TensorFlow, and the compiled function is kept on the model
        per `(max_length, sampler settings)`, so a second call with the same settings does
        not trace again.

        Args:
            source: Source ids `(B, S)`, 0 for padding.
            max_length: Number of target tokens to generate at most.
            sampler: `"greedy"` (a `keras_luong.GreedySampler`), `"beam"` (a
                `keras_luong.BeamSearchSampler` with the arguments below), or a sampler
                object: keras-luong's or any `keras_hub.samplers.Sampler` (top-k, top-p...).
            num_beams: Beam width of `"beam"`.
            length_penalty: GNMT's `alpha` for `"beam"`: hypotheses are ranked by
                `log p / ((5 + |Y|) / 6) ** alpha`. Defaults to 0 (no penalty).
            min_length: The end token cannot come before this many tokens.
            return_all_beams: With `"beam"`, return every hypothesis, best first:
                `(ids (B, num_beams, max_length), scores (B, num_beams))`.
            stop_token_ids: `"auto"` (the model's `end_token`), `None` (always decode
                `max_length` tokens) or a tuple of ids.
            batch_size: Sources decoded at once.
            return_attention_scores: Also return the alignments of the decoded tokens,
                `(B, max_length, S)` (`(B, num_beams, max_length, S)` with all beams), zero
                after the end token: the decoder re-run over its own output, which gives the
                decoding steps' weights exactly (step decoding equals teacher forcing).
        """
        source = check_token_ids("source", source, self.source_vocabulary_size, rank=2)
        generator = self.generator(
            max_length,
            sampler,
            num_beams=num_beams,
            length_penalty=length_penalty,
            min_length=min_length,
            return_all_beams=return_all_beams,
            stop_token_ids=stop_token_ids,
        )
        generated = generator.predict(source, batch_size=batch_size, verbose=0)
        if not return_attention_scores:
            return generated
        ids = generated[0] if isinstance(generated, tuple) else generated
        flat = ops.reshape(ids, (-1, max_length))
        repeated = ops.repeat(source, ops.shape(flat)[0] // ops.shape(source)[0], axis=0)
        start = ops.full((ops.shape(flat)[0], 1), self.start_token, dtype="int32")
        target_in = ops.concatenate([start, flat[:, :-1]], axis=1)
        # Steps that generated padding are padding: their alignments are zeros.
        target_in = ops.where(ops.equal(flat, 0), 0, target_in)
        _, weights = self((repeated, target_in), training=False, return_attention_scores=True)
        weights = ops.reshape(weights, (*ops.shape(ids), ops.shape(source)[1]))
        return generated, ops.convert_to_numpy(weights)

    def translate(
        self, texts, source_vocabulary, target_vocabulary, max_length, sampler="greedy", **kwargs
    ):
        """Strings in, strings out, through two `keras_luong.vocabulary.Vocabulary`s:
        `source_vocabulary.encode_batch(texts)` makes the ids (unseen symbols become the OOV
        id), `target_vocabulary.decode(ids)` reads the generated ones up to the end token.
        With `return_all_beams=True`, each text gives its n-best list of `(string, score)`."""
        for side, vocabulary, size in (
            ("source", source_vocabulary, self.source_vocabulary_size),
            ("target", target_vocabulary, self.target_vocabulary_size),
        ):
            if len(vocabulary) != size:
                raise ValueError(
                    f"The {side} vocabulary does not match the model: it has {len(vocabulary)} "
                    f"ids, the model's {side}_vocabulary_size is {size}. Received: "
                    f"{side}_vocabulary of size {len(vocabulary)}"
                )
        source = source_vocabulary.encode_batch(texts)  # refuses a bare string
        generated = self.generate(source, max_length, sampler=sampler, **kwargs)
        if isinstance(generated, tuple):
            ids, scores = generated
            decode = target_vocabulary.decode
            return [
                [(decode(i), float(s)) for i, s in zip(row, row_scores, strict=True)]
                for row, row_scores in zip(ids, scores, strict=True)
            ]
        return [target_vocabulary.decode(ids) for ids in generated]

    def fit(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.fit`; token ids given as arrays are checked first (see
        `check_token_ids`): out-of-range ids would give NaN on JAX and a backend error
        elsewhere. A `tf.data.Dataset` or generator is passed through unchecked."""
        self._check_data(x, y)
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate`, with the token-id checks of `fit`."""
        self._check_data(x, y)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """`keras.Model.predict`, with the token-id checks of `fit`."""
        self._check_data(x, None)
        return super().predict(x, *args, **kwargs)

    def _check_data(self, x, y):
        if isinstance(x, dict):
            x = (x.get("source"), x.get("target_in"))
        if isinstance(x, (tuple, list)) and len(x) == 2:
            source, target_in = x
            check_token_ids("source", source, self.source_vocabulary_size, rank=2)
            check_token_ids("target_in", target_in, self.target_vocabulary_size, rank=2)
        check_token_ids("y", y, self.target_vocabulary_size)  # (B, T) or (B, T, 1)

    def generator(
        self,
        max_length,
        sampler="greedy",
        num_beams=4,
        length_penalty=0.0,
        min_length=0,
        return_all_beams=False,
        stop_token_ids="auto",
    ):
        """The `keras.Model` from source ids to generated target ids that `generate` runs
        (arguments as there), for `predict` and for export as a serving signature. One per
        setting, kept on the model: its compiled `predict` is reused."""
        if not isinstance(max_length, numbers.Integral) or max_length < 1:
            raise ValueError(
                "Invalid value for argument max_length. Expected a positive integer. "
                f"Received: max_length={max_length!r}"
            )
        max_length = int(max_length)
        if not self.built:  # decoding an untrained model is valid (if useless): build it
            ones = ops.ones((1, 1), "int32")
            self((ones, ones))
        if stop_token_ids == "auto":
            stop_token_ids = (self.end_token,)
        stop_token_ids = tuple(int(i) for i in stop_token_ids or ())
        if isinstance(sampler, str):
            key = (sampler, num_beams, length_penalty, min_length, return_all_beams)
        else:
            key = ("instance", id(sampler))
        key = (max_length, stop_token_ids, *key)
        if key not in self._generators:
            sampler = _make_sampler(
                sampler, num_beams, length_penalty, min_length, return_all_beams
            )
            self._generators[key] = Seq2SeqGenerator(self, max_length, sampler, stop_token_ids)
        return self._generators[key]

    def export_generator(self, filepath, max_length, sampler="greedy", **kwargs):
        """Exports a TensorFlow SavedModel whose `serve` signature maps int32 source ids
        `(batch, S)` to generated target ids `(batch, max_length)` (with
        `return_all_beams=True`: the ids `(batch, num_beams, max_length)` and their scores).
        Takes `generate`'s decoding arguments. Works from the TensorFlow and JAX backends;
        from torch, save a `.keras` file and export it on TensorFlow."""
        generator = self.generator(max_length, sampler, **kwargs)
        generator(ops.ones((1, 1), dtype="int32"))  # export needs a built model
        generator.export(
            filepath,
            format="tf_saved_model",
            input_signature=[keras.InputSpec(shape=(None, None), dtype="int32")],
            verbose=False,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "units": self.units,
                "embedding_dim": self.embedding_dim,
                "alignment": self.alignment,
                "score_mode": self.score_mode,
                "window": self.window,
                "max_source_length": self.max_source_length,
                "input_feeding": self.input_feeding,
                "bidirectional": self.bidirectional,
                "decoder_layers": self.decoder_layers,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "start_token": self.start_token,
                "end_token": self.end_token,
            }
        )
        return config


class Seq2SeqGenerator(keras.Model):
    """Source ids `(B, S)` -> generated target ids `(B, max_length)`, by a sampler over
    `LuongSeq2Seq.next_token_logits`: the RNN states and `h̃` live in the sampler's cache, the
    encoder memory in the closure (repeated per beam). Every position after one of
    `stop_token_ids` is padding (0)."""

    def __init__(self, seq2seq, max_length, sampler, stop_token_ids=(), **kwargs):
        super().__init__(**kwargs)
        self.seq2seq = seq2seq
        self.max_length = max_length
        self.sampler = sampler
        self.stop_token_ids = tuple(stop_token_ids)
        # predict() compiles the whole decoding loop with XLA on TensorFlow, as it always
        # does on JAX; torch stays eager (its compile takes minutes).
        self.jit_compile = keras.backend.backend() != "torch"

    def call(self, source):
        model = self.seq2seq
        batch = ops.shape(source)[0]
        memory, memory_mask, cell_states = model.encode(source)
        states = model.decoder.get_initial_state(batch, cell_states)
        beams = getattr(self.sampler, "num_beams", 1)
        if beams > 1:
            # The sampler repeats the prompt and the cache per beam; the closure's memory too
            # (before it is prepared: its flattened gather tables are laid out per example).
            memory = ops.repeat(memory, beams, axis=0)
            memory_mask = ops.repeat(memory_mask, beams, axis=0)
        memory = model.decoder.prepare(memory, memory_mask)
        # Padding and the start token are never generated: fed back, they would be read as
        # padding or as a new sentence.
        ids = ops.arange(model.target_vocabulary_size)
        never = ops.logical_or(ids == 0, ids == model.start_token)

        def next(prompt, cache, index):
            token = ops.slice(prompt, [0, index - 1], [ops.shape(prompt)[0], 1])[:, 0]
            logits, attentional, cache = model.next_token_logits(
                token, list(cache), memory, index - 1
            )
            # float32, so that the mask constant fits under mixed precision too.
            logits = ops.where(never, -1e9, ops.cast(logits, "float32"))
            return logits, attentional, tuple(cache)

        start = ops.full((batch, 1), model.start_token, dtype="int32")
        prompt = ops.concatenate([start, ops.zeros((batch, self.max_length), "int32")], axis=1)
        outputs = self.sampler(
            next,
            prompt,
            cache=tuple(states),
            index=1,
            stop_token_ids=self.stop_token_ids or None,
            model=self,
        )
        if isinstance(outputs, tuple):  # all beams, with their scores
            prompts, scores = outputs
            return pad_after_end(prompts[..., 1:], self.stop_token_ids), scores
        return pad_after_end(outputs[:, 1:], self.stop_token_ids)


class _Generators:
    """A plain mapping from decoding settings to `Seq2SeqGenerator`s. Not a dict: Keras
    tracks the layers in a model's dicts as its sublayers, and a generator holds the model,
    it is not part of it (nor of its `.keras` file)."""

    def __init__(self):
        self._by_key = {}

    def __contains__(self, key):
        return key in self._by_key

    def __getitem__(self, key):
        return self._by_key[key]

    def __setitem__(self, key, generator):
        self._by_key[key] = generator


def _make_sampler(sampler, num_beams, length_penalty, min_length, return_all_beams):
    if isinstance(sampler, str) and sampler == "greedy":
        if min_length or return_all_beams:
            # Beam search of width 1 is greedy decoding (a tested identity).
            return BeamSearchSampler(1, min_length=min_length, return_all_beams=return_all_beams)
        return GreedySampler()
    if isinstance(sampler, str) and sampler == "beam":
        return BeamSearchSampler(
            num_beams,
            length_penalty=length_penalty,
            min_length=min_length,
            return_all_beams=return_all_beams,
        )
    if isinstance(sampler, Sampler) or _is_keras_hub_sampler(sampler):
        return sampler
    raise ValueError(
        "Invalid value for argument sampler. Expected 'greedy', 'beam', a "
        "keras_luong.samplers.Sampler or a keras_hub.samplers.Sampler. "
        f"Received: sampler={sampler!r}"
    )


def _is_keras_hub_sampler(sampler):
    """Whether `sampler` is one of keras-hub's (optional: not imported unless it already is)."""
    keras_hub = sys.modules.get("keras_hub")
    return keras_hub is not None and isinstance(sampler, keras_hub.samplers.Sampler)


def check_token_ids(name, ids, vocabulary_size, rank=None):
    """Checks concrete token ids and returns them as an int32 array: integers in
    `[0, vocabulary_size)`, of the given rank. Anything that is not an array (a
    `tf.data.Dataset`, a generator, a symbolic tensor, `None`) is returned unchecked."""
    if ids is None or not hasattr(ids, "shape") or not hasattr(ids, "dtype"):
        return ids
    if isinstance(ids, keras.KerasTensor):
        return ids
    try:
        array = np.asarray(ops.convert_to_numpy(ids))
    except Exception:  # a traced tensor: its values are not known here
        return ids
    if rank is not None and array.ndim != rank:
        raise ValueError(
            f"Invalid {name}: expected token ids of rank {rank}, (batch_size, length). "
            f"Received: {name}.shape={array.shape}"
        )
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError(
                f"Invalid {name}: expected integer token ids. Received: {name} of dtype "
                f"{array.dtype} holding non-integer values"
            )
    elif array.dtype.kind not in "iub":
        raise ValueError(
            f"Invalid {name}: expected integer token ids. Received: {name}.dtype={array.dtype}"
        )
    if array.size and (array.min() < 0 or array.max() >= vocabulary_size):
        raise ValueError(
            f"Invalid {name}: token ids must be in [0, {vocabulary_size}) (0 is padding). "
            f"Received: ids from {array.min()} to {array.max()}"
        )
    return array.astype("int32")


def _unpack(inputs):
    if isinstance(inputs, dict):
        return inputs["source"], inputs["target_in"]
    source, target_in = inputs
    return source, target_in
