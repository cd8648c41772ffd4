"""The argument checks every keras-luong layer, model and sampler shares, and the one masking
constant.

Each check raises a Keras-style message naming the argument and the value received:
`Invalid value for argument X. Expected ... Received: X=...` (a `TypeError` where the type is
wrong, as for integer ids given as states).
"""

import math
import numbers
import os
import warnings

import keras
import numpy as np
from keras import ops

from keras_luong.backend.engine import compiles_with_xla
from keras_luong.backend.loops import torch_compiling

# A score (or log-probability) nothing can win with: it vanishes in a float32 softmax, and it is
# finite, so sums, differences and divisions of it stay finite. Scores are masked in float32
# only (a float16 compute dtype cannot hold it).
MASKED_SCORE = -1e9


def check_integer(name, value, minimum=1, allow_none=False, maximum=None):
    """`value` as a Python int, if it is an integer (not a bool) `>= minimum` (and
    `<= maximum` if given)."""
    if value is None and allow_none:
        return None
    if (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    ):
        return int(value)
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if maximum is not None:
        expected = f"an integer from {minimum} to {maximum}"
    raise ValueError(
        f"Invalid value for argument {name}. Expected {expected}"
        f"{' or None' if allow_none else ''}. Received: {name}={value!r}"
    )


def check_number(name, value, minimum=None, exclusive=False):
    """`value` as a float, if it is a finite real number (not a bool) `>= minimum` (`>` with
    `exclusive`; any finite number when `minimum` is `None`)."""
    if (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (minimum is None or (value > minimum if exclusive else value >= minimum))
    ):
        return float(value)
    bound = "" if minimum is None else f" {'>' if exclusive else '>='} {minimum}"
    raise ValueError(
        f"Invalid value for argument {name}. Expected a finite number{bound}. "
        f"Received: {name}={value!r}"
    )


