"""The MCP tools over the index: one server definition for both transports.

:func:`build_server` returns an ``mcp`` SDK server whose tools read the tenant's index through
the read functions the CLI and the /v1 API use (:mod:`palimpsest.index`, and the review context
the reviewer assembles, :mod:`palimpsest.index.context`), each in a tenant transaction (``tenant_tx``: row-level security scopes every read).
Which tenant a call acts for is the transport's business (:class:`Deps.tenant_of`): over HTTP the
bearer token's tenant (:mod:`palimpsest.ingest.mcp.http`), over stdio the CLI's tenant.

A tool that cannot answer — an unknown repository, no ready snapshot, a query with no words, a
seed or revision that names nothing — raises :class:`ToolError` with one clear line; the client
gets ``isError`` and the message, the server goes on. Arguments are validated by the SDK from
the type hints (bounds included) before a tool runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from palimpsest.core.credentials import git_auth_for
from palimpsest.core.db import Conn, Pool, tenant_tx
from palimpsest.core.git_errors import GitError, source_reason
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.llm import Gateway
from palimpsest.core.repositories import Repository, named, with_last_scan
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.context import candidates
from palimpsest.index.context.assemble import estimate_tokens
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.leftbehind import preview_left_behind
from palimpsest.index.context.preview import preview_context, query_embedder, reranker
from palimpsest.index.errors import IndexNotReady, InvalidQuery, SemanticUnavailable, UnknownSeed
from palimpsest.index.graph.query import graph_context
from palimpsest.index.hybrid import HitFilters, hybrid_search
from palimpsest.index.recency import last_modified_at, list_recency
from palimpsest.index.search import lexical_search
from palimpsest.index.snapshots import Snapshot, list_snapshots, newest_ready, snapshot_commit
from palimpsest.index.stored import analysis_view, latest_completed_analysis
from palimpsest.ingest.mcp import models

__all__ = ["SERVER_NAME", "TOOLS", "Deps", "build_server"]

SERVER_NAME = "palimpsest"
INSTRUCTIONS = (
    "Palimpsest's code index of your repositories: search, definitions and references, the graph"
    " context around a path or symbol, the context a reviewer would use for a change, file dates"
    " and stale docs, and documentation claims the code no longer supports (with proof from git"
    " history). Start with `repositories`; every other tool takes a `repository` (full name or id)."
    " Every answer gives paths, line ranges, dates and why each item is there, within"
    " `budget_tokens`. Documentation may be stale: the code is authoritative."
)
MAX_SNIPPET_CHARS = 2400  # a code item's text is cut here (and says so): room for more items
T = TypeVar("T", bound=BaseModel)

RepositoryArg = Annotated[
    str,
    Field(min_length=1, max_length=1024, description="A repository's full name or id (see `repositories`)."),
]
Budget = Annotated[
    int, Field(ge=100, le=200_000, description="Token budget of the answer (about four characters a token).")
]
Limit = Annotated[int, Field(ge=1, le=200, description="At most this many items.")]
SymbolArg = Annotated[
    str, Field(min_length=1, max_length=512, description="A symbol name (function, class, …).")
]
Filter = Annotated[str | None, Field(min_length=1, max_length=1024)]
Rev = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9._/@{}~^+][A-Za-z0-9._/@{}~^+-]*$",
        description="A branch, tag or commit.",
    ),
]

TOOLS = (
    "repositories",
    "snapshots",
    "search",
    "definitions",
    "references",
    "context",
    "review_context",
    "recency",
    "doc_findings",
)


@dataclass(slots=True)
class Deps:
    """What the tools need from the process serving them."""

    pool: Pool
    tenant_of: Callable[[Context], UUID]  # the caller's tenant; raises ToolError when there is none
    policy: SourcePolicy  # where review_context may read repositories from
    box: SecretBox | None = None  # opens installation credentials (fetching a remote head)
    github_api_url: str | None = None
    gateway: Callable[[], Gateway] | None = None  # rerank / query embeddings (None: lexical only)


def build_server(deps: Deps) -> MCPServer:
    """The Palimpsest MCP server (tools only) over ``deps``."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version="1", log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    tools = _Tools(deps)
    for name in TOOLS:
        fn = getattr(tools, name)
        server.add_tool(fn, name=name, description=fn.__doc__, annotations=read_only, structured_output=True)
    return server


