"""A repository's last build and analysis outcome, stored when it happens (migration 0048).

The handler that builds or analyses a repository records here, in the tenant's transaction, what
its last attempt came to: ``ok``; ``retrying`` (the attempt failed and the bus delivers the
request again at ``retry_at``); ``failed`` (a deterministic failure: a refused source, a refused
token, a limit hit); ``dead_lettered`` (the last delivery failed: no automatic retry). The dead
letter recorder links the ``dead_letters`` row once it has stored it. ``repo list``, ``repo show``,
the web view, ``palimpsest status`` and the ``palimpsest_repositories_failing`` gauge all read
these rows through :func:`outcomes_of` and :func:`failing_counts`; :meth:`Outcome.text` and
:meth:`Outcome.retry` are the one wording of a state and of when to expect another attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal
from uuid import UUID

from palimpsest.core.consumer import HandlerContext, describe_error
from palimpsest.core.db import Conn, fetch_all, tenant_tx, unreachable
from palimpsest.core.errors import DuplicateEvent
from palimpsest.core.stores import CORE, Owns, Store

STORE = Store(
    owner=CORE,
    writes=(
        Owns("repository_outcomes", "kind `build`", by="chunker"),
        Owns("repository_outcomes", "kind `analysis`", by="analyzer"),
    ),
    reads=("repositories",),
)


log = logging.getLogger(__name__)

Kind = Literal["build", "analysis"]
State = Literal["ok", "retrying", "failed", "dead_lettered"]
KINDS: Final = ("build", "analysis")
FAILING: Final = ("retrying", "failed", "dead_lettered")

# Snapshot failures the maintenance backfill requests again (palimpsest.ingest.backfill): the
# network, a timeout, a remote that broke off, a full disk, an interrupted build.
TRANSIENT_REASONS: Final = (
    "interrupted",
    "source_network",
    "source_timeout",
    "source_remote_refused",
    "source_disk_full",
)

_COLUMNS: Final = (
    "repository_id, kind, state, reason, attempt, max_attempts, retry_at, event_id, dead_letter_id,"
    " failing_since, updated_at"
)


@dataclass(frozen=True, slots=True)
class Outcome:
    repository_id: UUID
    kind: str
    state: str
    reason: str | None
    attempt: int | None
    max_attempts: int | None
    retry_at: datetime | None
    event_id: UUID | None
    dead_letter_id: int | None
    failing_since: datetime | None
    updated_at: datetime

    @property
    def failing(self) -> bool:
        return self.state in FAILING

    def text(self) -> str:
        """The state in words: ``ok``, ``failed: <reason>``, ``dead-lettered: <reason>``, ``retrying: …``."""
        reason = self.reason or "no reason recorded"
        if self.state == "ok":
            return "ok"
        if self.state == "retrying":
            of = f" of {self.max_attempts}" if self.max_attempts else ""
            return f"retrying: {reason} (attempt {self.attempt or 1}{of} failed)"
        return f"{self.state.replace('_', '-')}: {reason}"

    def retry(self) -> str | None:
        """When to expect another attempt (None when nothing is failing)."""
        if self.state == "ok":
            return None
        if self.state == "retrying" and self.retry_at is not None:
            return f"next attempt at {self.retry_at:%Y-%m-%d %H:%M:%S %Z}".strip()
        rebuild = "`palimpsest repo rebuild`" if self.kind == "build" else "a new analysis request"
        if self.state == "dead_lettered":
            replay = (
                f"`palimpsest dead-letters replay {self.dead_letter_id}`"
                if self.dead_letter_id is not None
                else "`palimpsest dead-letters replay`"
            )
            return (
                f"no automatic retry of this request: fix the cause, then {replay} or {rebuild}"
                " (the maintenance backfill also asks again for a repository never indexed)"
            )
        if self.kind == "build" and (self.reason or "").split(":")[0] in TRANSIENT_REASONS:
            return "the maintenance backfill asks again at its next pass (hourly by default)"
        return f"fails the same way until the cause is fixed; then {rebuild}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "text": self.text(),
            "reason": self.reason,
            "retry": self.retry(),
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "retry_at": self.retry_at,
            "dead_letter_id": self.dead_letter_id,
            "failing_since": self.failing_since,
            "updated_at": self.updated_at,
        }


async def record(
    conn: Conn,
    repository_id: UUID,
    kind: Kind,
    state: State,
    reason: str | None = None,
    *,
    event_id: UUID | None = None,
    attempt: int | None = None,
    max_attempts: int | None = None,
    retry_at: datetime | None = None,
) -> None:
    """Store the repository's last ``kind`` outcome, in the caller's tenant transaction (a
    repository deleted meanwhile records nothing)."""
    await conn.execute(
        "INSERT INTO repository_outcomes (tenant_id, repository_id, kind, state, reason, attempt,"
        " max_attempts, retry_at, event_id, failing_since)"
        " SELECT tenant_id, repository_id, %(kind)s, %(state)s, %(reason)s, %(attempt)s, %(max)s,"
        " %(retry_at)s, %(event)s, CASE WHEN %(state)s = 'ok' THEN NULL ELSE clock_timestamp() END"
        " FROM repositories WHERE repository_id = %(repo)s"
        " ON CONFLICT (tenant_id, repository_id, kind) DO UPDATE SET state = EXCLUDED.state,"
        " reason = EXCLUDED.reason, attempt = EXCLUDED.attempt, max_attempts = EXCLUDED.max_attempts,"
        " retry_at = EXCLUDED.retry_at, event_id = EXCLUDED.event_id, dead_letter_id = NULL,"
        " failing_since = CASE WHEN EXCLUDED.state = 'ok' THEN NULL"
        "   ELSE coalesce(repository_outcomes.failing_since, EXCLUDED.failing_since) END,"
        " updated_at = clock_timestamp()",
        {
            "repo": repository_id,
            "kind": kind,
            "state": state,
            "reason": reason[:2000] if reason is not None else None,
            "attempt": attempt,
            "max": max_attempts,
            "retry_at": retry_at,
            "event": event_id,
        },
    )


async def record_unsuccessful(
    ctx: HandlerContext, repository_id: UUID, kind: Kind, exc: BaseException
) -> None:
    """A handler's delivery failed and goes back to the bus: the repository says it is retrying
    (and when), or, on the last delivery, that it is dead-lettered, with the error as the reason.
    Call it from the handler's ``except`` before re-raising; an unreachable database (the runtime
    holds the delivery) and a duplicate (already applied) are no outcome and are not recorded."""
    if unreachable(exc) or isinstance(exc, DuplicateEvent):
        return
    delay = ctx.retry_in_s()
    try:
        async with tenant_tx(ctx.pool, ctx.event.tenant_id) as conn:
            await record(
                conn,
                repository_id,
                kind,
                "dead_lettered" if delay is None else "retrying",
                describe_error(exc),
                event_id=ctx.event.id,
                attempt=ctx.deliveries,
                max_attempts=ctx.max_deliver,
                retry_at=None if delay is None else datetime.now(UTC) + timedelta(seconds=delay),
            )
    except Exception as db_exc:  # the failure itself is logged and retried by the runtime
        log.warning("%s of %s: outcome not recorded (%s)", kind, repository_id, describe_error(db_exc))


async def link_dead_letter(conn: Conn, event_id: UUID, dead_letter_id: int, reason: str | None) -> int:
    """The request ``event_id`` became dead letter ``dead_letter_id``: the outcome it left says so
    (if the handler's last delivery did not already) and names the row to replay. Returns the rows
    changed (0 for an event no outcome names, e.g. another consumer's)."""
    cur = await conn.execute(
        "UPDATE repository_outcomes SET state = 'dead_lettered', dead_letter_id = %s, retry_at = NULL,"
        " reason = coalesce(reason, %s), updated_at = clock_timestamp()"
        " WHERE event_id = %s AND state IN ('retrying', 'dead_lettered')",
        (dead_letter_id, reason[:2000] if reason is not None else None, event_id),
    )
    return cur.rowcount


async def outcomes_of(
    conn: Conn, repository_ids: Sequence[UUID] | None = None
) -> dict[UUID, dict[str, Outcome]]:
    """The tenant's outcomes by repository and kind (every repository when ``repository_ids`` is None)."""
    rows = await fetch_all(
        conn,
        f"SELECT {_COLUMNS} FROM repository_outcomes"
        " WHERE %(ids)s::uuid[] IS NULL OR repository_id = ANY(%(ids)s::uuid[])",
        {"ids": list(repository_ids) if repository_ids is not None else None},
    )
    out: dict[UUID, dict[str, Outcome]] = {}
    for row in rows:
        found = Outcome(**row)
        out.setdefault(found.repository_id, {})[found.kind] = found
    return out


async def failing_counts(conn: Conn) -> dict[str, int]:
    """How many of the tenant's repositories (with indexing on) cannot be built / analysed now."""
    rows = await fetch_all(
        conn,
        "SELECT o.kind, count(*) AS n FROM repository_outcomes o"
        " JOIN repositories r ON r.tenant_id = o.tenant_id AND r.repository_id = o.repository_id"
        " WHERE o.state <> 'ok' AND r.index_mode <> 'off' GROUP BY o.kind",
    )
    counts = dict.fromkeys(KINDS, 0)
    counts.update({str(r["kind"]): int(r["n"]) for r in rows})
    return counts


__all__ = [
    "FAILING",
    "KINDS",
    "TRANSIENT_REASONS",
    "Kind",
    "Outcome",
    "State",
    "failing_counts",
    "link_dead_letter",
    "outcomes_of",
    "record",
    "record_unsuccessful",
]
