"""The translation recipe (the guide "Train a translator on your own corpus"), written
once: the default model and how it is compiled. `python -m keras_luong.train` takes its
defaults from `RECIPE`, the benchmarks build their models with `recipe_model`, and a test
holds the page's code to the same numbers. Keras is imported only when a model is built, so
that the command line's `--help` answers at once."""

# The model and its training: LSTMs of 256 units on 128-dimensional embeddings, dropout 0.3,
# global attention with the general score and input feeding (the model's defaults), every
# weight uniform in ±0.1 (the paper's and OpenNMT-py's start), Adam at 2e-3 with the gradient
# rescaled past a global norm of 5, label smoothing 0.1.
RECIPE = {
    "units": 256,
    "embedding_dim": 128,
    "dropout": 0.3,
    "alignment": "global",
    "score_mode": "general",
    "attention_timing": "luong",
    "init_scale": 0.1,
    "learning_rate": 2e-3,
    "clip_norm": 5.0,
    "label_smoothing": 0.1,
}
# Local-p trained by the recipe: a window of half-width 40 whose Gaussian narrows from σ 40 to
# the paper's 5 over the first epochs (`SigmaSchedule`); with the paper's narrow Gaussian from
# the first step it walked over part of the source only.
NARROWED_LOCAL_P = {"window": 40, "attention_arguments": {"initial_sigma": 40.0, "sigma": 5.0}}


def recipe_model(
    source_vocabulary_size,
    target_vocabulary_size,
    jit_compile="auto",
    model_arguments=None,
    **settings,
):
    """`LuongSeq2Seq` built and compiled by the recipe, `settings` replacing any of `RECIPE`'s
    (`alignment="local-p"` gets `NARROWED_LOCAL_P` too). `model_arguments`: further
    `LuongSeq2Seq` arguments outside the recipe (a variant such as `input_feeding=False` or
    `decoder_layers=2`), given over the recipe's."""
    import keras

    from keras_luong.models.seq2seq import LuongSeq2Seq
    from keras_luong.training.losses import SequenceLoss

    unknown = sorted(set(settings) - set(RECIPE))
    if unknown:
        raise ValueError(
            f"Invalid settings for the translation recipe: {unknown}. Expected any of "
            f"{sorted(RECIPE)}. Received: {settings!r}"
        )
    s = {**RECIPE, **settings}
    arguments = {
        **(NARROWED_LOCAL_P if s["alignment"] == "local-p" else {}),
        "units": s["units"],
        "embedding_dim": s["embedding_dim"],
        "alignment": s["alignment"],
        "score_mode": s["score_mode"],
        "attention_timing": s["attention_timing"],
        "dropout": s["dropout"],
        "initializer": keras.initializers.RandomUniform(-s["init_scale"], s["init_scale"]),
    }
    model = LuongSeq2Seq(
        source_vocabulary_size,
        target_vocabulary_size,
        **{**arguments, **(model_arguments or {})},
    )
    model.compile(
        keras.optimizers.Adam(s["learning_rate"], global_clipnorm=s["clip_norm"]),
        SequenceLoss(label_smoothing=s["label_smoothing"]),
        jit_compile=jit_compile,
    )
    return model
