"""Length-bucketed batches (keras_luong.data.batching): every pair kept once, less padding, filler
rows that weigh nothing in `fit`, and bad arguments refused."""

import collections
import types

import keras
import numpy as np
import pytest

from keras_luong.data.batching import BucketedBatches
from keras_luong.data.vocabulary import Vocabulary
from tests.corpora import tiny_model
from tests.test_case import ListBatches


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
        shapes.append(source.shape if batches.bucket_width is not None else target_out.shape)
        assert target_in.shape == target_out.shape and source.shape[0] == target_in.shape[0]
        if batches.bucket_width is not None:  # both sides padded to the bucket's length
            assert source.shape == target_in.shape
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


def greedy_batches(sources, targets, budget):
    """The pairs' indices batched as OpenNMT-py batches, a pair at a time: sorted by length
    (the longer of the source and the target with its end id; ties in corpus order), a batch
    ended where one more pair would make its rows × its longest pass the budget."""
    lengths = [max(len(s), len(t) + 1, 1) for s, t in zip(sources, targets, strict=True)]
    batches, batch = [], []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if batch and (len(batch) + 1) * max(lengths[j] for j in batch + [i]) > budget:
            batches.append(batch)
            batch = []
        batch.append(i)
    return batches + [batch]


def test_unbucketed_batches_are_greedy_and_padded_to_their_own_longest():
    sources, targets = random_pairs(500, seed=1)
    sources[4] = []  # an empty source
    unshuffled = BucketedBatches(sources, targets, 256, bucket_width=None, shuffle=False)
    expected = greedy_batches(sources, targets, 256)
    assert [indices.tolist() for _, _, indices in unshuffled.batches] == expected
    for index, rows in enumerate(expected):
        (source, target_in), target_out = unshuffled[index]
        assert source.shape == (len(rows), max(1, max(len(sources[i]) for i in rows)))
        assert target_out.shape == (len(rows), 1 + max(len(targets[i]) for i in rows))
        for row, i in enumerate(rows):
            np.testing.assert_array_equal(source[row, : len(sources[i])], sources[i])
            np.testing.assert_array_equal(target_out[row, : len(targets[i]) + 1], targets[i] + [2])
            assert not source[row, len(sources[i]) :].any()
            assert not target_out[row, len(targets[i]) + 1 :].any()
    assert unshuffled.longest_length == max(len(s) for s in sources)

    batches = BucketedBatches(sources, targets, 256, bucket_width=None, seed=3)
    pairs_of = collections.Counter(zip(map(tuple, sources), map(tuple, targets), strict=True))
    orders = []
    for _ in range(3):  # three epochs: the same pairs, in a new order and new batches
        pairs, shapes = unpack(batches)
        assert collections.Counter(pairs) == pairs_of
        orders.append(pairs)
        batches.on_epoch_end()
    assert orders[0] != orders[1] != orders[2]
    # Less padding than the buckets, and the share counted from the arrays themselves.
    bucketed = BucketedBatches(sources, targets, 256, bucket_width=8, seed=3)
    total = sum(batches[i][1].size for i in range(len(batches)))
    assert batches.padding_share() == pytest.approx(1 - batches.target_tokens() / total)
    assert batches.padding_share() < bucketed.padding_share() / 2


def fifty_id_model():
    """A tiny model over ids 0 to 49 (46 words and the 4 special ids)."""
    return tiny_model(Vocabulary([str(i) for i in range(46)]))


