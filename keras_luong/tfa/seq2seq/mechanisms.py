"""tensorflow-addons' attention mechanisms over keras-luong's attention layers.

A tensorflow-addons mechanism holds its memory: given to the constructor or to
`setup_memory(memory, memory_sequence_length)`, it is masked and projected once, and the
mechanism is then called on `[query, state]` for the alignments `(batch, max_time)` and the
next state. Each mechanism here keeps a keras-luong layer (`mechanism.attention`) that owns the
weights and the score, prepares the memory with the layer's `prepare`, and scores with the
layer's `score`; what this module adds is tensorflow-addons' way of calling it.
"""

import keras
import numpy as np
from keras import ops

from keras_luong.attention.bahdanau_attention import (
    BahdanauAttention as KerasBahdanauAttention,
)
from keras_luong.attention.global_attention import GlobalAttention
from keras_luong.attention.monotonic_attention import safe_cumprod as exclusive_safe_cumprod
from keras_luong.backend.loops import known_values
from keras_luong.checks import MASKED_SCORE, check_one_of


def hardmax(logits, name=None):
    """One-hot vectors at each row's largest logit (the first on ties), in the logits' dtype:
    tensorflow-addons' `hardmax`.

    Args:
        logits: The logits `(..., depth)`.
        name: Unused (tensorflow-addons' name scope).
    """
    logits = ops.convert_to_tensor(logits)
    return ops.one_hot(ops.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)


def safe_cumprod(x, axis=0, exclusive=False, reverse=False):
    """The cumulative product of `x` computed as `exp(cumsum(log(x)))`, `x` clipped to
    `[tiny, 1]` first: tensorflow-addons' `safe_cumprod`, called as `tf.math.cumprod` is.

    Args:
        x: The tensor, of values in `[0, 1]`.
        axis: The axis of the product. Defaults to 0.
        exclusive: Whether each product leaves out its own entry. Defaults to `False`.
        reverse: Whether the product runs from the end of the axis. Defaults to `False`.
    """
    x = ops.convert_to_tensor(x)
    if exclusive and not reverse and axis in (-1, len(x.shape) - 1):
        return exclusive_safe_cumprod(x)  # keras-luong's own, for its monotonic attention
    tiny = float(np.finfo(keras.backend.standardize_dtype(x.dtype)).tiny)
    logs = ops.log(ops.clip(x, tiny, 1.0))
    if reverse:
        logs = ops.flip(logs, axis=axis)
    sums = ops.cumsum(logs, axis=axis)
    if exclusive:
        sums = sums - logs
    result = ops.exp(sums)
    return ops.flip(result, axis=axis) if reverse else result


def probability_function(name):
    """tensorflow-addons' `probability_fn` names: `"softmax"` or `"hardmax"`."""
    check_one_of("probability_fn", name, ("softmax", "hardmax"))
    return hardmax if name == "hardmax" else (lambda score: ops.softmax(score, axis=-1))


