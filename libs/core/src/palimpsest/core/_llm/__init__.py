"""The LLM gateway's parts, private to :mod:`palimpsest.core.llm` (import the public names from there).

* :mod:`.features` — the features a model serves and what usage is recorded under;
* :mod:`.settings` — ``PALIMPSEST_LLM_*``;
* :mod:`.routes` — where a tenant's calls of a feature go (``llm_routes``), and whether a model can serve;
* :mod:`.usage` — token counts, prices and the ``llm_usage`` rows and metrics of every call;
* :mod:`.budget` — a tenant's monthly budget, checked before a call;
* :mod:`.loader` — litellm, imported lazily in a worker thread;
* :mod:`.retry` — which failures are retried, and the retry loop with backoff;
* :mod:`.embeddings` — the embeddings reply readers and the direct OpenAI-compatible client;
* :mod:`.client` — :class:`~.client.Gateway`, the entry points (chat, embed, rerank).
"""
