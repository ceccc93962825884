"""Writing and reading analyses: ``analyses``, ``analysis_summaries`` and ``doc_findings``.

One analysis is written in one transaction (the caller's: the handler's inbox transaction or the
scheduler's), together with its ``analysis.completed`` event, so it exists exactly when the event
does. Readers (the CLI, the API) get the JSON view :func:`load_analysis` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.analyzer.doccheck import DocFinding
from palimpsest.analyzer.errors import AnalysisNotFound
from palimpsest.core import outcomes
from palimpsest.core.db import Conn
from palimpsest.core.stores import Owns, Store
from palimpsest.index.stored import AnalysisView, analysis_view

# The schedule's statements are still in schedule.py (listed as not yet moved).
STORE = Store(
    owner="analyzer",
    writes=(Owns("analyses"), Owns("analysis_summaries"), Owns("doc_findings"), Owns("analysis_schedule")),
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


async def last_analysis_at(conn: Conn, repository_id: UUID) -> datetime | None:
    cur = await conn.execute(
        "SELECT max(created_at) AS at FROM analyses WHERE repository_id = %s", (repository_id,)
    )
    row = await cur.fetchone()
    return row["at"] if row is not None else None


async def load_analysis(conn: Conn, analysis_id: UUID) -> AnalysisView:
    """One stored analysis (see :func:`palimpsest.index.stored.analysis_view`)."""
    found = await analysis_view(conn, analysis_id)
    if found is None:
        raise AnalysisNotFound(f"no analysis {analysis_id}")
    return found


async def latest_analysis_id(conn: Conn, repository_id: UUID) -> UUID | None:
    cur = await conn.execute(
        "SELECT analysis_id FROM analyses WHERE repository_id = %s ORDER BY created_at DESC LIMIT 1",
        (repository_id,),
    )
    row = await cur.fetchone()
    return UUID(str(row["analysis_id"])) if row is not None else None