class AttentionMechanism(keras.layers.Layer):
    """The base of tensorflow-addons' attention mechanisms: the memory, set up once, and the
    call on `[query, state]`.

    A subclass sets `self.attention`, the keras-luong layer that owns the weights and scores,
    and writes `probabilities(score, state)`; or `alignments(query, state, memory)` for
    another rule.

    Call arguments:
        inputs: `[query, state]`: the query `(batch, query_depth)` and the previous state
            `(batch, max_time)` (or `None` where the mechanism does not read it); or, with
            `setup_memory=True`, the memory `(batch, max_time, depth)` (or `[memory,
            memory_sequence_length]`).
        mask: With `setup_memory=True`, an optional boolean mask `(batch, max_time)` of the
            memory, in place of `memory_sequence_length`.
        setup_memory: Whether `inputs` is a memory to set up. Defaults to `False`.

    Returns:
        `(alignments, next_state)`, each `(batch, max_time)`; the masked memory (`values`)
        with `setup_memory=True`.
    """

    def __init__(self, **kwargs):
        # tensorflow-addons' own projection layers: the adapter's kernels take their
        # initializers (a config's entries for them are dicts, and are dropped).
        layers = {name: kwargs.pop(name, None) for name in ("memory_layer", "query_layer")}
        super().__init__(**kwargs)
        self._given_layers = {}
        for name, layer in layers.items():
            if layer is None or isinstance(layer, dict):
                continue
            if (
                not isinstance(layer, keras.layers.Dense)
                or layer.use_bias
                or layer.activation
                not in (
                    None,
                    keras.activations.linear,
                )
            ):
                raise ValueError(
                    f"Invalid value for argument {name}. The adapter takes a Dense layer without "
                    f"bias or activation, for its kernel's initializer. Received: {name}={layer!r}"
                )
            self._given_layers[name] = layer
        self.supports_masking = True
        self.values = self.keys = self.batch_size = None
        self._memory = self._mask = self._given_memory = None
        self._memory_initialized = False

    def _setup_given_memory(self, memory, memory_sequence_length):
        """The constructor's last step: sets up the memory it was given, if any."""
        if memory is not None:
            self.setup_memory(memory, memory_sequence_length)

    @property
    def memory_initialized(self):
        """Whether a memory is set up."""
        return self._memory_initialized

    @property
    def alignments_size(self):
        """The memory's `max_time`."""
        return self.values.shape[1]

    @property
    def state_size(self):
        return self.alignments_size

    def _build_attention(self, query_depth, memory_shape):
        """Builds `self.attention` for queries of `query_depth` over `memory_shape`."""
        if self.attention.built:
            return
        self.attention.build((None, query_depth), tuple(memory_shape))
        # tensorflow-addons' memory_layer is the key kernel, its query_layer the query's.
        for name, kernel in (("memory_layer", "key_kernel"), ("query_layer", "query_kernel")):
            layer, weight = self._given_layers.get(name), getattr(self.attention, kernel, None)
            if layer is not None and weight is not None:
                if layer.units != weight.shape[-1]:
                    raise ValueError(
                        f"Invalid value for argument {name}: its units ({layer.units}) must be "
                        f"the mechanism's ({weight.shape[-1]})."
                    )
                initializer = keras.initializers.get(layer.kernel_initializer)
                weight.assign(initializer(weight.shape, dtype=weight.dtype))

    def _known_query_depth(self):
        """The query depth before any query is seen (Luong's: `units`), or `None`."""
        return None

    def build(self, input_shape=None):
        if isinstance(input_shape, (list, tuple)) and input_shape:
            if isinstance(input_shape[0], (list, tuple)):  # [query shape, state shape]
                memory_shape = None if self.values is None else self.values.shape
                if memory_shape is not None:
                    self._build_attention(input_shape[0][-1], memory_shape)
            elif self._known_query_depth() is not None:  # a memory's shape
                self._build_attention(self._known_query_depth(), input_shape)
        self.built = True

    def setup_memory(self, memory, memory_sequence_length=None, memory_mask=None):
        """Masks the memory and projects it once, for the calls that follow.

        Args:
            memory: The memory `(batch, max_time, depth)`, usually an encoder's outputs.
            memory_sequence_length: Optional lengths `(batch,)`: positions past a row's
                length are zeroed and never attended to.
            memory_mask: Optional boolean mask `(batch, max_time)`, in place of the lengths.
        """
        if memory_sequence_length is not None and memory_mask is not None:
            raise ValueError(
                "memory_sequence_length and memory_mask cannot be used at the same time. "
                f"Received: memory_sequence_length={memory_sequence_length!r}, "
                f"memory_mask={memory_mask!r}"
            )
        memory = ops.convert_to_tensor(memory)
        if len(memory.shape) != 3 or memory.shape[-1] is None:
            raise ValueError(
                "Invalid value for argument memory. Expected (batch_size, max_time, depth) "
                f"with a known depth. Received: memory.shape={tuple(memory.shape)}"
            )
        if memory_sequence_length is not None:
            lengths = memory_sequence_length
            known = known_values(ops.convert_to_tensor(lengths))
            if known is not None and np.any(known < 1):
                raise ValueError(
                    "All values in memory_sequence_length must be greater than zero. "
                    f"Received: memory_sequence_length={known.tolist()}"
                )
            positions = ops.arange(ops.shape(memory)[1], dtype="int32")
            memory_mask = ops.less(positions[None], ops.cast(lengths, "int32")[:, None])
        elif memory_mask is not None:
            memory_mask = ops.cast(memory_mask, "bool")
        if self._known_query_depth() is not None:
            self._build_attention(self._known_query_depth(), memory.shape)
        self.values = self._given_memory = memory
        self._mask = memory_mask
        self._memory = None
        if self.attention.built:
            self._prepare()
        self.batch_size = memory.shape[0] or ops.shape(memory)[0]
        self._memory_initialized = True

    def _prepare(self):
        self._memory = self.attention.prepare(self.values, self._mask)
        self.values, self.keys = self._memory["value"], self._memory["keys"]

    def __call__(self, inputs, **kwargs):
        if kwargs.get("setup_memory", False):
            self._memory_initialized = False
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) not in (2, 3, 4):
                raise ValueError(
                    f"Expected the inputs to be [query, state]. Received: {len(inputs)} inputs"
                )
            if len(inputs) == 2 and keras.backend.is_keras_tensor(self._given_memory):
                # A memory given as a Keras symbolic tensor (a functional model's encoder
                # outputs) joins the inputs, so that the model's graph reaches it.
                inputs = [*inputs, self._given_memory]
                if self._mask is not None:
                    inputs.append(self._mask)
        return super().__call__(inputs, **kwargs)

    def call(self, inputs, mask=None, setup_memory=False):
        if setup_memory:
            if isinstance(inputs, (list, tuple)):
                memory, lengths = inputs[0], inputs[1] if len(inputs) > 1 else None
            else:
                memory, lengths = inputs, None
            self.setup_memory(memory, lengths, None if lengths is not None else mask)
            return self.values
        query, state = inputs[0], inputs[1]
        query = ops.convert_to_tensor(query, self.compute_dtype)
        if len(inputs) > 2:  # [query, state, memory(, mask)]: the memory is prepared here
            memory = ops.convert_to_tensor(inputs[2])
            self._build_attention(query.shape[-1], memory.shape)
            memory_mask = ops.cast(inputs[3], "bool") if len(inputs) > 3 else None
            return self.alignments(query, state, self.attention.prepare(memory, memory_mask))
        if not self._memory_initialized:
            raise ValueError(
                f"{self.name} has no memory to attend to: give it to the constructor "
                "(memory=...) or call setup_memory(memory) first."
            )
        if self._memory is None:  # the query's depth was needed to build the layer
            self._build_attention(query.shape[-1], self.values.shape)
            self._prepare()
        return self.alignments(query, state, self._memory)

    def alignments(self, query, state, memory):
        score = self.attention.score(query[:, None], memory["keys"])[:, 0]
        mask = memory.get("mask")
        if mask is not None:
            score = ops.where(mask, score, ops.cast(MASKED_SCORE, score.dtype))
        alignments = self.probabilities(score, state)
        return alignments, alignments

    def compute_mask(self, inputs, mask=None):
        return None

    def initial_alignments(self, batch_size, dtype):
        """Zeros `(batch_size, max_time)`: the alignments before the first step.

        Args:
            batch_size: The number of rows.
            dtype: Their dtype.
        """
        return ops.zeros((batch_size, ops.shape(self.values)[1]), dtype=dtype)

    def initial_state(self, batch_size, dtype):
        """The state before the first step: `initial_alignments`.

        Args:
            batch_size: The number of rows.
            dtype: Their dtype.
        """
        return self.initial_alignments(batch_size, dtype)

    def get_config(self):
        return {**super().get_config(), "memory": None}