def check_rate(name, value):
    """`value` as a float, if it is a number in `[0, 1)` (a dropout rate)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0.0 <= value < 1.0:
        return float(value)
    raise ValueError(
        f"Invalid value for argument {name}. Expected a float in [0, 1). Received: {name}={value!r}"
    )


def check_one_of(name, value, allowed):
    if isinstance(value, str) and value in allowed:
        return value
    raise ValueError(
        f"Invalid value for argument {name}. Expected one of {tuple(allowed)}. "
        f"Received: {name}={value!r}"
    )


def check_rank(name, shape, ranks):
    if len(shape) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ValueError(
            f"Invalid {name}: expected a tensor of rank {expected}. "
            f"Received: {name}.shape={tuple(shape)} (rank {len(shape)})"
        )


def check_floating(name, tensor):
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    if "float" not in dtype:
        raise TypeError(
            f"Invalid {name}: expected floating-point states (cast integer ids through an "
            f"Embedding first). Received: {name}.dtype={dtype}"
        )


def check_batch(query_batch, value_batch, query="query", value="value"):
    """A `ValueError` where two known batch sizes differ, naming both arguments."""
    if query_batch is not None and value_batch is not None and query_batch != value_batch:
        raise ValueError(
            f"The {query} and the {value} must have the same batch size. "
            f"Received: {query} batch size {query_batch}, {value} batch size {value_batch}"
        )


def as_bool(mask):
    mask = ops.convert_to_tensor(mask)
    return mask if keras.backend.standardize_dtype(mask.dtype) == "bool" else ops.cast(mask, "bool")


def shape_matches(shape, expected_shape):
    """Whether `shape` is `expected_shape`, a `None` dimension of either matching anything."""
    return len(shape) == len(expected_shape) and all(
        a is None or b is None or a == b for a, b in zip(shape, expected_shape, strict=True)
    )


def check_mask(name, mask, expected_shape):
    """`mask` as a boolean tensor of `expected_shape` (`None` dimensions match anything), or
    `None` if not given."""
    if mask is None:
        return None
    mask = as_bool(mask)
    if not shape_matches(mask.shape, expected_shape):
        raise ValueError(
            f"Invalid {name}: expected shape {tuple(expected_shape)}. "
            f"Received: {name}.shape={tuple(mask.shape)}"
        )
    return mask


def check_step(step):
    """A decoding step given as a Python or numpy integer must be `>= 0` (a tensor's value is
    not known while tracing, and is left to the caller)."""
    if isinstance(step, (numbers.Integral, np.integer)) and not isinstance(step, bool):
        return check_integer("step", int(step), minimum=0)
    if isinstance(step, (bool, float, str)):
        raise ValueError(
            "Invalid value for argument step. Expected an integer >= 0 or an integer tensor. "
            f"Received: step={step!r}"
        )
    return step


def check_token_ids(name, ids, vocabulary_size, rank=None):
    """Checks concrete token ids and returns them as an int32 array: integers in
    `[0, vocabulary_size)`, of the given rank. Anything that is not an array (a
    `tf.data.Dataset`, a generator, a symbolic tensor, `None`) is returned unchecked."""
    if ids is None or not hasattr(ids, "shape") or not hasattr(ids, "dtype"):
        return ids
    if isinstance(ids, keras.KerasTensor) or torch_compiling():
        return ids
    try:
        array = np.asarray(ops.convert_to_numpy(ids))
    except Exception:  # a traced tensor: its values are not known here
        return ids
    if rank is not None and array.ndim != rank:
        raise ValueError(
            f"Invalid {name}: expected token ids of rank {rank}, (batch_size, length). "
            f"Received: {name}.shape={array.shape}"
        )
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError(
                f"Invalid {name}: expected integer token ids. Received: {name} of dtype "
                f"{array.dtype} holding non-integer values"
            )
    elif array.dtype.kind not in "iub":
        raise ValueError(
            f"Invalid {name}: expected integer token ids. Received: {name}.dtype={array.dtype}"
        )
    if array.size and (array.min() < 0 or array.max() >= vocabulary_size):
        raise ValueError(
            f"Invalid {name}: token ids must be in [0, {vocabulary_size}) (0 is padding). "
            f"Received: ids from {array.min()} to {array.max()}"
        )
    return array.astype("int32")


def check_sentences(name, sentences):
    """`sentences` (a sequence of id sequences, one sentence each, without padding) as a list
    of 1-D int32 arrays: integer ids (integral floats are taken), none negative and none the
    padding id 0. A padded array (rows ending in zeros) is refused, since its zeros would be
    read as words."""
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__len__"):
        raise ValueError(
            f"Invalid value for argument {name}. Expected a list of sentences, each a sequence "
            f"of token ids. Received: {name} of type {type(sentences).__name__}"
        )
    arrays = []
    for i, sentence in enumerate(sentences):
        array = np.asarray(sentence)
        if array.ndim != 1 or array.dtype.kind not in "iuf":
            raise ValueError(
                f"Invalid value for argument {name}. Expected each sentence to be a sequence "
                f"of integer token ids. Received: {name}[{i}] of shape {array.shape} and "
                f"dtype {array.dtype}"
            )
        arrays.append(array)
    if not arrays:
        return arrays
    flat = np.concatenate(arrays)
    if flat.dtype.kind == "f" and not np.array_equal(flat, np.round(flat)):
        i = next(i for i, a in enumerate(arrays) if not np.array_equal(a, np.round(a)))
        raise ValueError(
            f"Invalid value for argument {name}. Expected integer token ids. Received: "
            f"{name}[{i}]={arrays[i].tolist()!r:.100}"
        )
    if flat.size and flat.min() <= 0:
        i = next(i for i, a in enumerate(arrays) if a.size and a.min() <= 0)
        what = "a negative id" if arrays[i].min() < 0 else "the padding id 0"
        raise ValueError(
            f"Invalid value for argument {name}. Expected sentences of token ids >= 1, without "
            f"padding (pass each sentence at its own length, not a padded array). Received: "
            f"{name}[{i}] holds {what}: {arrays[i].tolist()!r:.100}"
        )
    return [a.astype("int32") for a in arrays]


class TokenIdChecks:
    """A `keras.Model` mixin: `fit`, `evaluate` and `predict` check the token ids they are
    given first (`self._check_data(x, y)`): out-of-range ids would give NaN on JAX and a
    backend error elsewhere, and inside a compiled step they are read as the unknown id.
    Arrays are checked whole; a batch source that knows its largest ids
    (`BucketedBatches.largest_ids`) by them; any other `keras.utils.PyDataset` and a
    `tf.data.Dataset` by their first batch (read once more, before training); a Python
    generator is passed through unchecked (reading it would consume it). The model has
    `source_vocabulary_size` and `target_vocabulary_size`, and takes `(source, target_in)`
    (a tuple or a dict)."""

    def _check_data(self, x, y=None, batches=True):
        """Checks the token ids of `(source, target_in)` and `y` given as arrays, of a batch
        source that knows its largest ids, and (with `batches`) of the first batch of
        another batch source of `(inputs, targets)`; and the source length of each against
        the model's `longest_source` where it has one."""
        self._check_source_lengths(x, batches)
        largest = getattr(x, "largest_ids", None)
        if isinstance(largest, tuple):
            sizes = (self.source_vocabulary_size, self.target_vocabulary_size)
            for side, value, size in zip(("source", "target"), largest, sizes, strict=True):
                if value >= size:
                    raise ValueError(
                        f"Invalid value for argument x: its {side} ids reach {value}, past the "
                        f"model's {side}_vocabulary_size={size} (ids are in [0, {size})). "
                        f"Received: x={type(x).__name__} with a {side} id {value}"
                    )
            return
        batch = first_batch(x) if batches else None
        if batch is not None:
            try:
                self._check_data(*batch[:2])
            except ValueError as error:
                raise ValueError(
                    f"Invalid value for argument x: its first batch has bad token ids ({error}). "
                    f"Received: x={type(x).__name__}"
                ) from None
            return
        if isinstance(x, dict):
            x = (x.get("source"), x.get("target_in"))
        if isinstance(x, (tuple, list)) and len(x) == 2:
            source, target_in = x
            check_token_ids("source", source, self.source_vocabulary_size, rank=2)
            check_token_ids("target_in", target_in, self.target_vocabulary_size, rank=2)
        check_token_ids("y", y, self.target_vocabulary_size)  # (B, T) or (B, T, 1)

    def _check_source_lengths(self, x, batches):
        """Refuses batches longer than the positions the model's attention scores (its
        `longest_source`, the `"location"` score's `max_source_length`): a compiled step
        that knows the length only as it runs (TensorFlow, over batches of several lengths)
        would give the positions past it no weight, with no error."""
        longest = getattr(self, "longest_source", None)
        if longest is None:
            return
        length, what = getattr(x, "longest_length", None), "its longest batches are"
        if length is None:
            batch = first_batch(x) if batches else None
            inputs, what = (batch[0], "its first batch is") if batch else (x, "its source is")
            if isinstance(inputs, dict):
                inputs = inputs.get("source")
            elif isinstance(inputs, (tuple, list)) and len(inputs) == 2:
                inputs = inputs[0]
            shape = getattr(inputs, "shape", None)
            length = shape[1] if shape is not None and len(shape) == 2 else None
        if length is not None and length > longest:
            raise ValueError(
                f"Invalid value for argument x: {what} {length} positions long (padding "
                f"included), past the {longest} source positions the model's attention "
                f"scores (max_source_length). Received: x={type(x).__name__} of source "
                f"length {length}"
            )

    def fit(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.fit`, with the token ids checked first (the validation data's too)."""
        self._check_data(x, y)
        xla = self.jit_compile and compiles_with_xla()
        if xla and getattr(x, "bucket_width", 0) is None:
            warnings.warn(
                'x is BucketedBatches(bucket_width=None) (which its default, "auto", takes '
                "where Keras leaves XLA off: torch, TensorFlow on CPUs alone), every batch "
                "padded to a shape of its own, and the model compiles its train step with XLA "
                "(jit_compile=True), anew for every shape. Pass bucket_width=8 (a few shapes) "
                "to BucketedBatches, or, on TensorFlow, compile the model with "
                "jit_compile=False.",
                stacklevel=2,
            )
        validation = kwargs.get("validation_data")
        if isinstance(validation, (tuple, list)) and len(validation) in (2, 3):
            self._check_data(*validation[:2])  # (x, y) or (x, y, sample_weight)
        elif validation is not None:
            self._check_data(validation)
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate`, with the token ids checked first."""
        self._check_data(x, y)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """`keras.Model.predict`, with the token ids of arrays checked first."""
        self._check_data(x, batches=False)
        return super().predict(x, *args, **kwargs)


def first_batch(x):
    """The first `(inputs, targets)` of a batch source whose values can be read without
    consuming it: a `keras.utils.PyDataset` (`x[0]`), or a `tf.data.Dataset` (one element of a
    new iterator), as numpy arrays; else `None`."""
    if isinstance(x, keras.utils.PyDataset):
        batch = x[0]
    elif type(x).__module__.startswith("tensorflow") and hasattr(x, "take"):
        batch = next(iter(x.take(1)), None)
        if batch is None:
            return None
        batch = keras.tree.map_structure(np.asarray, batch)
    else:
        return None
    if not isinstance(batch, (tuple, list)) or len(batch) < 2:
        return None  # inputs alone (predict): nothing to check the targets against
    return tuple(batch)


def check_texts(name, texts, allow_empty=True):
    """`texts` as a list of `str`: a `ValueError` for a single string (or anything that is not
    a list or tuple, or an empty one unless `allow_empty`), a `TypeError` naming the first
    entry that is not a string."""
    if not isinstance(texts, (list, tuple)):
        raise ValueError(
            f"Invalid value for argument {name}. Expected a list of strings (wrap a single "
            f"text in a list). Received: {name}={texts!r:.80}"
        )
    if not texts and not allow_empty:
        raise ValueError(
            f"Invalid value for argument {name}. Expected a non-empty list of strings. "
            f"Received: {name}=[]"
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"Invalid value for argument {name}. Expected a list of strings. "
                f"Received: {name}[{i}]={text!r:.80} of type {type(text).__name__}"
            )
    return list(texts)


def check_text(name, text):
    """`text` if it is a `str`, else a `TypeError` naming it."""
    if not isinstance(text, str):
        raise TypeError(
            f"Invalid value for argument {name}. Expected a string. "
            f"Received: {name}={text!r:.80} of type {type(text).__name__}"
        )
    return text


def check_path(name, path):
    """`path` (a `str` or an `os.PathLike`) as a `str`."""
    if isinstance(path, (str, os.PathLike)):
        return os.fspath(path)
    raise TypeError(
        f"Invalid value for argument {name}. Expected a path (a str or os.PathLike). "
        f"Received: {name}={path!r}"
    )


def unpack_inputs(inputs):
    """`(source, target_in)` from a sequence-to-sequence model's inputs: a pair or a dict."""
    if isinstance(inputs, dict):
        return inputs["source"], inputs["target_in"]
    source, target_in = inputs
    return source, target_in
