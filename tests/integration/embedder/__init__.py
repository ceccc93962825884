"""Embedder and hybrid search tests (issue 7)."""
