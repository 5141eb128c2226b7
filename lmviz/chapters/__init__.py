"""The chapters' computations, one module per chapter (the names mirror ``pages/`` and ``viz/``).

Each module holds the worked examples and the measurements its chapter draws, as pure functions
returning records; the GPT core they build on (model, tokenizer, bpe, sampling, kv_cache,
attention, train, checkpoint, data, tasks) stays one level up, in ``lmviz``.
"""
