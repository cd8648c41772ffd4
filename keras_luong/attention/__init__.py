"""Attention mechanisms: the protocol every attention meets (`protocol`), the shared base with
its masked softmax (`base`) and score modes (`scores`), the registry that names alignments
(`alignments`), and one module per mechanism."""
