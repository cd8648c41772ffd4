"""Scheduled sampling (keras_luong.models.scheduled_sampling): probability 0 is teacher forcing, 1
with the argmax is greedy decoding, the decays are Bengio et al.'s, and the callback's value
is the one the compiled train step reads."""

import math

import keras
import numpy as np
import pytest

from keras_luong import LuongSeq2Seq
from keras_luong.models.scheduled_sampling import ScheduledSampling, scheduled_logits
from tests.test_case import assert_allclose, save_and_load, to_numpy

SOURCE = np.array([[4, 5, 6, 7, 0], [5, 8, 0, 0, 0], [9, 4, 4, 0, 0]], "int32")
TARGET_IN = np.array([[1, 4, 5, 6, 7], [1, 6, 3, 0, 0], [1, 8, 0, 0, 0]], "int32")
TARGET_OUT = np.array([[4, 5, 6, 7, 2], [6, 3, 2, 0, 0], [8, 2, 0, 0, 0]], "int32")


def make_model(seed=1, **kwargs):
    keras.utils.set_random_seed(seed)
    options = {"units": 8, "embedding_dim": 4, "scheduled_sampling": "argmax", **kwargs}
    return LuongSeq2Seq(11, 9, **options)


def fit_weights(model, epochs=2, callbacks=None, xla=True):
    """The trained weights. Compiled as `fit` compiles on JAX; with XLA on TensorFlow unless
    `xla=False` (its graph alone: half the time for the tests that fit five models)."""
    backend = keras.backend.backend()
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=backend == "jax" or (xla and backend == "tensorflow"),
    )
    model.fit(
        (SOURCE, TARGET_IN),
        TARGET_OUT,
        batch_size=3,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
    )
    return [to_numpy(w) for w in model.trainable_weights]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"input_feeding": False},
        {"alignment": "local-p", "window": 1, "decoder_layers": 2},
        {"alignment": "hard-monotonic"},
        {"score_mode": "additive"},
        {"attention_timing": "bahdanau", "alignment": "local-p", "window": 1},
    ],
    ids=["global", "no-feeding", "local-p-stacked", "monotonic", "bahdanau", "bahdanau-timing"],
)
def test_probability_zero_is_teacher_forcing(options):
    """The step-by-step loop with probability 0 gives the teacher-forced logits, padded
    steps included; so does the model's own training call, which takes the loop (but for
    hard-monotonic attention, which trains on a noisy soft alignment and decodes hard)."""
    model = make_model(**options)
    expected = to_numpy(model((SOURCE, TARGET_IN)))
    got = scheduled_logits(model, SOURCE, TARGET_IN, training=False)
    assert_allclose(got, expected, atol=1e-5)
    if options.get("alignment") != "hard-monotonic":
        assert_allclose(model((SOURCE, TARGET_IN), training=True), expected, atol=1e-5)


@pytest.mark.parametrize(
    "options",
    [{}, {"input_feeding": False}, {"attention_timing": "bahdanau"}],
    ids=["feeding", "no-feeding", "bahdanau-timing"],
)
def test_probability_one_with_the_argmax_is_greedy_decoding(options):
    """Each step then reads the argmax of the step before (padding and the start id never
    predicted), which is what greedy decoding feeds itself for as many steps."""
    model = make_model(seed=13, **options)  # a seed whose greedy outputs vary on every backend
    model.sampling_probability.assign(1.0)
    source = np.array([[4, 5, 6, 7, 8], [5, 8, 9, 4, 5], [10, 3, 0, 0, 0]], "int32")
    target_in = np.ones((3, 6), "int32")  # only the first, the start id, is read
    logits = to_numpy(scheduled_logits(model, source, target_in, training=False))
    logits[..., :2] = -np.inf
    greedy = model.generate(source, 6, stop_token_ids=None)
    np.testing.assert_array_equal(logits.argmax(-1), greedy)
    assert len(np.unique(greedy)) > 2  # the comparison has several tokens to get right


def test_sampled_predictions_of_peaked_logits_are_the_argmax():
    """With logits 10^7 times sharper (gaps far above the Gumbel noise's spread of about 20),
    a Gumbel-max sample is the argmax, so the sampled
    predictions fed back give the argmax model's logits."""
    argmax, sample = make_model(seed=3), make_model(seed=3, scheduled_sampling="sample")
    for model in (argmax, sample):
        model((SOURCE, TARGET_IN))
        model.sampling_probability.assign(1.0)
    sample.set_weights(argmax.get_weights())
    kernel, bias = sample.projection.weights
    for model in (argmax, sample):
        model.projection.kernel.assign(to_numpy(kernel) * 1e7)
    assert_allclose(
        scheduled_logits(sample, SOURCE, TARGET_IN, training=False),
        scheduled_logits(argmax, SOURCE, TARGET_IN, training=False),
        rtol=1e-5,
        atol=1e-2,
    )


