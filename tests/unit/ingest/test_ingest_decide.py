"""What a verified delivery means is data: `decide` turns a parsed delivery and the loaded rows into
intents (no database), here from the GitHub fixtures."""

from __future__ import annotations

import ast
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from palimpsest.core.events import IndexRequested, ReviewRequested
from palimpsest.ingest import decide as decide_module
from palimpsest.ingest.context import Route
from palimpsest.ingest.decide import decide, decide_repos
from palimpsest.ingest.intents import (
    Audit,
    ClaimDelivery,
    EmitEvent,
    FeedbackReason,
    FinishDelivery,
    Intent,
    RecordFeedback,
    RecordIgnored,
    RegisterRepository,
    RemoveInstalled,
    ReposReason,
    SetSuspended,
    UpdateRepository,
)
from palimpsest.ingest.load import Added, Loaded, subject
from palimpsest.ingest.sources import Source
from palimpsest.ingest.store.repositories import TAKEN, Repository
from palimpsest.ingest.store.review_feedback import Thread
from palimpsest.ingest.webhooks import (
    FeedbackIntent,
    IndexCandidates,
    IndexIntent,
    ParsedDelivery,
    RepoRef,
    github,
)

from .webhook_support import BOT, DELIVERY, edited, encode, headers_for, load

ROUTE = Route(uuid4(), uuid4(), "secret")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def parse(event: str, name: str, changes: dict[str, Any] | None = None) -> ParsedDelivery:
    payload = load("github", name)
    body = encode(edited(payload, changes) if changes else payload)
    return github.parse(headers_for("github", event, body), body, bot_name=BOT)


def stored(ref: RepoRef | None, **changes: Any) -> Repository:
    """The registered row of ``ref``, as the provider describes it (then ``changes``)."""
    assert ref is not None
    row = Repository(
        repository_id=uuid4(),
        provider=ref.provider,
        external_id=ref.external_id,
        full_name=ref.full_name,
        clone_url=ref.clone_url,
        default_branch=ref.default_branch or "main",
        visibility=ref.visibility,
        index_mode="lexical",
        installation_id=ROUTE.installation_id,
        created_at=NOW,
        updated_at=NOW,
    )
    return dataclasses.replace(row, **changes)


def only(intents: tuple[Intent, ...], kind: type[Any]) -> Any:
    found = [i for i in intents if isinstance(i, kind)]
    assert len(found) == 1, intents
    return found[0]


def test_a_push_to_the_default_branch_is_claimed_with_its_index_request() -> None:
    parsed = parse("push", "push_default_branch")
    repo = stored(subject(ROUTE, parsed))
    claim, emit = decide(ROUTE, parsed, Loaded(repo))
    assert isinstance(claim, ClaimDelivery) and isinstance(emit, EmitEvent)
    event = emit.event
    assert isinstance(event, IndexRequested)
    assert (event.tenant_id, event.repository_id, event.reason, event.branch) == (
        ROUTE.tenant_id,
        repo.repository_id,
        "push",
        "main",
    )
    assert claim.tenant_id == ROUTE.tenant_id
    row = claim.row
    assert (row.outcome, row.http_status, row.reason, row.repository_id, row.event_ids) == (
        "accepted",
        202,
        None,
        repo.repository_id,
        [event.id],
    )
    assert (row.delivery_id, row.event, row.installation_id) == (DELIVERY, "push", ROUTE.installation_id)


def test_a_push_elsewhere_is_recorded_as_ignored() -> None:
    parsed = parse("push", "push_other_branch")
    repo = stored(subject(ROUTE, parsed))
    (record,) = decide(ROUTE, parsed, Loaded(repo))
    assert isinstance(record, RecordIgnored)
    assert (record.row.outcome, record.row.http_status, record.row.repository_id) == (
        "ignored",
        202,
        repo.repository_id,
    )
    assert record.row.reason is not None and "not the default branch 'main'" in record.row.reason


def test_the_facts_the_provider_is_authoritative_on_are_stored_before_the_claim() -> None:
    parsed = parse("push", "push_default_branch")
    ref = subject(ROUTE, parsed)
    assert ref is not None and ref.default_branch == "main"
    repo = stored(ref, default_branch="develop", visibility="public", external_id=None, installation_id=None)
    update, claim, emit = decide(ROUTE, parsed, Loaded(repo))
    assert update == UpdateRepository(
        repo.repository_id,
        external_id=ref.external_id,
        installation_id=ROUTE.installation_id,
        default_branch="main",
        visibility=ref.visibility,
    )
    assert isinstance(claim, ClaimDelivery) and isinstance(emit, EmitEvent)
    current = decide(ROUTE, parsed, Loaded(stored(ref)))  # already up to date: no update
    assert [type(i) for i in current] == [ClaimDelivery, EmitEvent]


