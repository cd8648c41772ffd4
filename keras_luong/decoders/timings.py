"""When the decoder attends, the one home of `attention_timing`: Luong's decoder attends with
`h_t` after the RNN step, Bahdanau's with `s_{t-1}` before it (see DESIGN.md)."""

from keras_luong.checks import check_one_of
from keras_luong.decoders.bahdanau_decoder import BahdanauDecoder
from keras_luong.decoders.luong_decoder import LuongDecoder

TIMINGS = ("luong", "bahdanau")


def check_timing(attention_timing, input_feeding, output_attention):
    """Refuses an `attention_timing` not in `TIMINGS`, and Luong's `input_feeding` and
    `output_attention` changed with Bahdanau's (its decoder has neither choice)."""
    check_one_of("attention_timing", attention_timing, TIMINGS)
    if attention_timing == "bahdanau" and not (input_feeding and output_attention):
        raise ValueError(
            "input_feeding and output_attention choose how Luong's decoder uses h̃; "
            "Bahdanau's decoder always feeds the context to its LSTM and outputs its deep "
            f"output. Received: attention_timing='bahdanau', input_feeding={input_feeding!r}, "
            f"output_attention={output_attention!r}"
        )


def make_decoder(cell, attention, timing, units, dtype, input_feeding=True, output_attention=True):
    """The decoder of `timing` around `cell` and `attention`, named `"decoder"`."""
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
