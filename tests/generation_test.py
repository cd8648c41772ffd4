"""Generation (`keras_luong.generation.mixin`): the cache of compiled generators, the sampler
look-up by name or config, empty batches and failed calls."""

import json
import math
import warnings

import keras
import numpy as np
import pytest

from keras_luong import (
    BeamSearchSampler,
    GreedySampler,
    LuongSeq2Seq,
    samplers,
)
from keras_luong.checks import MASKED_SCORE
from keras_luong.data.vocabulary import Vocabulary
from tests.test_case import BACKEND, to_numpy

V, L = 9, 5
SOURCE = np.array([[3, 4, 5, 6], [7, 8, 0, 0], [5, 0, 0, 0], [6, 6, 3, 0], [4, 0, 0, 0]], "int32")


def make_model(**kwargs):
    keras.utils.set_random_seed(3)
    model = LuongSeq2Seq(V, V, units=8, embedding_dim=4, **kwargs)
    model((SOURCE[:1], SOURCE[:1, :2]))
    return model


@pytest.fixture(scope="module")
def model():
    return make_model()


def test_generate_runs_the_generator_it_keeps(model):
    ids = model.generate(SOURCE, L)
    # The same compiled function, through Keras' predict on a dataset.
    np.testing.assert_array_equal(ids, model.generator(L).predict(SOURCE, verbose=0))
    # Batches of any size give the same ids.
    np.testing.assert_array_equal(model.generate(SOURCE, L, batch_size=2), ids)
    assert ids.dtype == np.int32 and ids.shape == (5, L)


def test_equal_samplers_share_one_compiled_generator(model):
    first = model.generator(L, BeamSearchSampler(2, length_penalty=0.5))
    assert model.generator(L, BeamSearchSampler(2, length_penalty=0.5)) is first
    assert model.generator(L, {"class_name": "keras_luong>BeamSearchSampler", "config": {
        "num_beams": 2, "length_penalty": 0.5}}) is first  # fmt: skip
    assert model.generator(L, BeamSearchSampler(3, length_penalty=0.5)) is not first
    assert model.generator(L, "greedy") is model.generator(L, GreedySampler())
    assert model.generator(L, "greedy") is not model.generator(L, GreedySampler(temperature=2))
    assert model.generator(L, stop_token_ids=None) is not model.generator(L)


def test_the_cache_is_bounded():
    model = make_model()
    capacity = model.generators.capacity
    kept = [model.generator(length) for length in range(1, capacity + 3)]
    assert len(model.generators) == capacity
    # The most recently used are kept; the oldest were dropped.
    assert model.generator(capacity + 2) is kept[-1]
    assert model.generator(1) is not kept[0]


class FailingOnce(GreedySampler):
    """Greedy decoding that raises the first time it is traced (or run)."""

    calls = 0

    def __call__(self, *args, **kwargs):
        FailingOnce.calls += 1
        if FailingOnce.calls == 1:
            raise RuntimeError("the sampler failed")
        return super().__call__(*args, **kwargs)


def test_a_call_that_raises_leaves_nothing_cached():
    expected = make_model().generate(SOURCE, L)
    model = make_model()
    with pytest.raises(RuntimeError, match="the sampler failed"):
        model.generate(SOURCE, L, sampler=FailingOnce())
    assert len(model.generators) == 0
    # The next call builds a new generator, which works.
    np.testing.assert_array_equal(model.generate(SOURCE, L, sampler=FailingOnce()), expected)
    assert len(model.generators) == 1


def test_an_empty_batch_gives_an_empty_result(model):
    empty = np.zeros((0, 7), "int32")
    ids = model.generate(empty, L)
    assert ids.shape == (0, L) and ids.dtype == np.int32
    ids, scores = model.generate(empty, L, sampler=BeamSearchSampler(3, return_all_beams=True))
    assert ids.shape == (0, 3, L) and scores.shape == (0, 3)
    ids, weights = model.generate(empty, L, return_attention_scores=True)
    assert ids.shape == (0, L) and weights.shape == (0, L, 7)
    # And it left nothing broken behind: a real batch still decodes.
    np.testing.assert_array_equal(model.generate(SOURCE, L), make_model().generate(SOURCE, L))
    vocabulary = Vocabulary(list("abcde"))
    assert model.translate([], vocabulary, vocabulary, L) == []


