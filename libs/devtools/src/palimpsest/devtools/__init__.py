"""Measurement code, kept out of the services: benchmarks (``palimpsest bench …``), the chaos soak
(``palimpsest chaos``), the fake servers they and the tests run on loopback (embeddings, git over
HTTP, GitHub, an LLM) and the corpus generators. The CLI registers its commands; tests import it;
no service image installs it.
"""
