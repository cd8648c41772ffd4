"""How every keras-luong attention layer is called, and the protocol of attention with state.

**The protocol.** `AttentionCell`, the decoders and generation take any layer that does the
following; they check it by what it has (`check_attention`), not by its class:

- `prepare(value, value_mask=None) -> memory`: everything about one source computed once, a
  dict holding at least `"value"` `(B, S, d_v)` (and `"mask"` `(B, S)` where given).
- `state_size`: the sizes of the states kept from one decoding step to the next, as Keras'
  RNN cells declare theirs (`None`: one value per source position; `()` for none).
- `get_initial_state(batch_size, memory) -> list`: the state before the first step, one
  `(batch_size, size)` float32 tensor per entry of `state_size`. `batch_size` is always the
  number of rows of the memory it is given: generation prepares a memory of one row per source
  for the initial state, and the sampler repeats the state per beam with the rest of its cache.
- `__call__(query, memory=memory, initial_state=state, step=t, training=...,
  return_attention_scores=True, return_state=True) -> (output, weights, state)`, the query
  `(B, d_q)` for one step or `(B, T, d_q)` for all (then with `query_mask=` `(B, T)`: the
  state stays as it was at masked steps), the weights `(B[, T], S)`. The output is `h̃`
  where the layer has `attentional_units`, else the context.

A layer with state writes only its one step, `step_call(query, memory, state, step, training,
draws) -> (output, weights, next_state)` for a `(B, d_q)` query; `attend_steps` (the default
`attend` of `BaseLuongAttention` for an attention with state) owns the loop over the query's
time axis, the query mask included, as Keras' RNN owns the loop over its cell. A layer without
state attends to all steps at once in its own `attend` (one batched call: what makes the
decoder without input feeding fast).
"""

import collections

import keras
from keras import ops

from keras_luong.backend.loops import keep_where, masked_scan
from keras_luong.checks import (
    check_batch,
    check_floating,
    check_mask,
    check_rank,
    shape_matches,
)

# What an attention layer must have for the cell, the decoders and generation to use it
# (besides `build(query_shape, value_shape)`, which every Keras layer has).
PROTOCOL = ("prepare", "state_size", "get_initial_state")


def check_attention(attention, name="attention"):
    """Checks that `attention` follows the protocol by what it has, not by its class.

    Args:
        attention: The layer to check: a Keras layer with `prepare`, `state_size` and
            `get_initial_state` (see above).
        name: The argument's name in the error. Defaults to `"attention"`.

    Returns:
        `attention` itself; a `ValueError` naming what it lacks otherwise.
    """
    missing = [method for method in PROTOCOL if not hasattr(attention, method)]
    if not isinstance(attention, keras.layers.Layer) or missing:
        lacks = f" (it has no {', '.join(missing)})" if missing else ""
        raise ValueError(
            f"Invalid value for argument {name}. Expected an attention layer: a Keras layer "
            f"with {', '.join(PROTOCOL)} (see keras_luong.attention.protocol){lacks}. "
            f"Received: {name}={attention!r}"
        )
    return attention


def attention_state_spec(attention, batch_size, source_length):
    """The symbolic states of `attention`: `KerasTensor`s shaped as `get_initial_state`
    returns them, from its `state_size`."""
    return [
        keras.KerasTensor((batch_size, source_length if size is None else size), "float32")
        for size in attention.state_size
    ]


# What `attend` returns: the output `(B, T, d)`, the weights `(B, T, S)` (only when asked
# for, else `None`), the aligned positions `(B, T)` (`None` where the layer has none) and the
# attention's state after the last step (a list, empty for an attention without state).
Attended = collections.namedtuple("Attended", ["output", "weights", "positions", "state"])


