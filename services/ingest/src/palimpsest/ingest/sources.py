"""Repository URL validation for registration: the core policy, with ingest's HTTP-aware error.

The rule itself lives in :mod:`palimpsest.core.sources` (one implementation, also applied by
every service that clones, just before git runs). Here its refusals become
:class:`~palimpsest.ingest.errors.SourceRefused`, which the API answers with 400.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from palimpsest.core import sources as core
from palimpsest.core.sources import SAAS_HOSTS, Resolver, Source, SourcePolicy, address_problem
from palimpsest.ingest.errors import SourceRefused

__all__ = [
    "SAAS_HOSTS",
    "Resolver",
    "Source",
    "SourcePolicy",
    "address_problem",
    "check_source",
    "normalize_host",
    "system_resolver",
]


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except SourceRefused:
        raise
    except core.SourceRefused as exc:
        raise SourceRefused(str(exc)) from exc


def normalize_host(host: str) -> str:
    """Lower-case, without a trailing dot; SourceRefused unless it is a plain DNS name or IP."""
    with _translated():
        return core.normalize_host(host)


async def system_resolver(host: str) -> list[str]:
    """The addresses `host` resolves to (the operating system's resolver, bounded in time)."""
    with _translated():
        return await core.system_resolver(host)


async def check_source(url: str, policy: SourcePolicy, *, installation_host: str | None = None) -> Source:
    """Validate a repository URL (or local path) against `policy`; SourceRefused says why not."""
    with _translated():
        return await core.check_source(url, policy, installation_host=installation_host)
