"""Where `export_generator`'s formats are written from, the refusals of what a format cannot
hold, and what a `torch.export` declares. Not layer code: the export path imports the
backend it exports with (torch for `format="torch"`) when it is called."""

import keras

from keras_luong import samplers


def torch_batch_dimension():
    """The dynamic batch dimension of a `torch.export` (torch is the backend here)."""
    import torch

    return torch.export.Dim("batch", min=1)


# The formats `export_generator` writes, and the backends each is written from.
EXPORT_FORMATS = {
    "tf_saved_model": ("tensorflow", "jax"),
    "onnx": ("tensorflow",),
    "litert": ("tensorflow",),
    "torch": ("torch",),
}
# The formats whose artifact holds no loop of data-dependent length: the decoding loop is
# unrolled (`loops.unrolled`) and the source length fixed (`source_length`).
UNROLLED_FORMATS = ("litert", "torch")
# Keras' other formats, and why the decoding loop does not go there.
UNEXPORTABLE_FORMATS = {
    "openvino": "it is not supported by export_generator",
}
# Why a backend cannot write a format Keras writes from others.
BACKEND_REASONS = {
    ("jax", "onnx"): "Keras writes ONNX from JAX through jax2onnx, which keras-luong neither "
    "installs nor tests with its decoding loop",
    ("torch", "onnx"): "torch's ONNX exporter traces one path through the decoding loop, "
    "fixing its number of steps",
    ("torch", "tf_saved_model"): "a SavedModel is traced by TensorFlow or jax2tf",
    ("tensorflow", "torch"): "torch.export traces torch's own operations",
    ("jax", "litert"): "Keras writes LiteRT from TensorFlow and torch",
    ("torch", "litert"): "Keras writes LiteRT from torch through litert-torch, which "
    "keras-luong neither installs nor tests with its decoding loop",
    ("jax", "torch"): "torch.export traces torch's own operations",
}


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
        try:
            import onnx  # noqa: F401
            import tf2onnx  # noqa: F401
        except ImportError as error:
            raise ImportError(
                "export_generator(format='onnx') needs tf2onnx and onnx: "
                "pip install 'keras-luong[export]'"
            ) from error
    if not isinstance(sampler, samplers.Sampler):
        why = {
            "onnx": "writes each token with an XLA update slice, which ONNX has no op for",
            "torch": "runs a while loop of data-dependent length, which torch.export cannot hold",
            "litert": "runs a while loop of data-dependent length, which is not unrolled",
        }[format]
        raise ValueError(
            f"Invalid value for argument sampler: format={format!r} takes keras-luong's "
            "samplers (GreedySampler, BeamSearchSampler), whose loops it holds; "
            f"{type(sampler).__name__} {why}. Received: sampler={type(sampler).__name__}"
        )
