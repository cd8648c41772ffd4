"""Where `export_generator`'s formats are written from, the refusals of what a format cannot
hold, and the writing of torch's formats. Not layer code: the export path imports the
backend it exports with (torch for `format="torch"`) when it is called."""

import contextlib
import os
import tempfile

import keras
from keras import ops

from keras_luong import samplers
from keras_luong.backend.loops import unrolled
from keras_luong.backend.ops import portable_writes
from keras_luong.checks import check_integer
from keras_luong.generation.bounds import check_length_bound
from keras_luong.generation.generator import get_generator
from keras_luong.generation.text_export import check_text_export, export_text_saved_model

# The formats `export_generator` writes, and the backends each is written from.
EXPORT_FORMATS = {
    "tf_saved_model": ("tensorflow", "jax"),
    "onnx": ("tensorflow", "torch"),
    "litert": ("tensorflow",),
    "torch": ("torch",),
}
# The formats whose artifact holds no loop of data-dependent length: the decoding loop is
# unrolled (`loops.unrolled`) and the source length fixed (`source_length`). So is ONNX
# written from torch, which translates the `torch.export` program.
UNROLLED_FORMATS = ("litert", "torch")
# Keras' other formats, and why the decoding loop does not go there.
UNEXPORTABLE_FORMATS = {
    "openvino": "it is not supported by export_generator",
}
# Why a backend cannot write a format Keras writes from others.
BACKEND_REASONS = {
    ("jax", "onnx"): "Keras writes ONNX from JAX through jax2onnx, whose 0.17 release cannot "
    "convert the decoding loop: it has no reversed scan (the bidirectional encoder), and no "
    "jnp.full or reshape over a dynamic batch, which the loop has throughout",
    ("torch", "tf_saved_model"): "a SavedModel is traced by TensorFlow or jax2tf",
    ("tensorflow", "torch"): "torch.export traces torch's own operations",
    ("jax", "litert"): "Keras writes LiteRT from TensorFlow and torch",
    ("torch", "litert"): "Keras writes LiteRT from torch through litert-torch, whose 0.10 "
    "release fixes the batch at 1, cannot convert beam search's gather of integer rows, and "
    "pins typing-extensions below 4.13 (jupyter_client 8.10 needs 4.13)",
    ("jax", "torch"): "torch.export traces torch's own operations",
}


def is_unrolled(format):
    """Whether `format`, written from this backend, holds the unrolled loop."""
    return format in UNROLLED_FORMATS or (format == "onnx" and keras.backend.backend() == "torch")


def export_torch_program(generator, filepath, input_signature):
    """Writes the generator's `torch.export` program (the batch dynamic), each weight stored
    once. Keras' torch export reads each variable's tensor, which `torch.export` lifts as a
    constant beside the parameter it also stores, so every weight was stored twice: each
    constant equal to a parameter is replaced by that parameter (equal values, so the
    program computes the same) before the file is written again. Returns the program."""
    import torch
    from torch.export.graph_signature import InputKind

    generator.export(
        filepath,
        format="torch",
        input_signature=input_signature,
        verbose=False,
        dynamic_shapes={0: torch.export.Dim("batch", min=1)},
    )
    program = torch.export.load(filepath)
    signature = program.graph_signature
    parameters = [s for s in signature.input_specs if s.kind == InputKind.PARAMETER]
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}

    def parameter_equal_to(value):
        for spec in parameters:
            weight = program.state_dict[spec.target]
            if weight.shape == value.shape and weight.dtype == value.dtype:
                if torch.equal(weight.detach(), value):
                    return spec
        return None

    for spec in parameters:  # a served program computes no gradients (nor its outputs')
        program.state_dict[spec.target].requires_grad_(False)
    kept = []
    for spec in signature.input_specs:
        if spec.kind == InputKind.CONSTANT_TENSOR:
            parameter = parameter_equal_to(program.constants[spec.target])
            if parameter is not None:
                node = placeholders[spec.arg.name]
                node.replace_all_uses_with(placeholders[parameter.arg.name])
                program.graph.erase_node(node)
                del program.constants[spec.target]
                continue
        kept.append(spec)
    signature.input_specs[:] = kept
    program.graph_module.recompile()
    torch.export.save(program, filepath)
    return program


def export_onnx_from_torch(generator, filepath, input_signature):
    """Writes the generator's ONNX file from torch, one file: its `torch.export` program (the
    loop unrolled, the batch dynamic) translated by torch's ONNX exporter (onnxscript)."""
    import torch

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "generator.pt2")
        program = export_torch_program(generator, path, input_signature)
    outputs = ["ids", "scores"][: len(program.graph_signature.user_outputs)]
    torch.onnx.export(
        program,
        f=filepath,
        dynamo=True,
        external_data=False,
        verbose=False,
        input_names=["source"],
        output_names=outputs,
    )


def check_export_format(format):
    """Refuses an export format `export_generator` cannot write from this backend, saying
    where it can be written."""
    backend = keras.backend.backend()
    if format in UNEXPORTABLE_FORMATS:
        raise ValueError(
            f"Invalid value for argument format: the decoding loop cannot be exported as "
            f"{format!r}: {UNEXPORTABLE_FORMATS[format]}. export_generator writes "
            f"{sorted(EXPORT_FORMATS)}. Received: format={format!r}"
        )
    if format not in EXPORT_FORMATS:
        raise ValueError(
            f"Invalid value for argument format: expected one of {sorted(EXPORT_FORMATS)}. "
            f"Received: format={format!r}"
        )
    if backend not in EXPORT_FORMATS[format]:
        raise ValueError(
            f"Invalid value for argument format: {format!r} is not written from the {backend} "
            f"backend ({BACKEND_REASONS[(backend, format)]}). Save the model "
            f"(model.save('model.keras')), load it with KERAS_BACKEND={EXPORT_FORMATS[format][0]}"
            f" and call export_generator there. Received: format={format!r} on {backend}"
        )