def test_auto_bucket_width_buckets_where_steps_are_compiled():
    """`bucket_width="auto"` (the default): width 8 exactly where Keras' own default
    (`jit_compile="auto"`) compiles the train step with XLA, which compiles it per shape
    (JAX); no buckets where it does not (torch; TensorFlow on a machine without a GPU). The
    batches are those of the width it takes."""
    sources, targets = random_pairs(60, seed=2)
    model = fifty_id_model()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    expected = 8 if model.jit_compile else None
    backend = keras.backend.backend()  # Keras' torch backend lists no devices
    if backend == "torch" or all(d.startswith("cpu") for d in keras.distribution.list_devices()):
        assert model.jit_compile == (backend == "jax")
    auto = BucketedBatches(sources, targets, 128, seed=4)
    explicit = BucketedBatches(sources, targets, 128, bucket_width=expected, seed=4)
    assert auto.bucket_width == expected
    assert [i.tolist() for _, _, i in auto.batches] == [i.tolist() for _, _, i in explicit.batches]


def test_auto_bucket_width_buckets_on_tensorflow_with_an_accelerator(monkeypatch):
    """Where TensorFlow sees a GPU (or TPU), Keras compiles its train step with XLA by
    default, and `"auto"` takes buckets of 8; with CPUs alone, none."""
    from keras_luong.data import batching

    if keras.backend.backend() != "tensorflow":
        pytest.skip("TensorFlow's resolution; JAX and torch are covered above")
    sources, targets = random_pairs(20, seed=2)
    for devices, expected in [(["gpu:0", "gpu:1"], 8), (["tpu:0"], 8), (["cpu:0"], None)]:
        monkeypatch.setattr(keras.distribution, "list_devices", lambda d=devices: d)
        assert batching.auto_bucket_width() == expected, devices
        assert BucketedBatches(sources, targets, 64).bucket_width == expected, devices


def test_auto_bucket_width_follows_keras_under_tf_distribute(monkeypatch):
    """Within a `tf.distribute` strategy's scope Keras leaves XLA off, GPU or not, and
    `"auto"` takes no buckets; outside it, with a GPU, Keras compiles with XLA and `"auto"`
    takes 8. Read from the `jit_compile` Keras itself resolves for a model compiled there."""
    from keras_luong.data import batching

    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.distribute is TensorFlow's")
    import tensorflow as tf

    gpu = types.SimpleNamespace(device_type="GPU", name="/physical_device:GPU:0")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda *args: [gpu])
    monkeypatch.setattr(keras.distribution, "list_devices", lambda *args: ["gpu:0"])

    def resolved():
        model = fifty_id_model()
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model.jit_compile, batching.auto_bucket_width()

    assert resolved() == (True, 8)
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        assert resolved() == (False, None)


