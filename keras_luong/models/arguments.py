"""`LuongSeq2Seq`'s arguments: their checks, each against the others it must agree with, and
how they travel in the model's config."""

import functools
import inspect

import keras

from keras_luong.attention.alignments import registered_alignments
from keras_luong.attention.names import check_current_name, current_config
from keras_luong.attention.protocol import check_attention
from keras_luong.checks import check_integer, check_one_of, check_rate
from keras_luong.decoders.timings import check_timing
from keras_luong.models import scheduled_sampling as scheduled
from keras_luong.models.parts import CELLS, check_bridge, check_encoder_units


def check_arguments(
    *, source_vocabulary_size, target_vocabulary_size, units, embedding_dim, alignment,
    attention_arguments, bidirectional, decoder_layers, dropout, attention_dropout,
    start_token, end_token, encoder, encoder_layers, encoder_cell, decoder_cell, bridge,
    share_embeddings, attention_timing, input_feeding, output_attention, scheduled_sampling,
    sampling_probability, **others,
):  # fmt: skip
    """A `ValueError` naming the argument for any of `LuongSeq2Seq`'s arguments that is
    invalid alone or against another (`others`: those checked where they are used); returns
    `sampling_probability` as a float."""
    check_timing(attention_timing, input_feeding, output_attention)
    sampling_probability = scheduled.check_arguments(scheduled_sampling, sampling_probability)
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
    return sampling_probability


# The arguments `stored_config` writes itself: parts given as objects, initializers, the
# sampling probability's variable; and the pretrained embeddings, which the weights carry.
_NOT_UNDER_OWN_NAME = {
    "self", "kwargs", "sampling_probability", "output_initializer", "initializer",
    "encoder", "decoder_cell", "source_embeddings", "target_embeddings",
}  # fmt: skip


@functools.cache
def _stored_under_own_name(init):
    return tuple(p for p in inspect.signature(init).parameters if p not in _NOT_UNDER_OWN_NAME)


def stored_config(model, config, init):
    """`config` (the base model's) with every argument of `init`, the model's constructor, as
    `model` holds it: names as names, parts given as objects as their configs."""
    config.update({name: getattr(model, name) for name in _stored_under_own_name(init)})
    if model.alignment is None:  # a layer given as the alignment: the decoder's
        config["alignment"] = keras.saving.serialize_keras_object(model.decoder.cell.attention)
    probability = model.sampling_probability
    if not isinstance(probability, float):  # the variable ScheduledSampling sets
        probability = float(keras.ops.convert_to_numpy(probability))
    config["sampling_probability"] = probability
    for name in ("output_initializer", "initializer"):
        config[name] = keras.initializers.serialize(getattr(model, name))
    config["encoder"] = (
        keras.saving.serialize_keras_object(model.encoder) if model.user_encoder else None
    )
    config["decoder_cell"] = model.decoder_cell or keras.saving.serialize_keras_object(
        model.decoder.cell.cell
    )
    return config


def arguments_from_config(config):
    """The constructor's arguments from a stored config (`stored_config`'s, or a file's
    from an earlier release, its old spellings made current)."""
    config = current_config(config)
    for name in ("alignment", "encoder", "decoder_cell"):  # parts given as objects
        if isinstance(config.get(name), dict):
            config[name] = keras.saving.deserialize_keras_object(config[name])
    return config
