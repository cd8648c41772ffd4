import keras
from keras import ops

# The built-in attention modules register their alignment names as they are imported.
from keras_luong.attention import (
    bahdanau_attention,  # noqa: F401
    global_attention,  # noqa: F401
    local_attention,  # noqa: F401
    location_attention,  # noqa: F401
    monotonic_attention,  # noqa: F401
)
from keras_luong.attention.alignments import make_attention
from keras_luong.backend.loops import step_call
from keras_luong.backend.ops import sequence_logits, step_logits
from keras_luong.checks import (
    TokenIdChecks,
    check_token_ids,
    unpack_inputs,
)
from keras_luong.data.token_ids import known_ids
from keras_luong.data.vocabulary_assets import VocabularyAssetsMixin
from keras_luong.decoders.timings import make_decoder
from keras_luong.generation.mixin import GenerationMixin
from keras_luong.models import scheduled_sampling as scheduled
from keras_luong.models.arguments import arguments_from_config, check_arguments, stored_config
from keras_luong.models.initializers import initializer_arguments
from keras_luong.models.parts import (
    MaskCarrier,
    RecurrentEncoder,
    bridge_layers,
    bridge_states,
    call_encoder,
    decoder_cells,
    embedding,
    reverse_tokens,
    state_kinds,
    unreverse,
)
from keras_luong.models.presets import PaperPreset
from keras_luong.training.losses import ReplicaTokenWeighting


