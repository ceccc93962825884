"""Deterministic text vectors for tests: hashed character trigrams of code-aware words.

Similar words share trigrams ("emails" and "email", "parsing" and "parse"), so these vectors give
a crude but deterministic notion of similarity, enough to exercise semantic ranking and fusion
without a model. The same function backs the in-process fake provider and the fake HTTP server.
"""

from __future__ import annotations

import hashlib
import math
import re

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def trigram_vector(text: str, dimension: int = 384) -> list[float]:
    acc = [0.0] * dimension
    for word in _WORDS.findall(text):
        w = f"#{word.lower()}#"
        for i in range(len(w) - 2):
            h = hashlib.blake2b(w[i : i + 3].encode(), digest_size=8).digest()
            index = int.from_bytes(h[:4], "little") % dimension
            acc[index] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in acc))
    if norm == 0:
        acc[0], norm = 1.0, 1.0
    return [x / norm for x in acc]
