"""A review intent becomes its ``review.requested`` event in one conversion that carries every
field by name: a field renamed or added on one side and not the other fails here (the event
ignores names it does not know, so without this test the value would be dropped silently)."""

from __future__ import annotations

from dataclasses import fields
from uuid import uuid4

from palimpsest.core.events import ReviewRequested
from palimpsest.ingest.webhooks.models import RepoRef, ReviewIntent


def _intent() -> ReviewIntent:
    repo = RepoRef("github", "42", "acme/payments", "https://github.com/acme/payments.git", "main", "private")
    # every field a value other than the event's default, so a dropped field shows
    return ReviewIntent(
        repo=repo,
        number=7,
        base_sha="a" * 40,
        head_sha="b" * 40,
        base_ref="main",
        head_ref="feature",
        title="Totals",
        body="Fixes the totals.",
        draft=True,
        trigger="comment",
        comment_id="c-1",
        requested_by="ben",
        author="ana",
        full=True,
    )


def test_every_field_of_the_intent_is_a_field_of_the_event() -> None:
    carried = {f.name for f in fields(ReviewIntent)} - {"repo"}
    assert carried <= set(ReviewRequested.model_fields), carried - set(ReviewRequested.model_fields)


def test_the_conversion_carries_every_value_and_adds_the_route_and_delivery() -> None:
    intent = _intent()
    tenant, repository = uuid4(), uuid4()
    event = intent.requested(tenant_id=tenant, repository_id=repository, provider="github", delivery_id="d-1")
    for f in fields(ReviewIntent):
        if f.name != "repo":
            assert getattr(event, f.name) == getattr(intent, f.name), f.name
            assert getattr(event, f.name) != ReviewRequested.model_fields[f.name].default, f.name
    assert (event.tenant_id, event.repository_id, event.provider, event.delivery_id) == (
        tenant,
        repository,
        "github",
        "d-1",
    )