def test_fit_is_seeded_and_probability_zero_trains_as_teacher_forcing():
    first = fit_weights(make_model(sampling_probability=0.5), xla=False)
    second = fit_weights(make_model(sampling_probability=0.5), xla=False)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    teacher = fit_weights(make_model(scheduled_sampling=None), xla=False)
    scheduled = fit_weights(make_model(), xla=False)
    for a, b in zip(teacher, scheduled, strict=True):
        assert_allclose(b, a, atol=1e-5)
    changed = fit_weights(make_model(sampling_probability=1.0), xla=False)
    assert any(not np.allclose(a, b, atol=1e-4) for a, b in zip(teacher, changed, strict=True))


def test_the_callbacks_probability_is_the_one_the_compiled_step_reads():
    """A linear decay with k = 0 feeds the predictions from the first epoch on: the weights
    after it equal those of a model built with probability 1."""
    constant = fit_weights(make_model(sampling_probability=1.0), epochs=1)
    scheduled = fit_weights(make_model(), epochs=1, callbacks=[ScheduledSampling("linear", k=0.0)])
    # Both models hold probability 1 after the epoch; everything else must match too.
    for a, b in zip(constant, scheduled, strict=True):
        assert_allclose(b, a, atol=1e-6)


def test_decays_against_their_formulas():
    linear = ScheduledSampling("linear", k=1.0, c=0.3, minimum=0.1)
    assert [linear.gold_probability(i) for i in range(5)] == pytest.approx(
        [1.0, 0.7, 0.4, 0.1, 0.1]
    )
    exponential = ScheduledSampling("exponential", k=0.8)
    assert exponential.gold_probability(3) == pytest.approx(0.512)
    sigmoid = ScheduledSampling("inverse_sigmoid", k=10.0)
    for i in (0, 7, 40):
        assert sigmoid.gold_probability(i) == pytest.approx(10 / (10 + math.exp(i / 10)))
    assert sigmoid.gold_probability(10**6) < 1e-300  # no overflow far out


@pytest.mark.parametrize("per, expected", [("epoch", 1 - (1.0 - 0.2 * 2)), ("batch", 1.0)])
def test_the_callback_sets_the_probability_per_epoch_or_per_batch(per, expected):
    """Three epochs of one batch each: per epoch, the last epoch's i is 2; per batch (three
    batches of one row per epoch, nine steps), 1 - max(0, 1 - 0.2 * 8) = 1."""
    model = make_model()
    callback = ScheduledSampling("linear", k=1.0, c=0.2, per=per)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(True))
    batch_size = 3 if per == "epoch" else 1
    model.fit(
        (SOURCE, TARGET_IN), TARGET_OUT, batch_size=batch_size, epochs=3, verbose=0,
        callbacks=[callback],
    )  # fmt: skip
    assert float(to_numpy(model.sampling_probability)) == pytest.approx(expected)


def test_saved_and_loaded_with_its_probability(tmp_path):
    model = make_model(sampling_probability=0.25)
    model((SOURCE, TARGET_IN))
    model.sampling_probability.assign(0.75)
    _, loaded = save_and_load(model, tmp_path)
    assert loaded.scheduled_sampling == "argmax"
    assert float(to_numpy(loaded.sampling_probability)) == 0.75
    assert_allclose(loaded((SOURCE, TARGET_IN)), model((SOURCE, TARGET_IN)))
    config = ScheduledSampling("exponential", k=0.5).get_config()
    assert ScheduledSampling(**config).gold_probability(2) == 0.25


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: make_model(scheduled_sampling="beam"), "scheduled_sampling='beam'"),
        (lambda: make_model(sampling_probability=1.5), "sampling_probability=1.5"),
        (lambda: make_model(sampling_probability=float("nan")), "sampling_probability=nan"),
        (lambda: ScheduledSampling("cosine"), "schedule='cosine'"),
        (lambda: ScheduledSampling("exponential", k=1.0), "0 < k < 1"),
        (lambda: ScheduledSampling("inverse_sigmoid", k=0.5), "k=0.5"),
        (lambda: ScheduledSampling(per="step"), "per='step'"),
    ],
)
def test_bad_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_callback_needs_a_model_with_scheduled_sampling():
    model = make_model(scheduled_sampling=None)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(True))
    with pytest.raises(ValueError, match="scheduled_sampling='argmax' or 'sample'"):
        model.fit((SOURCE, TARGET_IN), TARGET_OUT, verbose=0, callbacks=[ScheduledSampling()])