def _push(branch: str, ref: RepoRef) -> IndexIntent:
    return IndexIntent(ref, branch, "a" * 40, None, ("README.md",), True, None, None)


def test_of_several_pushed_branches_the_stored_default_one_is_indexed() -> None:
    ref = RepoRef("bitbucket", "{r}", "acme/r", "https://bitbucket.org/acme/r.git", None, "private")
    intent = IndexCandidates((_push("main", ref), _push("dev", ref)))
    parsed = ParsedDelivery("bitbucket", DELIVERY, "repo:push", None, "{w}", ref, intent)
    repo = stored(ref, default_branch="dev")
    claim, emit = decide(ROUTE, parsed, Loaded(repo))
    assert isinstance(claim, ClaimDelivery) and isinstance(emit, EmitEvent)
    assert isinstance(emit.event, IndexRequested) and emit.event.branch == "dev"
    assert emit.event.changed_paths == ["README.md"]
    (record,) = decide(ROUTE, parsed, Loaded(stored(ref, default_branch="release")))
    assert isinstance(record, RecordIgnored)
    assert record.row.reason == "push to 'main', 'dev', not the default branch 'release'"


def test_a_push_to_an_unregistered_or_unindexed_repository_emits_nothing() -> None:
    parsed = parse("push", "push_default_branch")
    (unknown,) = decide(ROUTE, parsed, Loaded())
    assert isinstance(unknown, RecordIgnored) and unknown.row.repository_id is None
    assert unknown.row.reason == "repository 'northwind-labs/ledger-service' is not registered"
    off = stored(subject(ROUTE, parsed), index_mode="off")
    (record,) = decide(ROUTE, parsed, Loaded(off))
    assert isinstance(record, RecordIgnored) and record.row.reason == "indexing is off for this repository"


def test_a_suspended_installation_records_every_delivery_as_ignored() -> None:
    parsed = parse("push", "push_default_branch")
    repo = stored(subject(ROUTE, parsed))
    suspended = dataclasses.replace(ROUTE, suspended="installation suspended")
    (record,) = decide(suspended, parsed, Loaded(repo))
    assert isinstance(record, RecordIgnored)
    assert (record.row.reason, record.row.repository_id) == ("installation suspended", repo.repository_id)


def test_a_pull_request_opened_or_pushed_is_claimed_with_its_review_request() -> None:
    for name, trigger in (
        ("pull_request_opened", "opened"),
        ("pull_request_synchronize", "synchronize"),
    ):
        parsed = parse("pull_request", name)
        repo = stored(subject(ROUTE, parsed))
        claim, emit = decide(ROUTE, parsed, Loaded(repo))
        assert isinstance(claim, ClaimDelivery) and isinstance(emit, EmitEvent)
        event = emit.event
        assert isinstance(event, ReviewRequested)
        assert (event.repository_id, event.trigger, event.delivery_id, event.provider) == (
            repo.repository_id,
            trigger,
            DELIVERY,
            "github",
        )
        assert claim.row.event_ids == [event.id]


def test_a_ping_is_claimed_and_answered_200() -> None:
    (claim,) = decide(ROUTE, parse("ping", "ping"), Loaded())
    assert isinstance(claim, ClaimDelivery)
    assert (claim.row.outcome, claim.row.http_status, claim.row.reason) == ("accepted", 200, "ping")


def test_a_suspension_is_claimed_then_written_and_audited() -> None:
    parsed = parse("installation", "installation_created", {"action": "suspend"})
    claim, suspend, audit, finish = decide(ROUTE, parsed, Loaded())
    assert isinstance(claim, ClaimDelivery)
    assert suspend == SetSuspended(ROUTE.installation_id, True, "provider")
    assert isinstance(audit, Audit) and audit.note.action == "installation_suspend"
    assert finish == FinishDelivery(claim.row.id, "installation suspended")


def test_repositories_added_to_an_installation_are_registered_with_an_index_request() -> None:
    parsed = parse("installation_repositories", "installation_repositories_added")
    (ref,) = parsed.intent.added  # type: ignore[union-attr]
    source = Source(ref.clone_url, "github", "github.com", ref.full_name)
    claim, register, finish = decide(
        ROUTE, parsed, Loaded(host="github.com", added=(Added(ref, None, source),))
    )
    assert isinstance(claim, ClaimDelivery) and claim.row.event_ids == []
    assert isinstance(register, RegisterRepository)
    new = register.new
    assert (new.full_name, new.external_id, new.clone_url, new.index_mode, new.installation_id) == (
        "northwind-labs/settlement-worker",
        "734019256",
        ref.clone_url,
        "lexical",
        ROUTE.installation_id,
    )
    assert (register.event.repository_id, register.event.reason) == (new.repository_id, "register")
    assert finish == FinishDelivery(claim.row.id, ReposReason((), ()))


