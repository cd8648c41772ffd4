"""Decoding a model that meets the generation contract: `GenerationMixin` (`compile(sampler=)`,
`generate`, `translate`, `export_generator`, in `mixin`), the compiled generator
(`generator`) and the export formats (`export_formats`, `text_export`)."""
