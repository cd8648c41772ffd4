"""The loops the layers run (`loops`), every backend-specific fast path, each with the
measurement that keeps it (`loops`, `masked_lstm`, `ops`, `top_k`), and what the rest of the
package asks of the engine under Keras (`engine`)."""
