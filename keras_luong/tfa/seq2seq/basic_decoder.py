"""tensorflow-addons' `basic_decoder` module (`BasicDecoder`, `BasicDecoderOutput`):
not provided yet; each name raises an `AttributeError` that names what keras-luong
offers in its place."""

from keras_luong.tfa.seq2seq.not_yet import not_provided_yet

__getattr__ = not_provided_yet("keras_luong.tfa.seq2seq.basic_decoder")
