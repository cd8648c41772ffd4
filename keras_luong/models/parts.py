"""The parts `LuongSeq2Seq` is built from: its encoder, the bridge from the encoder's final
states to the decoder's, and its decoder.

The encoder contract, which the built-in recurrent encoder meets and a user's encoder layer
(`LuongSeq2Seq(encoder=...)`) must meet:

    encoder(embedded, mask=source_mask, training=training)
        -> (sequence, sequence_mask, final_states)

- `embedded` `(B, S, embedding_dim)`: the embedded source; `source_mask` `(B, S)` boolean.
- `sequence` `(B, S', d)`: the states attention reads (`S'` may differ from `S`, as in a
  speech encoder that downsamples), `sequence_mask` `(B, S')` their mask (or `None`: all real).
- `final_states`: one list per encoder layer, bottom first, of that layer's final state
  tensors `(B, d_l)`: `[h]` (GRU) or `[h, c]` (LSTM), both directions concatenated.
"""

import warnings
import weakref

import keras
from keras import ops

from keras_luong.backend.loops import take_along_rows
from keras_luong.backend.masked_lstm import run_encoder
from keras_luong.checks import check_integer, check_one_of, check_rate
from keras_luong.models.initializers import (
    dense_arguments,
    initializer_arguments,
    recurrent_arguments,
)

CELLS = ("lstm", "gru")
BRIDGES = ("learned", "zeros", "copy")
# Keras' warning for a `mask=` given to a layer without `supports_masking` (a regex).
MASK_WARNING = r"Layer '.*' \(of type .*\) was passed an input with a mask attached"

# Each `Bidirectional` wrapper's template layer, kept alive as long as the wrapper. The wrapper
# copies the template by serializing it, and inside `keras.saving.load_model` Keras remembers
# every serialized object by `id()` for the whole load. A template collected in the middle of a
# load freed the `id()`s of its objects (its cell's initializers among them) for later ones: a
# later template given such an `id()` was copied as whatever Keras had remembered for it, and
# the load failed now and then with two directions that both had go_backwards=False.
_TEMPLATES = weakref.WeakKeyDictionary()


def embedding(size, dim, weights, argument, dtype, initializer, name):
    """A masked `Embedding` of `size` ids, started from the matrix `weights` `(size, dim)`
    when given (pretrained vectors; the argument named `argument`), else from `initializer`
    or Keras' default."""
    if weights is not None:
        shape = tuple(getattr(weights, "shape", ()))
        if shape != (size, dim):
            raise ValueError(
                f"Invalid value for argument {argument}. Expected a matrix of shape "
                f"{(size, dim)} (vocabulary size, embedding_dim). Received: a value of "
                f"shape {shape}"
            )
        weights = [weights]
    return keras.layers.Embedding(
        size,
        dim,
        mask_zero=True,
        weights=weights,
        dtype=dtype,
        name=name,
        **initializer_arguments(initializer, "embeddings_initializer"),
    )


def unreverse(weights, source):
    """Attention weights `(B, T, S)` over the reversed source (`reverse_tokens`) put back in
    the order of `source`'s positions."""
    order = ops.argsort(_reversal_key(source), axis=-1)
    inverse = ops.expand_dims(ops.argsort(order, axis=-1), 1)
    return ops.take_along_axis(weights, ops.broadcast_to(inverse, ops.shape(weights)), axis=-1)


def _reversal_key(ids):
    length = ops.shape(ids)[1]
    positions = ops.expand_dims(ops.arange(length, dtype="int32"), 0)
    # Real tokens sort by decreasing position, ahead of every padding position.
    return ops.where(ops.not_equal(ids, 0), -positions, length + positions)


def check_encoder_units(units, bidirectional):
    """Refuses odd `units` for a bidirectional encoder, which splits them between its two
    directions."""
    if bidirectional and units % 2:
        raise ValueError(
            "A bidirectional encoder splits units between its two directions, so units "
            f"must be even. Received: units={units!r}"
        )


def recurrent_layer(cell, units, bidirectional, dtype, initializer=None, index=0):
    """The encoder's layer `index` (from 0): an LSTM or GRU layer returning its sequence and
    final states; bidirectional: `units // 2` a direction, in `keras.layers.Bidirectional`."""
    name = "encoder" if index == 0 else f"encoder_{index + 1}"
    layer_class = keras.layers.LSTM if cell == "lstm" else keras.layers.GRU
    arguments = recurrent_arguments(initializer, cell)
    layer = layer_class(
        units // 2 if bidirectional else units,
        return_sequences=True,
        return_state=True,
        dtype=dtype,
        name=name,
        **arguments,
    )
    if bidirectional:
        # The first layer keeps the name of the single encoder of earlier releases.
        wrapper = "bidirectional" if name == "encoder" else f"bidirectional_{name}"
        template, layer = layer, keras.layers.Bidirectional(layer, dtype=dtype, name=wrapper)
        _TEMPLATES[layer] = template
    return layer


