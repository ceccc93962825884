"""The embedder's binary ``float4[]`` for the vectors' COPY, packed without Python per element."""

from __future__ import annotations

import struct
from array import array

from hypothesis import given
from hypothesis import strategies as st

from palimpsest.embedder.store import _FLOAT4, pack_float4_array

_FLOAT4_VALUES = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _element_by_element(vector: list[float]) -> bytes:
    """array_recv's layout spelled out: one dimension, no NULLs, the element type, the length and
    lower bound, then each element's length (4) and big-endian float4 value."""
    head = struct.pack(">iiIii", 1, 0, _FLOAT4, len(vector), 1)
    return head + b"".join(struct.pack(">if", 4, v) for v in vector)


@given(st.lists(_FLOAT4_VALUES | st.floats(-1e30, 1e30), max_size=64))
def test_the_packed_array_is_the_element_by_element_one(vector: list[float]) -> None:
    assert pack_float4_array(vector) == _element_by_element(vector)
    assert pack_float4_array(array("f", vector)) == _element_by_element(vector)  # as the engine hands it


def test_edge_values_and_a_real_dimension() -> None:
    edges = [0.0, -0.0, 1e-45, -1e-45, 1.1754943508222875e-38, 3.4028234663852886e38, -3.4028234663852886e38]
    vector = edges + [i / 383 - 0.5 for i in range(377)]
    assert len(vector) == 384
    assert pack_float4_array(vector) == _element_by_element(vector)
    assert pack_float4_array([]) == _element_by_element([])
