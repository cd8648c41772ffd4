"""keras-luong against tensorflow-addons 0.23 itself, run in its own environment (the modules of
tests/tfa_parity say what each side computes): the weights moved over as docs/migrating.md
says give tensorflow-addons' logits, alignments, losses, ids and beam scores.

Opt in with `--tfa-python PATH` (or `TFA_PYTHON`): `make tfa-parity` makes the environment
(.venv-tfa) and runs these on every backend. Without it they are skipped, since the
environment (TensorFlow 2.15 beside this project's TensorFlow) is not part of `make test`.
"""

import numpy as np
import pytest

from tests.tfa_parity import adapter, bahdanau, decoder, monotonic
from tests.tfa_parity import sequence_loss as loss_parity
from tests.tfa_parity import tensorflow_addons_arrays as theirs

pytestmark = pytest.mark.tfa_venv


@pytest.fixture
def tfa_python(request):
    return request.config.getoption("--tfa-python")


def test_a_decoders_weights_moved_over_give_its_logits(tfa_python):
    saved = theirs("decoder", tfa_python)
    logits = decoder.keras_luong_side(saved)
    assert logits.shape == saved["logits"].shape == (decoder.BATCH, decoder.TARGET, decoder.VOCAB)
    np.testing.assert_allclose(logits, saved["logits"], rtol=0, atol=1e-6)  # as the page says
    assert np.abs(saved["logits"]).max() > 0.1  # not a comparison of zeros


def test_monotonic_attention_gives_luong_monotonic_attentions_alignments(tfa_python):
    saved = theirs("monotonic", tfa_python)
    for mode in monotonic.MODES:
        expected = saved[f"{mode}_alignments"]
        ours = monotonic.keras_luong_side(saved, mode)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=5e-7)  # as the page says
        assert expected.max() > 0.1


def test_bahdanau_attentions_give_tensorflow_addons_values(tfa_python):
    import keras

    from keras_luong import BahdanauAttention, BahdanauMonotonicAttention

    saved = theirs("bahdanau", tfa_python)
    memory, queries = bahdanau.monotonic_inputs()
    source_mask = np.arange(memory.shape[1]) < np.array(bahdanau.SOURCE_LENGTHS)[:, None]
    for normalize in (False, True):
        name = f"normalize_{normalize}"
        arrays = {  # the decoder's: "normalize_.../logits", not ".../parallel/alignments"
            k.split("/")[1]: v
            for k, v in saved.items()
            if k.startswith(f"{name}/") and k.count("/") == 1
        }
        attention = BahdanauAttention(
            bahdanau.SCORE_UNITS,
            normalize=normalize,
            attentional_units=16,
            attentional_activation=None,
        )
        logits = decoder.keras_luong_decoder(
            attention, arrays, lambda a=attention, n=name: bahdanau.assign(a, saved, n)
        )
        np.testing.assert_allclose(logits, arrays["logits"], atol=1e-5)
        for mode in bahdanau.MODES:
            prefix = f"{name}/{mode}"
            attention = BahdanauMonotonicAttention(
                bahdanau.SCORE_UNITS, normalize=normalize, mode=mode
            )
            attention.build(queries.shape, memory.shape)
            bahdanau.assign(attention, saved, prefix)
            attention.score_bias.assign(bahdanau.SCORE_BIAS)
            _, ours = attention(
                queries, memory, value_mask=source_mask, return_attention_scores=True
            )
            expected = saved[f"{prefix}/alignments"]
            np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), expected, atol=1e-5)


def test_sequence_loss_equals_tensorflow_addons_for_every_flag(tfa_python):
    import keras

    from keras_luong.training.losses import SequenceLoss, sequence_loss

    saved = theirs("sequence_loss", tfa_python)
    logits, targets, weights = loss_parity.inputs()
    for flags in loss_parity.FLAGS:
        name = "".join("TF"[not f] for f in flags)
        ours = keras.ops.convert_to_numpy(sequence_loss(logits, targets, weights, *flags))
        np.testing.assert_allclose(ours, saved[name], atol=1e-6)
    ours = keras.ops.convert_to_numpy(SequenceLoss()(targets, logits))
    np.testing.assert_allclose(ours, saved["class"], atol=1e-6)
    assert len(loss_parity.FLAGS) == 7


@pytest.mark.parametrize("mechanism", list(adapter.MECHANISMS))
def test_tensorflow_addons_code_gives_its_numbers_on_keras_luong_tfa(tfa_python, mechanism):
    import keras

    import keras_luong.tfa as tfa

    saved = theirs("adapter", tfa_python)
    arrays = {k.split("/", 1)[1]: v for k, v in saved.items() if k.startswith(mechanism)}
    weights = dict(arrays)
    for key in ("lstm", "attention_layer", "projection"):
        count = sum(k.startswith(f"{key}.") for k in arrays)
        weights[key] = [arrays[f"{key}.{i}"] for i in range(count)]
    ours, _, _ = adapter.tutorial(
        tfa, keras, keras.ops.convert_to_tensor, keras.ops.convert_to_numpy, mechanism, weights
    )
    for key in ("logits", *(f"beam_scores_{p}" for p in adapter.LENGTH_PENALTIES)):
        # float32 round-off over the beam scores' sums (the page says within 1e-5)
        np.testing.assert_allclose(ours[key], arrays[key], rtol=0, atol=1e-5, err_msg=key)
    for key in ("greedy_ids", *(f"beam_ids_{p}" for p in adapter.LENGTH_PENALTIES)):
        np.testing.assert_array_equal(ours[key], arrays[key], err_msg=key)
