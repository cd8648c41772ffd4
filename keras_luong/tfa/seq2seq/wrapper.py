"""tensorflow-addons' `AttentionWrapper`: an RNN cell that attends after each step with one or
more of the adapter's mechanisms, and its state."""

import collections

import keras
from keras import ops

from keras_luong.tfa.seq2seq.mechanisms import AttentionMechanism


class AlignmentHistory:
    """The alignments of every step so far, where tensorflow-addons keeps a `TensorArray`:
    `write(index, alignments)` gives the history one step longer, `stack()` the alignments
    `[time, batch, max_time]`."""

    def __init__(self, steps=()):
        self.steps = tuple(steps)

    def write(self, index, value):
        return AlignmentHistory((*self.steps, value))

    def size(self):
        return len(self.steps)

    def stack(self):
        if not self.steps:
            raise ValueError("The alignment history is empty: no step has run yet.")
        return ops.stack(self.steps, axis=0)


def holds_history(structure):
    """Whether a call's arguments hold an `AlignmentHistory`: Keras' `Layer.__call__` refuses
    a nested argument that mixes tensors with other objects, so a layer called on such a
    state runs its `call` itself (as `AttentionWrapper` and the decoders do, built at their
    construction)."""
    return any(isinstance(x, AlignmentHistory) for x in keras.tree.flatten(structure))


class AttentionWrapperState(
    collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "alignments", "alignment_history", "attention_state"),
    )
):
    """The state of an `AttentionWrapper`: the cell's state, the attention the step emitted,
    the alignments, their history (`AttentionWrapper(alignment_history=True)`) and the
    mechanisms' own state."""

    def clone(self, **kwargs):
        """This state with the fields given replaced, each of the shape it replaces (the
        encoder's final state as `cell_state`, say).

        Args:
            **kwargs: The fields to replace.
        """

        def same_shape(old, new):
            if ops.is_tensor(old) and hasattr(new, "shape"):
                if tuple(old.shape) != tuple(new.shape):
                    raise ValueError(
                        "The shape of the AttentionWrapperState is expected to be the same as "
                        f"the one to clone. Received: {tuple(new.shape)} for "
                        f"{tuple(old.shape)}"
                    )
            return new

        replaced = self._replace(**kwargs)
        for name in kwargs:
            old, new = getattr(self, name), getattr(replaced, name)
            if keras.tree.is_nested(old) and keras.tree.is_nested(new):
                keras.tree.map_structure(same_shape, old, new)
            else:
                same_shape(old, new)
        return replaced


def compute_attention(mechanism, cell_output, attention_state, attention_layer):
    """One mechanism's `(attention, alignments, next_state)`: its alignments, the context
    they weigh from its values, and the attention layer's output of `[cell_output;
    context]` (the context itself without a layer)."""
    alignments, next_state = mechanism([cell_output, attention_state])
    context = ops.einsum(
        "bs,bsd->bd", ops.cast(alignments, mechanism.values.dtype), mechanism.values
    )
    if attention_layer is None:
        return context, alignments, next_state
    return attention_layer(ops.concatenate([cell_output, context], axis=-1)), alignments, next_state


