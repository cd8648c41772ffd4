"""Every weight of a model from one initializer, as the paper and OpenNMT-py start theirs."""

import keras


def initializer_arguments(initializer, *names):
    """`{name: initializer}` for each of a layer's initializer arguments `names`, each a fresh
    copy (an unseeded Keras initializer draws from a seed fixed when it is made, so one
    instance shared by two layers would start same-shaped weights equal); `{}` when
    `initializer` is `None` (the layers' own defaults)."""
    if initializer is None:
        return {}
    config = keras.initializers.serialize(initializer)
    return {name: keras.initializers.deserialize(config) for name in names}


def recurrent_arguments(initializer, cell="lstm"):
    """The initializer arguments of a Keras LSTM (or, `cell="gru"`, GRU) layer or cell: its
    kernel, recurrent kernel and bias, an LSTM's forget gate's bias included
    (`unit_forget_bias=False`), or `{}`."""
    if initializer is None:
        return {}
    names = ("kernel_initializer", "recurrent_initializer", "bias_initializer")
    arguments = initializer_arguments(initializer, *names)
    return arguments if cell == "gru" else {**arguments, "unit_forget_bias": False}


def dense_arguments(initializer):
    """The initializer arguments of a Keras `Dense` layer (kernel and bias), or `{}`."""
    return initializer_arguments(initializer, "kernel_initializer", "bias_initializer")
