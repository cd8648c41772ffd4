"""Translation on real text: the parallel-text loaders, subword vocabularies, length-bucketed
batches, BLEU and chrF, the BLEU callback and vocabularies saved inside a model. No Multi30k
text here (its licence forbids shipping it): the tests write small files of their own."""

import collections
import gzip
import hashlib
import math
import os

import keras
import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.batching import BucketedBatches
from keras_luong.callbacks import BleuCallback
from keras_luong.datasets import multi30k
from keras_luong.evaluation import bleu_signature, corpus_bleu, corpus_chrf
from keras_luong.vocabulary import SubwordVocabulary, Vocabulary

ENGLISH = [
    "a dog runs on the grass .",
    "two men play football in a park .",
    "a woman in a red dress sings .",
    "a little girl climbs a tree .",
    "the children are playing in the water .",
    "a man rides a bicycle down the street .",
]
GERMAN = [
    "ein hund rennt auf dem gras .",
    "zwei männer spielen fußball in einem park .",
    "eine frau in einem roten kleid singt .",
    "ein kleines mädchen klettert auf einen baum .",
    "die kinder spielen im wasser .",
    "ein mann fährt mit dem fahrrad die straße hinunter .",
]


def write(path, lines, compress=False):
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
        return str(path) + ".gz"
    path.write_bytes(data)
    return str(path)


def sha256(lines):
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest()


# --- loaders


@pytest.mark.parametrize("compress", [False, True])
def test_load_parallel_text_reads_aligned_lines(tmp_path, compress):
    source = write(tmp_path / "corpus.en", ENGLISH, compress)
    target = write(tmp_path / "corpus.de", [g + "\r" for g in GERMAN], compress)
    english, german = multi30k.load_parallel_text(source, target)
    assert english == ENGLISH and german == GERMAN  # the \r of Windows line ends dropped


def test_load_parallel_text_refuses_unequal_or_missing_files(tmp_path):
    source = write(tmp_path / "a.en", ENGLISH)
    target = write(tmp_path / "a.de", GERMAN[:-1])
    with pytest.raises(ValueError, match=r"6 lines in .*a\.en, 5 in .*a\.de"):
        multi30k.load_parallel_text(source, target)
    with pytest.raises(ValueError, match=r"target_file=.*missing\.de"):
        multi30k.load_parallel_text(source, str(tmp_path / "missing.de"))


def _fake_multi30k(tmp_path, monkeypatch, compress=True):
    """A folder laid out as the official files, with our own sentences; the sha256 table
    patched to their hashes."""
    hashes = {}
    splits = {"train": (0, 4), "validation": (4, 5), "test2016": (5, 6)}
    for split, (start, stop) in splits.items():
        for tokenized in (True, False):
            for language, lines in (("en", ENGLISH), ("de", GERMAN)):
                chosen = lines[start:stop]
                if not tokenized:
                    chosen = [line.capitalize() for line in chosen]
                name = multi30k.file_name(split, language, tokenized)
                write(tmp_path / name, chosen, compress)
                hashes[name] = sha256(chosen)
    monkeypatch.setattr(multi30k, "SHA256", hashes)
    return splits


def test_load_data_from_a_path_checks_every_file(tmp_path, monkeypatch):
    splits = _fake_multi30k(tmp_path, monkeypatch)
    data = multi30k.load_data(path=str(tmp_path))
    for split, (start, stop) in splits.items():
        assert data[split] == (ENGLISH[start:stop], GERMAN[start:stop])
    raw = multi30k.load_data(path=str(tmp_path), tokenized=False, source_language="de",
                             target_language="en")  # fmt: skip
    assert raw["train"][0][0] == "Ein hund rennt auf dem gras ."
    # A damaged file is named with both hashes.
    write(tmp_path / "val.lc.norm.tok.de", ["something else"], compress=True)
    with pytest.raises(ValueError, match=r"val\.lc\.norm\.tok\.de\.gz does not hold the official"):
        multi30k.load_data(path=str(tmp_path))
    os.remove(tmp_path / "val.lc.norm.tok.de.gz")
    with pytest.raises(ValueError, match=r"val\.lc\.norm\.tok\.de \(or .*\.gz\) is missing"):
        multi30k.load_data(path=str(tmp_path))