def test_repositories_removed_from_an_installation_are_deleted() -> None:
    parsed = parse("installation_repositories", "installation_repositories_removed")
    claim, remove, finish = decide(ROUTE, parsed, Loaded(host="github.com"))
    assert isinstance(claim, ClaimDelivery)
    assert remove == RemoveInstalled(ROUTE.installation_id, "github", ("655901722",))
    assert finish == FinishDelivery(claim.row.id, ReposReason((), ()))
    assert ReposReason((), ()).text(0, [], 1) == "repositories: 0 added, 0 already registered, 1 removed"


def test_an_installation_gone_meanwhile_is_ignored() -> None:
    parsed = parse("installation_repositories", "installation_repositories_added")
    (record,) = decide(ROUTE, parsed, Loaded())
    assert isinstance(record, RecordIgnored) and record.row.reason == "installation no longer registered"


def _ref(name: str, external_id: str) -> RepoRef:
    return RepoRef("github", external_id, name, f"https://github.com/{name}.git", "main", "private")


def test_added_repositories_known_refused_taken_or_listed_twice() -> None:
    known_ref, refused_ref, taken_ref, new_ref = (_ref(f"acme/r{i}", str(i)) for i in range(4))
    known = stored(known_ref, visibility="public")

    def checked(ref: RepoRef) -> Source:
        return Source(ref.clone_url, "github", "github.com", ref.full_name)

    added = (
        Added(known_ref, known),
        Added(refused_ref, None, refused="host not allowed"),
        Added(taken_ref, None, checked(taken_ref), url_taken=True),
        Added(new_ref, None, checked(new_ref)),
        Added(new_ref, None, checked(new_ref)),  # listed twice: registered once
    )
    reason, writes = decide_repos(ROUTE, "github", added, ())
    update, register = writes
    assert update == UpdateRepository(known.repository_id, visibility="private")
    assert isinstance(register, RegisterRepository) and register.new.full_name == "acme/r3"
    assert reason == ReposReason(("acme/r0", "acme/r3"), ("acme/r1: host not allowed", f"acme/r2: {TAKEN}"))
    assert reason.text(1, ["acme/r9: gone"], 0) == (
        "repositories: 1 added, 2 already registered, 0 removed;"
        f" refused acme/r1: host not allowed; acme/r2: {TAKEN}; acme/r9: gone"
    )


def test_feedback_on_a_posted_finding_is_claimed_then_recorded() -> None:
    ref = _ref("acme/r0", "0")
    parsed = ParsedDelivery(
        "github",
        DELIVERY,
        "pull_request_review_thread",
        "resolved",
        "1",
        ref,
        FeedbackIntent(ref, 7, "resolved", ("t1",), None, "octocat"),
    )
    repo = stored(ref)
    thread = Thread("fp", "security", "high", "open")
    claim, record, finish = decide(ROUTE, parsed, Loaded(repo, thread))
    assert isinstance(claim, ClaimDelivery) and claim.row.repository_id == repo.repository_id
    assert record == RecordFeedback(ROUTE.tenant_id, repo, parsed, parsed.intent, thread)  # type: ignore[arg-type]
    assert finish == FinishDelivery(claim.row.id, FeedbackReason("resolved", "security"))
    assert (
        FeedbackReason("resolved", "security").text(False)
        == "feedback: resolved on a security finding (already recorded)"
    )
    (ignored,) = decide(ROUTE, parsed, Loaded(repo, None))
    assert isinstance(ignored, RecordIgnored)
    assert ignored.row.reason == "not about a finding the reviewer posted"


def test_decide_is_the_same_for_the_same_input() -> None:
    parsed = parse("push", "push_default_branch")
    repo = stored(subject(ROUTE, parsed))
    first, second = decide(ROUTE, parsed, Loaded(repo)), decide(ROUTE, parsed, Loaded(repo))

    def without_ids(intents: tuple[Intent, ...]) -> list[Any]:
        out: list[Any] = []
        for i in intents:
            if isinstance(i, ClaimDelivery):
                out.append(dataclasses.replace(i.row, id=UUID(int=0), event_ids=[]))
            elif isinstance(i, EmitEvent):
                out.append(i.event.model_dump(exclude={"id", "occurred_at", "request_id"}))
        return out

    assert without_ids(first) == without_ids(second)


def test_decide_awaits_nothing_and_holds_no_connection() -> None:
    """The decision is pure: no coroutine in it, no database or outbox import."""
    tree = ast.parse(Path(decide_module.__file__).read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef | ast.Await)]
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"palimpsest.core.db", "palimpsest.core.outbox", "psycopg"}
    from_stores = {
        a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("palimpsest.ingest.store")
        for a in n.names
    }
    assert from_stores <= {"AuditNote", "DeliveryRow", "NewRepository", "Repository", "TAKEN"}  # types only
