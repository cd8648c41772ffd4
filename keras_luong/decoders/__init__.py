"""The one-step cells (`attention_cell`, `input_feeding_cell`) and the decoders that own the
loop over the target (`luong_decoder`, `bahdanau_decoder`)."""
