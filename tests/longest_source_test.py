"""A model whose attention scores at most `max_source_length` source positions (the
`"location"` score): its entry points refuse data past that length before the model runs,
on every backend (TensorFlow's compiled steps, traced for batches of several lengths, would
otherwise give the positions past it no weight with no error), and cut padding past it."""

import keras
import numpy as np
import pytest

from keras_luong import BucketedBatches, Ensemble, LuongSeq2Seq
from keras_luong.data.vocabulary import Vocabulary
from tests.test_case import ListBatches, assert_allclose, fit_lowers_loss

LONGEST = 6
WORDS = Vocabulary(list("abcdefghijklmnop"), split="whitespace")  # 20 ids: 4 reserved


def location_model(seed=0):
    """A built model of the `"location"` score with spread-out logits (no near-ties)."""
    keras.utils.set_random_seed(seed)
    model = LuongSeq2Seq(
        len(WORDS), len(WORDS), units=8, embedding_dim=4, score_mode="location",
        max_source_length=LONGEST,
    )  # fmt: skip
    ids = np.full((2, LONGEST), 5, "int32")
    model((ids, ids))
    rng = np.random.default_rng(seed)
    model.projection.kernel.assign(rng.normal(0, 1, (8, len(WORDS))).astype("float32"))
    model.set_vocabularies(WORDS, WORDS)
    return model


def pairs(rows, width, seed=0):
    """`((source, target_in), target_out)` arrays of `rows` rows and `width` columns."""
    rng = np.random.default_rng(seed)
    source, target_in, target_out = (rng.integers(4, 20, (rows, width)) for _ in range(3))
    return (source.astype("int32"), target_in.astype("int32")), target_out.astype("int32")


def test_longest_source_is_the_location_scores_max_source_length():
    assert location_model().longest_source == LONGEST
    assert LuongSeq2Seq(20, 20, units=8, embedding_dim=4).longest_source is None
    members = [location_model(0), LuongSeq2Seq(20, 20, units=8, embedding_dim=4)]
    members[1]((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
    assert Ensemble(members).longest_source == LONGEST  # the fewest of its members'


def test_fit_refuses_data_longer_than_the_attention_scores():
    """Arrays, `BucketedBatches` (by its longest bucket, padding included: a short source
    with a long target is padded to the pair's bucket) and another batch source (by its
    first batch) are refused before any step; data within the length trains."""
    model = LuongSeq2Seq(
        20, 20, units=8, embedding_dim=4, score_mode="location", max_source_length=LONGEST
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = pairs(4, LONGEST + 2)
    with pytest.raises(ValueError, match=r"its source is 8 positions long .*past the 6"):
        model.fit(x, y, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"its source is 8 positions long"):
        model.evaluate(x, y, verbose=0)
    with pytest.raises(ValueError, match=r"its source is 8 positions long"):
        model.predict(x, verbose=0)
    with pytest.raises(ValueError, match=r"its source is 8 positions long"):
        model.fit(*pairs(4, LONGEST), validation_data=(x, y), epochs=1, verbose=0)
    sources, targets = [[5, 6, 7], [8, 9]], [[5, 6, 7, 8, 9, 10, 11], [4]]  # bucket 8: 7 + end
    bucketed = BucketedBatches(sources, targets, 16, bucket_width=8, shuffle=False)
    assert bucketed.longest_length == 8
    # Unbucketed, a batch's source is padded to its own longest: 3 positions here.
    assert BucketedBatches(sources, targets, 16, bucket_width=None).longest_length == 3
    with pytest.raises(ValueError, match=r"its longest batches are 8 positions long"):
        model.fit(bucketed, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"its first batch is 8 positions long"):
        model.fit(ListBatches([pairs(3, 8)]), epochs=1, verbose=0)
    good = ListBatches([pairs(3, LONGEST)])
    with pytest.raises(ValueError, match=r"its longest batches are 8"):
        model.fit(good, validation_data=bucketed, epochs=1, verbose=0)
    assert not model.built  # refused before any step
    before, after = fit_lowers_loss(model, *pairs(4, LONGEST))
    assert after < before


def test_generate_cuts_padding_past_the_longest_source_and_refuses_tokens_there():
    model = location_model()
    source = np.zeros((2, LONGEST + 2), "int32")
    source[0, :4], source[1, :LONGEST] = [5, 6, 7, 8], [9, 10, 11, 12, 13, 14]
    ids, weights = model.generate(source, max_length=5, return_attention_scores=True)
    expected_ids, expected_weights = model.generate(
        source[:, :LONGEST], max_length=5, return_attention_scores=True
    )
    np.testing.assert_array_equal(ids, expected_ids)
    assert weights.shape == (2, 5, LONGEST + 2)
    assert_allclose(weights[..., :LONGEST], expected_weights)
    assert np.all(weights[..., LONGEST:] == 0)  # the cut padding
    source[1, LONGEST] = 15  # a seventh token
    with pytest.raises(ValueError, match=r"inputs\[1\] has tokens up to position 7, past the 6"):
        model.generate(source, max_length=5)


def test_translate_refuses_texts_longer_than_the_attention_scores():
    """Texts within the length decode as `generate` does on their ids (their batch's padding
    to a multiple of 8 stops at the longest source); a longer text is named."""
    model = location_model()
    texts = ["a b c d e", "f g h i j k", "l"]
    expected = model.generate(WORDS.encode_batch(texts), max_length=5)
    assert model.translate(texts, max_length=5) == [WORDS.decode(row) for row in expected]
    with pytest.raises(ValueError, match=r"texts\[1\] has 7 source tokens, past the 6"):
        model.translate(["a b", "a b c d e f g"], max_length=5)
