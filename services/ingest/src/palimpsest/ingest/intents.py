"""The writes a webhook delivery causes, as data: :mod:`.decide` returns them,
:func:`palimpsest.ingest.apply.apply` runs them in order, in the tenant's transaction (one
transaction for all of them: the delivery's record, the rows it changes and its events).

A delivery that asks for something is *claimed* (:class:`ClaimDelivery`) before any write that
must happen once; when it was accepted before, apply records a duplicate and runs nothing after
the claim. Two writes have an outcome the decision cannot know, and apply reports it in its
:class:`~palimpsest.ingest.apply.Applied`: a registration refused because its clone URL was taken
meanwhile, and the repositories a removal deleted; :class:`ReposReason` and
:class:`FeedbackReason` are the reasons that name them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.events import Event, IndexRequested
from palimpsest.ingest.store.audit import AuditNote
from palimpsest.ingest.store.deliveries import DeliveryRow
from palimpsest.ingest.store.repositories import NewRepository, Repository
from palimpsest.ingest.store.review_feedback import Thread
from palimpsest.ingest.webhooks import FeedbackIntent, ParsedDelivery
from palimpsest.ingest.webhooks._payload import clip


@dataclass(frozen=True, slots=True)
class RecordIgnored:
    """Record a delivery that asks for nothing (a duplicate when that delivery was accepted before)."""

    tenant_id: UUID
    row: DeliveryRow


@dataclass(frozen=True, slots=True)
class ClaimDelivery:
    """Record an accepted delivery, claiming its id; when it was accepted before, record a
    duplicate instead and run no later intent. Followed only by :class:`EmitEvent`\\ s, the claim
    and the events are one statement."""

    tenant_id: UUID
    row: DeliveryRow  # its ``event_ids``: the events that follow it


@dataclass(frozen=True, slots=True)
class EmitEvent:
    """Write an event to the outbox."""

    event: Event


@dataclass(frozen=True, slots=True)
class UpdateRepository:
    """Bring the stored facts the provider is authoritative on up to date (None: unchanged)."""

    repository_id: UUID
    external_id: str | None = None
    installation_id: UUID | None = None
    default_branch: str | None = None
    visibility: str | None = None

    def changes(self) -> dict[str, object]:
        """The fields it sets, by column."""
        return {
            f.name: value
            for f in dataclasses.fields(self)
            if f.name != "repository_id" and (value := getattr(self, f.name)) is not None
        }


@dataclass(frozen=True, slots=True)
class RegisterRepository:
    """Register a repository an installation gained and emit its index request; refused (not
    registered, nothing emitted) when its clone URL or provider id was taken meanwhile."""

    tenant_id: UUID
    new: NewRepository
    event: IndexRequested


@dataclass(frozen=True, slots=True)
class RemoveInstalled:
    """Delete the installation's repositories with these provider ids (those that are registered)."""

    installation_id: UUID
    provider: str
    external_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetSuspended:
    """Suspend the installation (or lift its suspension), as ``by`` says."""

    installation_id: UUID
    suspended: bool
    by: str


@dataclass(frozen=True, slots=True)
class Audit:
    """Write an audit entry."""

    note: AuditNote
    outcome: str
    status: int


@dataclass(frozen=True, slots=True)
class RecordFeedback:
    """Store feedback on a posted finding (once per delivery and kind) and its thread's state."""

    tenant_id: UUID
    repo: Repository
    parsed: ParsedDelivery
    intent: FeedbackIntent
    thread: Thread


@dataclass(frozen=True, slots=True)
class ReposReason:
    """Why an installation delivery did what it did: the repositories it registered, found
    registered, refused and removed (the registered and removed ones as apply reports them)."""

    known: tuple[str, ...]
    refused: tuple[str, ...]  # "name: why"

    def text(self, registered: int, refused: Sequence[str], removed: int) -> str:
        """``refused``: those apply refused, after the decision's own."""
        text = f"repositories: {registered} added, {len(self.known)} already registered, {removed} removed"
        every = [*self.refused, *refused]
        if every:
            text += "; refused " + "; ".join(every[:5])
        return text


@dataclass(frozen=True, slots=True)
class FeedbackReason:
    """Why a feedback delivery was accepted (and whether apply found it recorded already)."""

    kind: str
    category: str

    def text(self, recorded: bool) -> str:
        return f"feedback: {self.kind} on a {self.category} finding" + (
            "" if recorded else " (already recorded)"
        )


Reason = str | ReposReason | FeedbackReason


@dataclass(frozen=True, slots=True)
class FinishDelivery:
    """Complete the claimed delivery's record: its reason and the events emitted since the claim."""

    id: UUID
    reason: Reason


def refused(name: str, why: str) -> str:
    """A refused registration, as a reason lists it."""
    return f"{clip(name)}: {why}"


Intent = (
    RecordIgnored
    | ClaimDelivery
    | EmitEvent
    | UpdateRepository
    | RegisterRepository
    | RemoveInstalled
    | SetSuspended
    | Audit
    | RecordFeedback
    | FinishDelivery
)
