"""The loops the layers run (`loops`) and every backend-specific fast path, each with the
measurement that keeps it (`loops`, `masked_lstm`)."""
