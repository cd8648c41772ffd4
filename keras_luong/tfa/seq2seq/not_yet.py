"""tensorflow-addons' seq2seq names the adapter does not provide yet."""

# tensorflow-addons' names not provided here yet, and what keras-luong offers in their place.
NOT_YET = {
    "AttentionWrapper": "keras_luong.InputFeedingCell(cell, attention)",
    "AttentionWrapperState": "the states of keras_luong.LuongDecoder",
    "BasicDecoder": "keras_luong.LuongDecoder(cell, attention) and a Dense layer",
    "BasicDecoderOutput": "keras_luong.LuongDecoder's outputs",
    "BaseDecoder": "keras_luong.samplers.Sampler",
    "Decoder": "keras_luong.samplers.Sampler",
    "dynamic_decode": "LuongSeq2Seq.generate(..., max_length=n)",
    "BeamSearchDecoder": "generate(sampler=keras_luong.BeamSearchSampler(num_beams=k))",
    "BeamSearchDecoderOutput": "BeamSearchSampler(return_all_beams=True)",
    "BeamSearchDecoderState": "BeamSearchSampler",
    "FinalBeamSearchDecoderOutput": "BeamSearchSampler(return_all_beams=True)",
    "Sampler": "keras_luong.samplers.Sampler",
    "TrainingSampler": "LuongDecoder(...)(inputs, value), teacher forced",
    "GreedyEmbeddingSampler": "generate(sampler='greedy')",
    "SampleEmbeddingSampler": "generate(sampler=keras_luong.RandomSampler())",
    "ScheduledEmbeddingTrainingSampler": "LuongSeq2Seq(scheduled_sampling='sample')",
    "ScheduledOutputTrainingSampler": "a keras_luong.samplers.Sampler subclass",
    "InferenceSampler": "a keras_luong.samplers.Sampler subclass",
    "CustomSampler": "a keras_luong.samplers.Sampler subclass",
}


def not_provided_yet(module):
    """A module's `__getattr__` that names, for a tensorflow-addons name not provided yet,
    what keras-luong offers in its place."""

    def __getattr__(name):
        if name in NOT_YET:
            raise AttributeError(
                f"{module} has no {name} yet: use {NOT_YET[name]} (see the migration guide)."
            )
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
