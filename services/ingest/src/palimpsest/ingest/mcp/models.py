"""The typed results of the MCP tools (their ``outputSchema``; clients also get them as JSON text).

Every item says where it is (path, line range), when the file last changed (``last_modified_at``,
None when the recency scan has no date for it) and why it is in the answer (``why``). A result
that was cut to the caller's token budget says how many items it left out (``left_out``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from palimpsest.index.context.finding import FindingJson


class _Result(BaseModel):
    budget_tokens: int = Field(description="The token budget the answer was fitted to.")
    left_out: int = Field(default=0, description="Items left out to fit the budget (or the limit).")


class SnapshotInfo(BaseModel):
    snapshot_id: str
    commit: str
    state: str
    reason: str | None = None
    files: int
    chunks: int
    embedding_state: str | None = None
    created_at: str
    ready_at: str | None = None


class RepositoryInfo(BaseModel):
    repository: str = Field(description="Full name; pass it (or the id) as `repository` to the other tools.")
    repository_id: str
    provider: str
    default_branch: str
    index_mode: str
    indexed: SnapshotInfo | None = Field(description="The newest ready snapshot (None: not indexed yet).")
    last_recency_scan: str | None = Field(description="When file dates were last read from history.")


class Repositories(_Result):
    repositories: list[RepositoryInfo]


class Snapshots(_Result):
    repository: str
    snapshots: list[SnapshotInfo] = Field(description="Newest first.")


class CodeItem(BaseModel):
    path: str
    start_line: int
    end_line: int
    last_modified_at: str | None
    why: str
    content: str


class SearchHitItem(CodeItem):
    kind: str
    name: str | None
    language: str | None
    score: float


class SearchResult(_Result):
    repository: str
    commit: str | None
    mode: str = Field(description="The rankings fused: lexical, hybrid or semantic.")
    semantic: str = Field(description="ok, unavailable (see semantic_reason) or not_requested.")
    semantic_reason: str | None = None
    hits: list[SearchHitItem]


class SymbolResult(_Result):
    repository: str
    symbol: str
    commit: str
    items: list[CodeItem]


class ContextEntry(BaseModel):
    path: str
    kind: str = Field(description="file or doc")
    score: float
    why: str
    via: str = Field(description="The edge kind or history signal that put it here.")
    depth: int | None = Field(description="File-to-file steps from the seeds (bounded walks).")
    tokens: int = Field(description="The file's estimated size in tokens.")
    last_modified_at: str | None


class ContextResult(_Result):
    repository: str
    commit: str
    seeds: dict[str, list[str]] = Field(description="Each seed and the nodes it matched.")
    unmatched_seeds: list[str]
    entries: list[ContextEntry] = Field(description="Ranked, best first, within the budget.")


class ReviewItem(CodeItem):
    source: str = Field(
        description="definitions, usage, related, neighbourhood, cochange, linked or pattern."
    )
    repository: str | None = Field(description="Another repository's full name (linked/pattern context).")
    annotation: str | None = Field(
        description="Documentation and date notes, as the reviewer's prompt has them."
    )
    score: float


class ReviewContextResult(_Result):
    repository: str
    base: str
    head: str
    snapshot_commit: str
    snapshot_on_base: bool = Field(description="False: the base has no snapshot; the newest one was used.")
    changed: list[str]
    items: list[ReviewItem] = Field(description="In the reviewer's prompt order.")
    cochange_missing: list[dict[str, Any]] = Field(
        description="Files that usually change with the changed files but are not in this change, most"
        " confident first: path, source, together, out_of, since, share, confidence, lift, reason."
    )
    dropped: list[dict[str, Any]] = Field(
        description="Candidates left out and why (stale, stale_doc, drift_doc, budget, …)."
    )
    ranking: str
    median_code_date: str | None
    doc_rule: str = Field(
        default="age",
        description="How docs were demoted: analysis (the newest analysis's doc states: drift and"
        " unverified_old demoted, verified and reference never) or age (no analysis: the age rule).",
    )
    left_behind: list[FindingJson] = Field(
        default_factory=list,
        description="Doc lines this change leaves behind (it removes, renames or moves what they name),"
        " found without a model, as the review's `docs` findings: path, start_line, message,"
        " suggested_change (the corrected line, when known).",
    )


class RecencyFile(BaseModel):
    path: str
    kind: str = Field(description="doc or code")
    last_modified_at: str | None
    last_commit: str | None
    stale: bool = Field(description="A doc more than six months older than the median code date.")
    why: str


class ScanNote(BaseModel):
    """The last recency scan of the repository."""

    status: str = Field(description="ok, failed or disabled.")
    reason: str | None
    commit_sha: str | None
    scanned_at: str


class RecencyResult(_Result):
    repository: str
    median_code_date: str | None
    scan: ScanNote | None = Field(description="The last recency scan: status, reason, when.")
    stale_docs: int = Field(description="Stale docs in the whole repository (before filters and budget).")
    files: list[RecencyFile] = Field(description="Oldest first.")


class DocFinding(BaseModel):
    doc: str
    line: int | None
    claim: str
    kind: str
    nearest: str | None = Field(description="The closest name the code has now, if any.")
    why: str
    evidence: dict[str, Any] | None = Field(
        description="Proof from history: last_seen/removed_by commits and dates, what the removal made of it."
    )


class DocFindingsResult(_Result):
    repository: str
    analysis_id: str | None
    commit: str | None
    analysed_at: str | None
    note: str | None = None
    doc_states: dict[str, int] | None = Field(
        default=None,
        description="Docs by state: drift (a claim proved false), verified (its claims hold), reference"
        " (generated-reference directives only, never stale), unverified_old (reported as stale_doc),"
        " unverified.",
    )
    findings: list[DocFinding]
