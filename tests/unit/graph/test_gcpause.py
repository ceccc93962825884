"""gc_paused: the cyclic collector is off while the step runs and as it was afterwards."""

from __future__ import annotations

import gc

import pytest

from palimpsest.index.graph.build import build_graph
from palimpsest.index.graph.gcpause import gc_paused
from palimpsest.index.graph.persisted import decode_graph, encode_graph


@gc_paused
def _state(fail: bool = False) -> bool:
    if fail:
        raise ValueError("boom")
    return gc.isenabled()


def test_the_collector_is_off_inside_and_restored_after() -> None:
    assert gc.isenabled()
    assert _state() is False
    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"):
        _state(fail=True)
    assert gc.isenabled()
    gc.disable()
    try:
        assert _state() is False
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_the_graph_steps_pause_it() -> None:
    for step in (build_graph, encode_graph, decode_graph):
        assert hasattr(step, "__wrapped__"), step
