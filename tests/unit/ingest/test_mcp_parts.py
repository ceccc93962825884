"""The MCP server's pure parts: fitting answers to a token budget, and who may use /mcp."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import pytest

from palimpsest.ingest.admin.access import ApiScope, Principal
from palimpsest.ingest.errors import Forbidden
from palimpsest.ingest.mcp.http import REQUIRED_SCOPE, authorize
from palimpsest.ingest.mcp.models import RecencyFile
from palimpsest.ingest.mcp.tools import fit


def _file(i: int) -> RecencyFile:
    return RecencyFile(
        path=f"src/module_{i:04d}.py",
        kind="code",
        last_modified_at="2024-05-01T00:00:00+00:00",
        last_commit="a" * 40,
        stale=False,
        why="last changed 2024-05-01",
    )


def test_fit_keeps_the_leading_items_within_the_budget_and_counts_the_rest() -> None:
    items = [_file(i) for i in range(50)]
    kept, left = fit(items, 400)
    assert kept == items[: len(kept)] and 0 < len(kept) < 50 and left == 50 - len(kept)
    size = sum(len(f.model_dump_json()) for f in kept) / 4
    assert size <= 400 < size + len(items[len(kept)].model_dump_json()) / 4 + 1
    assert fit(items, 200_000) == (items, 0)
    assert fit(items, 1) == ([], 50)  # not even one item fits: none, all counted


def test_only_a_tenant_token_with_the_read_scope_may_use_mcp() -> None:
    tenant = uuid4()
    assert REQUIRED_SCOPE == "read"
    reader = Principal(admin=False, tenant_id=tenant, token_id=uuid4(), scopes=frozenset({ApiScope.READ}))
    assert authorize(reader) == tenant
    with pytest.raises(Forbidden, match="tenant API token"):
        authorize(Principal(admin=True))
    reviewer_only = Principal(
        admin=False, tenant_id=tenant, token_id=uuid4(), scopes=frozenset({ApiScope.REVIEW})
    )
    with pytest.raises(Forbidden, match="'read' scope"):
        authorize(reviewer_only)


def test_fit_makes_only_what_it_keeps_from_a_generator() -> None:
    made: list[int] = []

    def files() -> Iterator[RecencyFile]:
        for i in range(10_000):
            made.append(i)
            yield _file(i)

    kept, left = fit(files(), 400, total=10_000)
    assert len(made) == len(kept) + 1 and left == 10_000 - len(kept)