class AttentionWrapper(keras.layers.Layer):
    """A cell that attends after each of its steps: tensorflow-addons' `AttentionWrapper`.

    At each step the cell reads `cell_input_fn(inputs, previous attention)` (their
    concatenation: input feeding), each mechanism scores the cell's output, and the attention
    is the attention layer's output of `[cell output; context]` (a `Dense` without bias or
    activation of `attention_layer_size` units), or the context without one. In keras-luong's
    own terms this is `InputFeedingCell` with `attentional_activation=None`.

    Args:
        cell: A Keras RNN cell.
        attention_mechanism: A mechanism of `keras_luong.tfa.seq2seq` (`LuongAttention`,
            ...), or a list of them.
        attention_layer_size: Optional units of the attention layer (a list, one per
            mechanism, for a list of mechanisms).
        alignment_history: Whether the state keeps every step's alignments. Defaults to
            `False`.
        cell_input_fn: Optional `(inputs, attention) -> cell inputs`. Defaults to their
            concatenation.
        output_attention: Whether the step outputs the attention (`True`, the default) or the
            cell's output.
        initial_cell_state: Optional cell state for `get_initial_state`.
        name: The layer's name.
        attention_layer: Optional layer (or list) in place of `attention_layer_size`'s.
        attention_fn: Optional `(mechanism, cell_output, attention_state, attention_layer) ->
            (attention, alignments, next_attention_state)`.
        **kwargs: Base layer keyword arguments, such as `dtype`.
    """

    def __init__(
        self,
        cell,
        attention_mechanism,
        attention_layer_size=None,
        alignment_history=False,
        cell_input_fn=None,
        output_attention=True,
        initial_cell_state=None,
        name=None,
        attention_layer=None,
        attention_fn=None,
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = list(attention_mechanism) if self._is_multi else [attention_mechanism]
        for mechanism in mechanisms:
            if not isinstance(mechanism, AttentionMechanism):
                raise ValueError(
                    "Invalid value for argument attention_mechanism. Expected mechanisms of "
                    f"keras_luong.tfa.seq2seq. Received: {mechanism!r}"
                )
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError(
                "Only one of attention_layer_size and attention_layer can be set. Received: "
                f"attention_layer_size={attention_layer_size!r}, "
                f"attention_layer={attention_layer!r}"
            )
        layers = None
        if attention_layer_size is not None:
            sizes = attention_layer_size
            sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
            layers = [
                keras.layers.Dense(
                    size, use_bias=False, name="attention_layer", dtype=self.dtype_policy
                )
                for size in sizes
            ]
        elif attention_layer is not None:
            layers = (
                list(attention_layer)
                if isinstance(attention_layer, (list, tuple))
                else [attention_layer]
            )
        if layers is not None and len(layers) != len(mechanisms):
            raise ValueError(
                "attention_layer_size or attention_layer needs one entry per mechanism. "
                f"Received: {len(layers)} for {len(mechanisms)} mechanisms"
            )
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._attention_layers = layers
        self._cell_input_fn = cell_input_fn or (
            lambda inputs, attention: ops.concatenate([inputs, attention], axis=-1)
        )
        self._attention_fn = attention_fn or compute_attention
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = initial_cell_state
        self.built = True  # the cell and layers build themselves at the first step

    def __call__(self, *args, **kwargs):
        if holds_history((args, kwargs)):
            return self.call(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def _item_or_tuple(self, items):
        items = tuple(items)
        return items if self._is_multi else items[0]

    def _check_memories(self):
        for mechanism in self._attention_mechanisms:
            if not mechanism.memory_initialized:
                raise ValueError(
                    "The attention mechanisms of an AttentionWrapper need a memory first: give "
                    "it to the mechanism's constructor or call its setup_memory()."
                )

    def _attention_size(self):
        self._check_memories()
        sizes = [m.values.shape[-1] for m in self._attention_mechanisms]
        if self._attention_layers is None:
            return sum(sizes)
        return sum(
            layer.compute_output_shape((None, self._cell.output_size + size))[-1]
            for layer, size in zip(self._attention_layers, sizes, strict=True)
        )

    @property
    def output_size(self):
        return self._attention_size() if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            attention=self._attention_size(),
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else ()
                for m in self._attention_mechanisms
            ),
        )

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """The state before the first step: the cell's (or `initial_cell_state`), zero
        attention, each mechanism's initial alignments and state.

        Args:
            inputs: Optional inputs whose batch size and dtype the state takes.
            batch_size: The batch size (the memory's).
            dtype: The state's dtype.
        """
        if inputs is not None:
            batch_size, dtype = ops.shape(inputs)[0], inputs.dtype
        self._check_memories()
        for mechanism in self._attention_mechanisms:
            if isinstance(batch_size, int) and isinstance(mechanism.batch_size, int):
                if batch_size != mechanism.batch_size:
                    raise ValueError(
                        "The batch size asked for does not match the memory's. With beam "
                        "search, tile the memory with tile_batch and ask for batch_size * "
                        f"beam_width. Received: batch_size={batch_size}, memory batch size "
                        f"{mechanism.batch_size}"
                    )
        dtype = dtype or "float32"
        cell_state = self._initial_cell_state
        if cell_state is None:
            cell_state = self._cell.get_initial_state(batch_size)
            cell_state = keras.tree.map_structure(lambda s: ops.cast(s, dtype), cell_state)
        alignments = [m.initial_alignments(batch_size, dtype) for m in self._attention_mechanisms]
        return AttentionWrapperState(
            cell_state=cell_state,
            attention=ops.zeros((batch_size, self._attention_size()), dtype=dtype),
            alignments=self._item_or_tuple(alignments),
            attention_state=self._item_or_tuple(
                m.initial_state(batch_size, dtype) for m in self._attention_mechanisms
            ),
            alignment_history=self._item_or_tuple(
                AlignmentHistory() if self._alignment_history else () for _ in alignments
            ),
        )

    def call(self, inputs, state, training=None):
        if not isinstance(state, AttentionWrapperState):
            state = AttentionWrapperState(*state)
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state, training=training)
        if keras.tree.is_nested(state.cell_state):
            next_cell_state = keras.tree.pack_sequence_as(
                state.cell_state, keras.tree.flatten(next_cell_state)
            )
        previous_states = state.attention_state if self._is_multi else [state.attention_state]
        histories = state.alignment_history if self._is_multi else [state.alignment_history]
        attentions, all_alignments, next_states, next_histories = [], [], [], []
        for i, mechanism in enumerate(self._attention_mechanisms):
            layer = self._attention_layers[i] if self._attention_layers else None
            attention, alignments, next_attention_state = self._attention_fn(
                mechanism, cell_output, previous_states[i], layer
            )
            attentions.append(attention)
            all_alignments.append(alignments)
            next_states.append(next_attention_state)
            history = histories[i]
            next_histories.append(
                history.write(history.size(), alignments) if self._alignment_history else ()
            )
        attention = ops.concatenate(attentions, axis=-1) if len(attentions) > 1 else attentions[0]
        next_state = AttentionWrapperState(
            cell_state=next_cell_state,
            attention=attention,
            alignments=self._item_or_tuple(all_alignments),
            attention_state=self._item_or_tuple(next_states),
            alignment_history=self._item_or_tuple(next_histories),
        )
        return (attention if self._output_attention else cell_output), next_state