@keras.saving.register_keras_serializable(package="keras_luong")
class LuongSeq2Seq(
    PaperPreset,
    TokenIdChecks,
    ReplicaTokenWeighting,
    GenerationMixin,
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
    decode with `generate()` or `translate()` (from `keras_luong.generation.mixin.GenerationMixin`),
    which run a greedy or beam search sampler over `LuongDecoder.step`, the same code as
    training.

    Args:
        source_vocabulary_size: Source token ids are in `[0, source_vocabulary_size)`.
        target_vocabulary_size: Target token ids are in `[0, target_vocabulary_size)`.
        units: Size of the encoder states, the decoder's LSTM and `h̃`. Defaults to 128.
        embedding_dim: Size of both embeddings. Defaults to 64.
        alignment: `"global"`, `"local-m"`, `"local-p"`,
            `"hard-monotonic"`: `MonotonicAttention` (Raffel et al.), trained on its expected
            alignment with `sigmoid_noise=1`, decoded (and evaluated) with hard alignments,
            `"location-sensitive"` (`LocationSensitiveAttention`), any name a mechanism joined with
            `register_alignment`, or an attention layer itself (any layer that follows the
            attention protocol; `score_mode`, `window`, `attention_arguments` and
            `attention_dropout` are then its own business).
        score_mode: `"dot"`, `"general"`, `"concat"`, (global only) `"location"`, or
            `"additive"` (global and hard-monotonic: `BahdanauAttention` and
            `BahdanauMonotonicAttention` with `units` units).
        window: Half-width `D` of a local window. Defaults to 10.
        attention_arguments: Optional dict of further arguments of the attention layer
            (for example `{"filters": 32}` for `"location-sensitive"`), stored in the config.
        max_source_length: Needed by the `"location"` score.
        input_feeding: Feed `h̃_{t-1}` to the decoder at step `t`. Defaults to `True`.
        output_attention: The vocabulary projection reads `h̃_t` (the paper's, the default)
            or, with `False`, the decoder LSTM's `h_t` while `h̃_t` is fed to the next step
            (tensorflow-addons' `AttentionWrapper(output_attention=False)`; needs
            `input_feeding=True`).
        bidirectional: A biLSTM encoder (else a forward LSTM). Defaults to `True`.
        decoder_layers: Number of stacked LSTM layers in the decoder. Defaults to 1.
        dropout: Dropout during training on the embeddings, `h̃`, and between stacked
            layers (the encoder's, and the decoder's built from `decoder_cell="lstm"` or
            `"gru"`). Defaults to 0.
        attention_dropout: Dropout on the attention weights during training. Defaults to 0.
        start_token: The id that starts every target. Defaults to 1.
        end_token: The id that ends every target. Defaults to 2.
        scheduled_sampling: `None` (teacher forcing: every step's input is the gold token),
            or `"argmax"` / `"sample"`: in training, each step's input is, with probability
            `sampling_probability`, the model's own prediction at the step before (its
            argmax, or a sample from its softmax) instead of the gold token (Bengio et al.,
            2015; `keras_luong.models.scheduled_sampling.ScheduledSampling` raises the probability
            over training). Training then runs the decoder one step at a time. Defaults to
            `None`.
        sampling_probability: The starting probability of feeding the model's prediction;
            kept in a variable that `ScheduledSampling` sets. Defaults to 0.
        output_initializer: Initializer of the output layer's kernel (`W_s`, the `logits`
            layer). Defaults to uniform in ±0.1 (the paper's and OpenNMT-py's), not Keras'
            Glorot, which over a vocabulary of thousands starts `W_s` so small that training
            can sit for epochs near a unigram model before it learns to translate.
        initializer: Optional initializer of every weight (embeddings, LSTM kernels,
            recurrent kernels and biases, bridge, attention, output layer), as the paper and
            OpenNMT-py start all of them uniform in ±0.1 (`RandomUniform(-0.1, 0.1)`).
            Defaults to `None`: each layer's Keras default, and `output_initializer`.
        attention_timing: `"luong"` (the default: the decoder attends with the LSTM's new
            state `h_t`, and the projection reads `h̃_t = tanh(W_c [c_t; h_t])`) or
            `"bahdanau"`: the decoder of Bahdanau, Cho and Bengio (2015), a `BahdanauDecoder`,
            which attends with the previous state `s_{t-1}`, feeds `[y_{t-1}; c_t]` to the
            LSTM, and projects the maxout deep output of `[s_t; c_t; y_{t-1}]` (`units` wide).
            Every alignment and score works with either; `input_feeding` and
            `output_attention` are Luong's and keep their defaults with `"bahdanau"`.
        encoder: Optional encoder layer of your own, in place of the built-in
            `RecurrentEncoder`: called as `encoder(embedded, mask=source_mask,
            training=training)`, it returns `(sequence, sequence_mask, final_states)` (the
            encoder contract of `keras_luong.models.parts`). `bidirectional`,
            `encoder_layers` and `encoder_cell` are then its own business. Either way the
            layer is `model.source_encoder`.
        encoder_layers: Stacked recurrent layers in the built-in encoder (each bidirectional
            when `bidirectional`; `dropout` between them). Defaults to 1.
        encoder_cell: `"lstm"` (the default) or `"gru"`.
        reverse_source: Read each source backwards (its real tokens in reverse order), as
            Sutskever et al. and Luong et al. did. Attention weights returned by `call` (and
            `generate`'s alignments) are put back in the source's order, for the built-in
            encoder. Defaults to `False`.
        decoder_cell: `"lstm"` (the default), `"gru"` (`decoder_layers` of them), or any Keras
            RNN cell object, which is then the whole cell (`decoder_layers` stays 1; stack
            cells with `keras.layers.StackedRNNCells`).
        bridge: How the decoder's first states come from the encoder's final ones:
            `"learned"` (the default: `tanh(W_h h)`, `tanh(W_c c)` of the top encoder layer,
            given to every decoder layer), `"zeros"`, or `"copy"` (encoder layer `l`'s final
            states start decoder layer `l`, as in the paper: same depth, cell and size).
        share_embeddings: One embedding matrix for source and target (their vocabularies must
            have one size, and mean the same ids). Defaults to `False`.
        source_embeddings: Optional matrix `(source_vocabulary_size, embedding_dim)` to start
            the source embedding from (pretrained vectors); not stored in the config, the
            weights carry it.
        target_embeddings: The same for the target embedding.
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
        attention_arguments=None,
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
        initializer=None,
        encoder=None,
        encoder_layers=1,
        encoder_cell="lstm",
        reverse_source=False,
        decoder_cell="lstm",
        bridge="learned",
        share_embeddings=False,
        source_embeddings=None,
        target_embeddings=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        sampling_probability = check_arguments(**locals())
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.units = units
        self.embedding_dim = embedding_dim
        self.alignment = alignment if isinstance(alignment, str) else None  # else the layer's
        self.score_mode = score_mode
        self.window = window
        self.attention_arguments = (
            None if attention_arguments is None else dict(attention_arguments)
        )
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
        self.encoder_layers = encoder_layers
        self.encoder_cell = encoder_cell
        self.reverse_source = reverse_source
        self.bridge = bridge
        self.share_embeddings = share_embeddings
        self.user_encoder = encoder is not None
        self.initializer = init = (
            None if initializer is None else keras.initializers.get(initializer)
        )
        if output_initializer is None:
            output_initializer = init or keras.initializers.RandomUniform(-0.1, 0.1)
        self.output_initializer = keras.initializers.get(output_initializer)
        self.sampling_probability, self.sampling_seed = scheduled.sampling_state(
            self, scheduled_sampling, sampling_probability
        )
        dtype = self.dtype_policy

        self.source_embedding = embedding(
            source_vocabulary_size, embedding_dim, source_embeddings, "source_embeddings",
            dtype, init, "source_embedding",
        )  # fmt: skip
        # The source encoder, under the encoder contract (models/parts.py): the user's layer,
        # or the built-in RecurrentEncoder.
        if encoder is None:
            encoder = RecurrentEncoder(
                units, encoder_layers, encoder_cell, bidirectional, dropout, init,
                dtype=dtype, name="recurrent_encoder",
            )  # fmt: skip
        self.source_encoder = encoder
        # The bridge's layers before the target embedding: the order the layers draw their
        # initial weights in stays that of earlier releases.
        self.state_kinds = state_kinds(decoder_cell, decoder_layers)
        if bridge == "learned":
            self.bridge_h, self.bridge_c = bridge_layers(self.state_kinds, units, dtype, init)
        if share_embeddings:
            self.target_embedding = self.source_embedding
        else:
            self.target_embedding = embedding(
                target_vocabulary_size, embedding_dim, target_embeddings, "target_embeddings",
                dtype, init, "target_embedding",
            )  # fmt: skip
        attention = alignment
        if isinstance(alignment, str):
            attention = make_attention(
                alignment, units=units, score_mode=score_mode, window=window,
                max_source_length=max_source_length, dropout=attention_dropout,
                attentional_units=units if attention_timing == "luong" else None, dtype=dtype,
                name="attention", **initializer_arguments(init, "kernel_initializer"),
                **(self.attention_arguments or {}),
            )  # fmt: skip
        self.decoder_cell = decoder_cell if isinstance(decoder_cell, str) else None
        cell = decoder_cells(decoder_cell, units, decoder_layers, dtype, init, dropout)
        self.decoder = make_decoder(
            cell, attention, attention_timing, units, dtype,
            input_feeding=input_feeding, output_attention=output_attention,
        )  # fmt: skip
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=dtype)
        self.projection = keras.layers.Dense(
            target_vocabulary_size,
            kernel_initializer=self.output_initializer,
            dtype=dtype,
            name="logits",
            **initializer_arguments(init, "bias_initializer"),
        )
        # The logits carry the target's padding mask, which Keras' losses and metrics leave out.
        self.logits_mask = MaskCarrier(dtype=dtype)

    @property
    def encoder(self):
        """The user's encoder layer, or the built-in encoder's first recurrent layer.

        With `encoder_stack`, the built-in encoder's layers where `.keras` files keep their
        weights (Keras saves a layer's weights under the attribute that reaches it first)."""
        if self.user_encoder:
            return self.source_encoder
        return self.source_encoder.recurrent_layers[0]

    @property
    def encoder_stack(self):
        """The built-in encoder's recurrent layers above its first (see `encoder`)."""
        return [] if self.user_encoder else list(self.source_encoder.recurrent_layers[1:])

    def encode(self, source, training=None):
        """`(value, value_mask, decoder_cell_states)` for source ids `(B, S)`: the encoder
        states, their mask and the bridged initial states of the decoder's cell. With
        `reverse_source=True` the states are those of the reversed source (each row's real
        tokens in reverse order, then its padding)."""
        source = known_ids(source, self.source_vocabulary_size)
        if self.reverse_source:
            source = reverse_tokens(source)
        source_mask = ops.not_equal(source, 0)
        embedded = self.dropout_layer(self.source_embedding(source), training=training)
        value, value_mask, final_states = call_encoder(
            self.source_encoder, embedded, source_mask, training
        )
        dense = {"h": getattr(self, "bridge_h", None), "c": getattr(self, "bridge_c", None)}
        states = bridge_states(
            self.bridge, final_states, self.state_kinds, self.decoder.cell.cell_state_size,
            dense, value,
        )  # fmt: skip
        return value, value_mask, states

    def call(self, inputs, training=None, return_attention_scores=False):
        source, target_in = unpack_inputs(inputs)
        if not training:  # a direct call: ids whose values can be seen are checked
            check_token_ids("source", source, self.source_vocabulary_size, rank=2)
            check_token_ids("target_in", target_in, self.target_vocabulary_size, rank=2)
        target_in = known_ids(target_in, self.target_vocabulary_size)
        target_mask = ops.not_equal(target_in, 0)
        if training and self.scheduled_sampling and not return_attention_scores:
            logits = scheduled.scheduled_logits(self, source, target_in, training)
            return self.logits_mask(logits, mask=target_mask)
        value, value_mask, states = self.encode(source, training=training)
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
        if weights is not None and self.reverse_source and not self.user_encoder:
            weights = unreverse(weights, known_ids(source, self.source_vocabulary_size))
        logits = sequence_logits(
            self.projection, self.dropout_layer(attentional, training=training)
        )
        logits = self.logits_mask(logits, mask=target_mask)
        if return_attention_scores:
            return logits, weights
        return logits

    def next_token_logits(
        self, token, states, memory, step, return_attention_scores=False, logits_bias=None,
        training=None, dropout_masks=None,
    ):  # fmt: skip
        """One decoding step from the previous token: `(logits, h̃, new_states)` (and the
        step's attention weights `(batch_size, S)` if asked for); `memory` is
        `self.decoder.prepare(value, value_mask)`, prepared once per source. `logits_bias`
        `(V,)`, if given, is added to the logits, in float32. Scheduled sampling trains
        through the same step: `training`, and the dropout masks of the embedding and of `h̃`
        drawn ahead (`dropout_masks`, a pair, or `None`)."""
        # A one-token sequence, sliced: the padding mask of a single step means nothing here.
        embedded = step_call(self.target_embedding, token)
        if dropout_masks is not None:
            embedded = embedded * dropout_masks[0]
        attentional, states, *weights = self.decoder.step(
            embedded, states, memory, step=step, training=training,
            return_attention_scores=return_attention_scores,
        )  # fmt: skip
        features = attentional if dropout_masks is None else attentional * dropout_masks[1]
        logits = step_logits(self.projection, features, logits_bias)
        return (logits, attentional, states, *weights)

    def get_config(self):
        return stored_config(self, super().get_config(), LuongSeq2Seq.__init__)

    @classmethod
    def from_config(cls, config):
        return cls(**arguments_from_config(config))
