"""What a verified webhook delivery means for its tenant: which event(s) to emit, or why none.

`decide` runs inside the tenant's transaction, after the signature was verified, on what
:func:`palimpsest.ingest.load.load` read. It keeps the stored facts the provider is authoritative
on (provider id, default branch, visibility) current, and returns a `Decision`. Writes that must
happen only once — repositories added or removed by installation events — are deferred to
`Decision.apply`, which the caller runs only after it has claimed the delivery id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.events import Event, IndexRequested
from palimpsest.core.ids import uuid7
from palimpsest.ingest.admin import audit
from palimpsest.ingest.admin.audit import AuditNote
from palimpsest.ingest.context import Route
from palimpsest.ingest.errors import Conflict
from palimpsest.ingest.load import Added, Loaded
from palimpsest.ingest.store import installations, repositories, review_feedback
from palimpsest.ingest.store.repositories import Repository
from palimpsest.ingest.webhooks import (
    FeedbackIntent,
    Ignored,
    IndexCandidates,
    IndexIntent,
    ParsedDelivery,
    Ping,
    RepoRef,
    ReposChanged,
    ReviewIntent,
    Suspension,
)
from palimpsest.ingest.webhooks._payload import clip


@dataclass(frozen=True, slots=True)
class Applied:
    events: list[Event]
    reason: str


@dataclass(slots=True)
class Decision:
    outcome: Literal["accepted", "ignored"]
    http_status: int
    reason: str | None
    repository_id: UUID | None = None
    events: list[Event] = field(default_factory=list)
    apply: Callable[[Conn], Awaitable[Applied]] | None = None


def _ignored(reason: str, repository_id: UUID | None = None) -> Decision:
    return Decision("ignored", 202, reason, repository_id)


async def decide(conn: Conn, route: Route, parsed: ParsedDelivery, loaded: Loaded) -> Decision:
    intent = parsed.intent
    if isinstance(intent, Ping):
        return Decision("accepted", 200, "ping")
    if isinstance(intent, Suspension):
        return _suspension(route, intent)
    repo = loaded.repo
    if route.suspended is not None:  # from the (cached) route lookup: no query per delivery
        return _ignored(route.suspended, repo.repository_id if repo else None)
    if isinstance(intent, Ignored):
        return _ignored(intent.reason, repo.repository_id if repo else None)
    if isinstance(intent, IndexIntent | IndexCandidates):
        return await _push(conn, route, intent, repo)
    if isinstance(intent, ReviewIntent):
        return await _review(conn, route, parsed, intent, repo)
    if isinstance(intent, FeedbackIntent):
        return await _feedback(conn, route, parsed, intent, loaded)
    return await _repos_changed(route, parsed.provider, intent, loaded)


def _suspension(route: Route, intent: Suspension) -> Decision:
    """The provider suspended or reinstated the installation: recorded once (the delivery's claim)."""

    async def apply(tx: Conn) -> Applied:
        await installations.set_suspended(tx, route.installation_id, intent.suspended, "provider")
        action = "installation_suspend" if intent.suspended else "installation_unsuspend"
        note = AuditNote(
            route.tenant_id,
            "provider",
            None,
            None,
            action,
            target={"installation_id": str(route.installation_id)},
        )
        await audit.insert(tx, note, "ok", 202)
        return Applied([], "installation suspended" if intent.suspended else "installation unsuspended")

    return Decision("accepted", 202, None, apply=apply)


async def _registered(conn: Conn, route: Route, ref: RepoRef, repo: Repository | None) -> Repository | None:
    """The stored repository, brought up to date with what the (verified) provider says."""
    if repo is None:
        return None
    changes: dict[str, Any] = {}
    if repo.external_id is None:
        changes["external_id"] = ref.external_id
    if repo.installation_id is None:
        changes["installation_id"] = route.installation_id
    if ref.default_branch is not None and ref.default_branch != repo.default_branch:
        changes["default_branch"] = ref.default_branch
    if ref.visibility != repo.visibility:
        changes["visibility"] = ref.visibility
    if changes:
        repo = await repositories.update_repository(conn, repo.repository_id, changes) or repo
    return repo


def _not_registered(ref: RepoRef) -> Decision:
    return _ignored(f"repository '{clip(ref.full_name)}' is not registered")


async def _push(
    conn: Conn, route: Route, intent: IndexIntent | IndexCandidates, known: Repository | None
) -> Decision:
    intents = intent.intents if isinstance(intent, IndexCandidates) else (intent,)
    ref = intents[0].repo
    repo = await _registered(conn, route, ref, known)
    if repo is None:
        return _not_registered(ref)
    repository_id: UUID = repo.repository_id
    default = repo.default_branch
    chosen = [
        i for i in intents if i.is_default_branch or (i.is_default_branch is None and i.branch == default)
    ]
    if not chosen:
        branches = ", ".join(f"'{clip(i.branch)}'" for i in intents[:3])
        return _ignored(f"push to {branches}, not the default branch '{clip(default)}'", repository_id)
    if repo.index_mode == "off":
        return _ignored("indexing is off for this repository", repository_id)
    push = chosen[0]
    event = IndexRequested(
        tenant_id=route.tenant_id,
        repository_id=repository_id,
        reason="push",
        branch=push.branch,
        commit_sha=push.head_sha,
        head_commit_at=push.head_commit_at,
        changed_paths=list(push.changed_paths) if push.changed_paths or push.paths_complete else None,
        paths_complete=push.paths_complete,
    )
    return Decision("accepted", 202, None, repository_id, [event])


async def _review(
    conn: Conn, route: Route, parsed: ParsedDelivery, intent: ReviewIntent, known: Repository | None
) -> Decision:
    repo = await _registered(conn, route, intent.repo, known)
    if repo is None:
        return _not_registered(intent.repo)
    event = intent.requested(
        tenant_id=route.tenant_id,
        repository_id=repo.repository_id,
        provider=parsed.provider,
        delivery_id=parsed.delivery_id,
    )
    return Decision("accepted", 202, None, repo.repository_id, [event])


async def _feedback(
    conn: Conn, route: Route, parsed: ParsedDelivery, intent: FeedbackIntent, loaded: Loaded
) -> Decision:
    """Feedback on a posted finding: recorded (once per delivery) when it is about one."""
    repo = await _registered(conn, route, intent.repo, loaded.repo)
    if repo is None:
        return _not_registered(intent.repo)
    repository_id: UUID = repo.repository_id
    thread = loaded.thread
    if thread is None:
        return _ignored("not about a finding the reviewer posted", repository_id)

    async def apply(tx: Conn) -> Applied:
        recorded = await review_feedback.record(tx, route.tenant_id, repo, parsed, intent, thread)
        return Applied(
            [],
            f"feedback: {intent.kind} on a {thread.category} finding"
            + ("" if recorded else " (already recorded)"),
        )

    return Decision("accepted", 202, None, repository_id, apply=apply)


async def _repos_changed(route: Route, provider: str, intent: ReposChanged, loaded: Loaded) -> Decision:
    if loaded.host is None:  # deleted between the lookup and now
        return _ignored("installation no longer registered")

    async def apply(tx: Conn) -> Applied:
        changed = await apply_repos_changed(
            tx, route.tenant_id, route.installation_id, provider, loaded.added, intent.removed
        )
        return Applied(changed.events, changed.reason())

    return Decision("accepted", 202, None, apply=apply)


@dataclass(slots=True)
class ReposApplied:
    """What registering an installation's added repositories and deleting its removed ones did."""

    added: list[str] = field(default_factory=list)  # full names registered now
    known: list[str] = field(default_factory=list)  # already registered (brought up to date)
    refused: list[str] = field(default_factory=list)  # "name: why" (the source policy, a conflict)
    removed: list[str] = field(default_factory=list)  # full names deleted
    events: list[Event] = field(default_factory=list)  # index requests of the added ones

    def reason(self) -> str:
        text = (
            f"repositories: {len(self.added)} added, {len(self.known)} already registered,"
            f" {len(self.removed)} removed"
        )
        if self.refused:
            text += "; refused " + "; ".join(self.refused[:5])
        return text


async def apply_repos_changed(
    conn: Conn,
    tenant_id: UUID,
    installation_id: UUID,
    provider: str,
    added: Sequence[Added],
    removed: Sequence[RepoRef],
) -> ReposApplied:
    """Register the repositories an installation gained and delete those it lost, in the caller's
    tenant transaction: what an ``installation`` delivery does, and what installation sync does
    (:mod:`palimpsest.ingest.sync`). The caller emits ``events``."""
    done = ReposApplied()
    route = Route(tenant_id, installation_id, "")
    for one in added:
        ref = one.ref
        outcome = await _add_installed(conn, route, one)
        if isinstance(outcome, str):
            done.refused.append(f"{clip(ref.full_name)}: {outcome}")
        elif outcome is None:
            done.known.append(ref.full_name)
        else:
            done.added.append(ref.full_name)
            done.events.extend(outcome)
    gone = await repositories.delete_installed(
        conn, installation_id, provider, [r.external_id for r in removed]
    )
    done.removed = [name for _, name in gone]
    return done


async def _add_installed(conn: Conn, route: Route, added: Added) -> list[Event] | str | None:
    """Register one repository an installation gained: its index request, None if known, or why not."""
    ref = added.ref
    if added.known is None:  # registered meanwhile (the same repository listed twice)
        added = replace(
            added,
            known=await repositories.find_repository(conn, ref.provider, ref.external_id, ref.full_name),
        )
    if await _registered(conn, route, ref, added.known) is not None:
        return None
    if added.refused is not None:
        return added.refused
    source = added.source
    assert source is not None
    new = repositories.NewRepository(
        repository_id=uuid7(),
        provider=ref.provider,
        external_id=ref.external_id,
        full_name=ref.full_name,
        clone_url=source.clone_url,
        default_branch=ref.default_branch or "main",
        visibility=ref.visibility,
        index_mode="lexical",
        installation_id=route.installation_id,
    )
    try:
        async with conn.transaction():  # a savepoint: the URL may be registered under another name
            stored = await repositories.insert_repository(conn, route.tenant_id, new)
    except Conflict as exc:
        return exc.message
    return [IndexRequested(tenant_id=route.tenant_id, repository_id=stored.repository_id, reason="register")]