class _Tools:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    # ------------------------------------------------------------------------ repositories

    async def repositories(self, ctx: Context, budget_tokens: Budget = 4000) -> models.Repositories:
        """The tenant's repositories: full name, id, default branch, index mode, the newest ready
        snapshot (commit, files, when) and the last recency scan."""
        async with self._tx(ctx) as conn:
            infos = []
            for row in await with_last_scan(conn):
                snap = await newest_ready(conn, row.repository_id)
                infos.append(
                    models.RepositoryInfo(
                        repository=row.full_name,
                        repository_id=str(row.repository_id),
                        provider=row.provider,
                        default_branch=row.default_branch,
                        index_mode=row.index_mode,
                        indexed=_snapshot(snap) if snap else None,
                        last_recency_scan=_iso(row.scanned_at),
                    )
                )
        kept, left = fit(infos, budget_tokens)
        return models.Repositories(repositories=kept, left_out=left, budget_tokens=budget_tokens)

    async def snapshots(
        self, ctx: Context, repository: RepositoryArg, limit: Limit = 10, budget_tokens: Budget = 4000
    ) -> models.Snapshots:
        """A repository's index snapshots, newest first: commit, state and why, counts, embedding
        state, when built."""
        async with self._tx(ctx) as conn:
            repo = await _repository(conn, repository)
            rows = await list_snapshots(conn, repo.repository_id, limit=limit)
        kept, left = fit([_snapshot(r) for r in rows], budget_tokens)
        return models.Snapshots(
            repository=repo.full_name, snapshots=kept, left_out=left, budget_tokens=budget_tokens
        )

    # ------------------------------------------------------------------------------ search

    async def search(
        self,
        ctx: Context,
        repository: RepositoryArg,
        query: Annotated[
            str, Field(min_length=1, max_length=1000, description="Words, identifiers or paths.")
        ],
        mode: Literal["lexical", "hybrid"] = "lexical",
        path_prefix: Filter = None,
        language: Filter = None,
        kind: Annotated[
            str | None,
            Field(min_length=1, max_length=64, description="function, class, method, window, section…"),
        ] = None,
        limit: Limit = 10,
        budget_tokens: Budget = 4000,
    ) -> models.SearchResult:
        """Search the newest ready snapshot: lexical, or hybrid (lexical + semantic, fused by
        reciprocal rank; says why when the semantic half could not run). Filters: path prefix,
        language, chunk kind. Each hit: path, lines, its code, the file's last change."""
        tenant = self.deps.tenant_of(ctx)
        filters: HitFilters = {"path_prefix": path_prefix, "language": language, "kind": kind}
        try:
            async with tenant_tx(self.deps.pool, tenant) as conn:
                repo = await _repository(conn, repository)
                rid = repo.repository_id
                if mode == "hybrid":
                    found = await hybrid_search(
                        conn, rid, query, embed_query=self._embedder(tenant), limit=limit, **filters
                    )
                    hits, semantic, reason = found.hits, found.semantic, found.reason
                    fused = found.mode
                    sid = found.snapshot_id
                else:
                    snap = await newest_ready(conn, rid)
                    if snap is None:
                        raise IndexNotReady("the repository has no ready snapshot yet (index it first)")
                    sid = snap.snapshot_id
                    hits = await lexical_search(conn, rid, query, snapshot_id=sid, limit=limit, **filters)
                    semantic, reason, fused = "not_requested", None, "lexical"
                commit = await _commit(conn, sid)
                dates = await last_modified_at(conn, rid, [h.path for h in hits])
        except (IndexNotReady, InvalidQuery) as exc:
            raise ToolError(str(exc)) from exc
        items = [
            models.SearchHitItem(
                path=h.path,
                start_line=h.start_line,
                end_line=h.end_line,
                kind=h.kind,
                name=h.name,
                language=h.language,
                score=round(h.score, 4),
                last_modified_at=_iso(dates.get(h.path)),
                why=f"{fused} match #{i} for {query!r}",
                content=_snippet(h.content),
            )
            for i, h in enumerate(hits, 1)
        ]
        kept, left = fit(items, budget_tokens)
        return models.SearchResult(
            repository=repo.full_name,
            commit=commit,
            mode=fused,
            semantic=semantic,
            semantic_reason=reason,
            hits=kept,
            left_out=left,
            budget_tokens=budget_tokens,
        )

    # -------------------------------------------------------------------------- symbols

    async def definitions(
        self,
        ctx: Context,
        repository: RepositoryArg,
        symbol: SymbolArg,
        limit: Limit = 20,
        budget_tokens: Budget = 4000,
    ) -> models.SymbolResult:
        """Where a symbol is defined in the newest ready snapshot: each definition's file, lines
        and code (the reviewer's definitions source, every definer)."""
        async with self._tx(ctx) as conn:
            repo = await _repository(conn, repository)
            snap = await _ready(conn, repo)
            rid, sid = repo.repository_id, snap.snapshot_id
            found = await candidates.definitions(conn, rid, sid, [symbol], limit, max_definers=10**6)
            dates = await last_modified_at(conn, rid, [c.path for c in found])
        return self._symbols(repo, snap, symbol, found, dates, budget_tokens)

    async def references(
        self,
        ctx: Context,
        repository: RepositoryArg,
        symbol: SymbolArg,
        limit: Limit = 20,
        budget_tokens: Budget = 4000,
    ) -> models.SymbolResult:
        """Places that call or reference a symbol (the code graph's reference and call edges),
        each shown at the use: file, lines and the code around it."""
        async with self._tx(ctx) as conn:
            repo = await _repository(conn, repository)
            snap = await _ready(conn, repo)
            rid, sid = repo.repository_id, snap.snapshot_id
            found = await candidates.usages(conn, rid, sid, [symbol], frozenset(), limit)
            for cand in found:
                cand.reason = f"uses `{symbol}`"
            dates = await last_modified_at(conn, rid, [c.path for c in found])
        return self._symbols(repo, snap, symbol, found, dates, budget_tokens)

    @staticmethod
    def _symbols(
        repo: Repository,
        snap: Snapshot,
        symbol: str,
        found: Sequence[candidates.Candidate],
        dates: dict[str, datetime | None],
        budget: int,
    ) -> models.SymbolResult:
        items = [
            models.CodeItem(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                last_modified_at=_iso(dates.get(c.path)),
                why=c.reason,
                content=_snippet(c.content),
            )
            for c in found
        ]
        kept, left = fit(items, budget)
        return models.SymbolResult(
            repository=repo.full_name,
            symbol=symbol,
            commit=snap.commit_sha,
            items=kept,
            left_out=left,
            budget_tokens=budget,
        )

    # -------------------------------------------------------------------------- context

    async def context(
        self,
        ctx: Context,
        repository: RepositoryArg,
        seeds: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1024)]],
            Field(min_length=1, max_length=50, description="Paths, directories or symbol names."),
        ],
        hops: Annotated[
            int | None, Field(ge=1, le=99, description="File-to-file hops; null: unbounded.")
        ] = 1,
        history: Annotated[bool, Field(description="Blend in co-change history and recency.")] = True,
        budget_tokens: Budget = 4000,
    ) -> models.ContextResult:
        """The files the code graph ranks around paths or symbols (imports, calls, references,
        tests, docs), blended with co-change history and recency; each with the edge or signal
        that put it there and its date. The budget counts the files' sizes, as a reader would."""
        try:
            async with self._tx(ctx) as conn:
                repo = await _repository(conn, repository)
                rid = repo.repository_id
                result = await graph_context(
                    conn, rid, seeds, budget=budget_tokens, hops=hops, history=history
                )
                dates = await last_modified_at(conn, rid, [e.path for e in result.entries])
        except (IndexNotReady, UnknownSeed) as exc:
            raise ToolError(str(exc)) from exc
        entries = [
            models.ContextEntry(
                path=e.path,
                kind=e.kind,
                score=round(e.score, 6),
                why=e.reason,
                via=e.via,
                depth=e.depth,
                tokens=e.tokens,
                last_modified_at=_iso(dates.get(e.path)),
            )
            for e in result.entries
        ]
        return models.ContextResult(
            repository=repo.full_name,
            commit=result.commit,
            seeds=result.seeds,
            unmatched_seeds=list(result.unmatched),
            entries=entries,
            left_out=result.dropped,
            budget_tokens=budget_tokens,
        )

    # -------------------------------------------------------------------- review context

    async def review_context(
        self,
        ctx: Context,
        repository: RepositoryArg,
        base: Rev = None,
        head: Rev = None,
        diff: Annotated[
            str | None,
            Field(min_length=1, max_length=5 * 1024 * 1024, description="A unified diff against `base`."),
        ] = None,
        budget_tokens: Budget = 8000,
    ) -> models.ReviewContextResult:
        """Exactly the context Palimpsest's reviewer would use for a change — `base`..`head`, or a
        unified `diff` applied to `base` (default: the default branch): definitions the change
        touches and calls, its usages, related code, the graph neighbourhood and co-change
        partners, each with its source, why, date and doc notes; what was dropped and why; and
        the files that usually change with these but are missing from the change."""
        if (head is None) == (diff is None):
            raise ToolError("give exactly one of `head` (a revision) or `diff` (a unified diff)")
        tenant = self.deps.tenant_of(ctx)
        async with tenant_tx(self.deps.pool, tenant) as conn:
            repo = await _repository(conn, repository)
            try:
                auth = await git_auth_for(
                    conn,
                    repo.repository_id,
                    self.deps.box,
                    tokens=InstallationTokens(api_url=self.deps.github_api_url),
                )
            except GitError as exc:
                raise ToolError(f"{source_reason(exc.reason)}: {exc}") from exc
        gateway = self._gateway()
        try:
            preview = await preview_context(
                self.deps.pool,
                tenant,
                repo,
                base=base,
                head=head,
                diff=diff,
                budget=budget_tokens,
                policy=self.deps.policy,
                auth=auth,
                rerank=await reranker(gateway, tenant, reference="mcp") if gateway else None,
                embed_query=(
                    query_embedder(gateway, tenant, accounted_as="review")
                    if gateway and repo.index_mode == "hybrid"
                    else None
                ),
            )
            left = await preview_left_behind(
                self.deps.pool,
                tenant,
                repo,
                base=base,
                head=head,
                diff=diff,
                policy=self.deps.policy,
                auth=auth,
            )
        except (ReviewFailed, IndexNotReady) as exc:
            raise ToolError(str(exc)) from exc
        rc = preview.context
        items = [
            models.ReviewItem(
                source=c.source,
                repository=c.repository,
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                last_modified_at=_iso(c.last_modified_at),
                annotation=c.annotation,
                score=round(c.score, 4),
                why=c.reason,
                content=c.content,
            )
            for c in rc.items
        ]
        return models.ReviewContextResult(
            repository=repo.full_name,
            base=preview.base_sha,
            head=preview.head_sha,
            snapshot_commit=rc.snapshot_commit,
            snapshot_on_base=rc.on_base,
            changed=rc.changed,
            items=items,
            cochange_missing=rc.cochange_missing,
            dropped=rc.dropped,
            ranking=rc.ranking,
            median_code_date=_iso(rc.median_code_date),
            doc_rule=rc.doc_rule,
            left_out=sum(1 for d in rc.dropped if d.get("reason") == "budget"),
            budget_tokens=budget_tokens,
            left_behind=[f.as_dict() for f in left],
        )

    # -------------------------------------------------------------------------- recency

    async def recency(
        self,
        ctx: Context,
        repository: RepositoryArg,
        path_prefix: Filter = None,
        stale_only: Annotated[
            bool, Field(description="Only docs the shared staleness rule calls stale.")
        ] = False,
        kind: Literal["doc", "code"] | None = None,
        budget_tokens: Budget = 4000,
    ) -> models.RecencyResult:
        """When each indexed file last changed (from git history), oldest first; docs more than
        six months older than the repository's median code date are marked stale."""
        async with self._tx(ctx) as conn:
            repo = await _repository(conn, repository)
            listing = await list_recency(conn, repo.repository_id)
        entries = [
            e
            for e in listing.entries
            if (path_prefix is None or e.path.startswith(path_prefix))
            and (not stale_only or e.stale)
            and (kind is None or e.kind == kind)
        ]
        median = _iso(listing.median_code_date)
        files = (  # made only while they fit: a large repository has tens of thousands
            models.RecencyFile(
                path=e.path,
                kind=e.kind,
                last_modified_at=_iso(e.last_modified_at),
                last_commit=e.last_commit,
                stale=e.stale,
                why=_recency_why(e.stale, e.age, e.last_modified_at, median),
            )
            for e in entries
        )
        kept, left = fit(files, budget_tokens, total=len(entries))
        scan = listing.scan
        return models.RecencyResult(
            repository=repo.full_name,
            median_code_date=median,
            scan=models.ScanNote(
                status=scan.status,
                reason=scan.reason,
                commit_sha=scan.commit_sha,
                scanned_at=scan.scanned_at.isoformat(),
            )
            if scan is not None
            else None,
            stale_docs=sum(1 for e in listing.entries if e.stale),
            files=kept,
            left_out=left,
            budget_tokens=budget_tokens,
        )

    # --------------------------------------------------------------------- doc findings

    async def doc_findings(
        self, ctx: Context, repository: RepositoryArg, budget_tokens: Budget = 4000
    ) -> models.DocFindingsResult:
        """Documentation the code no longer supports, from the newest completed analysis: each
        claim (doc, line), its kind (missing path or identifier, ``versioned_manual``: a manual for an older release reported once as a
        whole, or ``stale_doc``: an old doc none of whose claims holds), the docs counted by state,
        the nearest name the
        code has now, and the proof from git history (the commit where it last existed, the one
        that removed it, with dates)."""
        async with self._tx(ctx) as conn:
            repo = await _repository(conn, repository)
            analysis_id = await latest_completed_analysis(conn, repo.repository_id)
            view = await analysis_view(conn, analysis_id) if analysis_id is not None else None
        if view is None:
            return models.DocFindingsResult(
                repository=repo.full_name,
                analysis_id=None,
                commit=None,
                analysed_at=None,
                note="no completed analysis yet (the analyzer writes one after indexing)",
                findings=[],
                budget_tokens=budget_tokens,
            )
        findings = [
            models.DocFinding(
                doc=f.doc,
                line=f.line,
                claim=f.claim,
                kind=f.kind,
                nearest=f.nearest,
                why=f.detail or f.kind.replace("_", " "),
                evidence=f.evidence,
            )
            for f in view.doc_findings
        ]
        kept, left = fit(findings, budget_tokens)
        return models.DocFindingsResult(
            repository=repo.full_name,
            analysis_id=str(view.analysis_id),
            commit=view.commit,
            analysed_at=view.created_at.isoformat(),
            doc_states=(view.facts.get("doc_check") or {}).get("docs"),
            findings=kept,
            left_out=left,
            budget_tokens=budget_tokens,
        )

    # --------------------------------------------------------------------------- helpers

    def _tx(self, ctx: Context) -> Any:
        return tenant_tx(self.deps.pool, self.deps.tenant_of(ctx))

    def _gateway(self) -> Gateway | None:
        return self.deps.gateway() if self.deps.gateway is not None else None

    def _embedder(self, tenant: UUID) -> candidates.QueryEmbedder | None:
        gateway = self._gateway()
        if gateway is None:
            return None
        embed = query_embedder(gateway, tenant, accounted_as="search")

        async def guarded(model: str, text: str) -> Sequence[float]:
            try:
                return await embed(model, text)
            except ModuleNotFoundError as exc:  # an ingest image carries no model client (litellm)
                raise SemanticUnavailable("no_query_embedder", "this deployment has no model client") from exc

        return guarded


