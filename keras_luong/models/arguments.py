"""The checks of `LuongSeq2Seq`'s arguments, each against the others it must agree with."""

from keras_luong.attention.alignments import registered_alignments
from keras_luong.attention.names import check_current_name
from keras_luong.attention.protocol import check_attention
from keras_luong.checks import check_integer, check_one_of, check_rate
from keras_luong.models.parts import CELLS, check_bridge, check_encoder_units


def check_arguments(
    *, source_vocabulary_size, target_vocabulary_size, units, embedding_dim, alignment,
    attention_arguments, bidirectional, decoder_layers, dropout, attention_dropout,
    start_token, end_token, encoder, encoder_layers, encoder_cell, decoder_cell, bridge,
    share_embeddings, **others,
):  # fmt: skip
    """A `ValueError` naming the argument for any of `LuongSeq2Seq`'s arguments that is
    invalid alone or against another (`others`: those checked where they are used)."""
    for name, value in (
        ("source_vocabulary_size", source_vocabulary_size),
        ("target_vocabulary_size", target_vocabulary_size),
        ("units", units),
        ("embedding_dim", embedding_dim),
        ("decoder_layers", decoder_layers),
        ("encoder_layers", encoder_layers),
    ):
        check_integer(name, value)
    check_one_of("encoder_cell", encoder_cell, CELLS)
    if not isinstance(decoder_cell, str) and decoder_layers != 1:
        raise ValueError(
            "A decoder cell given as an object is the whole cell (stack it with "
            "keras.layers.StackedRNNCells), so decoder_layers must stay 1. "
            f"Received: decoder_layers={decoder_layers!r}"
        )
    check_bridge(
        bridge, encoder_cell if encoder is None else None, encoder_layers,
        decoder_cell, decoder_layers,
    )  # fmt: skip
    if share_embeddings and source_vocabulary_size != target_vocabulary_size:
        raise ValueError(
            "share_embeddings=True uses one embedding matrix for both sides, so both "
            "vocabularies must have one size. Received: "
            f"source_vocabulary_size={source_vocabulary_size}, "
            f"target_vocabulary_size={target_vocabulary_size}"
        )
    check_rate("dropout", dropout)
    check_rate("attention_dropout", attention_dropout)
    check_current_name("score_mode", others.get("score_mode"))
    if isinstance(alignment, str):
        check_current_name("alignment", alignment)
        check_one_of("alignment", alignment, registered_alignments())
    else:
        check_attention(alignment, "alignment")
    if attention_arguments is not None and not isinstance(attention_arguments, dict):
        raise ValueError(
            "Invalid value for argument attention_arguments. Expected a dict of the "
            "attention layer's arguments. "
            f"Received: attention_arguments={attention_arguments!r}"
        )
    for name, value in (("start_token", start_token), ("end_token", end_token)):
        if check_integer(name, value) >= target_vocabulary_size:
            raise ValueError(
                f"Invalid value for argument {name}. Expected a target id in "
                f"[1, target_vocabulary_size={target_vocabulary_size}). "
                f"Received: {name}={value!r}"
            )
    if encoder is None:
        check_encoder_units(units, bidirectional)