@keras.saving.register_keras_serializable(package="keras_luong")
class MaskCarrier(keras.layers.Layer):
    """Returns its input with `mask` as its Keras mask (the mask Keras' losses and metrics
    read from a model's outputs in `fit` and `evaluate`).

    A model's own `compute_mask` does not set it everywhere: JAX's trainer runs the model's
    `call` (`stateless_call`), not its `__call__`, so only a layer called inside `call` marks
    the outputs. Logits made by reshaping (`sequence_logits`) or by a loop lose the mask of
    the decoder's outputs; this puts the target's back."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


@keras.saving.register_keras_serializable(package="keras_luong")
class RecurrentEncoder(keras.layers.Layer):
    """The built-in encoder of `LuongSeq2Seq` as a layer under the encoder contract, for a
    model composed from parts (or `LuongSeq2Seq(encoder=...)`).

    Stacked LSTM or GRU layers over embedded source tokens; each layer above the first reads
    the sequence below it through `dropout`. Bidirectional layers run `units // 2` a direction
    and concatenate them, final states included.

    Args:
        units: The size of each layer's output (both directions together).
        layers: The number of stacked recurrent layers. Defaults to 1.
        cell: `"lstm"` or `"gru"`. Defaults to `"lstm"`.
        bidirectional: Each layer a `keras.layers.Bidirectional` (`units` must then be even).
            Defaults to `True`.
        dropout: The dropout rate between layers. Defaults to 0.
        initializer: The initializer of every weight, or `None` for Keras' own defaults.

    Call arguments:
        embedded: `(B, S, d)` embedded tokens.
        mask: `(B, S)` boolean mask of the real tokens, or `None`.
        training: Whether dropout is on.

    Returns:
        `(sequence, mask, final_states)`: the top layer's `(B, S, units)` states, `mask` as
        given (all true when none is), and one list per layer, bottom first, of its final
        states `(B, units)` (`[h]` for a GRU, `[h, c]` for an LSTM).

    Example:

    >>> encoder = RecurrentEncoder(8, layers=2)
    >>> sequence, mask, final_states = encoder(keras.ops.ones((2, 5, 4)))
    >>> tuple(sequence.shape), [len(states) for states in final_states]
    ((2, 5, 8), [2, 2])
    """

    def __init__(
        self,
        units,
        layers=1,
        cell="lstm",
        bidirectional=True,
        dropout=0.0,
        initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_integer("units", units)
        self.layers = check_integer("layers", layers)
        self.cell = check_one_of("cell", cell, CELLS)
        check_encoder_units(units, bidirectional)
        self.bidirectional = bool(bidirectional)
        self.dropout = check_rate("dropout", dropout)
        self.initializer = None if initializer is None else keras.initializers.get(initializer)
        self.recurrent_layers = [
            recurrent_layer(cell, units, bidirectional, self.dtype_policy, self.initializer, i)
            for i in range(layers)
        ]
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.supports_masking = True

    def build(self, embedded_shape, mask_shape=None):
        shape = tuple(embedded_shape)
        for layer in self.recurrent_layers:
            layer.build(shape)
            shape = shape[:-1] + (self.units,)

    def call(self, embedded, mask=None, training=None):
        sequence, final_states = run_recurrent_layers(
            self.recurrent_layers, embedded, mask, self.dropout_layer, training
        )
        if mask is None:  # every position real
            mask = ops.ones(ops.shape(embedded)[:2], "bool")
        return sequence, mask, final_states

    def compute_mask(self, embedded, mask=None):
        return None

    def compute_output_shape(self, embedded_shape, mask_shape=None):
        batch, length = tuple(embedded_shape)[:2]
        final = [[(batch, self.units)] * len(state_kinds(self.cell)) for _ in self.recurrent_layers]
        return (batch, length, self.units), (batch, length), final

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "layers": self.layers,
                "cell": self.cell,
                "bidirectional": self.bidirectional,
                "dropout": self.dropout,
                "initializer": None
                if self.initializer is None
                else keras.initializers.serialize(self.initializer),
            }
        )
        return config


def run_recurrent_layers(layers, embedded, mask, dropout, training=None):
    """`(sequence, final_states)` of recurrent layers stacked over `embedded`: each layer reads
    the sequence below it (through `dropout`, as the embeddings do); `final_states` as the
    encoder contract says, directions concatenated per state."""
    sequence, final_states = embedded, []
    for index, layer in enumerate(layers):
        if index:
            sequence = dropout(sequence, training=training)
        sequence, *states = run_encoder(layer, sequence, mask, training)
        if isinstance(layer, keras.layers.Bidirectional):
            half = len(states) // 2
            states = [
                ops.concatenate([forward, backward], axis=-1)
                for forward, backward in zip(states[:half], states[half:], strict=True)
            ]
        final_states.append(states)
    return sequence, final_states


def reverse_tokens(ids):
    """Each row's real tokens (non-zero) in reverse order, first, then its padding: the
    reversed source of Sutskever et al. and of Luong et al.'s models."""
    return take_along_rows(ids, ops.argsort(_reversal_key(ids), axis=-1))


