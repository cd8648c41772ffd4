"""The parts `LuongSeq2Seq` builds its encoder and decoder from."""

import keras

from keras_luong.bahdanau_decoder import BahdanauDecoder
from keras_luong.decoder import LuongDecoder
from keras_luong.initializers import recurrent_arguments


def lstm_encoder(units, bidirectional, dtype, initializer=None):
    """One LSTM layer over the embedded source returning its sequence and final states;
    bidirectional: `units // 2` a direction, in `keras.layers.Bidirectional`."""
    encoder = keras.layers.LSTM(
        units // 2 if bidirectional else units,
        return_sequences=True,
        return_state=True,
        dtype=dtype,
        name="encoder",
        **recurrent_arguments(initializer),
    )
    if bidirectional:
        encoder = keras.layers.Bidirectional(encoder, dtype=dtype, name="bidirectional")
    return encoder


def attention_decoder(
    units,
    layers,
    attention,
    timing,
    dtype,
    initializer=None,
    input_feeding=True,
    output_attention=True,
):
    """`layers` LSTM cells of `units` (stacked when more than one) around `attention`, in
    Luong's decoder (`timing="luong"`) or Bahdanau's."""
    cells = [
        keras.layers.LSTMCell(units, dtype=dtype, **recurrent_arguments(initializer))
        for _ in range(layers)
    ]
    cell = keras.layers.StackedRNNCells(cells, dtype=dtype) if layers > 1 else cells[0]
    if timing == "luong":
        return LuongDecoder(
            cell,
            attention,
            input_feeding=input_feeding,
            output_attention=output_attention,
            dtype=dtype,
            name="decoder",
        )
    return BahdanauDecoder(cell, attention, units=units, dtype=dtype, name="decoder")