class LuongAttention(AttentionMechanism):
    """tensorflow-addons' `LuongAttention`: `score = h_t · W h̄_s` (times a learned scalar
    with `scale=True`), over keras-luong's `GlobalAttention("general")`, whose `key_kernel`
    is tensorflow-addons' `memory_layer` kernel and whose `scale` is its `attention_g`.

    Args:
        units: The depth of the keys, which must be the query's depth.
        memory: Optional memory `(batch, max_time, depth)`; else `setup_memory` sets it.
        memory_sequence_length: Optional lengths `(batch,)` of the memory's rows.
        scale: Whether a learned scalar multiplies the score. Defaults to `False`.
        probability_fn: `"softmax"` (the default) or `"hardmax"`.
        dtype: The layer's dtype.
        name: The layer's name. Defaults to `"LuongAttention"`.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        scale=False,
        probability_fn="softmax",
        dtype=None,
        name="LuongAttention",
        **kwargs,
    ):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.units = units
        self.scale = scale
        self.probability_fn_name = probability_fn
        self.probability_fn = probability_function(probability_fn)
        self.attention = GlobalAttention(
            "general", use_scale=scale, name="luong_attention", dtype=dtype
        )
        self._setup_given_memory(memory, memory_sequence_length)

    def _known_query_depth(self):
        return self.units

    def probabilities(self, score, state):
        return self.probability_fn(score)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "scale": self.scale,
            "probability_fn": self.probability_fn_name,
        }


class BahdanauAttention(AttentionMechanism):
    """tensorflow-addons' `BahdanauAttention`: `score = v · tanh(W_q h_t + W_k h̄_s)` (weight
    normalised with `normalize=True`), over keras-luong's `BahdanauAttention`, whose weights
    are tensorflow-addons' one for one (`key_kernel` its `memory_layer`, `query_kernel` its
    `query_layer`, `score_kernel` its `attention_v`, `score_gain`/`score_offset` its
    `attention_g`/`attention_b`). The query's depth is read at the first call.

    Args:
        units: The width of the score's hidden layer.
        memory: Optional memory `(batch, max_time, depth)`; else `setup_memory` sets it.
        memory_sequence_length: Optional lengths `(batch,)` of the memory's rows.
        normalize: Whether the score is weight normalised. Defaults to `False`.
        probability_fn: `"softmax"` (the default) or `"hardmax"`.
        kernel_initializer: The kernels' initializer. Defaults to `"glorot_uniform"`.
        dtype: The layer's dtype.
        name: The layer's name. Defaults to `"BahdanauAttention"`.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        normalize=False,
        probability_fn="softmax",
        kernel_initializer="glorot_uniform",
        dtype=None,
        name="BahdanauAttention",
        **kwargs,
    ):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.units = units
        self.normalize = normalize
        self.kernel_initializer = kernel_initializer
        self.probability_fn_name = probability_fn
        self.probability_fn = probability_function(probability_fn)
        self.attention = KerasBahdanauAttention(
            units,
            normalize=normalize,
            kernel_initializer=kernel_initializer,
            name="bahdanau_attention",
            dtype=dtype,
        )
        self._setup_given_memory(memory, memory_sequence_length)

    def probabilities(self, score, state):
        return self.probability_fn(score)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "normalize": self.normalize,
            "probability_fn": self.probability_fn_name,
            "kernel_initializer": keras.initializers.serialize(
                keras.initializers.get(self.kernel_initializer)
            ),
        }
