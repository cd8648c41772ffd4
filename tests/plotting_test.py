import matplotlib
import numpy as np
import pytest

from keras_luong.plotting import plot_attention
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the attention plots (matplotlib, no backend)")


def test_heatmap_draws_the_weights_with_a_colorbar_and_leaves_the_backend(tmp_path):
    backend = matplotlib.get_backend()
    weights = np.random.default_rng(0).uniform(size=(6, 9))  # padded beyond the labels
    figure = plot_attention(
        weights, list("3 月 x"), ["2", "0", "</s>"], path=tmp_path / "a.png", title="年 t"
    )
    assert matplotlib.get_backend() == backend
    assert (tmp_path / "a.png").stat().st_size > 1000
    heatmap, colorbar = figure.axes
    np.testing.assert_array_equal(heatmap.images[0].get_array(), weights[:3, :5])
    labels = [t.get_text() for t in heatmap.get_xticklabels()]
    # Spaces are marked; the CJK character the default font lacks is written as its code point.
    assert labels == ["3", "␣", "U+6708", "␣", "x"]
    assert [t.get_text() for t in heatmap.get_yticklabels()] == ["2", "0", "</s>"]
    assert colorbar.get_ylim() == (0.0, 1.0)


@pytest.mark.parametrize("shape", [(2, 9), (3, 5), (3,)])
def test_weights_smaller_than_the_labels_are_refused(shape):
    with pytest.raises(ValueError, match=r"weights.shape="):
        plot_attention(np.zeros(shape), list("abcdef"), list("xyz"), path=None)