def test_fit_warns_of_unbucketed_batches_under_xla():
    """Every unbucketed batch has a shape of its own: `fit` warns when XLA would compile the
    train step for each (JAX; TensorFlow with `jit_compile=True`), and not otherwise."""
    import warnings

    sources, targets = random_pairs(6, longest=5)
    model = fifty_id_model()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=keras.backend.backend() != "torch")  # fmt: skip
    unbucketed = BucketedBatches(sources, targets, 64, bucket_width=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(unbucketed, epochs=1, verbose=0)
        model.fit(BucketedBatches(sources, targets, 64, bucket_width=8), epochs=1, verbose=0)
    mentions = [w for w in caught if "bucket_width=None" in str(w.message)]
    assert len(mentions) == (0 if keras.backend.backend() == "torch" else 1)
    if mentions:
        assert "jit_compile=True" in str(mentions[0].message)
        assert mentions[0].filename == __file__  # the user's call, not the library's


@pytest.mark.parametrize(
    "sources, targets, kwargs, message",
    [
        ([[4]] * 3, [[4]] * 2, {}, "3 source_ids and 2 target_ids"),
        ([[4]], [[4]], {"tokens_per_batch": 0}, "tokens_per_batch=0"),
        ([], [], {}, "no pairs"),
        ([[4.5, 5]], [[4]], {}, r"integer token ids. Received: source_ids\[0\]=\[4.5, 5"),
        ([[4], [5, -1]], [[4], [4]], {}, r"source_ids\[1\] holds a negative id"),
        ([[4]], np.array([[4, 5, 0]]), {}, r"target_ids\[0\] holds the padding id 0"),
        ([[4]], [[[4, 5]]], {}, r"target_ids\[0\] of shape \(1, 2\)"),
        ([[4]], [4], {}, r"target_ids\[0\] of shape \(\)"),
        ("abc", [[4]] * 3, {}, "Expected a list of sentences"),
        ([[4]], [[4]], {"end_token": 0}, "end_token=0"),
        ([[4]], [[4]], {"start_token": 0}, "start_token=0"),
        ([[4]], [[4]], {"seed": -1}, "seed=-1"),
        ([[4]], [[4]], {"seed": 1.5}, "seed=1.5"),
        (
            [[4]],
            [[4]],
            {"bucket_width": 0},
            r'None \(no buckets\) or "auto". Received: bucket_width=0',
        ),
        ([[4]], [[4]], {"bucket_width": "wide"}, "bucket_width='wide'"),
    ],
)
def test_bucketing_refuses_bad_arguments(sources, targets, kwargs, message):
    with pytest.raises(ValueError, match=message):
        BucketedBatches(sources, targets, **kwargs)


def test_bucketing_takes_integral_floats_and_no_seed():
    """Integral float ids are the same ids; `seed=None` shuffles afresh and keeps every pair."""
    sources, targets = random_pairs(30, longest=9)
    as_floats = BucketedBatches(
        [np.asarray(s, "float64") for s in sources], targets, 64, shuffle=False
    )
    as_ints = BucketedBatches(sources, targets, 64, shuffle=False)
    for a, b in zip(as_floats, as_ints, strict=True):
        for x, y in zip(a[0] + (a[1],), b[0] + (b[1],), strict=True):
            np.testing.assert_array_equal(x, y)
    unseeded = BucketedBatches(sources, targets, 64, seed=None)
    assert sorted(unpack(unseeded)[0]) == sorted(unpack(as_ints)[0])


def twin_models(batches):
    """Two tiny models (ids 0 to 49) with the same weights and built optimizers: one to
    `fit`, one to train a batch at a time."""
    model, twin = fifty_id_model(), fifty_id_model()
    (source, target_in), target_out = batches[0]
    for m in (model, twin):
        m.test_on_batch((source[:1], target_in[:1]), target_out[:1])  # builds the optimizer too
    twin.set_weights(model.get_weights())
    return model, twin


@pytest.mark.parametrize("width", [4, None])
def test_fit_consumes_the_bucketed_batches_and_filler_rows_weigh_nothing(width):
    sources, targets = random_pairs(40, longest=9)
    batches = BucketedBatches(sources, targets, tokens_per_batch=64, bucket_width=width,
                              shuffle=False)  # fmt: skip
    model, twin = twin_models(batches)
    model.fit(batches, epochs=1, verbose=0, shuffle=False)
    for index in range(len(batches)):
        twin.train_on_batch(*batches[index])
    for a, b in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # The loss of a batch with filler rows (as the last batch of a bucket may have) equals
    # the loss of its real rows alone.
    (source, target_in), target_out = batches[0]
    source_filler = np.zeros((2, source.shape[1]), "int32")
    filler = np.zeros((2, target_in.shape[1]), "int32")
    with_fillers = model.test_on_batch(
        (np.concatenate([source, source_filler]), np.concatenate([target_in, filler])),
        np.concatenate([target_out, filler]),
    )
    without = model.test_on_batch((source, target_in), target_out)
    assert np.isfinite(with_fillers)
    np.testing.assert_allclose(with_fillers, without, rtol=1e-5)


def test_fit_trains_on_each_epochs_plan_with_the_default_workers():
    """On TensorFlow `BucketedBatches` reads through two worker threads by default (Keras'
    own queue, with tf.data's autotuning off, whose dropped iterator stalls the next epoch),
    elsewhere through one; a user's `workers` or `use_multiprocessing` is kept. Over two
    epochs `fit` trains on each epoch's own plan, batch by batch in order, as
    `train_on_batch` does on the same plans read by one worker."""
    sources, targets = random_pairs(40, longest=9)
    batches = BucketedBatches(sources, targets, tokens_per_batch=64, bucket_width=4, seed=1)
    assert batches.workers == (2 if keras.backend.backend() == "tensorflow" else 1)
    assert BucketedBatches(sources, targets, 64, workers=1).workers == 1
    assert BucketedBatches(sources, targets, 64, workers=3).workers == 3
    threads = BucketedBatches(sources, targets, 64, use_multiprocessing=False)
    assert threads.workers == 1
    model, twin = twin_models(batches)
    model.fit(batches, epochs=2, verbose=0, shuffle=False)
    # Each trained epoch is followed by one `on_epoch_end`, which plans the next.
    reference = BucketedBatches(sources, targets, tokens_per_batch=64, bucket_width=4, seed=1,
                                workers=1)  # fmt: skip
    for _ in range(batches.epoch - 2):
        reference.on_epoch_end()
    plans = []
    for _ in range(2):
        plans.append([i.tolist() for _, _, i in reference.batches])
        for index in range(len(reference)):
            twin.train_on_batch(*reference[index])
        reference.on_epoch_end()
    assert plans[0] != plans[1]  # two epochs, two orders
    for a, b in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("multiple, width", [(2, 8), (4, 8), (8, 8), (4, None)])
def test_batch_multiple_makes_every_row_count_a_multiple_and_keeps_every_pair(multiple, width):
    sources, targets = random_pairs(103, longest=20)
    batches = BucketedBatches(
        sources, targets, 96, bucket_width=width, batch_multiple=multiple, seed=3
    )
    pairs, shapes = unpack(batches)
    assert all(rows % multiple == 0 for rows, _ in shapes)
    assert sorted(pairs) == sorted(zip(map(tuple, sources), map(tuple, targets), strict=True))
    plain_pairs, _ = unpack(BucketedBatches(sources, targets, 96, bucket_width=width, seed=3))
    assert sorted(pairs) == sorted(plain_pairs)


def test_batch_multiple_follows_the_active_distribution(monkeypatch):
    """`batch_multiple=None` reads the replica count of the active distribution: the size of
    a `keras.distribution` mesh's batch axis."""
    import types

    from keras_luong.data import batching

    mesh = types.SimpleNamespace(shape=(4, 2), axis_names=["batch", "model"])
    active = types.SimpleNamespace(device_mesh=mesh, batch_dim_name="batch")
    monkeypatch.setattr(keras.distribution, "distribution", lambda: active)
    assert batching.replica_count() == 4
    sources, targets = random_pairs(30, longest=9)
    _, shapes = unpack(BucketedBatches(sources, targets, 64))
    assert all(rows % 4 == 0 for rows, _ in shapes)
    monkeypatch.setattr(keras.distribution, "distribution", lambda: None)
    if "tensorflow" not in __import__("sys").modules:
        assert batching.replica_count() == 1


@pytest.mark.parametrize("hosts, width", [(2, 8), (3, 8), (3, None)])
def test_shards_partition_each_epoch_with_equal_steps(hosts, width):
    sources, targets = random_pairs(61, longest=25)
    expected = sorted(zip(map(tuple, sources), map(tuple, targets), strict=True))
    shards = [
        BucketedBatches(sources, targets, 64, width, seed=5, batch_multiple=2).shard(i, hosts)
        for i in range(hosts)
    ]
    for _ in range(2):  # two epochs
        assert len({len(shard) for shard in shards}) == 1  # the same number of steps
        pairs = [pair for shard in shards for pair in unpack(shard)[0]]
        assert sorted(pairs) == expected  # every pair on exactly one host
        for shard in shards:
            shard.on_epoch_end()
    with pytest.raises(ValueError, match="index=3"):
        shards[0].shard(3, 3)


@pytest.mark.parametrize("width, budget", [(1, 64), (8, 256), (5, 7)])
def test_buckets_follow_the_rule_pair_by_pair(width, budget):
    # The rule written out a pair at a time (as keras-luong 0.1 ran it): bucket = the longer
    # of the source and the target with its end id, rounded up to a multiple of the width;
    # buckets longest first, each with its pairs in corpus order.
    sources, targets = random_pairs(300, seed=width)
    sources[7], targets[9] = [], []
    expected = {}
    for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
        length = max(len(s), len(t) + 1, 1)
        expected.setdefault(width * -(-length // width), []).append(i)
    batches = BucketedBatches(sources, targets, tokens_per_batch=budget, bucket_width=width)
    assert [length for length, _, _ in batches.buckets] == sorted(expected, reverse=True)
    for length, size, indices in batches.buckets:
        assert indices.tolist() == expected[length]
        most = max(1, budget // length)
        assert size == -(-len(indices) // -(-len(indices) // most)) <= most


def test_fit_refuses_batches_whose_ids_pass_the_vocabulary():
    """Ids past the model's vocabulary in `BucketedBatches` get the `ValueError` that arrays
    get, before any step (not a silent read as the unknown id); the largest ids are found
    once, start and end ids included."""
    sources, targets = random_pairs(12, longest=6)
    good = BucketedBatches(sources, targets, tokens_per_batch=32, shuffle=False)
    expected_source = max(max(s) for s in sources)
    assert good.largest_ids == (expected_source, max(max(t) for t in targets))
    sources[3] = [*sources[3], 99]
    bad = BucketedBatches(sources, targets, tokens_per_batch=32, shuffle=False)
    assert bad.largest_ids[0] == 99
    model = fifty_id_model()
    with pytest.raises(
        ValueError, match=r"source ids reach 99, past the model's source_vocabulary_size=50"
    ):
        model.fit(bad, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="source ids reach 99"):
        model.fit(good, validation_data=bad, epochs=1, verbose=0)
    assert not model.built  # refused before any step
    model.fit(good, epochs=1, verbose=0)  # the good batches train


def first_batches(bad_side):
    """Two batches of ids for a model of 50 ids a side; the first holds id 99 on `bad_side`
    ("source", "target_in" or "y") when given."""
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(2):
        source, target_in, y = (rng.integers(4, 50, (3, 5)).astype("int32") for _ in range(3))
        batches.append(((source, target_in), y))
    if bad_side is not None:
        (source, target_in), y = batches[0]
        {"source": source, "target_in": target_in, "y": y}[bad_side][1, 2] = 99
    return batches


@pytest.mark.parametrize("bad_side", ["source", "target_in", "y"])
@pytest.mark.parametrize("kind", ["PyDataset", "tf.data"])
def test_fit_refuses_a_first_batch_whose_ids_pass_the_vocabulary(kind, bad_side):
    """Any other batch source (a `PyDataset`, a `tf.data.Dataset`) gets the arrays'
    `ValueError` from its first batch, before any step."""

    def source_of(batches):
        if kind == "PyDataset":
            return ListBatches(batches)
        tf = pytest.importorskip("tensorflow")
        return tf.data.Dataset.from_generator(
            lambda: iter(batches),
            output_signature=(
                (tf.TensorSpec((None, None), tf.int32), tf.TensorSpec((None, None), tf.int32)),
                tf.TensorSpec((None, None), tf.int32),
            ),
        )

    model = fifty_id_model()
    bad, good = source_of(first_batches(bad_side)), source_of(first_batches(None))
    with pytest.raises(ValueError, match=rf"first batch has bad token ids.*{bad_side}.*to 99"):
        model.fit(bad, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"first batch has bad token ids.*to 99"):
        model.fit(good, validation_data=bad, epochs=1, verbose=0)
    assert not model.built  # refused before any step
    history = model.fit(good, epochs=2, verbose=0)  # the good batches train
    assert history.history["loss"][1] < history.history["loss"][0]
