"""Suspension: a suspended tenant, or a repository whose installation is suspended, is neither
indexed nor reviewed, and its repositories' indexes are not used as linked context.

The ingest service refuses work at the door (webhook deliveries recorded as ignored with the
reason, learnt with the webhook route, so within ``PALIMPSEST_LOOKUP_CACHE_S`` on other replicas;
API requests answered 409); the chunker and the reviewer check again when an event
reaches them (an event emitted before the suspension, or by a local CLI flow), and skip it with
the same reason. A tenant being deleted counts as suspended.
"""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.repositories import suspension_of

TENANT_SUSPENDED = "tenant suspended"
TENANT_DELETING = "tenant being deleted"
INSTALLATION_SUSPENDED = "installation suspended"


async def suspended_reason(conn: Conn, repository_id: UUID) -> str | None:
    """Why the repository (of the transaction's tenant) may not be indexed or reviewed, or None."""
    found = await suspension_of(conn, repository_id)
    if found is None:
        return None
    return reason_of(found.tenant, found.deleting, found.installation)


def reason_of(tenant: bool, deleting: bool, installation: bool) -> str | None:
    if deleting:
        return TENANT_DELETING
    if tenant:
        return TENANT_SUSPENDED
    if installation:
        return INSTALLATION_SUSPENDED
    return None