class AttentionProtocol:
    """The call of `BaseLuongAttention` (memory, state and query standardised around the
    subclass's `attend`), the state protocol and the random draws made ahead."""

    # The sizes of the states the attention keeps from step to step (`None`: one value per
    # source position). Luong's global and local attention keep none.
    state_size = ()

    def get_initial_state(self, batch_size, memory):
        """The state before the first decoding step, for a prepared `memory` of `batch_size`
        rows (a list of float32 tensors, one per entry of `state_size`; empty here)."""
        return []

    def step_call(self, query, memory, state, step=None, training=None, draws=None):
        """One decoding step of an attention with state: a query `(B, d_q)` and the state
        before the step give the output `(B, d)`, the weights `(B, S)` and the state after.
        `step` is the step's index, `draws` `(B, ...)` the step's random draws made ahead (see
        `draw_ahead`) or `None`. The subclass writes this; `attend_steps` loops over it."""
        raise NotImplementedError(
            f"{type(self).__name__} declares a state (state_size={self.state_size!r}), so it "
            "implements step_call(query, memory, state, step, training, draws)"
        )

    def attend_steps(
        self, query, memory, state, query_mask=None, step=None, training=None, draws=None
    ):
        """`step_call` over the time axis of a query `(B, T, d_q)`: returns an `Attended`.
        Where `query_mask` `(B, T)` is False the state stays as it was (the output there is
        zeroed by the call). One step runs without a loop."""
        if query.shape[1] == 1:
            output, weights, new_state = self.step_call(
                query[:, 0], memory, state, step, training, None if draws is None else draws[:, 0]
            )
            new_state = list(new_state)
            if query_mask is not None:
                new_state = keep_where(query_mask, new_state, state)
            return Attended(output[:, None], weights[:, None], None, new_state)
        batch, source_length = ops.shape(memory["value"])[0], ops.shape(memory["value"])[1]
        if draws is None:
            # Drawn here, not in the loop: a random draw inside a compiled JAX loop leaks.
            draws = self.dropout_mask(batch, query.shape[1], source_length, training)
        width = self.compute_output_shape(query.shape, memory["value"].shape)[-1]
        outputs_like = [
            ops.zeros((batch, width), self.compute_dtype),
            ops.zeros((batch, source_length), "float32"),
        ]

        def one_step(inputs, states, t):
            query_t, draws_t = inputs if draws is not None else (inputs, None)
            at = t if step is None else step + t
            output, weights, new_state = self.step_call(
                query_t, memory, list(states), at, training, draws_t
            )
            return [output, weights], list(new_state)

        inputs = query if draws is None else (query, draws)
        (output, weights), last = masked_scan(
            one_step, list(state), inputs, query_mask, outputs_like
        )
        return Attended(output, weights, None, list(last))

    def state_spec(self, batch_size, source_length):
        """The symbolic states: `KerasTensor`s shaped as `get_initial_state` returns them."""
        return attention_state_spec(self, batch_size, source_length)

    def draw_ahead(self, memory, steps, training=None):
        """The memory with every random draw of `steps` one-step calls made ahead (under
        `"draws"`), or the memory itself when nothing is random (not training, no dropout).

        A loop that attends one step at a time inside a compiled function (the decoder) calls
        this once before it starts: a random draw inside a compiled JAX loop would leak its
        seed's state out of the loop (Keras' RNN draws its cells' dropout masks ahead for the
        same reason). The call at step `t` then reads the draws of step `t`."""
        batch, source_length = ops.shape(memory["value"])[0], ops.shape(memory["value"])[1]
        draws = self.dropout_mask(batch, steps, source_length, training)
        return memory if draws is None else {**memory, "draws": draws}

    def draws_at(self, memory, step, steps, training):
        """The draws made ahead by `draw_ahead` for `steps` query steps from `step` on, or
        `None` (none made, or not training)."""
        draws = memory.get("draws")
        if draws is None or not training:
            return None
        start = ops.reshape(ops.convert_to_tensor(0 if step is None else step, "int32"), (-1,))
        rest = draws.shape[2:]
        return ops.slice(
            draws, (0, start[0]) + (0,) * len(rest), (ops.shape(draws)[0], steps, *rest)
        )

    def check_state(self, state, memory):
        """The state to start from: `state` checked against `state_size`, or the initial one."""
        if state is None:
            batch = ops.shape(memory["value"])[0]
            return self.get_initial_state(batch, memory)
        state = list(state) if isinstance(state, (list, tuple)) else [state]
        expected = [tuple(s.shape) for s in self.state_spec(*memory["value"].shape[:2])]
        shapes = [tuple(getattr(s, "shape", ())) for s in state]
        if len(shapes) != len(expected) or not all(
            shape_matches(shape, want) for shape, want in zip(shapes, expected, strict=True)
        ):
            raise ValueError(
                f"Invalid initial_state for {type(self).__name__}: expected {len(expected)} "
                f"states of shapes {expected} (get_initial_state() makes them). "
                f"Received: states of shapes {shapes}"
            )
        return [ops.cast(s, "float32") for s in state]

    def call_outputs(self, attended, return_attention_scores, return_state):
        """What `call` returns from an `Attended`: the output, then the weights and the state
        if asked for."""
        outputs = (attended.output,)
        if return_attention_scores:
            outputs += (attended.weights,)
        if return_state:
            outputs += (attended.state,)
        return outputs[0] if len(outputs) == 1 else outputs

    # -- the call -----------------------------------------------------------------------------

    def call(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        initial_state=None,
        step=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
    ):
        attended = self.attend_call(
            query,
            value=value,
            query_mask=query_mask,
            value_mask=value_mask,
            memory=memory,
            initial_state=initial_state,
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        return self.call_outputs(attended, return_attention_scores, return_state)

    def attend_call(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        initial_state=None,
        step=None,
        training=None,
        return_attention_scores=False,
    ):
        """The call of every Luong layer: memory, state and query standardised (the query to
        `(B, T, d_q)`), `attend`, the query mask applied, a one-step query's time axis removed
        again. Returns an `Attended`."""
        if memory is None:
            if value is None:
                raise ValueError(
                    "Pass the encoder states as value=, or a prepared memory as "
                    "memory=layer.prepare(value, value_mask). Received: value=None, memory=None"
                )
            memory = self.prepare(value, value_mask)
        elif value is not None:
            raise ValueError(
                "Pass the encoder states once: as value= (with value_mask=) or as a prepared "
                "memory=, not both. Received: both value and memory"
            )
        check_rank("query", query.shape, (2, 3))
        check_floating("query", query)
        check_batch(query.shape[0], memory["value"].shape[0])
        state = self.check_state(initial_state, memory)
        one_step = len(query.shape) == 2
        # Checked against the query as given: a one-step query's mask is `(B,)`.
        query_mask = check_mask("query_mask", query_mask, query.shape[:-1])
        if one_step:
            query = ops.expand_dims(query, axis=1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, axis=1)
        if query_mask is not None:
            # Masked steps are computed from zeros, so that nothing they hold (NaN included)
            # reaches the outputs or the gradients.
            keep = ops.expand_dims(query_mask, -1)
            query = ops.where(keep, query, ops.zeros_like(query))
        attended = self.attend(
            query,
            memory,
            state,
            query_mask=query_mask,
            step=step,
            training=training,
            return_attention_scores=return_attention_scores,
            draws=self.draws_at(memory, step, query.shape[1], training),
        )
        output, weights, positions, state = attended
        if query_mask is not None:
            output = ops.where(keep, output, ops.zeros_like(output))
            if weights is not None:
                weights = ops.where(keep, weights, ops.zeros_like(weights))
        if one_step:
            output = ops.squeeze(output, axis=1)
            weights = None if weights is None else ops.squeeze(weights, axis=1)
            positions = None if positions is None else ops.squeeze(positions, axis=1)
        return Attended(output, weights, positions, list(state))

    def compute_output_shape(self, query_shape, value_shape):
        """The output's shape: the query's, with the last axis the size of `c_t` (the
        value's) or of `h̃_t` (`attentional_units`)."""
        return (*query_shape[:-1], self.attentional_units or value_shape[-1])

    def compute_output_spec(
        self,
        query,
        value=None,
        query_mask=None,
        value_mask=None,
        memory=None,
        initial_state=None,
        step=None,
        training=None,
        return_attention_scores=False,
        return_state=False,
        **kwargs,
    ):
        value_shape = (memory["value"] if value is None else value).shape
        outputs = (
            keras.KerasTensor(
                self.compute_output_shape(query.shape, value_shape), dtype=self.compute_dtype
            ),
        )
        if return_attention_scores:
            outputs += (keras.KerasTensor((*query.shape[:-1], value_shape[1]), "float32"),)
        if return_state:
            outputs += (self.state_spec(query.shape[0], value_shape[1]),)
        return outputs[0] if len(outputs) == 1 else outputs
