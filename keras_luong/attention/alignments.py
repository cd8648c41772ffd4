"""The registry of alignment names: which attention layer a model builds for its `alignment`.

A mechanism joins from its own file, so that `LuongSeq2Seq(alignment=name)` builds it with no
other file edited:

```
@register_alignment("location-sensitive")
def make_location(units, **arguments):
    return LocationSensitiveAttention(units, **arguments)
```

The model calls the factory with the attention's own arguments: `attentional_units`, `dropout`,
`dtype`, `name`, `kernel_initializer` (with the model's `initializer`) and its
`attention_arguments`; and with each of `units` (the model's),
`score_mode`, `window` and `max_source_length` that the factory's signature names. A factory
that names no `score_mode` refuses one other than the default. The built-in names are
`"global"`, `"local-m"`, `"local-p"`, `"hard-monotonic"` and `"location-sensitive"`, and
under `score_mode="additive"` (a variant registered with `score_mode=`) `"global"` and
`"hard-monotonic"`.
"""

import inspect

# (name, score_mode variant or None) -> the factory of the layer.
_FACTORIES = {}
DEFAULT_SCORE_MODE = "general"


def register_alignment(name, factory=None, *, score_mode=None):
    """Registers an attention layer's factory as an alignment name of `LuongSeq2Seq`.

    The model calls the factory with the attention's own arguments (`attentional_units`,
    `dropout`, `dtype`, `name`, `kernel_initializer` where the model has an `initializer`, and
    the model's `attention_arguments`) and with each of `units`
    (the model's), `score_mode`, `window` and `max_source_length` that the factory's
    signature names. A model saved with the name loads wherever the module that registers it
    has been imported (as with any custom Keras object).

    Args:
        name: The alignment name, for `LuongSeq2Seq(alignment=name)`.
        factory: A function or a layer class that returns the attention layer. Without it,
            `register_alignment` is a decorator.
        score_mode: Optional: the factory serves `alignment=name` only for this score mode
            (as `"additive"` does, another class for the same alignment).

    Returns:
        The factory (the decorator, without `factory`).

    Example:

    >>> import keras
    >>> from keras_luong import GlobalAttention, LuongSeq2Seq, register_alignment
    >>> @register_alignment("scaled-global")
    ... def make_scaled(score_mode, **arguments):
    ...     return GlobalAttention(score_mode=score_mode, use_scale=True, **arguments)
    >>> model = LuongSeq2Seq(10, 10, units=8, alignment="scaled-global", score_mode="dot")
    >>> attention = model.decoder.cell.attention
    >>> attention.use_scale, attention.score_mode
    (True, 'dot')
    """
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"Expected an alignment name (a non-empty string). Received: name={name!r}"
        )

    def register(factory):
        if not callable(factory):
            raise ValueError(
                f"Expected a factory (a function or a layer class) for alignment {name!r}. "
                f"Received: factory={factory!r}"
            )
        _FACTORIES[(name, score_mode)] = factory
        return factory

    return register if factory is None else register(factory)


def registered_alignments():
    """The registered alignment names, in the order they joined."""
    return tuple(dict.fromkeys(name for name, _ in _FACTORIES))


def make_attention(
    alignment,
    units=None,
    score_mode=DEFAULT_SCORE_MODE,
    window=10,
    max_source_length=None,
    **arguments,
):
    """The attention layer of the registered `alignment`, made by its factory (see the
    module's docstring) with `arguments`."""
    variant = score_mode if (alignment, score_mode) in _FACTORIES else None
    with_variant = [name for name, v in _FACTORIES if v is not None and v == score_mode]
    if variant is None and with_variant and any(n == alignment for n, _ in _FACTORIES):
        raise ValueError(
            f"The alignment {alignment!r} has no score_mode={score_mode!r} variant: "
            f"score_mode={score_mode!r} is implemented for {', '.join(with_variant)}. "
            f"Received: alignment={alignment!r}, score_mode={score_mode!r}"
        )
    if (alignment, variant) not in _FACTORIES:
        raise ValueError(
            "Invalid value for argument alignment. Expected one of "
            f"{registered_alignments()} (or a name joined with register_alignment). "
            f"Received: alignment={alignment!r}"
        )
    factory = _FACTORIES[(alignment, variant)]
    model_arguments = {
        "units": units,
        "score_mode": score_mode,
        "window": window,
        "max_source_length": max_source_length,
    }
    named = _named_parameters(factory)
    if variant is not None:
        named.discard("score_mode")
    if "score_mode" not in named and variant is None and score_mode != DEFAULT_SCORE_MODE:
        raise ValueError(
            f"The alignment {alignment!r} takes no score_mode. Received: score_mode={score_mode!r}"
        )
    for key, value in model_arguments.items():
        if key in named:
            arguments.setdefault(key, value)
    return factory(**arguments)


def _named_parameters(factory):
    """The names a factory's signature lists (a class: its `__init__`'s), `**kwargs` aside."""
    signature = inspect.signature(factory)
    return {
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
    }
