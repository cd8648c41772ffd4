"""The argument checks (keras_luong.checks) at the public entry points: each refuses bad input
with a ValueError or TypeError naming the argument and the value received (each test is a row
of docs/bad_inputs.md)."""

import pytest

from keras_luong import (
    BeamSearchSampler,
    GlobalAttention,
    GreedySampler,
    LocalAttention,
    LuongSeq2Seq,
    MonotonicAttention,
)
from keras_luong.data.vocabulary import Vocabulary


def test_unknown_config_keys_are_refused():
    config = GlobalAttention().get_config()
    with pytest.raises((TypeError, ValueError), match="Unrecognized keyword arguments"):
        GlobalAttention.from_config({**config, "scroe_mode": "dot"})
    config = LuongSeq2Seq(7, 7, units=4).get_config()
    with pytest.raises((TypeError, ValueError), match="Unrecognized keyword arguments"):
        LuongSeq2Seq.from_config({**config, "window_size": 3})


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: LuongSeq2Seq(7, 7, dropout=1.5), "argument dropout. .*dropout=1.5"),
        (lambda: LuongSeq2Seq(7, 7, attention_dropout=-0.1), "attention_dropout=-0.1"),
        (lambda: LuongSeq2Seq(7, 7, start_token=7), "start_token=7"),
        (lambda: LocalAttention(position_units=True), "position_units=True"),
        (lambda: LocalAttention(window=True), "window=True"),
        (lambda: GlobalAttention(units=True), "units=True"),
        (lambda: GlobalAttention(dropout=True), "dropout=True"),
        (lambda: BeamSearchSampler(num_beams=True), "num_beams=True"),
        (lambda: BeamSearchSampler(min_length=-1), "min_length=-1"),
    ],
)
def test_constructors_name_the_bad_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda v: BeamSearchSampler(3, length_penalty=v), "length_penalty"),
        (lambda v: BeamSearchSampler(3, coverage_penalty=v), "coverage_penalty"),
        (lambda v: BeamSearchSampler(3, temperature=v), "temperature"),
        (lambda v: GreedySampler(temperature=v), "temperature"),
        (lambda v: MonotonicAttention(sigmoid_noise=v), "sigmoid_noise"),
        (lambda v: MonotonicAttention(score_bias_init=v), "score_bias_init"),
        (lambda v: LocalAttention(sigma=v), "sigma"),
    ],
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), True, "1"])
def test_numbers_must_be_finite(make, name, value):
    with pytest.raises(ValueError, match=f"argument {name}. Expected a finite number"):
        make(value)


def test_texts_are_lists_of_strings_everywhere():
    from keras_luong import SubwordVocabulary
    from keras_luong.evaluation import corpus_bleu
    from keras_luong.training.callbacks import BleuCallback

    vocabulary = Vocabulary(list("abc"))
    for call in (
        lambda: SubwordVocabulary.train("one long string", vocabulary_size=8),
        lambda: SubwordVocabulary.train(None, vocabulary_size=8),
        lambda: vocabulary.encode_batch("abc"),
        lambda: corpus_bleu("a b", ["a b"]),
        lambda: BleuCallback("a b", ["a b"], max_length=5),
    ):
        with pytest.raises(ValueError, match="Expected a list of strings"):
            call()
    with pytest.raises(TypeError, match=r"texts\[1\]=3 of type int"):
        SubwordVocabulary.train(["a b", 3], vocabulary_size=8)
    with pytest.raises(TypeError, match="Received: text=None"):
        vocabulary.encode(None)
    with pytest.raises(ValueError, match="Received: length=-1"):
        vocabulary.encode("ab", length=-1)
    with pytest.raises(ValueError, match="Received: max_sentences=-1"):
        SubwordVocabulary.train(["a b"], vocabulary_size=8, max_sentences=-1)
    # BLEU of no sentence is undefined: said at the call, and by the callback when it is made.
    with pytest.raises(ValueError, match="non-empty list"):
        corpus_bleu([], [])
    with pytest.raises(ValueError, match="non-empty list"):
        BleuCallback([], [], max_length=5)
    # A generator of lines is an iterable of texts too.
    trained = SubwordVocabulary.train((line for line in ["a b c", "b c a"] * 20), 8)
    assert trained.decode(trained.encode("a b")) == "a b"
