"""What a verified webhook delivery means for its tenant, as a pure function: the writes it causes
and the event(s) it emits, or why none.

:func:`decide` reads and writes nothing: it gets the route (tenant, installation, suspension), the
parsed delivery and what :func:`palimpsest.ingest.load.load` read, and returns the intents
(:mod:`.intents`) that :func:`palimpsest.ingest.apply.apply` runs in the tenant's transaction:

* a delivery that asks for nothing (or arrives while its installation or tenant is suspended) is
  recorded as ``ignored`` (:class:`~.intents.RecordIgnored`);
* a push to the default branch → ``index.requested`` with the changed paths; a pull request
  opened, pushed or commented ``@<bot> review`` → ``review.requested``: the delivery is claimed
  and the event emitted (:class:`~.intents.ClaimDelivery` and :class:`~.intents.EmitEvent`,
  one statement);
* the stored facts the provider is authoritative on (provider id, installation, default branch,
  visibility) are kept current (:class:`~.intents.UpdateRepository`, before the claim: a
  redelivery brings them up to date too);
* writes that must happen once — an installation suspended or reinstated, feedback on a posted
  finding, repositories an installation gained or lost — follow the claim, and
  :class:`~.intents.FinishDelivery` records their reason.

:func:`decide_repos` is the cascade of an installation's repositories, shared with installation
sync (:mod:`palimpsest.ingest.sync`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal
from uuid import UUID

from palimpsest.core.events import Event, IndexRequested
from palimpsest.core.ids import uuid7
from palimpsest.ingest.context import Route
from palimpsest.ingest.intents import (
    Audit,
    ClaimDelivery,
    EmitEvent,
    FeedbackReason,
    FinishDelivery,
    Intent,
    Reason,
    RecordFeedback,
    RecordIgnored,
    RegisterRepository,
    RemoveInstalled,
    ReposReason,
    SetSuspended,
    UpdateRepository,
    refused,
)
from palimpsest.ingest.load import Added, Loaded
from palimpsest.ingest.store.audit import AuditNote
from palimpsest.ingest.store.deliveries import DeliveryRow
from palimpsest.ingest.store.repositories import TAKEN, NewRepository, Repository
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


def decide(route: Route, parsed: ParsedDelivery, loaded: Loaded) -> tuple[Intent, ...]:
    intent = parsed.intent
    if isinstance(intent, Ping):
        return _accepted(route, parsed, 200, "ping")
    if isinstance(intent, Suspension):
        return _suspension(route, parsed, intent)
    repo = loaded.repo
    if route.suspended is not None:  # from the (cached) route lookup: no query per delivery
        return _ignored(route, parsed, route.suspended, repo)
    if isinstance(intent, Ignored):
        return _ignored(route, parsed, intent.reason, repo)
    if isinstance(intent, ReposChanged):
        return _repos_changed(route, parsed, intent, loaded)
    ref = intent.intents[0].repo if isinstance(intent, IndexCandidates) else intent.repo
    if repo is None:
        return _ignored(route, parsed, f"repository '{clip(ref.full_name)}' is not registered", None)
    update = refreshed(repo, ref, route.installation_id)
    before = () if update is None else (update,)
    repo = current(repo, update)
    if isinstance(intent, IndexIntent | IndexCandidates):
        return before + _push(route, parsed, intent, repo)
    if isinstance(intent, ReviewIntent):
        event = intent.requested(
            tenant_id=route.tenant_id,
            repository_id=repo.repository_id,
            provider=parsed.provider,
            delivery_id=parsed.delivery_id,
        )
        return before + _emitting(route, parsed, repo.repository_id, event)
    return before + _feedback(route, parsed, intent, repo, loaded)


# ------------------------------------------------------------------------------ the delivery's record


def _row(
    route: Route,
    parsed: ParsedDelivery,
    outcome: Literal["accepted", "ignored"],
    http_status: int,
    reason: str | None,
    repository_id: UUID | None = None,
    events: Sequence[Event] = (),
) -> DeliveryRow:
    return DeliveryRow(
        id=uuid7(),
        provider=parsed.provider,
        installation_id=route.installation_id,
        delivery_id=parsed.delivery_id,
        event=parsed.event,
        action=parsed.action,
        outcome=outcome,
        http_status=http_status,
        reason=reason,
        repository_id=repository_id,
        event_ids=[e.id for e in events],
    )


def _ignored(
    route: Route, parsed: ParsedDelivery, reason: str, repo: Repository | None
) -> tuple[Intent, ...]:
    row = _row(route, parsed, "ignored", 202, reason, repo.repository_id if repo else None)
    return (RecordIgnored(route.tenant_id, row),)


def _accepted(route: Route, parsed: ParsedDelivery, status: int, reason: str | None) -> tuple[Intent, ...]:
    return (ClaimDelivery(route.tenant_id, _row(route, parsed, "accepted", status, reason)),)


def _emitting(route: Route, parsed: ParsedDelivery, repository_id: UUID, event: Event) -> tuple[Intent, ...]:
    row = _row(route, parsed, "accepted", 202, None, repository_id, [event])
    return ClaimDelivery(route.tenant_id, row), EmitEvent(event)


def _claimed(
    route: Route, parsed: ParsedDelivery, repository_id: UUID | None, writes: Sequence[Intent], reason: Reason
) -> tuple[Intent, ...]:
    """Writes that must happen once: the claim, the writes, then the reason they earn."""
    row = _row(route, parsed, "accepted", 202, None, repository_id)
    return ClaimDelivery(route.tenant_id, row), *writes, FinishDelivery(row.id, reason)


# ------------------------------------------------------------------------------ the repository


def refreshed(repo: Repository, ref: RepoRef, installation_id: UUID) -> UpdateRepository | None:
    """The update that brings the stored repository in line with what the (verified) provider says."""
    update = UpdateRepository(
        repo.repository_id,
        external_id=ref.external_id if repo.external_id is None else None,
        installation_id=installation_id if repo.installation_id is None else None,
        default_branch=(
            ref.default_branch
            if ref.default_branch is not None and ref.default_branch != repo.default_branch
            else None
        ),
        visibility=ref.visibility if ref.visibility != repo.visibility else None,
    )
    return None if update == UpdateRepository(repo.repository_id) else update


def current(repo: Repository, update: UpdateRepository | None) -> Repository:
    """The repository as it is after ``update``."""
    if update is None:
        return repo
    return dataclasses.replace(
        repo,
        external_id=repo.external_id if update.external_id is None else update.external_id,
        installation_id=repo.installation_id if update.installation_id is None else update.installation_id,
        default_branch=repo.default_branch if update.default_branch is None else update.default_branch,
        visibility=repo.visibility if update.visibility is None else update.visibility,
    )


# ------------------------------------------------------------------------------ the intents


def _suspension(route: Route, parsed: ParsedDelivery, intent: Suspension) -> tuple[Intent, ...]:
    """The provider suspended or reinstated the installation: recorded once (the delivery's claim)."""
    action = "installation_suspend" if intent.suspended else "installation_unsuspend"
    note = AuditNote(
        route.tenant_id,
        "provider",
        None,
        None,
        action,
        target={"installation_id": str(route.installation_id)},
    )
    writes = (SetSuspended(route.installation_id, intent.suspended, "provider"), Audit(note, "ok", 202))
    reason = "installation suspended" if intent.suspended else "installation unsuspended"
    return _claimed(route, parsed, None, writes, reason)


def _push(
    route: Route, parsed: ParsedDelivery, intent: IndexIntent | IndexCandidates, repo: Repository
) -> tuple[Intent, ...]:
    intents = intent.intents if isinstance(intent, IndexCandidates) else (intent,)
    default = repo.default_branch
    chosen = [
        i for i in intents if i.is_default_branch or (i.is_default_branch is None and i.branch == default)
    ]
    if not chosen:
        branches = ", ".join(f"'{clip(i.branch)}'" for i in intents[:3])
        reason = f"push to {branches}, not the default branch '{clip(default)}'"
        return _ignored(route, parsed, reason, repo)
    if repo.index_mode == "off":
        return _ignored(route, parsed, "indexing is off for this repository", repo)
    push = chosen[0]
    event = IndexRequested(
        tenant_id=route.tenant_id,
        repository_id=repo.repository_id,
        reason="push",
        branch=push.branch,
        commit_sha=push.head_sha,
        head_commit_at=push.head_commit_at,
        changed_paths=list(push.changed_paths) if push.changed_paths or push.paths_complete else None,
        paths_complete=push.paths_complete,
    )
    return _emitting(route, parsed, repo.repository_id, event)


def _feedback(
    route: Route, parsed: ParsedDelivery, intent: FeedbackIntent, repo: Repository, loaded: Loaded
) -> tuple[Intent, ...]:
    """Feedback on a posted finding: recorded (once per delivery) when it is about one."""
    thread = loaded.thread
    if thread is None:
        return _ignored(route, parsed, "not about a finding the reviewer posted", repo)
    record = RecordFeedback(route.tenant_id, repo, parsed, intent, thread)
    return _claimed(
        route, parsed, repo.repository_id, (record,), FeedbackReason(intent.kind, thread.category)
    )


def _repos_changed(
    route: Route, parsed: ParsedDelivery, intent: ReposChanged, loaded: Loaded
) -> tuple[Intent, ...]:
    if loaded.host is None:  # deleted between the lookup and now
        return _ignored(route, parsed, "installation no longer registered", None)
    reason, writes = decide_repos(route, parsed.provider, loaded.added, intent.removed)
    return _claimed(route, parsed, None, writes, reason)


def decide_repos(
    route: Route, provider: str, added: Sequence[Added], removed: Sequence[RepoRef]
) -> tuple[ReposReason, tuple[Intent, ...]]:
    """Register the repositories an installation gained (an index request each; known ones brought
    up to date; refused by the source policy or a taken clone URL) and delete those it lost: what
    an ``installation`` delivery does, and what installation sync does. The reason names the known
    and refused ones."""
    known: list[str] = []
    refusals: list[str] = []
    writes: list[Intent] = []
    updated: set[UUID] = set()
    registering: set[str] = set()  # provider ids (a repository listed twice is registered once)
    urls: set[str] = set()  # their clone URLs
    for one in added:
        ref = one.ref
        if one.known is not None or ref.external_id in registering:
            known.append(ref.full_name)
            update = refreshed(one.known, ref, route.installation_id) if one.known else None
            if update is not None and update.repository_id not in updated:
                updated.add(update.repository_id)
                writes.append(update)
            continue
        if one.refused is not None:
            refusals.append(refused(ref.full_name, one.refused))
            continue
        assert one.source is not None, "an added repository is known, refused or checked"
        clone_url = one.source.clone_url
        if one.url_taken or clone_url in urls:
            refusals.append(refused(ref.full_name, TAKEN))
            continue
        registering.add(ref.external_id)
        urls.add(clone_url)
        new = NewRepository(
            repository_id=uuid7(),
            provider=ref.provider,
            external_id=ref.external_id,
            full_name=ref.full_name,
            clone_url=clone_url,
            default_branch=ref.default_branch or "main",
            visibility=ref.visibility,
            index_mode="lexical",
            installation_id=route.installation_id,
        )
        event = IndexRequested(tenant_id=route.tenant_id, repository_id=new.repository_id, reason="register")
        writes.append(RegisterRepository(route.tenant_id, new, event))
    if removed:
        writes.append(RemoveInstalled(route.installation_id, provider, tuple(r.external_id for r in removed)))
    return ReposReason(tuple(known), tuple(refusals)), tuple(writes)
