"""The fake provider's vectors: the rule coordinate by coordinate, whatever shortcut computes it."""

from __future__ import annotations

import hashlib
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest.devtools.fakes.llm import fake_embedding


def _by_the_rule(text: str, dimensions: int) -> list[float]:
    """SHA-256 digests of ``counter:text``, each byte b a coordinate (b - 127.5) / 127.5, the first
    ``dimensions`` of them normalised and each rounded to six decimals."""
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        values.extend((b - 127.5) / 127.5 for b in hashlib.sha256(f"{counter}:{text}".encode()).digest())
        counter += 1
    vector = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [round(v / norm, 6) for v in vector]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from([1, 3, 32, 33, 384, 768, 1536]))
def test_the_vector_is_the_rule_float_for_float(text: str, dimensions: int) -> None:
    vector = fake_embedding(text, dimensions)
    assert [v.hex() for v in vector] == [v.hex() for v in _by_the_rule(text, dimensions)]
