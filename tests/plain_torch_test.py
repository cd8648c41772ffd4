"""The plain PyTorch model that `python -m benchmarks.speed plain_torch` times against
keras-luong on torch (benchmarks/speed/plain_torch.py): with the same weights it computes the
same logits and decodes the same ids, so that the benchmark compares the same work."""

import keras
import numpy as np
import pytest

from benchmarks.speed import plain_torch
from keras_luong import BeamSearchSampler, LuongSeq2Seq
from tests.test_case import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "torch", reason="a PyTorch model, on torch only")


@pytest.fixture(scope="module")
def models():
    import torch

    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(40, 40, units=16, embedding_dim=8)
    source = plain_torch.padded_sources(4, 7, 40, shortest=3)
    model((source[:1], source[:1, :2]))
    # Sharper logits than an untrained model's: beam search meets no near-ties.
    model.projection.kernel.assign(model.projection.kernel * 50.0)
    return model, plain_torch.from_keras(model).eval(), source, torch


def test_padded_sources_are_right_padded_after_fifteen_to_thirty_real_ids():
    source = plain_torch.padded_sources(64, 30, 8000)
    lengths = (source != 0).sum(1)
    assert lengths.min() >= 15 and lengths.max() <= 30 and len(set(lengths)) > 1
    for row, length in zip(source, lengths, strict=True):
        assert (row[:length] >= 3).all() and (row[length:] == 0).all()


def test_plain_pytorch_gives_keras_luongs_teacher_forced_logits(models):
    model, plain, source, torch = models
    assert len(set((source != 0).sum(1))) > 1  # rows of several lengths, padded
    target_in = np.random.default_rng(1).integers(3, 40, (4, 5)).astype("int32")
    target_in[:, 0] = 1
    expected = keras.ops.convert_to_numpy(model((source, target_in)))
    with torch.no_grad():
        logits = plain(*(torch.as_tensor(x, dtype=torch.long) for x in (source, target_in)))
    # Padding and the start token are never predicted; every other id's logit agrees.
    np.testing.assert_allclose(logits.numpy()[..., 2:], expected[..., 2:], atol=2e-4, rtol=1e-5)
    assert (logits.numpy()[..., :2] <= -1e8).all()


@pytest.mark.parametrize("sampler", ["greedy", "beam"])
def test_plain_pytorch_decodes_keras_luongs_ids(models, sampler):
    model, plain, source, torch = models
    chosen = BeamSearchSampler(3) if sampler == "beam" else "greedy"
    expected = keras.ops.convert_to_numpy(
        model.generate(source, 6, sampler=chosen, stop_token_ids=None)
    )
    ids = torch.as_tensor(source, dtype=torch.long)
    decoded = plain.beam(ids, 6, beams=3) if sampler == "beam" else plain.greedy(ids, 6)
    np.testing.assert_array_equal(decoded.numpy(), expected)
    assert (expected >= 2).all()  # no padding or start token, all 6 steps run