def test_translate_refuses_what_is_not_a_string(model):
    vocabulary = Vocabulary(list("abcde"))
    with pytest.raises(TypeError, match=r"texts\[1\]=123"):
        model.translate(["ab", 123], vocabulary, vocabulary, L)


def test_samplers_by_name_config_and_object():
    beam = samplers.get("beam")
    assert isinstance(beam, BeamSearchSampler) and beam.num_beams == 5
    assert isinstance(samplers.get("greedy"), GreedySampler)
    sampler = BeamSearchSampler(3, length_penalty=0.6, min_length=2, return_all_beams=True)
    assert samplers.get(sampler) is sampler
    config = samplers.serialize(sampler)
    json.dumps(config)  # a plain JSON config
    for restored in (samplers.deserialize(config), samplers.get(config)):
        assert type(restored) is BeamSearchSampler
        assert restored.get_config() == sampler.get_config()
    for bad in ("nucleus", 3, None):
        with pytest.raises(ValueError, match="Invalid value for argument sampler"):
            samplers.get(bad)
    with pytest.raises(ValueError, match="not a sampler"):
        samplers.deserialize(keras.saving.serialize_keras_object(keras.layers.Dense(2)))


def test_keras_hub_samplers_by_name(model):
    keras_hub = pytest.importorskip("keras_hub")
    top_k = samplers.get("top_k")
    assert isinstance(top_k, keras_hub.samplers.TopKSampler)
    # top-1 sampling is greedy decoding.
    np.testing.assert_array_equal(
        model.generate(SOURCE, L, sampler=keras_hub.samplers.TopKSampler(k=1, seed=1)),
        model.generate(SOURCE, L),
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sampler": "beam", "num_beams": 3}, "unexpected keyword argument 'num_beams'"),
        ({"beam_width": 3}, "unexpected keyword argument 'beam_width'"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"stop_token_ids": (2, -1)}, "stop_token_ids=-1"),
    ],
)
def test_nothing_is_silently_ignored(model, kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        model.generate(SOURCE, L, **kwargs)
    with pytest.raises(TypeError, match="positional"):
        model.generate(SOURCE, L, "beam")


def small_model(**kwargs):
    model = LuongSeq2Seq(7, 7, units=4, embedding_dim=3, **kwargs)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    return model


SRC = np.array([[4, 5, 6, 0], [5, 0, 0, 0]])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.generate(SRC + 7, 3), r"Invalid inputs: token ids must be in \[0, 7\)"),
        (lambda m: m.generate(SRC - 1, 3), r"Received: ids from -1 to 5"),
        (lambda m: m.generate(SRC[0], 3), "expected token ids of rank 2"),
        (lambda m: m.generate(SRC, -1), "max_length=-1"),
        (lambda m: m.generate(SRC, 2.5), "max_length=2.5"),
        (lambda m: m.generate(SRC, 2**40), r"from 1 to 65536. Received: max_length=1099511627776"),
        (lambda m: m.generate(SRC, 3, sampler=BeamSearchSampler(0)), "num_beams=0"),
        (lambda m: m.generate(SRC, 3, sampler="nucleus"), "sampler"),
        (lambda m: m.generate(SRC, 3, batch_size=0), "batch_size=0"),
        (lambda m: m.translate(["ab"], None, None, 3), "vocabular"),
    ],
)
def test_generate_refuses_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call(small_model())


def test_stop_token_ids_one_id_or_ids_in_the_vocabulary():
    model = small_model()
    source = np.array([[3, 4, 0]], "int32")
    np.testing.assert_array_equal(
        model.generate(source, 4, stop_token_ids=2), model.generate(source, 4)
    )
    with pytest.raises(ValueError, match="target_vocabulary_size=7"):
        model.generate(source, 4, stop_token_ids=(2, 7))
    with pytest.raises(ValueError, match="stop_token_ids"):
        model.generate(source, 4, stop_token_ids={2})


