"""Event contracts: envelope fields, round trips, subjects, and time-ordered ids."""

from __future__ import annotations

import uuid

import pytest

from palimpsest.core.events import EVENT_TYPES, IndexRequested, parse_event
from palimpsest.core.ids import uuid7


def test_round_trip_keeps_type_and_version() -> None:
    tenant = uuid.uuid4()
    ev = IndexRequested(tenant_id=tenant, repository_id=uuid.uuid4(), changed_paths=["a.py"])
    back = parse_event(ev.to_json())
    assert isinstance(back, IndexRequested)
    assert back == ev
    assert back.type == "index.requested"
    assert back.schema_version == 1
    assert ev.subject == "pal.index.requested"


def test_type_cannot_be_forged_by_the_caller() -> None:
    ev = IndexRequested(tenant_id=uuid.uuid4(), repository_id=uuid.uuid4(), type="review.requested")
    assert ev.type == "index.requested"


def test_unknown_type_and_garbage_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        parse_event(b'{"type": "nope", "tenant_id": "00000000-0000-0000-0000-000000000000"}')
    with pytest.raises(ValueError):
        parse_event(b"[1, 2]")


def test_newer_producer_fields_are_ignored() -> None:
    raw = IndexRequested(tenant_id=uuid.uuid4(), repository_id=uuid.uuid4()).model_dump(mode="json")
    raw["added_in_v2"] = {"x": 1}
    raw["schema_version"] = 2
    back = parse_event(__import__("json").dumps(raw))
    assert back.schema_version == 2


def test_uuid7_is_monotonic_and_versioned() -> None:
    ids = [uuid7() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i.version == 7 for i in ids)


def test_every_event_type_has_a_subject() -> None:
    assert all(t and t == cls.TYPE for t, cls in EVENT_TYPES.items())
