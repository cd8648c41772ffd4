"""Models: `LuongSeq2Seq` (`seq2seq`) and its parts (`parts`), `Ensemble` (`ensemble`),
scheduled sampling (`scheduled_sampling`), the initializers (`initializers`) and the presets:
the paper's model and its schedule (`presets`)."""
