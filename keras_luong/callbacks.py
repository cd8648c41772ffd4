"""Callbacks for training translation models."""

import time

import keras

from keras_luong.checks import check_integer, check_texts
from keras_luong.evaluation import corpus_bleu


class BleuCallback(keras.callbacks.Callback):
    """Translates held-out sentences every `frequency` epochs and logs their corpus BLEU.

    The score goes into the epoch's `logs` under `name` (`"val_bleu"` by default), and the
    length ratio of the output's words to the references' under `name + "_length_ratio"` (a
    ratio well above 1: the decoder runs on; below 1: it stops early), where
    `History`, `ModelCheckpoint(monitor="val_bleu", mode="max")`, `EarlyStopping` and
    `ReduceLROnPlateau` read it: put this callback before them in the list. It is only
    logged on the epochs it is computed, as Keras' own validation metrics with
    `validation_freq`.

    Args:
        sources: The source sentences (strings).
        references: Their references: one string per sentence, or a list of them.
        max_length: The most target tokens decoded per sentence; by default `translate`'s
            rule (each sentence's own bound, 1.5 × its source tokens + 10).
        source_vocabulary: The source vocabulary; the model's own (`set_vocabularies`) if
            `None`.
        target_vocabulary: The target vocabulary; likewise.
        sampler: The sampler of `model.translate`. Defaults to the model's
            (`compile(sampler=...)`, greedy unless set there).
        frequency: Decode every this many epochs (and after the last). Defaults to 1.
        tokenize: sacreBLEU's tokenizer (see `keras_luong.evaluation.corpus_bleu`):
            `"none"` for text tokenized beforehand. Defaults to `"none"`.
        name: The key in `logs`. Defaults to `"val_bleu"`.
        batch_size: Sentences decoded at once. Defaults to 32, as `translate`.
        verbose: 1 prints the score, the number of sentences and the seconds taken. Defaults
            to 1.

    Example:

    >>> import keras, numpy as np
    >>> from keras_luong import LuongSeq2Seq
    >>> from keras_luong.vocabulary import Vocabulary
    >>> words = Vocabulary.from_corpus(["a b c d"], split="whitespace")
    >>> model = LuongSeq2Seq(len(words), len(words), units=8, embedding_dim=4)
    >>> model.set_vocabularies(words, words)
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> source = words.encode_batch(["a b", "c d"])
    >>> bleu = BleuCallback(["a b", "c d"], ["a b", "c d"], max_length=4, verbose=0)
    >>> history = model.fit(
    ...     (source, words.encode_batch(["a b", "c d"], start=True)),
    ...     words.encode_batch(["a b", "c d"], end=True),
    ...     epochs=2, callbacks=[bleu], verbose=0,
    ... )
    >>> len(history.history["val_bleu"])  # one score per epoch, in percent
    2
    >>> hypotheses = model.translate(["a b", "c d"], max_length=4)
    >>> history.history["val_bleu"][-1] == corpus_bleu(hypotheses, ["a b", "c d"])
    True
    """

    def __init__(
        self,
        sources,
        references,
        max_length=None,
        source_vocabulary=None,
        target_vocabulary=None,
        sampler=None,
        frequency=1,
        tokenize="none",
        name="val_bleu",
        batch_size=32,
        verbose=1,
    ):
        super().__init__()
        # Checked now, not after the first epoch's training time is spent.
        sources = check_texts("sources", sources, allow_empty=False)
        if isinstance(references, str) or len(references) != len(sources):
            raise ValueError(
                "Expected one reference (or list of references) per source. Received: "
                f"{len(sources)} sources and {len(references)} references"
            )
        check_integer("frequency", frequency)
        check_integer("max_length", max_length, allow_none=True)
        corpus_bleu(["a"], ["a"], tokenize=tokenize)  # refuses an unknown tokenizer now
        self.sources = list(sources)
        self.references = list(references)
        self.max_length = max_length
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary
        self.sampler = sampler
        self.frequency = frequency
        self.tokenize = tokenize
        self.name = name
        self.batch_size = batch_size
        self.verbose = verbose
        self.last_epoch = None

    def on_train_begin(self, logs=None):
        self.last_epoch = self.params.get("epochs") if self.params else None

    def score(self):
        """Translates the sources with the model and returns their corpus BLEU, a `BleuScore`
        (the score with its brevity penalty and length ratio)."""
        hypotheses = self.model.translate(
            self.sources,
            self.source_vocabulary,
            self.target_vocabulary,
            max_length=self.max_length,
            sampler=self.sampler,
            batch_size=self.batch_size,
        )
        return corpus_bleu(hypotheses, self.references, tokenize=self.tokenize, return_details=True)

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.frequency and epoch + 1 != self.last_epoch:
            return
        started = time.perf_counter()
        bleu = self.score()
        if logs is not None:
            logs[self.name] = bleu.score
            logs[f"{self.name}_length_ratio"] = bleu.length_ratio
        if self.verbose:
            seconds = time.perf_counter() - started
            print(
                f"Epoch {epoch + 1}: {self.name} {bleu.score:.2f} (length ratio "
                f"{bleu.length_ratio:.3f}, brevity penalty {bleu.brevity_penalty:.3f}; "
                f"{len(self.sources)} sentences, {seconds:.1f} s)",
                flush=True,
            )