def check_loop_sampler(sampler, format):
    """Refuses an ONNX export without its converter, or a sampler whose loop the format
    cannot hold: keras-hub's write each token by an XLA update slice, which has no ONNX op,
    and run a while loop, which is not unrolled for `torch.export` or LiteRT."""
    if format == "onnx":
        converter = "onnxscript" if keras.backend.backend() == "torch" else "tf2onnx"
        try:
            import onnx  # noqa: F401

            __import__(converter)
        except ImportError as error:
            raise ImportError(
                f"export_generator(format='onnx') needs {converter} and onnx on "
                f"{keras.backend.backend()}: pip install 'keras-luong[export]'"
            ) from error
    if not isinstance(sampler, samplers.Sampler):
        if is_unrolled(format):
            why = f"runs a while loop of data-dependent length, which {format} cannot hold"
        else:
            why = "writes each token with an XLA update slice, which ONNX has no op for"
        raise ValueError(
            f"Invalid value for argument sampler: format={format!r} takes keras-luong's "
            "samplers (GreedySampler, BeamSearchSampler), whose loops it holds; "
            f"{type(sampler).__name__} {why}. Received: sampler={type(sampler).__name__}"
        )


def export_generator(model, filepath, max_length, format, text, source_length, **kwargs):
    """`GenerationMixin.export_generator`: the checks, then the format's writer, each
    backend's limits and converters here."""
    if text not in (True, False):
        raise ValueError(
            f"Invalid value for argument text: expected True or False. Received: text={text!r}"
        )
    if text:
        check_text_export(model, format)
    if source_length is not None:
        source_length = check_integer("source_length", source_length, minimum=1)
        if text:
            raise ValueError(
                "Invalid value for argument source_length: a text SavedModel takes texts "
                f"of any length. Received: source_length={source_length} with text=True"
            )
    elif is_unrolled(format):
        raise ValueError(
            f"Invalid value for argument source_length: format={format!r} (from "
            f"{keras.backend.backend()}) takes sources "
            "of one length (the encoder's loop is unrolled over it): give the longest to "
            "serve, and pad shorter sources with 0. Received: source_length=None"
        )
    check_export_format(format)
    length_bound = kwargs.pop("length_bound", None)
    if length_bound is not None:  # each row's own bound, inside the loop
        if kwargs.get("stop_token_ids", "auto") is None:
            raise ValueError(
                "Invalid value for argument length_bound: a row ends at its bound with an end "
                "token, and stop_token_ids=None has none. Received: "
                f"length_bound={length_bound!r} with stop_token_ids=None"
            )
        kwargs["row_bounds"] = check_length_bound(length_bound)
    generator, _ = get_generator(model, max_length, **kwargs)
    # A prefix or a sampler's uniform numbers are inputs after the source, in a SavedModel:
    # their specs, and what builds the model.
    extra, example = [], [ops.ones((1, 1), dtype="int32")]
    if generator.prefixed:
        extra.append(keras.InputSpec(shape=(None, max_length), dtype="int32", name="prefix"))
        example.append(ops.zeros((1, max_length), "int32"))
    if generator.draws:
        extra.append(keras.InputSpec(shape=(None, max_length + 1), dtype="float32", name="noise"))
        example.append(ops.ones((1, max_length + 1), "float32"))
    if extra and (format != "tf_saved_model" or text):
        what = "the prefixes" if generator.prefixed else "the uniform numbers of its sampler"
        raise ValueError(
            f"Invalid value for argument format: format={format!r}"
            f"{' with text=True' if text else ''} takes the source alone, and this loop also "
            f"takes {what} ({type(generator.sampler).__name__}, prefixed="
            f"{generator.prefixed}); export it as format='tf_saved_model' with text=False, "
            "which takes them as inputs, or export GreedySampler or BeamSearchSampler without "
            f"a prefix. Received: format={format!r}"
        )
    if format != "tf_saved_model":
        check_loop_sampler(generator.sampler, format)
    # One input: the source ids, or a tuple whose parts the serving signature names.
    source_spec = keras.InputSpec(
        shape=(None, source_length), dtype="int32", name="source" if extra else None
    )
    input_signature = [(source_spec, *extra)] if extra else [source_spec]
    example = tuple(example) if extra else example[0]
    generator(example)  # export needs a built model

    options = {}
    if keras.backend.backend() == "jax" and format == "tf_saved_model":
        # No gradients in a serving artifact: with them, jax2tf would trace the loop's
        # reverse mode, which a while loop has none of (beam scores are float outputs).
        options["jax2tf_kwargs"] = {"with_gradient": False}
    contexts = []  # what the loops are traced within
    if format in ("onnx", "litert") and keras.backend.backend() == "tensorflow":
        contexts.append(portable_writes)
    if is_unrolled(format):
        contexts.append(unrolled)

    def export_ids(path):
        with contextlib.ExitStack() as stack:
            for context in contexts:
                stack.enter_context(context())
            if format == "torch":
                export_torch_program(generator, path, input_signature)
            elif format == "onnx" and keras.backend.backend() == "torch":
                export_onnx_from_torch(generator, path, input_signature)
            else:
                generator.export(
                    path,
                    format=format,
                    input_signature=input_signature,
                    verbose=False,
                    **options,
                )

    if text:
        export_text_saved_model(model, filepath, export_ids)
    else:
        export_ids(filepath)
