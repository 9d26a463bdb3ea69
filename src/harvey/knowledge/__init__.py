"""Knowledge stores: ingest a workspace's files, retrieve the best passages per turn.

``store`` (the SQLite file), ``ingest`` (files → chunks → rows), ``embedders``
(none / local wordllama / Ollama / OpenAI-compatible), ``search`` (BM25, cosine,
score fusion), ``service`` (a store opened with its bound embedder)
and ``retrieval`` (the per-turn step and its ``[[rag:]]`` provenance).
"""