def test_load_data_downloads_the_official_files(tmp_path, monkeypatch):
    _fake_multi30k(tmp_path, monkeypatch, compress=False)
    fetched = []

    def get_file(fname, origin, cache_subdir):
        fetched.append((fname, origin, cache_subdir))
        local = tmp_path / fname
        if fname.endswith(".gz"):  # the raw files are published compressed
            write(local.with_suffix(""), (tmp_path / fname[:-3]).read_text().splitlines(), True)
        return str(local)

    monkeypatch.setattr(keras.utils, "get_file", get_file)
    data = multi30k.load_data()
    assert data["validation"] == (ENGLISH[4:5], GERMAN[4:5])
    root = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/"
    assert ("val.lc.norm.tok.de", root + "tok/val.lc.norm.tok.de", "datasets/multi30k") in fetched
    multi30k.load_data(tokenized=False)
    assert ("train.en.gz", root + "raw/train.en.gz", "datasets/multi30k") in fetched


def test_load_data_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="source_language='fr'"):
        multi30k.load_data(path=str(tmp_path), source_language="fr")
    with pytest.raises(ValueError, match="two different languages"):
        multi30k.load_data(path=str(tmp_path), source_language="de")
    with pytest.raises(ValueError, match=r"path='.*nowhere'"):
        multi30k.load_data(path=str(tmp_path / "nowhere"))


def test_no_multi30k_text_in_the_package():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    banned = {"train.en", "train.de", "val.en", "val.de", "test_2016_flickr.en"}
    for folder, _, files in os.walk(root):
        if any(part.startswith(".") for part in folder[len(root) :].split(os.sep)):
            continue  # .venv, .cache, .git
        for name in files:
            assert name.removesuffix(".gz") not in banned, os.path.join(folder, name)
            assert ".lc.norm.tok." not in name, os.path.join(folder, name)


# --- vocabularies


def test_subwords_round_trip_and_reserved_ids(tmp_path):
    texts = (ENGLISH + GERMAN) * 3
    subwords = SubwordVocabulary.train(texts, vocabulary_size=120)
    assert len(subwords) == 120
    for text in ENGLISH + GERMAN + ["ein mann spielt fußball ."]:
        ids = subwords.encode(text)
        assert min(ids) >= SubwordVocabulary.RESERVED
        assert subwords.decode(ids) == text
        assert "".join(subwords.tokenize(text)).replace("▁", " ").strip() == text
    # Start, end and padding ids as Vocabulary lays them out.
    ids = subwords.encode_batch(["a dog runs .", "a man"], start=True, end=True)
    assert ids[:, 0].tolist() == [1, 1] and ids[0, -1] == 2 and ids[1, -1] == 0
    assert subwords.decode(ids[1]) == "a man"
    # A character never seen is the unknown id 3, written as the oov token.
    assert SubwordVocabulary.OOV in subwords.encode("a ©")
    assert subwords.decode(subwords.encode("a ©")) == "a <unk>"
    subwords.save(tmp_path / "subwords.json")
    loaded = Vocabulary.load(tmp_path / "subwords.json")
    assert loaded == subwords and loaded.encode("ein hund") == subwords.encode("ein hund")


def test_subwords_split_rare_words_into_known_units():
    subwords = SubwordVocabulary.train(GERMAN * 5, vocabulary_size=50, model_type="unigram")
    pieces = subwords.tokenize("ein fahrradhund")
    assert len(pieces) > 2 and SubwordVocabulary.OOV not in subwords.encode("ein fahrradhund")
    assert subwords.decode(subwords.encode("ein fahrradhund")) == "ein fahrradhund"


def test_subwords_refuse_bad_arguments():
    with pytest.raises(ValueError, match="model_type='wordpiece'"):
        SubwordVocabulary.train(ENGLISH, model_type="wordpiece")
    with pytest.raises(ValueError, match="vocabulary_size=4"):
        SubwordVocabulary.train(ENGLISH, vocabulary_size=4)
    with pytest.raises(ValueError, match="vocabulary_size=100000"):
        SubwordVocabulary.train(ENGLISH, vocabulary_size=100000)
    with pytest.raises(ValueError, match="no non-empty text"):
        SubwordVocabulary.train(["", " "])
    with pytest.raises(ValueError, match="Expected a serialized SentencePiece model"):
        SubwordVocabulary(12)


