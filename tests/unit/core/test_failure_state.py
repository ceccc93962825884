"""The one wording of a repository's outcome (``repo list``, ``repo show``, the web view read it) and
when a failed delivery comes back (the last one: at once, so its dead letter follows)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from palimpsest.core.consumer import HandlerContext
from palimpsest.core.events import Probe
from palimpsest.core.outcomes import Outcome

NOW = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)


def _outcome(state: str, reason: str | None = None, **fields: Any) -> Outcome:
    values: dict[str, Any] = {
        "repository_id": uuid.uuid4(),
        "kind": "build",
        "state": state,
        "reason": reason,
        "attempt": None,
        "max_attempts": None,
        "retry_at": None,
        "event_id": None,
        "dead_letter_id": None,
        "failing_since": None,
        "updated_at": NOW,
    }
    values.update(fields)
    return Outcome(**values)


def test_each_state_says_what_happened_and_when_to_expect_a_retry() -> None:
    ok = _outcome("ok")
    assert (ok.text(), ok.retry(), ok.failing) == ("ok", None, False)

    retrying = _outcome(
        "retrying",
        "GitError: GitHub App token request to https://api.github.com failed: ConnectError [network]",
        attempt=2,
        max_attempts=5,
        retry_at=datetime(2026, 12, 7, 13, 0, 5, tzinfo=UTC),
    )
    assert retrying.failing
    assert retrying.text() == (
        "retrying: GitError: GitHub App token request to https://api.github.com failed: ConnectError"
        " [network] (attempt 2 of 5 failed)"
    )
    assert retrying.retry() == "next attempt at 2026-12-07 13:00:05 UTC"

    dead = _outcome("dead_lettered", "GitError: clone failed [network]", dead_letter_id=12)
    assert dead.text() == "dead-lettered: GitError: clone failed [network]"
    assert "`palimpsest dead-letters replay 12`" in (dead.retry() or "")

    refused = _outcome("failed", "source_refused: loopback addresses are not allowed")
    assert refused.text() == "failed: source_refused: loopback addresses are not allowed"
    assert refused.retry() == "fails the same way until the cause is fixed; then `palimpsest repo rebuild`"
    network = _outcome("failed", "source_network: connection refused")
    assert network.retry() == "the maintenance backfill asks again at its next pass (hourly by default)"
    analysis = _outcome("failed", "no_ready_snapshot: index it first", kind="analysis")
    assert analysis.retry() == "fails the same way until the cause is fixed; then a new analysis request"


def test_the_last_delivery_comes_back_at_once_the_others_after_their_delay() -> None:
    event = Probe(tenant_id=uuid.uuid4())

    def ctx(deliveries: int, max_deliver: int | None) -> HandlerContext:
        return HandlerContext(
            "c",
            None,  # type: ignore[arg-type]  # no pool: retry_in_s reads none
            event,
            deliveries,
            retry_delays_s=(1.0, 5.0, 120.0),
            max_deliver=max_deliver,
        )

    assert [ctx(d, 5).retry_in_s() for d in range(1, 6)] == [1.0, 5.0, 120.0, 120.0, None]
    assert ctx(5, None).retry_in_s() == 120.0  # max_deliver unknown: every failure waits its delay
