"""Request and response bodies of the /v1 read side: snapshots, search, graph context, the index
report, analyses and reviews (they make up that part of the OpenAPI document).

The fields are what the CLI prints with ``--json`` (``palimpsest snapshots``, ``search``,
``context``, ``index-report``, ``analyze``, ``review``), built from the same read functions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from palimpsest.index.search import SearchHit
from palimpsest.index.snapshots import Snapshot
from palimpsest.ingest.schemas import Page

MAX_DIFF_BYTES = 5 * 1024 * 1024

ReviewState = Literal["pending", "completed", "failed", "skipped"]
Rev = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9._/@{}~^+][A-Za-z0-9._/@{}~^+-]*$",
    ),
]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# ---------------------------------------------------------------------------------- snapshots


# a snapshot is shown as the index's row type (palimpsest.index.snapshots.Snapshot), one definition


class SnapshotPage(Page):
    items: list[Snapshot]


# ------------------------------------------------------------------------------------- search


class SearchResult(_Out):
    mode: Literal["lexical", "hybrid", "semantic"] = Field(description="The rankings that were fused.")
    semantic: Literal["ok", "unavailable", "not_requested"]
    reason: str | None = Field(description="Why semantic search was unavailable (hybrid only).")
    model: str | None
    snapshot_id: UUID | None
    embedding_state: str | None
    counts: dict[str, int]
    hits: list[SearchHit] = Field(description="Ranked chunks: path, lines, kind, name, score, content.")


# ------------------------------------------------------------------------------- graph context


class ContextEntry(_Out):
    path: str
    kind: str
    score: float
    reason: str
    via: str | None
    depth: int | None
    parts: dict[str, float]
    tokens: int


class GraphContext(_Out):
    repository_id: UUID
    snapshot_id: UUID
    commit: str
    seeds: dict[str, list[str]] = Field(description="Each seed and the graph nodes it matched.")
    hops: int | None
    budget: int
    tokens: int
    dropped: int = Field(description="Ranked paths that did not fit the budget.")
    signals: dict[str, int]
    unmatched_seeds: list[str]
    results: list[ContextEntry]


class DynamicSite(_Out):
    path: str
    line: int
    what: str = Field(description="getattr, reflection, subscript_call, …")
    enclosing: str | None
    snippet: str | None


class DynamicSites(_Out):
    count: int
    by_kind: dict[str, int]
    sites: list[DynamicSite]


class UnresolvedImport(_Out):
    path: str
    line: int
    specifier: str
    language: str | None


class ImportCounts(_Out):
    resolved: int
    unresolved: list[UnresolvedImport]
    external_packages: dict[str, int]


class AmbiguousName(_Out):
    name: str
    definers: int = Field(description="How many files define the name.")
    paths: list[str] = Field(description="The first ten of them, sorted.")
    references: int = Field(description="References and calls that had to be split (or were dropped).")
    dropped: bool = Field(description="More definers than the cap: no edge was made.")


class UnmatchedHeader(_Out):
    path: str = Field(description="The document.")
    line: int
    target: str


class IndexReport(_Out):
    repository_id: UUID
    snapshot_id: UUID
    commit: str
    files: int
    nodes: int
    edges: dict[str, int]
    no_parser: dict[str, int]
    not_indexed: dict[str, int]
    dynamic_sites: DynamicSites
    imports: ImportCounts
    ambiguous_names: list[AmbiguousName]
    governs_unmatched: list[UnmatchedHeader]
    supersedes_unmatched: list[UnmatchedHeader]


# ----------------------------------------------------------------------------------- analyses


class _AnalysisHead(_Out):
    analysis_id: UUID
    repository_id: UUID
    snapshot_id: UUID | None
    commit: str | None
    request_id: UUID | None
    trigger: Literal["request", "snapshot"]
    state: Literal["completed", "failed"]
    mode: Literal["mechanical", "model"]
    reason: str | None
    model: str | None
    duration_s: float
    created_at: datetime


class AnalysisItem(_AnalysisHead):
    doc_findings: int


class AnalysisPage(Page):
    items: list[AnalysisItem]


class DocFinding(_Out):
    doc: str
    line: int
    claim: str
    kind: str
    nearest: str | None
    detail: str | None
    evidence: dict[str, Any] | None = Field(
        default=None,
        description="The proof from git history: last_seen_commit/_at, removed_in_commit/_at, renamed_to, "
        "seen_in, line_commit, line_written_at, written_while_existed (null for stale docs).",
    )


class Analysis(_AnalysisHead):
    repository: str
    analysis: str = Field(description="The analysis as Markdown.")
    summary: str
    selection: list[dict[str, Any]]
    median_code: datetime | None
    doc_findings: list[DocFinding]
    facts: dict[str, Any]
    usage: dict[str, Any]


class AnalysisCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    snapshot_id: UUID | None = Field(default=None, description="Default: the newest ready snapshot.")


class AnalysisRequest(_Out):
    repository_id: UUID
    event_id: UUID
    request_id: UUID = Field(description="analysis.completed and the stored analysis carry it.")


# ------------------------------------------------------------------------------------ reviews


class ReviewCreate(BaseModel):
    """``{base, head}``: two revisions of the registered repository; ``{base, diff}``: a unified
    diff (at most 5 MiB) to apply to ``base``."""

    model_config = ConfigDict(extra="forbid")

    base: Rev = Field(description="A branch, tag or commit sha of the registered repository.")
    head: Rev | None = Field(default=None, description="A branch, tag or commit sha (or give diff).")
    diff: str | None = Field(
        default=None, min_length=1, description="A unified diff against base (or give head)."
    )
    title: str = Field(default="", max_length=500)
    body: str = Field(default="", max_length=20_000)

    @model_validator(mode="after")
    def _head_or_diff(self) -> ReviewCreate:
        if (self.head is None) == (self.diff is None):
            raise ValueError("give either head or diff, not both")
        if self.diff is not None and len(self.diff.encode("utf-8", "surrogatepass")) > MAX_DIFF_BYTES:
            raise ValueError("the diff is larger than 5 MiB")
        return self


class ReviewRequest(_Out):
    repository_id: UUID
    event_id: UUID
    request_id: UUID = Field(description="GET .../reviews/{request_id} shows the review once it is done.")
    submission_id: UUID


_TITLE = "The pull request's title (a local or API review: the title given); null: not recorded."
_AUTHOR = "The pull request's author, when the provider's payload names them; else null."
_REQUESTED_BY = "Who opened, pushed or commented to ask for the review; null for a local or API review."
_REFS = "The branch (or revision) the request named; null when it named commits only, or not recorded."


class ReviewItem(_Out):
    review_id: UUID
    repository_id: UUID
    request_id: UUID | None
    provider: str
    number: int | None
    base_sha: str | None
    head_sha: str
    snapshot_id: UUID | None
    state: Literal["completed", "failed", "skipped"]
    mode: Literal["brief", "model"]
    reason: str | None
    model: str | None
    posted: bool
    findings: int
    duration_s: float
    created_at: datetime
    scope: Literal["full", "incremental"] = "full"
    title: str | None = Field(default=None, description=_TITLE)
    author: str | None = Field(default=None, description=_AUTHOR)
    requested_by: str | None = Field(default=None, description=_REQUESTED_BY)
    base_ref: str | None = Field(default=None, description=_REFS)
    head_ref: str | None = Field(default=None, description=_REFS)


class ReviewPage(Page):
    items: list[ReviewItem]


class FeedbackItem(_Out):
    feedback_id: UUID
    repository_id: UUID
    provider: str
    number: int = Field(description="The pull/merge request.")
    fingerprint: str
    category: str
    kind: Literal["resolved", "unresolved", "reply", "reaction", "code_changed"] = Field(
        description="resolved/unresolved by a person, a reply, a reaction (detail: its name), or"
        " code_changed: a later push changed or removed the code the finding pointed at."
    )
    detail: str | None
    actor: str | None
    path: str | None
    severity: str | None
    created_at: datetime


class CategoryAcceptance(_Out):
    category: str
    posted: int = Field(description="Findings of the category posted inline.")
    accepted: int = Field(
        description="Resolved by a person, code changed at the anchor, or a positive reaction."
    )
    replied: int
    rejected: int = Field(description="A negative reaction.")


class FeedbackPage(Page):
    acceptance: list[CategoryAcceptance] = Field(default_factory=list)
    items: list[FeedbackItem]


class ReviewFinding(_Out):
    path: str
    start_line: int
    end_line: int
    side: Literal["new", "old"] = Field(
        default="new", description="new: head-side lines (added or context); old: removed lines."
    )
    severity: str
    category: str
    message: str
    suggested_change: str | None
    fingerprint: str | None = Field(
        default=None,
        description="Stable identity across pushes: path, the anchoring code's content hash, the enclosing"
        " symbol, the category and the normalised message (no line numbers).",
    )
    symbol: str | None = Field(default=None, description="The definition enclosing the finding.")
    posted_as: Literal["inline", "summary", "existing"] | None = Field(
        default=None,
        description="inline comment, in the summary (no position on the diff), or posted by an earlier push.",
    )


class ReviewContextItem(_Out):
    source: str = Field(description="definitions, usage, related, neighbourhood or cochange.")
    path: str
    start_line: int
    end_line: int
    last_modified_at: datetime | None
    annotation: str | None
    reason: str | None = Field(
        default=None,
        description="Why it is there: every source's evidence for its file (co-change, uses, tests…).",
    )
    score: float
    tokens: int


class Review(_Out):
    """A stored review; or, for an API request not finished (or failed before a head was known),
    its state and reason with ``review_id`` null."""

    review_id: UUID | None
    request_id: UUID | None
    repository_id: UUID
    state: ReviewState
    reason: str | None
    provider: str = "local"
    number: int | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    snapshot_id: UUID | None = None
    mode: Literal["brief", "model"] | None = None
    model: str | None = None
    summary: str = ""
    context: list[ReviewContextItem] = Field(default_factory=list, description="In prompt order.")
    sources: dict[str, Any] = Field(default_factory=dict, description="Per source: what was found and kept.")
    dropped: list[dict[str, Any]] = Field(default_factory=list)
    cochange_missing: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Files that usually change with these but are not in the pull request, most confident"
        " first: path, source, together, out_of, since, share, confidence, lift, reason.",
    )
    findings: list[ReviewFinding] = Field(default_factory=list)
    findings_dropped: int = 0
    tokens: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    posted: bool = False
    scope: Literal["full", "incremental"] = Field(
        default="full", description="incremental: only the commits since the last reviewed head."
    )
    commits: list[str] = Field(default_factory=list, description="incremental: the commits reviewed.")
    since_sha: str | None = Field(default=None, description="incremental: the last reviewed head.")
    resolved: list[str] = Field(
        default_factory=list,
        description="Fingerprints of earlier findings of the pull request whose code changed or vanished.",
    )
    created_at: datetime | None = None
    title: str | None = Field(default=None, description=_TITLE)
    author: str | None = Field(default=None, description=_AUTHOR)
    requested_by: str | None = Field(default=None, description=_REQUESTED_BY)
    base_ref: str | None = Field(default=None, description=_REFS)
    head_ref: str | None = Field(default=None, description=_REFS)