def state_kinds(cell, layers=1):
    """`"h"` or `"c"` for each of a decoder cell's flattened states: `"lstm"` (`layers` of them)
    or an `LSTMCell`, `h, c`; `"gru"`, `h`; a stacked cell's, its cells' in order; any other
    cell's states are all `"h"`."""
    if isinstance(cell, str):
        return (["h", "c"] if cell == "lstm" else ["h"]) * layers
    if isinstance(cell, keras.layers.LSTMCell):
        return ["h", "c"]
    if isinstance(cell, keras.layers.StackedRNNCells):
        return [kind for inner in cell.cells for kind in state_kinds(inner)]
    sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]
    return ["h"] * len(keras.tree.flatten(sizes))


def check_bridge(bridge, encoder_cell, encoder_layers, decoder_cell, decoder_layers):
    """The `bridge` argument, checked against the parts it joins (`"copy"` passes encoder layer
    `l`'s final states to decoder layer `l`, so both stacks must have the same depth and cell)."""
    check_one_of("bridge", bridge, BRIDGES)
    if bridge != "copy":
        return bridge
    if not isinstance(encoder_cell, str) or not isinstance(decoder_cell, str):
        return bridge  # checked against the states themselves when they are made
    if encoder_layers != decoder_layers or encoder_cell != decoder_cell:
        raise ValueError(
            "bridge='copy' passes each encoder layer's final states to the decoder layer of "
            "the same depth, so the encoder and decoder need the same number of layers and "
            f"the same cell. Received: bridge='copy' with encoder_layers={encoder_layers}, "
            f"encoder_cell={encoder_cell!r}, decoder_layers={decoder_layers}, "
            f"decoder_cell={decoder_cell!r}"
        )
    return bridge


def call_encoder(encoder, embedded, mask, training=None):
    """`(sequence, sequence_mask, final_states)` of `encoder` under the encoder contract,
    `sequence_mask` being `mask` where the encoder returns none."""
    # A copy: the embedding's Keras mask stays behind (the mask is an argument). Keras warns
    # that a layer without `supports_masking` given a `mask=` "destroys" it; the contract
    # hands the encoder its mask and takes back the one it returns.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", MASK_WARNING, UserWarning)
        sequence, sequence_mask, final_states = encoder(
            ops.copy(embedded), mask=mask, training=training
        )
    return sequence, mask if sequence_mask is None else sequence_mask, final_states


def bridge_layers(kinds, units, dtype, initializer=None):
    """The `"learned"` bridge's `Dense(units, "tanh")` layers `(bridge_h, bridge_c)`, each
    `None` where the decoder has no state of that kind (`kinds`, from `state_kinds`)."""
    return tuple(
        keras.layers.Dense(
            units, "tanh", dtype=dtype, name=f"bridge_{kind}", **dense_arguments(initializer)
        )
        if kind in kinds
        else None
        for kind in ("h", "c")
    )


def bridge_states(bridge, final_states, kinds, sizes, dense, batch_like):
    """The decoder cell's initial states from the encoder's per-layer `final_states`.

    `"learned"`: `dense["h"](h)` (and `dense["c"](c)`, from `h` where the encoder keeps no
    carry) of the top encoder layer, for every decoder state of that kind; `"zeros"`; `"copy"`:
    the encoder's final states, layer for layer, as they are."""
    if bridge == "zeros":
        batch = ops.shape(batch_like)[0]
        return [ops.zeros((batch, size), dtype=batch_like.dtype) for size in sizes]
    if bridge == "learned":
        top = final_states[-1]
        made = {"h": dense["h"](top[0])}
        if "c" in kinds:
            made["c"] = dense["c"](top[1] if len(top) > 1 else top[0])
        return [made[kind] for kind in kinds]
    copied = [state for layer in final_states for state in layer]
    shapes = [int(state.shape[-1]) for state in copied]
    if shapes != list(sizes):
        raise ValueError(
            "bridge='copy' passes the encoder's final states to the decoder as they are, so "
            f"their sizes must be the decoder cell's state sizes {list(sizes)}. Received: "
            f"final states of sizes {shapes}"
        )
    return copied


def decoder_cells(cell, units, layers, dtype, initializer=None, dropout=0.0):
    """The decoder's Keras RNN cell: `layers` LSTM or GRU cells of `units` (stacked when more
    than one, each above the first with `dropout` on its input, the output of the one below),
    or `cell` itself when it is a cell object."""
    if not isinstance(cell, str):
        return cell
    check_one_of("decoder_cell", cell, CELLS)
    cell_class = keras.layers.LSTMCell if cell == "lstm" else keras.layers.GRUCell
    # Fresh initializers for each cell (see initializer_arguments).
    cells = [
        cell_class(
            units,
            dropout=dropout if index else 0.0,
            dtype=dtype,
            **recurrent_arguments(initializer, cell),
        )
        for index in range(layers)
    ]
    return keras.layers.StackedRNNCells(cells, dtype=dtype) if layers > 1 else cells[0]
