"""The data path: vocabularies (`vocabulary`, `subword_vocabulary`, `token_ids`), their copy
inside a saved model (`vocabulary_assets`), parallel text files (`parallel_text`), corpora
prepared on disk (`prepared`) and batches planned from lengths (`batching`)."""
