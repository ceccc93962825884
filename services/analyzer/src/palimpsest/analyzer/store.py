"""Writing and reading analyses: ``analyses``, ``analysis_summaries`` and ``doc_findings``, and the
schedule of automatic analyses (``analysis_schedule``, :mod:`palimpsest.analyzer.schedule`).

One analysis is written in one transaction (the caller's: the handler's inbox transaction or the
scheduler's), together with its ``analysis.completed`` event, so it exists exactly when the event
does. Readers (the CLI, the API) get the JSON view :func:`load_analysis` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final, Literal
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.analyzer.doccheck import DocFinding
from palimpsest.analyzer.errors import AnalysisNotFound
from palimpsest.core import outcomes
from palimpsest.core.db import Conn, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Owns, Store
from palimpsest.index.stored import AnalysisView, analysis_view

STORE = Store(
    owner="analyzer",
    writes=(Owns("analyses"), Owns("analysis_summaries"), Owns("doc_findings"), Owns("analysis_schedule")),
    reads=("repositories",),
)


Trigger = Literal["request", "snapshot"]
State = Literal["completed", "failed"]
Mode = Literal["mechanical", "model"]


@dataclass(slots=True)
class AnalysisRecord:
    analysis_id: UUID
    repository_id: UUID
    snapshot_id: UUID | None
    commit_sha: str | None
    request_id: UUID | None
    trigger: Trigger
    state: State
    mode: Mode
    reason: str | None
    model: str | None
    markdown: str
    summary: str
    summary_mode: Mode
    summary_model: str | None = None
    selection: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    median_code: datetime | None = None
    findings: list[DocFinding] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0


async def save_analysis(conn: Conn, tenant_id: UUID, record: AnalysisRecord) -> None:
    """Store the analysis and, beside its repository, the outcome of its last analysis."""
    await outcomes.record(
        conn,
        record.repository_id,
        "analysis",
        "ok" if record.state == "completed" else "failed",
        record.reason if record.state != "completed" else None,
        event_id=None,
    )
    await conn.execute(
        "INSERT INTO analyses (tenant_id, analysis_id, repository_id, snapshot_id, commit_sha, request_id, trigger,"
        " state, mode, reason, model, markdown, selection, facts, median_code, prompt_tokens, completion_tokens,"
        " cost_usd, duration_s) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            tenant_id,
            record.analysis_id,
            record.repository_id,
            record.snapshot_id,
            record.commit_sha,
            record.request_id,
            record.trigger,
            record.state,
            record.mode,
            record.reason[:1000] if record.reason else None,
            record.model,
            record.markdown,
            Jsonb(record.selection),
            Jsonb(record.facts),
            record.median_code,
            record.prompt_tokens,
            record.completion_tokens,
            Decimal(str(round(record.cost_usd, 6))) if record.cost_usd is not None else None,
            round(record.duration_s, 3),
        ),
    )
    await conn.execute(
        "INSERT INTO analysis_summaries (tenant_id, analysis_id, repository_id, snapshot_id, mode, model, summary)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (
            tenant_id,
            record.analysis_id,
            record.repository_id,
            record.snapshot_id,
            record.summary_mode,
            record.summary_model,
            record.summary,
        ),
    )
    if record.findings:
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO doc_findings (tenant_id, analysis_id, ordinal, repository_id, snapshot_id, doc_path,"
                " line, kind, claim, nearest, detail, evidence)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        tenant_id,
                        record.analysis_id,
                        ordinal,
                        record.repository_id,
                        record.snapshot_id,
                        f.doc,
                        max(f.line, 0),
                        f.kind,
                        f.claim[:1000],
                        f.nearest,
                        f.detail,
                        Jsonb(f.evidence.as_dict()) if f.evidence else None,
                    )
                    for ordinal, f in enumerate(record.findings)
                ],
            )


async def snapshot_analysed(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> bool:
    """Whether an analysis of this snapshot exists (the one-analysis-per-snapshot rule)."""
    cur = await conn.execute(
        "SELECT 1 FROM analyses WHERE repository_id = %s AND snapshot_id = %s LIMIT 1",
        (repository_id, snapshot_id),
    )
    return await cur.fetchone() is not None


@dataclass(frozen=True, slots=True)
class _At:
    at: datetime | None


async def last_analysis_at(conn: Conn, repository_id: UUID) -> datetime | None:
    row = await fetch_one_as(
        conn, _At, "SELECT max(created_at) AS at FROM analyses WHERE repository_id = %s", (repository_id,)
    )
    return row.at if row is not None else None


async def load_analysis(conn: Conn, analysis_id: UUID) -> AnalysisView:
    """One stored analysis (see :func:`palimpsest.index.stored.analysis_view`)."""
    found = await analysis_view(conn, analysis_id)
    if found is None:
        raise AnalysisNotFound(f"no analysis {analysis_id}")
    return found


@dataclass(frozen=True, slots=True)
class _AnalysisId:
    analysis_id: UUID


async def latest_analysis_id(conn: Conn, repository_id: UUID) -> UUID | None:
    row = await fetch_one_as(
        conn,
        _AnalysisId,
        "SELECT analysis_id FROM analyses WHERE repository_id = %s ORDER BY created_at DESC LIMIT 1",
        (repository_id,),
    )
    return row.analysis_id if row is not None else None


# --------------------------------------------------------------------------- the schedule


@dataclass(frozen=True, slots=True)
class Claim:
    """A due ``analysis_schedule`` row the scheduler claimed: its snapshot, the ``version`` the
    claim saw (a newer mark keeps the row) and the attempts so far, this one included."""

    tenant_id: UUID
    repository_id: UUID
    snapshot_id: UUID
    version: int
    attempts: int


_MARK_DUE: Final = (
    "INSERT INTO analysis_schedule (tenant_id, repository_id, snapshot_id, due_at)"
    " SELECT %(t)s, r.repository_id, %(s)s, greatest("
    "   now() + make_interval(secs => %(debounce)s),"
    "   coalesce((SELECT max(a.created_at) FROM analyses a WHERE a.repository_id = r.repository_id),"
    "            '-infinity'::timestamptz) + make_interval(secs => %(interval)s))"
    " FROM repositories r WHERE r.repository_id = %(r)s"
    "   AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.repository_id = %(r)s AND a.snapshot_id = %(s)s)"
    " ON CONFLICT (tenant_id, repository_id) DO UPDATE SET snapshot_id = EXCLUDED.snapshot_id,"
    "   due_at = EXCLUDED.due_at, version = analysis_schedule.version + 1, attempts = 0, updated_at = now()"
)


async def mark_due(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    snapshot_id: UUID,
    *,
    debounce_s: float,
    interval_s: float,
) -> bool:
    """Mark the repository due at ``max(now + debounce, last analysis + interval)`` (in the
    caller's tenant transaction); False when the repository is gone or the snapshot already has
    an analysis."""
    cur = await conn.execute(
        _MARK_DUE,
        {
            "t": tenant_id,
            "r": repository_id,
            "s": snapshot_id,
            "debounce": debounce_s,
            "interval": interval_s,
        },
    )
    return cur.rowcount > 0


_CLAIM_DUE: Final = (
    "WITH due AS ("
    "  SELECT tenant_id, repository_id FROM analysis_schedule"
    "  WHERE due_at <= now() AND (claimed_until IS NULL OR claimed_until < now())"
    "  ORDER BY due_at LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
    " UPDATE analysis_schedule s SET claimed_until = now() + make_interval(secs => %(lease)s),"
    "   attempts = s.attempts + 1"
    " FROM due WHERE s.tenant_id = due.tenant_id AND s.repository_id = due.repository_id"
    " RETURNING s.tenant_id, s.repository_id, s.snapshot_id, s.version, s.attempts"
)


async def claim_due(conn: Conn, *, limit: int, lease_s: float) -> list[Claim]:
    """Claim up to ``limit`` due rows across tenants for ``lease_s`` (a system transaction; rows
    another replica holds are skipped)."""
    return await fetch_all_as(conn, Claim, _CLAIM_DUE, {"n": limit, "lease": lease_s})


async def drop_claimed(conn: Conn, claim: Claim) -> bool:
    """Delete the row if nothing marked it since the claim; whether it was deleted."""
    cur = await conn.execute(
        "DELETE FROM analysis_schedule WHERE tenant_id = %s AND repository_id = %s AND version = %s",
        (claim.tenant_id, claim.repository_id, claim.version),
    )
    return cur.rowcount > 0


async def release(conn: Conn, claim: Claim) -> None:
    """Release the claim: the row is due again at once."""
    await conn.execute(
        "UPDATE analysis_schedule SET claimed_until = NULL WHERE tenant_id = %s AND repository_id = %s",
        (claim.tenant_id, claim.repository_id),
    )


async def hold_off(conn: Conn, claim: Claim, delay_s: float) -> None:
    """Keep the row claimed for ``delay_s`` more: its next attempt waits that long."""
    await conn.execute(
        "UPDATE analysis_schedule SET claimed_until = now() + make_interval(secs => %s)"
        " WHERE tenant_id = %s AND repository_id = %s",
        (delay_s, claim.tenant_id, claim.repository_id),
    )