def test_word_vocabulary_size_limits():
    texts = ["a b a c a b", "d"]
    vocabulary = Vocabulary.from_corpus(texts, split="whitespace", max_size=2)
    assert vocabulary.symbols == ["a", "b"]  # the two most frequent: a (3), b (2)
    assert Vocabulary.from_corpus(texts, split="whitespace", min_count=2).symbols == ["a", "b"]
    assert vocabulary.encode("a c d") == [4, 3, 3]


def tiny_model(vocabulary):
    model = LuongSeq2Seq(len(vocabulary), len(vocabulary), units=8, embedding_dim=4)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_vocabularies_saved_inside_the_model(tmp_path):
    subwords = SubwordVocabulary.train(ENGLISH + GERMAN, vocabulary_size=100)
    words = Vocabulary.from_corpus(GERMAN, split="whitespace")
    model = LuongSeq2Seq(len(subwords), len(words), units=8, embedding_dim=4)
    with pytest.raises(ValueError, match="source_vocabulary=None"):
        model.translate(ENGLISH[:2], max_length=5)
    with pytest.raises(ValueError, match="target vocabulary does not match"):
        model.set_vocabularies(subwords, subwords)
    model.set_vocabularies(subwords, words)
    before = model.translate(ENGLISH[:3], max_length=6)
    assert before == [
        words.decode(ids) for ids in model.generate(subwords.encode_batch(ENGLISH[:3]), 6)
    ]
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.source_vocabulary == subwords and loaded.target_vocabulary == words
    assert loaded.translate(ENGLISH[:3], max_length=6) == before
    with pytest.raises(ValueError, match="max_length=None"):
        loaded.translate(ENGLISH[:1])
    # A model saved without vocabularies loads without them.
    plain = LuongSeq2Seq(len(subwords), len(words), units=8, embedding_dim=4)
    plain.generate(subwords.encode_batch(ENGLISH[:1]), 2)
    plain.save(tmp_path / "plain.keras")
    reloaded = keras.saving.load_model(tmp_path / "plain.keras")
    assert getattr(reloaded, "source_vocabulary", None) is None


# --- bucketing