async def _repository(conn: Conn, ref: str) -> Repository:
    """The tenant's repository named by id, full name (letter case aside) or clone URL; ToolError
    when none or several."""
    rows = await named(conn, ref.strip(), fold_case=True)
    if not rows:
        raise ToolError(f"no repository {ref!r} (the `repositories` tool lists them)")
    if len(rows) > 1:
        raise ToolError(f"{ref!r} names more than one repository; pass its repository_id")
    return rows[0]


async def _ready(conn: Conn, repo: Repository) -> Snapshot:
    snap = await newest_ready(conn, repo.repository_id)
    if snap is None:
        raise ToolError(f"{repo.full_name} has no ready snapshot yet (index it first)")
    return snap


async def _commit(conn: Conn, snapshot_id: Any) -> str | None:
    if snapshot_id is None:
        return None
    return await snapshot_commit(conn, snapshot_id)


def _snapshot(row: Snapshot) -> models.SnapshotInfo:
    return models.SnapshotInfo(
        snapshot_id=str(row.snapshot_id),
        commit=row.commit_sha,
        state=row.state,
        reason=row.reason,
        files=row.files,
        chunks=row.chunks,
        embedding_state=row.embedding_state,
        created_at=_iso(row.created_at) or "",
        ready_at=_iso(row.ready_at),
    )


def _recency_why(stale: bool, age: str | None, date: datetime | None, median: str | None) -> str:
    if date is None:
        return "no date: the recency scan has not dated this file"
    if stale:
        return f"stale doc: {age}" if age else "stale doc"
    return f"last changed {date.date().isoformat()}" + (
        f" (median code date {median[:10]})" if median else ""
    )


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _snippet(text: str) -> str:
    if len(text) <= MAX_SNIPPET_CHARS:
        return text
    return text[:MAX_SNIPPET_CHARS] + "\n… (cut; read the file for the rest)"


def fit(items: Iterable[T], budget: int, *, total: int | None = None) -> tuple[list[T], int]:
    """The leading items whose JSON fits ``budget`` tokens (about four characters a token), and how
    many were left out. Items keep their order: the tools rank before they fit. ``items`` may be a
    generator (only the items that fit, and the first that does not, are made) with ``total`` the
    number it would yield."""
    if total is None:
        items = list(items)
        total = len(items)
    kept: list[T] = []
    used = 0
    for item in items:
        cost = estimate_tokens(json.dumps(item.model_dump(mode="json"), separators=(",", ":")))
        if used + cost > budget:
            break
        used += cost
        kept.append(item)
    return kept, total - len(kept)
