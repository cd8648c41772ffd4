import keras
from keras import ops

from keras_luong import generation
from keras_luong import scheduled_sampling as scheduled
from keras_luong.alignments import ALIGNMENTS, make_attention
from keras_luong.bahdanau_decoder import BahdanauDecoder
from keras_luong.checks import (
    TokenIdChecks,
    check_integer,
    check_number,
    check_one_of,
    check_rate,
    check_token_ids,
    unpack_inputs,
)
from keras_luong.decoder import LuongDecoder
from keras_luong.loops import step_call
from keras_luong.losses import ReplicaTokenWeighting
from keras_luong.masked_lstm import run_encoder
from keras_luong.vocabulary import Vocabulary
from keras_luong.vocabulary_assets import VocabularyAssetsMixin


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongSeq2Seq(
    TokenIdChecks,
    ReplicaTokenWeighting,
    generation.GenerationMixin,
    VocabularyAssetsMixin,
    keras.Model,
):
    """A Luong attention translation model: (bi)LSTM encoder, bridge, LuongDecoder, softmax.

    ```
    h̄_s          = encoder(embed(source))                      (a biLSTM by default)
    h_0, c_0     = tanh(W_h [h→; h←]), tanh(W_c [c→; c←])      the bridge
    h̃_t          = LuongDecoder(embed(target_in), h̄, (h_0, c_0))
    p(y_t | ...) = softmax(W_s h̃_t)
    ```

    Train it with `model.fit` on `(source_ids, target_in_ids) -> target_out_ids` (0 is
    padding on both sides; the model returns logits, so the loss takes `from_logits=True`);
    decode with `generate()` or `translate()` (from `keras_luong.generation.GenerationMixin`),
    which run a greedy or beam search sampler over `LuongDecoder.step`, the same code as
    training.

    Args:
        source_vocabulary_size: Source token ids are in `[0, source_vocabulary_size)`.
        target_vocabulary_size: Target token ids are in `[0, target_vocabulary_size)`.
        units: Size of the encoder states, the decoder's LSTM and `h̃`. Defaults to 128.
        embedding_dim: Size of both embeddings. Defaults to 64.
        alignment: `"global"`, `"monotonic"` (local-m), `"predictive"` (local-p) or
            `"hard-monotonic"`: `MonotonicAttention` (Raffel et al.), trained on its expected
            alignment with `sigmoid_noise=1`, decoded (and evaluated) with hard alignments.
        score_mode: `"dot"`, `"general"`, `"concat"`, (global only) `"location"`, or
            `"bahdanau"` (global and hard-monotonic: `BahdanauAttention` and
            `BahdanauMonotonicAttention` with `units` units).
        window: Half-width `D` of a local window. Defaults to 10.
        max_source_length: Needed by the `"location"` score.
        input_feeding: Feed `h̃_{t-1}` to the decoder at step `t`. Defaults to `True`.
        output_attention: The vocabulary projection reads `h̃_t` (the paper's, the default)
            or, with `False`, the decoder LSTM's `h_t` while `h̃_t` is fed to the next step
            (tensorflow-addons' `AttentionWrapper(output_attention=False)`; needs
            `input_feeding=True`).
        bidirectional: A biLSTM encoder (else a forward LSTM). Defaults to `True`.
        decoder_layers: Number of stacked LSTM layers in the decoder. Defaults to 1.
        dropout: Dropout on the embeddings and `h̃` during training. Defaults to 0.
        attention_dropout: Dropout on the attention weights during training. Defaults to 0.
        start_token: The id that starts every target. Defaults to 1.
        end_token: The id that ends every target. Defaults to 2.
        scheduled_sampling: `None` (teacher forcing: every step's input is the gold token),
            or `"argmax"` / `"sample"`: in training, each step's input is, with probability
            `sampling_probability`, the model's own prediction at the step before (its
            argmax, or a sample from its softmax) instead of the gold token (Bengio et al.,
            2015; `keras_luong.scheduled_sampling.ScheduledSampling` raises the probability
            over training). Training then runs the decoder one step at a time. Defaults to
            `None`.
        sampling_probability: The starting probability of feeding the model's prediction;
            kept in a variable that `ScheduledSampling` sets. Defaults to 0.
        output_initializer: Initializer of the output layer's kernel (`W_s`, the `logits`
            layer). Defaults to uniform in ±0.1 (`keras.initializers.RandomUniform(-0.1, 0.1)`,
            the paper's and OpenNMT-py's), not Keras' Glorot: Glorot scales by the fan-out,
            and over a vocabulary of thousands it starts `W_s` so small (±0.027 for 256 units
            and 8,000 ids) that training sits for epochs near a unigram model, its attention
            fixed on one source position, before it learns to translate, or never does.
        attention_timing: `"luong"` (the default: the decoder attends with the LSTM's new
            state `h_t`, and the projection reads `h̃_t = tanh(W_c [c_t; h_t])`) or
            `"bahdanau"`: the decoder of Bahdanau, Cho and Bengio (2015), a `BahdanauDecoder`,
            which attends with the previous state `s_{t-1}`, feeds `[y_{t-1}; c_t]` to the
            LSTM, and projects the maxout deep output of `[s_t; c_t; y_{t-1}]` (`units` wide).
            Every alignment and score works with either; `input_feeding` and
            `output_attention` are Luong's and keep their defaults with `"bahdanau"`.
        **kwargs: Base model keyword arguments.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> model = LuongSeq2Seq(
    ...     source_vocabulary_size=10, target_vocabulary_size=8, units=16, embedding_dim=8
    ... )
    >>> source = np.array([[4, 5, 6, 7], [8, 9, 0, 0]])  # 0 is padding
    >>> target_in = np.array([[1, 4, 5, 6], [1, 7, 0, 0]])  # 1 starts every target
    >>> target_out = np.array([[4, 5, 6, 2], [7, 2, 0, 0]])  # 2 ends it
    >>> loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> model.compile(optimizer="adam", loss=loss)
    >>> history = model.fit((source, target_in), target_out, epochs=2, verbose=0)
    >>> logits = model.predict((source, target_in), verbose=0)
    >>> logits.shape  # the logits of p(y_t | y_<t, x) at every target step
    (2, 4, 8)
    >>> ids = model.generate(source, max_length=6, sampler="beam")
    >>> ids.shape
    (2, 6)

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
        output_attention=True,
        bidirectional=True,
        decoder_layers=1,
        dropout=0.0,
        attention_dropout=0.0,
        start_token=1,
        end_token=2,
        scheduled_sampling=None,
        sampling_probability=0.0,
        attention_timing="luong",
        output_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_one_of("attention_timing", attention_timing, TIMINGS)
        if attention_timing == "bahdanau" and not (input_feeding and output_attention):
            raise ValueError(
                "input_feeding and output_attention choose how Luong's decoder uses h̃; "
                "Bahdanau's decoder always feeds the context to its LSTM and outputs its deep "
                f"output. Received: attention_timing='bahdanau', input_feeding={input_feeding!r}, "
                f"output_attention={output_attention!r}"
            )
        if scheduled_sampling is not None:
            check_one_of("scheduled_sampling", scheduled_sampling, scheduled.MODES)
        sampling_probability = check_number("sampling_probability", sampling_probability, 0.0)
        if sampling_probability > 1:
            raise ValueError(
                "Invalid value for argument sampling_probability. Expected a probability in "
                f"[0, 1]. Received: sampling_probability={sampling_probability!r}"
            )
        for name, value in (
            ("source_vocabulary_size", source_vocabulary_size),
            ("target_vocabulary_size", target_vocabulary_size),
            ("units", units),
            ("embedding_dim", embedding_dim),
            ("decoder_layers", decoder_layers),
        ):
            check_integer(name, value)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        check_one_of("alignment", alignment, ALIGNMENTS)
        for name, value in (("start_token", start_token), ("end_token", end_token)):
            if check_integer(name, value) >= target_vocabulary_size:
                raise ValueError(
                    f"Invalid value for argument {name}. Expected a target id in "
                    f"[1, target_vocabulary_size={target_vocabulary_size}). "
                    f"Received: {name}={value!r}"
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
        self.output_attention = output_attention
        self.bidirectional = bidirectional
        self.decoder_layers = decoder_layers
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.start_token = start_token
        self.end_token = end_token
        self.scheduled_sampling = scheduled_sampling
        self.attention_timing = attention_timing
        if output_initializer is None:
            output_initializer = keras.initializers.RandomUniform(-0.1, 0.1)
        self.output_initializer = keras.initializers.get(output_initializer)
        if scheduled_sampling is not None:
            self.sampling_probability = self.add_weight(
                shape=(),
                initializer=keras.initializers.Constant(sampling_probability),
                trainable=False,
                dtype="float32",
                name="sampling_probability",
            )
            self.sampling_seed = keras.random.SeedGenerator(0, name="sampling_seed")
        else:
            self.sampling_probability = sampling_probability
        # The compiled generators, one per decoding setting (see `generator`).
        self.generators = generation.GeneratorCache()
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
        luong = attention_timing == "luong"
        attention = make_attention(
            alignment,
            window=window,
            max_source_length=max_source_length,
            score_units=units,
            score_mode=score_mode,
            attentional_units=units if luong else None,
            dropout=attention_dropout,
            dtype=dtype,
            name="attention",
        )
        cells = [keras.layers.LSTMCell(units, dtype=dtype) for _ in range(decoder_layers)]
        if decoder_layers > 1:
            cell = keras.layers.StackedRNNCells(cells, dtype=dtype)
        else:
            cell = cells[0]
        if luong:
            self.decoder = LuongDecoder(
                cell,
                attention,
                input_feeding=input_feeding,
                output_attention=output_attention,
                dtype=dtype,
                name="decoder",
            )
        else:
            self.decoder = BahdanauDecoder(
                cell, attention, units=units, dtype=dtype, name="decoder"
            )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=dtype)
        self.projection = keras.layers.Dense(
            target_vocabulary_size,
            kernel_initializer=self.output_initializer,
            dtype=dtype,
            name="logits",
        )

    def encode(self, source, training=None):
        """`(value, value_mask, decoder_cell_states)` for source ids `(B, S)`: the encoder
        states, their mask and the bridged initial states of the decoder's cell."""
        source = known_ids(source, self.source_vocabulary_size)
        source_mask = ops.not_equal(source, 0)
        embedded = self.dropout_layer(self.source_embedding(source), training=training)
        value, *states = run_encoder(self.encoder, embedded, source_mask, training)
        if self.bidirectional:
            forward_h, forward_c, backward_h, backward_c = states
            h = ops.concatenate([forward_h, backward_h], axis=-1)
            c = ops.concatenate([forward_c, backward_c], axis=-1)
        else:
            h, c = states
        h, c = self.bridge_h(h), self.bridge_c(c)
        return value, source_mask, [h, c] * self.decoder_layers

    def call(self, inputs, training=None, return_attention_scores=False):
        source, target_in = unpack_inputs(inputs)
        if not training:  # a direct call: ids whose values can be seen are checked
            check_token_ids("source", source, self.source_vocabulary_size, rank=2)
            check_token_ids("target_in", target_in, self.target_vocabulary_size, rank=2)
        target_in = known_ids(target_in, self.target_vocabulary_size)
        if training and self.scheduled_sampling and not return_attention_scores:
            return scheduled.scheduled_logits(self, source, target_in, training)
        value, value_mask, states = self.encode(source, training=training)
        target_mask = ops.not_equal(target_in, 0)
        embedded = self.dropout_layer(self.target_embedding(target_in), training=training)
        decoded = self.decoder(
            embedded,
            value,
            initial_state=states,
            inputs_mask=target_mask,
            value_mask=value_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        attentional, weights = decoded if return_attention_scores else (decoded, None)
        logits = self.projection(self.dropout_layer(attentional, training=training))
        if return_attention_scores:
            return logits, weights
        return logits

    def next_token_logits(
        self, token, states, memory, step, return_attention_scores=False, logits_bias=None
    ):
        """One decoding step from the previous token: `(logits, h̃, new_states)` (and the
        step's attention weights `(batch_size, S)` if asked for); `memory` is
        `self.decoder.prepare(value, value_mask)`, prepared once per source. `logits_bias`
        `(V,)`, if given, is added to the logits, in float32."""
        # A one-token sequence, sliced: the padding mask of a single step means nothing here.
        embedded = step_call(self.target_embedding, token)
        attentional, states, *weights = self.decoder.step(
            embedded, states, memory, step=step, return_attention_scores=return_attention_scores
        )
        return (self._step_logits(attentional, logits_bias), attentional, states, *weights)

    def _step_logits(self, attentional, logits_bias):
        """The output layer's logits for one step, plus `logits_bias` (float32). A plain
        float32 `Dense` adds its bias and `logits_bias` to the product in one add (a pass
        over `(rows, V)` fewer per step; the sum is the same, `logits_bias` being zero
        wherever it is not the masked score)."""
        dense = self.projection
        if logits_bias is None:
            return step_call(dense, attentional)
        if (
            type(dense) is keras.layers.Dense
            and dense.built
            and dense.use_bias
            and dense.activation is keras.activations.linear
            and dense.quantization_mode is None
            and dense.compute_dtype == dense.variable_dtype == "float32"
            and ops.is_tensor(attentional)
        ):
            bias = ops.convert_to_tensor(dense.bias) + logits_bias
            return ops.matmul(attentional, dense.kernel) + bias
        return ops.cast(step_call(dense, attentional), "float32") + logits_bias

    def _check_data(self, x, y=None):
        """Checks the token ids of `(source, target_in)` (a tuple or a dict) and `y` given as
        arrays (see `TokenIdChecks`)."""
        if isinstance(x, dict):
            x = (x.get("source"), x.get("target_in"))
        if isinstance(x, (tuple, list)) and len(x) == 2:
            source, target_in = x
            check_token_ids("source", source, self.source_vocabulary_size, rank=2)
            check_token_ids("target_in", target_in, self.target_vocabulary_size, rank=2)
        check_token_ids("y", y, self.target_vocabulary_size)  # (B, T) or (B, T, 1)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in _CONFIG})
        probability = self.sampling_probability
        if not isinstance(probability, float):  # the variable ScheduledSampling sets
            probability = float(ops.convert_to_numpy(probability))
        config["sampling_probability"] = probability
        config["output_initializer"] = keras.initializers.serialize(self.output_initializer)
        return config


# Every constructor argument, stored under its own name.
_CONFIG = (
    "source_vocabulary_size",
    "target_vocabulary_size",
    "units",
    "embedding_dim",
    "alignment",
    "score_mode",
    "window",
    "max_source_length",
    "input_feeding",
    "output_attention",
    "bidirectional",
    "decoder_layers",
    "dropout",
    "attention_dropout",
    "start_token",
    "end_token",
    "scheduled_sampling",
    "attention_timing",
)
TIMINGS = ("luong", "bahdanau")


def known_ids(ids, vocabulary_size):
    """`ids` with any id outside `[0, vocabulary_size)` replaced by the unknown id (3, as the
    vocabularies lay ids out). Ids are checked before a model runs wherever their values are
    known; inside a compiled function they are not, and an embedding lookup out of range
    would give NaN (JAX) or a backend error: the unknown word is what such an id means."""
    unknown = Vocabulary.OOV if vocabulary_size > Vocabulary.OOV else 0
    inside = ops.logical_and(ops.greater_equal(ids, 0), ops.less(ids, vocabulary_size))
    return ops.where(inside, ids, ops.cast(unknown, ids.dtype))
