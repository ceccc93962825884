"""The benchmarks behind ``palimpsest bench …``: each runs the real code and returns JSON figures."""
