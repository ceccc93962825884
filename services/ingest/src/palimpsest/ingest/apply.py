"""Running a delivery's intents (:mod:`.intents`), in order, in the caller's tenant transaction,
through the ingest stores and the outbox.

A claim followed only by events is one statement (``deliveries.claim_and_emit``: the common
path); otherwise the claim is its own statement, and the events (given, or of the repositories
registered) are written to the outbox together after the last intent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from palimpsest.core.db import Conn
from palimpsest.core.events import Event
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.ingest.errors import Conflict
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
from palimpsest.ingest.store import audit, deliveries, installations, repositories, review_feedback
from palimpsest.ingest.store.deliveries import DeliveryRow


@dataclass(slots=True)
class Applied:
    """What the intents did."""

    delivery: DeliveryRow | None = None  # as recorded (a duplicate when accepted before)
    events: list[Event] = field(default_factory=list)  # written to the outbox
    registered: list[str] = field(default_factory=list)  # full names registered
    refused: list[str] = field(default_factory=list)  # registrations refused when applied ("name: why")
    removed: list[str] = field(default_factory=list)  # full names deleted
    feedback_recorded: bool = False


async def apply(conn: Conn, intents: Sequence[Intent]) -> Applied:
    done = Applied()
    for at, intent in enumerate(intents):
        if isinstance(intent, ClaimDelivery):
            if not await _claim(conn, intent, intents[at + 1 :], done) or done.events:
                return done  # a duplicate (nothing more to run), or claimed with its events
        elif isinstance(intent, RecordIgnored | FinishDelivery):
            await _record(conn, intent, done)
        else:
            await _write(conn, intent, done)
    await emit(conn, *done.events)
    return done


async def _claim(conn: Conn, claim: ClaimDelivery, rest: Sequence[Intent], done: Applied) -> bool:
    """Claim the delivery (with the events when only events follow: one statement); False: it
    was accepted before, and a duplicate is recorded instead."""
    tenant_id, row = claim.tenant_id, claim.row
    if rest and all(isinstance(i, EmitEvent) for i in rest):  # the hot path
        events = [i.event for i in rest if isinstance(i, EmitEvent)]
        claimed = await deliveries.claim_and_emit(conn, tenant_id, row, events)
        done.events = events if claimed else []
    else:
        claimed = await deliveries.claim(conn, tenant_id, row)
    if not claimed:
        row = _duplicate_of(row)
        await deliveries.insert(conn, tenant_id, row)
    done.delivery = row
    return claimed


async def _record(conn: Conn, intent: RecordIgnored | FinishDelivery, done: Applied) -> None:
    match intent:
        case RecordIgnored(tenant_id, row):
            if await deliveries.was_accepted(conn, row.provider, row.installation_id, row.delivery_id):
                row = _duplicate_of(row)
            await deliveries.insert(conn, tenant_id, row)
            done.delivery = row
        case FinishDelivery(id_, reason):
            claimed = done.delivery
            if claimed is None or claimed.id != id_:
                raise ValueError("a delivery is finished before it is claimed")
            done.delivery = dataclasses.replace(
                claimed, reason=_text(reason, done), event_ids=[e.id for e in done.events]
            )
            await deliveries.finish(conn, id_, done.delivery.event_ids, done.delivery.reason)


async def _write(conn: Conn, intent: Intent, done: Applied) -> None:
    match intent:
        case EmitEvent(event):
            done.events.append(event)
        case UpdateRepository(repository_id):
            await repositories.update_repository(conn, repository_id, intent.changes())
        case RegisterRepository(tenant_id, new, event):
            try:
                async with conn.transaction():  # a savepoint: the URL may have been taken meanwhile
                    await repositories.insert_repository(conn, tenant_id, new)
            except Conflict as exc:
                done.refused.append(refused(new.full_name, exc.message))
                return
            done.registered.append(new.full_name)
            done.events.append(event)
        case RemoveInstalled(installation_id, provider, external_ids):
            gone = await repositories.delete_installed(conn, installation_id, provider, list(external_ids))
            done.removed.extend(name for _, name in gone)
        case SetSuspended(installation_id, suspended, by):
            await installations.set_suspended(conn, installation_id, suspended, by)
        case Audit(note, outcome, status):
            await audit.insert(conn, note, outcome, status)
        case RecordFeedback(tenant_id, repo, parsed, feedback, thread):
            done.feedback_recorded = await review_feedback.record(
                conn, tenant_id, repo, parsed, feedback, thread
            )
        case _:
            raise TypeError(f"not a write: {intent!r}")


def _text(reason: Reason, done: Applied) -> str:
    if isinstance(reason, ReposReason):
        return reason.text(len(done.registered), done.refused, len(done.removed))
    if isinstance(reason, FeedbackReason):
        return reason.text(done.feedback_recorded)
    return reason


def _duplicate_of(row: DeliveryRow) -> DeliveryRow:
    return dataclasses.replace(
        row,
        id=uuid7(),
        outcome="duplicate",
        http_status=200,
        reason="redelivery of an accepted delivery; nothing emitted",
        event_ids=[],
    )
