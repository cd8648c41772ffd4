"""A SavedModel that translates text: `export_generator(..., text=True)`.

The decoding loop is exported as ids in, ids out (Keras' `tf_saved_model` export, from
TensorFlow or JAX), then wrapped with the model's SentencePiece vocabularies by TensorFlow
Text's `SentencepieceTokenizer`, which reads the same model bytes the `.keras` file carries.
This module is the export path only: it imports TensorFlow and TensorFlow Text when called.
"""

import os
import shutil
import tempfile

from keras_luong.data.subword_vocabulary import SubwordVocabulary


def check_text_export(model, format):
    """Refuses `text=True` where it cannot be written, before anything is traced."""
    if format != "tf_saved_model":
        raise ValueError(
            "Invalid value for argument text: strings in and out are written into a "
            "SavedModel only (its tokenizer is a TensorFlow Text op), not into "
            f"{format!r}: export ids and tokenize outside. Received: text=True with "
            f"format={format!r}"
        )
    for side in ("source", "target"):
        vocabulary = getattr(model, f"{side}_vocabulary", None)
        if vocabulary is None:
            raise ValueError(
                f"Invalid value for argument text: the model has no {side} vocabulary to "
                "put inside the SavedModel (see set_vocabularies). Received: text=True"
            )
        if not isinstance(vocabulary, SubwordVocabulary):
            raise ValueError(
                "Invalid value for argument text: the tokenizer inside the SavedModel is "
                "SentencePiece's, so both vocabularies must be SubwordVocabulary. Received: "
                f"text=True with a {side} vocabulary of type {type(vocabulary).__name__}"
            )
    try:
        import tensorflow_text  # noqa: F401
    except ImportError:
        raise ImportError(
            "export_generator(..., text=True) needs TensorFlow Text: "
            "pip install keras-luong[export] (or pip install tensorflow-text)"
        ) from None


def export_text_saved_model(model, filepath, export_ids):
    """Writes the SavedModel of `model`'s decoding loop with text signatures to `filepath`.
    `export_ids(path)` writes the ids-in, ids-out SavedModel it wraps."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    folder = tempfile.mkdtemp(prefix="keras_luong_export_")
    try:
        export_ids(os.path.join(folder, "ids"))
        generator = tf.saved_model.load(os.path.join(folder, "ids"))
        module = _translator(
            tf,
            tf_text,
            generator,
            model.source_vocabulary.model,
            model.target_vocabulary.model,
            (model.target_vocabulary.START, model.target_vocabulary.END),
        )
        tf.saved_model.save(
            module,
            filepath,
            signatures={
                "serving_default": module.translate,
                "translate": module.translate,
                "serve": module.serve,
            },
            # Serving needs no gradients (and a loop exported from JAX has none to trace).
            options=tf.saved_model.SaveOptions(experimental_custom_gradients=False),
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _translator(tf, tf_text, generator, source_model, target_model, special_ids):
    """A `tf.Module` with `serve` (ids in, the loop's outputs out, as Keras exported them)
    and `translate` (strings in, strings out)."""
    start_token, end_token = special_ids
    module = tf.Module()
    module.generator = generator  # tracked: its variables are saved with the module
    module.source_tokenizer = tf_text.SentencepieceTokenizer(model=source_model)
    module.target_tokenizer = tf_text.SentencepieceTokenizer(model=target_model)

    def outputs(ids):
        result = generator.serve(ids)
        if isinstance(result, (list, tuple)):  # every beam: (ids, scores)
            return {"ids": result[0], "scores": result[1]}
        return {"ids": result}

    def detokenize(ids):
        """The text of each row of ids `(..., length)`: up to the first end id, without
        padding and start ids, joined by SentencePiece."""
        shape = tf.shape(ids)
        rows = tf.reshape(ids, [-1, shape[-1]])
        before_end = tf.math.cumsum(tf.cast(rows == end_token, tf.int32), axis=1) == 0
        keep = before_end & (rows != 0) & (rows != start_token)
        texts = module.target_tokenizer.detokenize(tf.ragged.boolean_mask(rows, keep))
        return tf.reshape(texts, shape[:-1])

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="source")])
    def serve(source):
        return outputs(source)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="texts")])
    def translate(texts):
        ids = module.source_tokenizer.tokenize(texts).to_tensor(default_value=0)
        # At least one column: a batch of empty texts is a batch of empty sources.
        ids = tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])
        result = outputs(tf.cast(ids, tf.int32))
        translated = {"translations": detokenize(result["ids"])}
        if "scores" in result:
            translated["scores"] = result["scores"]
        return translated

    module.serve, module.translate = serve, translate
    return module