def random_pairs(count, seed=0, longest=30):
    """Pairs of random ids whose lengths follow each other, as translations' do."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest, count)
    sources = [rng.integers(4, 50, n).tolist() for n in lengths]
    targets = [rng.integers(4, 50, max(1, n + rng.integers(-2, 3))).tolist() for n in lengths]
    return sources, targets


def unpack(batches):
    """Every real pair of an epoch, as `(source, target)` tuples read back from the batches
    (the start and end ids removed), and the batch shapes."""
    pairs, shapes = [], []
    for index in range(len(batches)):
        (source, target_in), target_out = batches[index]
        shapes.append(source.shape)
        assert source.shape == target_in.shape == target_out.shape
        for s, t_in, t_out in zip(source, target_in, target_out, strict=True):
            if not t_out.any():
                assert not s.any() and not t_in.any()  # a filler row: padding only
                continue
            target = t_out[: np.argmax(t_out == 2)]
            np.testing.assert_array_equal(t_in[1 : len(target) + 1], target)
            assert t_in[0] == 1
            pairs.append((tuple(s[s != 0]), tuple(target)))
    return pairs, shapes


def test_bucketing_keeps_every_pair_once_with_its_ids():
    sources, targets = random_pairs(500)
    batches = BucketedBatches(sources, targets, tokens_per_batch=256, bucket_width=8, seed=3)
    expected = collections.Counter(zip(map(tuple, sources), map(tuple, targets), strict=True))
    orders = []
    for _ in range(3):  # three epochs: the same pairs, in a new order each time
        pairs, shapes = unpack(batches)
        assert collections.Counter(pairs) == expected
        for rows, length in shapes:
            assert length % 8 == 0 and rows * length <= 256
        orders.append(pairs)
        batches.on_epoch_end()
    assert orders[0] != orders[1] != orders[2]
    # One shape per bucket: a compiled train step is traced once per bucket.
    assert len(set(shapes)) == len(batches.buckets)
    # Every pair sits in the bucket of its longer side (the target with its end id).
    for length, _, indices in batches.buckets:
        for i in indices:
            longer = max(len(sources[i]), len(targets[i]) + 1)
            assert length - 8 < longer <= length


def test_bucketing_reduces_padding_against_one_padded_array():
    sources, targets = random_pairs(400)
    bucketed = BucketedBatches(sources, targets, tokens_per_batch=512, bucket_width=4)
    longest = max(max(len(s), len(t) + 1) for s, t in zip(sources, targets, strict=True))
    flat = BucketedBatches(sources, targets, 16 * longest, bucket_width=longest, shuffle=False)
    real = sum(len(t) + 1 for t in targets)
    assert flat.padding_share() == pytest.approx(1 - real / (len(flat) * 16 * longest))
    assert flat.padding_share() > 0.4 and bucketed.padding_share() < 0.2
    assert bucketed.target_tokens() == flat.target_tokens() == real
    pairs, _ = unpack(flat)  # unshuffled: the corpus order
    assert pairs == list(zip(map(tuple, sources), map(tuple, targets), strict=True))


def test_bucketing_refuses_bad_arguments():
    with pytest.raises(ValueError, match="3 source_ids and 2 target_ids"):
        BucketedBatches([[4]] * 3, [[4]] * 2)
    with pytest.raises(ValueError, match="tokens_per_batch=0"):
        BucketedBatches([[4]], [[4]], tokens_per_batch=0)
    with pytest.raises(ValueError, match="no pairs"):
        BucketedBatches([], [])


def test_fit_consumes_the_bucketed_batches_and_filler_rows_weigh_nothing():
    sources, targets = random_pairs(40, longest=9)
    batches = BucketedBatches(sources, targets, tokens_per_batch=64, bucket_width=4,
                              shuffle=False)  # fmt: skip
    words = Vocabulary([str(i) for i in range(46)])  # ids 0 to 49
    model, twin = tiny_model(words), tiny_model(words)
    (source, target_in), target_out = batches[0]
    for m in (model, twin):
        m.test_on_batch((source[:1], target_in[:1]), target_out[:1])  # builds the optimizer too
    twin.set_weights(model.get_weights())
    model.fit(batches, epochs=1, verbose=0, shuffle=False)
    for index in range(len(batches)):
        twin.train_on_batch(*batches[index])
    for a, b in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # The loss of a batch with filler rows (as the last batch of a bucket may have) equals
    # the loss of its real rows alone.
    (source, target_in), target_out = batches[0]
    filler = np.zeros((2, source.shape[1]), "int32")
    with_fillers = model.test_on_batch(
        (np.concatenate([source, filler]), np.concatenate([target_in, filler])),
        np.concatenate([target_out, filler]),
    )
    without = model.test_on_batch((source, target_in), target_out)
    assert np.isfinite(with_fillers)
    np.testing.assert_allclose(with_fillers, without, rtol=1e-5)


# --- BLEU and chrF


def reference_bleu(hypotheses, references, order=4):
    """BLEU by its definition: clipped n-gram precisions over the corpus, their geometric
    mean, times the brevity penalty exp(1 - r / c) when c < r."""
    matches, totals = [0] * order, [0] * order
    hypothesis_length = reference_length = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        h, r = hypothesis.split(), reference.split()
        hypothesis_length += len(h)
        reference_length += len(r)
        for n in range(1, order + 1):
            h_grams = collections.Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            r_grams = collections.Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, r_grams[g]) for g, c in h_grams.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    precision = math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)
    penalty = min(1.0, math.exp(1 - reference_length / hypothesis_length))
    return 100 * penalty * precision


def test_bleu_against_hand_counted_ngrams():
    # One sentence: 5/6 unigrams, 3/5 bigrams, 2/4 trigrams, 1/3 4-grams, equal lengths.
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"]) == pytest.approx(
        expected
    )
    assert expected == pytest.approx(53.7284965911771)
    # A corpus: counts are summed over sentences before the precisions, and the hypotheses
    # (9 + 4 tokens) are shorter than the references (9 + 6): brevity penalty exp(1 - 15/13).
    hypotheses = ["a man rides a bike down the street .", "two dogs play ."]
    references = ["a man rides a bicycle down the street .", "two dogs play in snow ."]
    # (matches, totals) by hand: "bike" misses 1 unigram, 2 bigrams, 3 trigrams and 4 4-grams
    # of the first sentence; the second matches 4/4, 2/3, 1/2 and 0/1.
    counts = {1: (8 + 4, 13), 2: (6 + 2, 11), 3: (4 + 1, 9), 4: (2 + 0, 7)}
    by_hand = 100 * math.exp(1 - 15 / 13) * math.prod(m / t for m, t in counts.values()) ** 0.25
    assert by_hand == pytest.approx(48.98737, abs=1e-5)
    assert corpus_bleu(hypotheses, references) == pytest.approx(by_hand)
    assert reference_bleu(hypotheses, references) == pytest.approx(by_hand)


def test_bleu_properties_and_tokenization():
    assert corpus_bleu(ENGLISH, ENGLISH) == pytest.approx(100)
    assert corpus_bleu(["x y z w"], ["a b c d"]) == 0
    # With several references a sentence's n-grams are clipped to the most in any one of them.
    assert corpus_bleu(["the cat sat on the mat"], [["the cat sat on a mat", "on the mat"]]) > (
        corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    )
    # tok:none splits on spaces only; 13a splits punctuation off raw text.
    assert corpus_bleu(["a dog runs."], ["a dog runs ."]) < 100
    assert corpus_bleu(["a dog runs."], ["a dog runs ."], tokenize="13a") == pytest.approx(100)
    assert corpus_bleu(["A Dog runs ."], ["a dog runs ."], lowercase=True) == pytest.approx(100)
    assert "tok:13a" in bleu_signature() and "tok:none" in bleu_signature("none")
    with pytest.raises(ValueError, match="tokenize='moses'"):
        corpus_bleu(["a"], ["a"], tokenize="moses")
    with pytest.raises(ValueError, match="2 hypotheses and 1 references"):
        corpus_bleu(["a", "b"], ["a"])


def test_chrf_properties():
    assert corpus_chrf(GERMAN, GERMAN) == pytest.approx(100)
    assert corpus_chrf(["xyz"], ["abc"]) == 0
    near, far = (
        corpus_chrf(["ein hund rennt"], ["ein hund rennt ."]),
        corpus_chrf(["ein mann"], ["ein hund rennt ."]),
    )
    assert 0 < far < near < 100


# --- the callback


def test_bleu_callback_logs_for_checkpoints(tmp_path):
    words = Vocabulary.from_corpus(ENGLISH + GERMAN, split="whitespace")
    model = tiny_model(words)
    model.set_vocabularies(words, words)
    source = words.encode_batch(ENGLISH)
    target_in = words.encode_batch(GERMAN, start=True)
    target_out = words.encode_batch(GERMAN, end=True)
    bleu = BleuCallback(ENGLISH, GERMAN, max_length=12, frequency=2, verbose=0)
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "best.keras"), monitor="val_bleu", mode="max", save_best_only=True
    )
    # Epoch 1 has no score (frequency 2): Keras' checkpoint says so and saves nothing.
    with pytest.warns(UserWarning, match="only with val_bleu available"):
        history = model.fit(
            (source, target_in), target_out, epochs=3, verbose=0, callbacks=[bleu, checkpoint]
        )
    # Scored on epochs 2 and 3 (the last), as validation_freq logs.
    assert len(history.history["val_bleu"]) == 2
    expected = corpus_bleu(model.translate(ENGLISH, max_length=12), GERMAN)
    assert history.history["val_bleu"][-1] == pytest.approx(expected)
    assert os.path.exists(tmp_path / "best.keras")
    with pytest.raises(ValueError, match="6 sources and 5 references"):
        BleuCallback(ENGLISH, GERMAN[:5], max_length=4)
    with pytest.raises(ValueError, match="frequency=0"):
        BleuCallback(ENGLISH, GERMAN, max_length=4, frequency=0)
