"""The function of tensorflow-addons' `tensorflow_addons/utils/test_utils.py` (0.23.0) that
`decoder_test.py` uses."""

import tensorflow as tf


def is_gpu_available():
    return len(tf.config.list_physical_devices("GPU")) > 0
