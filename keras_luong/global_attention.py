import keras

from keras_luong.scores import BaseLuongAttention


@keras.saving.register_keras_serializable(package="keras_luong")
class GlobalAttention(BaseLuongAttention):
    """Luong global attention: every decoding step attends to every source position.

    For a decoder state `h_t` (the query) and encoder states `h̄_s` (the value):

    ```
    a_t(s) = softmax_s(score(h_t, h̄_s))      over the valid source positions
    c_t    = Σ_s a_t(s) h̄_s
    h̃_t    = tanh(W_c [c_t; h_t])            only when `attentional_units` is set
    ```

    with `score` one of `"dot"` (`h_t · h̄_s`), `"general"` (`h_t · W_a h̄_s`), `"concat"`
    (`v_a · tanh(W_q h_t + W_k h̄_s)`) or `"location"` (`softmax(W_a h_t)`, truncated to the
    source length). The keys `W_a h̄_s` / `W_k h̄_s` are projected once per call, whatever the
    number of query steps; `prepare(value, value_mask)` computes them once for a caller that
    attends to one source step after step (a decoder) and passes the result as `memory=`.

    Args:
        score_mode: One of `"dot"`, `"general"`, `"concat"`, `"location"`.
            Defaults to `"general"`.
        units: Width of the `"concat"` score's hidden layer. Defaults to the query's size.
        use_scale: If `True`, a learned scalar (initialised to 1) multiplies the scores.
        max_source_length: Required by `"location"`: the longest source it scores.
        attentional_units: If set, return `h̃_t = tanh(W_c [c_t; h_t])` with this many units
            instead of the context `c_t`.
        attentional_activation: The activation of `h̃_t`. Defaults to `"tanh"` (the paper's);
            `None` is tensorflow-addons' linear attention layer.
        dropout: Fraction of the attention weights to drop during training.
        seed: Python integer seed of the dropout.
        kernel_initializer: Initializer of the kernels. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: The decoder states: `(batch_size, Tq, d_q)` for all steps at once, or
            `(batch_size, d_q)` for one step.
        value: The encoder states, `(batch_size, S, d_v)`.
        query_mask: Optional boolean mask `(batch_size, Tq)` (or `(batch_size,)` for one step);
            outputs at masked steps are zero. Taken from the query's Keras mask if not given.
        value_mask: Optional boolean mask `(batch_size, S)`; masked source positions get zero
            weight. Taken from the value's Keras mask if not given.
        memory: Optional `prepare(value, value_mask)`, computed once per source, in place of
            `value` and `value_mask`.
        step: Unused by global attention; every Luong attention takes it, so that a decoder
            calls them all alike.
        training: Whether attention dropout is applied.
        return_attention_scores: If `True`, also return the attention weights.

    Returns:
        The context `c_t` `(batch_size, Tq, d_v)` (or `h̃_t`, `(batch_size, Tq,
        attentional_units)`), without the `Tq` axis for a one-step query; and, if
        `return_attention_scores=True`, the weights `(batch_size, Tq, S)` (before dropout).

    Example:

    >>> import numpy as np
    >>> encoder_states = np.random.rand(2, 7, 16).astype("float32")
    >>> decoder_states = np.random.rand(2, 5, 32).astype("float32")
    >>> attention = GlobalAttention(score_mode="general", attentional_units=32)
    >>> attentional, weights = attention(
    ...     decoder_states, encoder_states, return_attention_scores=True
    ... )
    >>> tuple(attentional.shape), tuple(weights.shape)
    ((2, 5, 32), (2, 5, 7))

    Reference:
        Luong, Pham and Manning, "Effective Approaches to Attention-based Neural Machine
        Translation", EMNLP 2015 (arXiv:1508.04025), section 3.1.
    """

    def attend(self, query, memory, step=None, training=None, return_attention_scores=False):
        scores = self.score(query, memory["keys"])
        mask = memory.get("mask")
        weights = self.normalize(scores, None if mask is None else mask[:, None, :])
        context = self.combine(
            weights, memory["value"], training=training, dropout_mask=memory.get("dropout_mask")
        )
        return self.attentional_state(context, query), weights, None

    def prepare(self, value, value_mask=None):
        memory = super().prepare(value, value_mask)
        memory["keys"] = self.project_keys(memory["value"])
        return memory