@pytest.mark.parametrize("sampler", ["greedy", "beam-all"])
def test_translate_in_length_sorted_batches_gives_each_texts_own_output_in_order(sampler):
    """Texts of very different lengths, in batches of 3 sorted by length: each output is the
    one the text gets alone (with its own padding), in the caller's order."""
    vocabulary = Vocabulary(list("abcdefg"))  # 4 reserved ids + 7 letters = 11
    keras.utils.set_random_seed(6)  # a model whose outputs differ between the texts
    model = LuongSeq2Seq(11, 11, units=16, embedding_dim=8)
    texts = ["abcdefgabcdefgabc", "a", "", "gfedcba", "ab", "abcdefgabcdefgabcdefgab", "cc"]
    if sampler == "beam-all":
        sampler = BeamSearchSampler(2, return_all_beams=True)
    together = model.translate(
        texts, vocabulary, vocabulary, max_length=9, sampler=sampler, batch_size=3
    )
    alone = [
        model.translate([t], vocabulary, vocabulary, max_length=9, sampler=sampler)[0]
        for t in texts
    ]
    if isinstance(sampler, str):
        assert together == alone
        assert len(set(together)) >= 4  # the texts get different outputs (5 to 7 of 7)
        # A token budget of 16 positions: the long texts alone, the short ones by two.
        budgeted = model.translate(texts, vocabulary, vocabulary, 9, tokens_per_batch=16)
        assert budgeted == alone
        return
    for got, expected in zip(together, alone, strict=True):
        assert [g[0] for g in got] == [e[0] for e in expected]
        np.testing.assert_allclose([g[1] for g in got], [e[1] for e in expected], atol=1e-4)


def test_length_sorted_batches_cover_every_text_once_in_few_shapes():
    from keras_luong.data.batching import length_sorted_batches

    lengths = np.random.default_rng(0).integers(0, 40, 100)
    batches = length_sorted_batches(lengths, 16)
    seen = np.concatenate([indices for indices, _ in batches])
    assert sorted(seen.tolist()) == list(range(100))
    for indices, padded in batches:
        assert len(indices) <= 16 and padded % 8 == 0 and padded >= lengths[indices].max()
    firsts = [lengths[indices].min() for indices, _ in batches]
    assert firsts == sorted(firsts)  # sorted by length
    assert len({padded for _, padded in batches}) <= 5  # lengths below 40: at most 5 shapes
    # With a token budget: the same order, cut where rows × padded length would pass it.
    budgeted = length_sorted_batches(lengths, 16, tokens_per_batch=100)
    assert np.array_equal(np.concatenate([i for i, _ in budgeted]), seen)
    for (indices, padded), (after, _) in zip(budgeted, [*budgeted[1:], (None, 0)], strict=True):
        assert padded == 8 * math.ceil(max(lengths[indices].max(), 1) / 8)
        assert len(indices) * padded <= 100 or len(indices) == 1
        if after is not None and len(indices) < 16:  # ended by the budget: one more passes
            more = 8 * math.ceil(max(lengths[after[0]], 1) / 8)
            assert (len(indices) + 1) * more > 100
    assert [len(i) for i, _ in length_sorted_batches([50, 3, 3, 3], 8, tokens_per_batch=20)] == [
        2, 1, 1,
    ]  # fmt: skip


def test_max_length_defaults_to_one_and_a_half_times_the_longest_source_and_ten():
    """Without `max_length`, `generate` decodes at most 1.5 × the longest row's tokens + 10
    (`translate` each text up to its own tokens' bound): the greedy ids are those of an
    explicit bound of that size."""
    model = make_model()
    longest = 4  # SOURCE's first row: 4 non-zero ids, in a width-4 array
    bound = int(1.5 * longest) + 10
    ids = model.generate(SOURCE, stop_token_ids=None)
    assert ids.shape == (5, bound)
    np.testing.assert_array_equal(ids, model.generate(SOURCE, bound, stop_token_ids=None))
    # Padding columns do not count: the same rows in a wider array get the same bound.
    wide = np.pad(SOURCE[1:3], ((0, 0), (0, 6)))  # longest row: 2 tokens
    assert model.generate(wide, stop_token_ids=None).shape == (2, int(1.5 * 2) + 10)
    # translate: each text's own bound, 1.5 × its tokens + 10, in one batch as alone.

    class Ids(Vocabulary):  # decodes to the generated ids (never 0: padding is not generated)
        def decode(self, ids):
            return " ".join(str(i) for i in ids if i)

    vocabulary = Ids(list("abcde"))
    texts = ["abcde", "ab", ""]  # bounds 17, 13 and 10
    together = model.translate(texts, vocabulary, vocabulary, stop_token_ids=None)
    assert [len(t.split()) for t in together] == [17, 13, 10]
    for text, got in zip(texts, together, strict=True):
        bound = int(1.5 * len(text)) + 10
        alone = model.translate([text], vocabulary, vocabulary, bound, stop_token_ids=None)
        assert got == alone[0]
    # An explicit max_length is every text's bound.
    explicit = model.translate(texts, vocabulary, vocabulary, 12, stop_token_ids=None)
    assert [len(t.split()) for t in explicit] == [12] * 3


