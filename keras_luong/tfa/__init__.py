"""tensorflow-addons' API over keras-luong: `import keras_luong.tfa as tfa`, then
`tfa.seq2seq.<name>` as in tensorflow-addons 0.23."""

from keras_luong.tfa import seq2seq

__all__ = ["seq2seq"]
