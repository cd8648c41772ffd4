"""Training helpers: the sequence losses (`losses`), the callbacks (`callbacks`), checkpoint
averaging (`averaging`) and the allocator setting for torch on a CPU (`allocator`)."""