def test_compile_sets_the_default_sampler_as_keras_hub_does(tmp_path):
    """`compile(sampler=...)` is the sampler of every decoding call that names none; compiling
    again drops the compiled generators; the `.keras` file keeps it."""
    model = make_model()
    assert isinstance(model.sampler, GreedySampler)
    greedy = model.generate(SOURCE, L)
    beam = BeamSearchSampler(3, length_penalty=0.6)
    by_name = model.generate(SOURCE, L, sampler=beam)
    assert not np.array_equal(greedy, by_name)  # this model's beam search differs somewhere
    model.generate(SOURCE, L)
    assert len(model.generators) >= 1
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  sampler=beam)  # fmt: skip
    assert len(model.generators) == 0 and model.sampler is beam
    np.testing.assert_array_equal(model.generate(SOURCE, L), by_name)
    assert model.generator(L) is model.generator(L, BeamSearchSampler(3, length_penalty=0.6))
    vocabulary = Vocabulary(list("abcde"))
    assert model.translate(["abc", "e"], vocabulary, vocabulary, max_length=L) == (
        model.translate(["abc", "e"], vocabulary, vocabulary, max_length=L, sampler=beam)
    )
    model.fit((SOURCE, SOURCE[:, :3]), SOURCE[:, :3], epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Keras warns when a custom compile is not replayed
        loaded = keras.saving.load_model(path)
    assert isinstance(loaded.sampler, BeamSearchSampler)
    assert loaded.sampler.get_config() == beam.get_config()
    np.testing.assert_array_equal(loaded.generate(SOURCE, L), model.generate(SOURCE, L))
    model.compile("adam", sampler="greedy")
    np.testing.assert_array_equal(
        model.generate(SOURCE, L), model.generate(SOURCE, L, sampler="greedy")
    )
    with pytest.raises(ValueError, match="argument sampler.*sampler='nucleus-ish'"):
        model.compile("adam", sampler="nucleus-ish")


def test_keras_hub_samplers_that_decode_and_those_refused(model):
    """keras-hub's samplers run the model's decoding loop: its beam search equals ours at two
    beams, its greedy sampler is ours, top-p sampling from the smallest nucleus too;
    contrastive and speculative decoding get a clear error."""
    keras_hub = pytest.importorskip("keras_hub")
    greedy = model.generate(SOURCE, L)
    hub = keras_hub.samplers
    np.testing.assert_array_equal(model.generate(SOURCE, L, sampler=hub.GreedySampler()), greedy)
    # keras-hub's beam search goes on extending a hypothesis after its end token where ours
    # freezes it: the two are compared without stop tokens, where both search alike.
    np.testing.assert_array_equal(
        model.generate(SOURCE, L, sampler=hub.BeamSampler(num_beams=2), stop_token_ids=None),
        model.generate(SOURCE, L, sampler=BeamSearchSampler(2), stop_token_ids=None),
    )
    top_p = hub.TopPSampler(p=1e-6, seed=1)  # the smallest nucleus: the top token alone
    np.testing.assert_array_equal(model.generate(SOURCE, L, sampler=top_p), greedy)
    with pytest.raises(ValueError, match="ContrastiveSampler is not supported.*TopPSampler"):
        model.generate(SOURCE, L, sampler=hub.ContrastiveSampler(k=2))
    with pytest.raises(ValueError, match="SpeculativeSampler is not supported.*draft model"):
        model.generate(SOURCE, L, sampler=hub.SpeculativeSampler())


@pytest.mark.parametrize("dtype", ["float32", "mixed_float16"])
def test_a_steps_logits_bias_is_added_to_the_output_layers_logits(dtype):
    """`next_token_logits(..., logits_bias=b)` is the output layer's logits plus `b` in
    float32: one add into a plain float32 `Dense` (its bias and `b` summed first), a cast
    and an add otherwise; the same values either way."""
    model = LuongSeq2Seq(11, 13, units=8, embedding_dim=4, dtype=dtype)
    source = np.array([[3, 4, 5, 2], [6, 7, 2, 0]], "int32")
    model((source, source[:, :2]))
    model.projection.bias.assign(np.linspace(-1.0, 1.0, 13))
    value, value_mask, states = model.encode(source)
    memory = model.decoder.prepare(value, value_mask)
    states = model.decoder.get_initial_state(2, states, memory)
    token = keras.ops.convert_to_tensor(np.array([1, 1], "int32"))
    bias = np.zeros(13, "float32")
    bias[[0, 1]] = MASKED_SCORE
    logits, attentional, _ = model.next_token_logits(token, states, memory, 0)
    biased, _, _ = model.next_token_logits(
        token, states, memory, 0, logits_bias=keras.ops.convert_to_tensor(bias)
    )
    assert keras.backend.standardize_dtype(biased.dtype) == "float32"
    expected = to_numpy(keras.ops.cast(logits, "float32")) + bias
    np.testing.assert_array_equal(to_numpy(biased), expected)
    assert np.all(to_numpy(biased)[:, :2] == MASKED_SCORE)


def traced_shapes(monkeypatch):
    """The shapes of the sources `Seq2SeqGenerator.call` is called on from now on, a list:
    one entry for each trace on JAX and TensorFlow (which compile each), each batch on
    torch (which runs eagerly)."""
    from keras_luong.generation.generator import Seq2SeqGenerator

    shapes = []
    call = Seq2SeqGenerator.call

    def counted(self, source):
        shapes.append(tuple(source.shape))
        return call(self, source)

    monkeypatch.setattr(Seq2SeqGenerator, "call", counted)
    return shapes


def test_translate_ends_each_row_at_its_bound_and_compiles_once(monkeypatch):
    """Without `max_length`, texts of many lengths decode inside one kept generator, each row
    ending at its own bound (1.5 × its tokens + 10) even when the model never ends a sentence;
    a second call on the same texts traces nothing (JAX and TensorFlow compile per trace;
    torch runs eagerly, so there it runs the same kept generator again)."""
    model = make_model()
    # The end token never wins: every row runs until its bound stops it.
    bias = to_numpy(model.projection.bias).copy()
    bias[model.end_token] = -1e4
    model.projection.bias.assign(bias)

    class Ids(Vocabulary):  # decodes to the generated ids
        def decode(self, ids):
            return " ".join(str(i) for i in ids if i)

    vocabulary = Ids(list("abcde"))
    texts = ["abcde"[: k % 5] * (k // 5 + 1) for k in range(0, 46, 4)]
    traces = traced_shapes(monkeypatch)
    first = model.translate(texts, vocabulary, vocabulary, batch_size=2)
    assert [len(t.split()) for t in first] == [int(1.5 * len(t)) + 10 for t in texts]
    assert len(model.generators) == 1
    (generator,) = model.generators._by_key.values()
    traced = len(traces)
    second = model.translate(texts, vocabulary, vocabulary, batch_size=2)
    assert second == first and len(model.generators) == 1
    assert next(iter(model.generators._by_key.values())) is generator
    if BACKEND != "torch":
        assert len(traces) == traced  # nothing traced, so nothing compiled
    # Each output is the one its text gets alone with its bound as max_length.
    for text, got in zip(texts[:4], first, strict=False):
        bound = int(1.5 * len(text)) + 10
        assert got == model.translate([text], vocabulary, vocabulary, bound)[0]


def test_translate_compiles_one_shape_for_texts_of_one_power_of_two(monkeypatch):
    """Where the generator compiles (JAX, TensorFlow), texts of 17 to 26 tokens in batches of
    4 reach it in one shape, (4, 32): widths rounded up to a power of two, and the short last
    batch filled out with copies of its last text, whose outputs are dropped. Eager torch
    decodes the batches as they are, widths rounded to multiples of 8. Either way, each
    output is the one its text gets alone."""
    model = make_model()
    vocabulary = Vocabulary(list("abcde"))
    texts = ["abcde"[k % 5] * (17 + k) for k in range(10)]
    shapes = traced_shapes(monkeypatch)
    together = model.translate(texts, vocabulary, vocabulary, batch_size=4)
    if BACKEND == "torch":
        assert shapes == [(4, 24), (4, 24), (2, 32)]
    else:
        assert set(shapes) == {(4, 32)}
    assert len(together) == len(texts)
    for text, got in zip(texts, together, strict=True):
        assert got == model.translate([text], vocabulary, vocabulary)[0]


def test_batch_plan_fills_each_width_to_its_largest_batch(monkeypatch):
    """`translate`'s plan where the generator compiles: every text once, in length order,
    each width a power of two (at least 8) holding its batch's texts, a batch's rows its
    width's most, the filling copies of its last text; cut at the attention's longest
    source. Without compiling: the texts alone, widths multiples of 8."""
    from keras_luong.generation import translation

    lengths = np.random.default_rng(1).permutation(np.arange(1, 46))  # 41-45: a short batch
    for compiled in (True, False):
        monkeypatch.setattr(translation, "compiles_with_xla", lambda c=compiled: c)
        plan = translation.batch_plan(lengths, 8, None, None)
        order = np.concatenate([indices for indices, _, _ in plan])
        assert sorted(order.tolist()) == list(range(45))
        assert np.all(np.diff(lengths[order]) >= 0)
        rows = {}
        for indices, filled, width in plan:
            longest = int(lengths[indices].max())
            assert np.array_equal(filled[: len(indices)], indices)
            assert np.all(filled[len(indices) :] == indices[-1])
            if compiled:
                assert width == max(8, 1 << (longest - 1).bit_length())
                rows.setdefault(width, set()).add(len(filled))
            else:
                assert width == 8 * math.ceil(longest / 8) and len(filled) == len(indices)
        if compiled:  # one shape a width, though 45 texts leave a short batch
            assert all(len(counts) == 1 for counts in rows.values())
            assert sum(len(filled) for _, filled, _ in plan) > 45
            kept = plan
    monkeypatch.setattr(translation, "compiles_with_xla", lambda: True)
    cut = translation.batch_plan(lengths, 8, None, 40)
    assert [w for _, _, w in cut] == [min(w, 40) for _, _, w in kept]


@pytest.mark.parametrize("kind", [GreedySampler, BeamSearchSampler])
def test_min_length_and_banned_ids_in_generate_against_a_hand_loop(model, kind):
    """`generate` with a sampler's `min_length` and `banned_token_ids`: no end token before
    `min_length` tokens, no banned id; greedy's ids are a hand loop's over
    `next_token_logits` with the same masks (a beam of one is greedy)."""
    arguments = {"min_length": 3, "banned_token_ids": (3, 5)}
    sampler = kind(**arguments) if kind is GreedySampler else kind(1, **arguments)
    ids = model.generate(SOURCE, L, sampler=sampler)
    memory, states, _ = model.start_decoding(SOURCE)
    token = np.full((len(SOURCE),), model.start_token, "int32")
    expected, ended = np.zeros((len(SOURCE), L), "int32"), np.zeros(len(SOURCE), bool)
    for step in range(L):
        logits, _, states = model.next_token_logits(token, states, memory, step)
        logits = to_numpy(logits).astype("float64")
        logits[:, [0, model.start_token, 3, 5]] = -np.inf
        if step < 3:
            logits[:, model.end_token] = -np.inf
        token = np.argmax(logits, axis=-1).astype("int32")
        expected[:, step] = np.where(ended, 0, token)
        ended |= token == model.end_token
    np.testing.assert_array_equal(ids, expected)
    assert not np.isin(ids, (3, 5)).any()
    for row in ids:
        ends = np.flatnonzero(row == model.end_token)
        assert ends.size == 0 or ends[0] >= 3


def test_length_bound_sets_the_default_max_length(model):
    """`length_bound=(a, b)`: `generate` decodes `a ×` the longest source's tokens `+ b`
    positions and `translate` each text up to its own bound, fairseq's rule; the default is
    `(1.5, 10)`."""
    longest = int(np.count_nonzero(SOURCE, axis=1).max())  # 4
    assert model.generate(SOURCE).shape == (5, int(1.5 * longest) + 10)
    ids = model.generate(SOURCE, length_bound=(1.0, 2))
    np.testing.assert_array_equal(ids, model.generate(SOURCE, longest + 2))
    np.testing.assert_array_equal(model.generate(SOURCE, length_bound=(0.5, 1)), ids[:, :3])
    vocabulary = Vocabulary("abcde")
    texts = ["ab", "abcdeab", "c"]
    got = model.translate(texts, vocabulary, vocabulary, length_bound=(0.5, 1))
    for text, output in zip(texts, got, strict=True):  # each text's own bound
        expected = model.translate([text], vocabulary, vocabulary, int(0.5 * len(text)) + 1)
        assert [output] == expected
    for bad in [(1.5,), (-1, 10), (1.5, 0), (1.5, 2.5), "1.5 10"]:
        with pytest.raises(ValueError, match="length_bound"):
            model.generate(SOURCE, length_bound=bad)
