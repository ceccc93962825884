"""What deciding a verified webhook delivery needs from the database, read first, as typed rows.

:func:`load` runs in the tenant's transaction, before anything is decided or written: the
registered repository the delivery is about (:func:`subject` names it), the posted finding a
feedback delivery is about, and for an installation's added repositories whether each is
registered, and if not whether its source is allowed (the source policy, which may resolve the
host) and its clone URL still free. :mod:`palimpsest.ingest.decide` decides from this alone;
installation sync (:mod:`palimpsest.ingest.sync`) loads its listed repositories with
:func:`load_added`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from palimpsest.core.db import Conn
from palimpsest.ingest.context import Route
from palimpsest.ingest.errors import SourceRefused
from palimpsest.ingest.sources import Source, SourcePolicy, check_source
from palimpsest.ingest.store import installations, repositories, review_feedback
from palimpsest.ingest.store.repositories import Repository
from palimpsest.ingest.store.review_feedback import Thread
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


@dataclass(frozen=True, slots=True)
class Added:
    """One repository an installation gained, as loaded: registered (``known``), or else its
    checked source (``source``) or why the source policy refuses it (``refused``)."""

    ref: RepoRef
    known: Repository | None
    source: Source | None = None
    refused: str | None = None
    url_taken: bool = False  # another repository of the tenant has the checked clone URL


@dataclass(frozen=True, slots=True)
class Loaded:
    repo: Repository | None = None  # the registered repository the delivery is about (None: none)
    thread: Thread | None = None  # feedback: the posted finding it is about (None: not one)
    host: str | None = None  # installation events: the installation's host (None: it is gone)
    added: tuple[Added, ...] = ()  # installation events: the repositories it gained


def subject(route: Route, parsed: ParsedDelivery) -> RepoRef | None:
    """The repository whose stored row decides the delivery (None: no row is needed)."""
    intent = parsed.intent
    if isinstance(intent, Ping | Suspension):
        return None
    if route.suspended is not None or isinstance(intent, Ignored):
        return parsed.repo
    if isinstance(intent, ReposChanged):
        return None
    if isinstance(intent, IndexCandidates):
        return intent.intents[0].repo
    assert isinstance(intent, IndexIntent | ReviewIntent | FeedbackIntent)
    return intent.repo


async def load(conn: Conn, route: Route, parsed: ParsedDelivery, policy: SourcePolicy) -> Loaded:
    intent = parsed.intent
    if isinstance(intent, ReposChanged) and route.suspended is None:
        host = await installations.installation_host(conn, route.installation_id)
        if host is None:  # deleted between the route lookup and now
            return Loaded()
        return Loaded(host=host, added=await load_added(conn, host, intent.added, policy))
    ref = subject(route, parsed)
    if ref is None:
        return Loaded()
    repo = await repositories.find_repository(conn, ref.provider, ref.external_id, ref.full_name)
    if repo is None or route.suspended is not None or not isinstance(intent, FeedbackIntent):
        return Loaded(repo)
    thread = await review_feedback.find_thread(conn, repo.repository_id, parsed.provider, intent)
    return Loaded(repo, thread)


async def load_added(
    conn: Conn, host: str, refs: Sequence[RepoRef], policy: SourcePolicy
) -> tuple[Added, ...]:
    """Each added repository's stored row, or its source checked against ``policy`` (sources of
    an installation must be on its ``host``) and whether its clone URL is taken."""
    out: list[Added] = []
    for ref in refs:
        known = await repositories.find_repository(conn, ref.provider, ref.external_id, ref.full_name)
        if known is not None:
            out.append(Added(ref, known))
            continue
        try:
            source = await check_source(ref.clone_url, policy, installation_host=host)
        except SourceRefused as exc:
            out.append(Added(ref, None, refused=exc.message))
            continue
        taken = await repositories.find_by_clone_url(conn, source.clone_url) is not None
        out.append(Added(ref, None, source, url_taken=taken))
    return tuple(out)
