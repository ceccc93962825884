"""The graph over a real snapshot: built by the chunker, read back under the tenant's RLS."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from palimpsest.cli.local import register_path
from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from palimpsest.index.errors import IndexNotReady, UnknownSeed
from palimpsest.index.graph import (
    Graph,
    GraphCache,
    GraphReport,
    SnapshotFacts,
    build_graph,
    graph_context,
    graph_report,
    snapshot_graph,
)
from palimpsest.index.graph.model import EdgeKind
from palimpsest.index.graph.persisted import RESOLVER, read_graph, write_graph
from palimpsest.index.graph.query import history_signals
from palimpsest.index.graph.seeds import resolve_seeds
from tests.integration.graph.support import index_path, running_chunker
from tests.support.gitrepo import commit, init_repo
from tests.support.tenants import create_tenant

INVOICE = "def compute_invoice_total(lines):\n    return sum(line.amount for line in lines)\n"
PRINTER = (
    "from src.billing.invoice import compute_invoice_total\n\n\n"
    "class InvoicePrinter:\n    def render(self, invoice):\n"
    "        return f'total={compute_invoice_total(invoice.lines)}'\n"
)
API = "from src.billing.printer import InvoicePrinter\n\n\ndef handle(invoice):\n    return InvoicePrinter().render(invoice)\n"
PLUGINS = "from .missing import thing\n\n\ndef load(module, name):\n    return getattr(module, name)\n"
# longer than one 60-line window, with the alias after the first window: the loader must
# reassemble the file from overlapping chunks to find it
TSCONFIG = (
    "{\n"
    + "".join(f"  // note {n}\n" for n in range(75))
    + '  "compilerOptions": {\n    "baseUrl": ".",\n    "paths": {"@lib/*": ["lib/*"]},\n  },\n}\n'
)
FILES = {
    "src/billing/invoice.py": INVOICE,
    "src/billing/printer.py": PRINTER,
    "src/api.py": API,
    "src/plugins.py": PLUGINS,
    "web/tsconfig.json": TSCONFIG,
    "web/app.ts": "import { util } from '@lib/util';\nexport const app = util;\n",
    "web/lib/util.ts": "export const util = 1;\n",
    "docs/billing.md": "# Billing\n\nGoverns: src/billing\nGoverns: src/gone\n\nSee `compute_invoice_total`.\n",
    "config/settings.yaml": "billing:\n  currency: EUR\n",
}


@dataclass
class Indexed:
    tenant: uuid.UUID
    repository_id: uuid.UUID
    commit: str


@pytest.fixture(scope="module")
async def indexed(infra: Infra, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    repo = init_repo(tmp_path_factory.mktemp("graph") / "repo")
    head = commit(repo, "2024-05-01", FILES)
    tenant = await create_tenant(infra.pool, "graph")
    async with running_chunker(infra):
        repo_id, built = await index_path(infra, tenant, repo)
    assert built.state == "ready", built
    return Indexed(tenant, repo_id, head)


async def test_context_ranks_neighbours_with_their_reasons(infra: Infra, indexed: Indexed) -> None:
    cache = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        result = await graph_context(conn, indexed.repository_id, ["src/billing/invoice.py"], cache=cache)
        again = await graph_context(
            conn, indexed.repository_id, ["compute_invoice_total"], hops=2, cache=cache
        )
    assert cache.builds + cache.loads == 1  # the second query reused the resolved (or stored) graph
    assert result.commit == indexed.commit
    by_path = {e.path: e for e in result.entries}
    assert by_path["src/billing/printer.py"].via in {"imports", "references", "calls"}
    assert by_path["docs/billing.md"].via in {"governs", "mentions"}
    assert "src/api.py" not in by_path  # two hops away
    assert "src/api.py" in {e.path for e in again.entries}
    assert again.seeds == {"compute_invoice_total": ["sym:src/billing/invoice.py:compute_invoice_total"]}
    out = result.as_dict()
    assert out["tokens"] == sum(e["tokens"] for e in out["results"]) <= out["budget"] == 2000
    assert json.loads(json.dumps(out))["results"][0]["path"] == result.entries[0].path


async def test_report_and_config_files_come_from_the_snapshot(infra: Infra, indexed: Indexed) -> None:
    cache = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        snapshot, report = await graph_report(conn, indexed.repository_id, cache=cache)
        _, graph, _ = await snapshot_graph(conn, indexed.repository_id, cache=cache)
    assert snapshot.commit_sha == indexed.commit
    assert [(u.path, u.specifier) for u in report.unresolved_imports] == [("src/plugins.py", ".missing")]
    assert [(g.path, g.target) for g in report.governs_unmatched] == [("docs/billing.md", "src/gone")]
    assert [(d.path, d.what) for d in report.dynamic] == [("src/plugins.py", "getattr")]
    assert report.no_parser[".yaml"] == 1
    assert report.no_parser[".json"] == 1
    app = graph.path_node("web/app.ts")
    assert app is not None
    assert [
        graph.paths[graph.node_owner[e.target]] for e in graph.edges(app) if e.kind == EdgeKind.IMPORTS
    ] == ["web/lib/util.ts"]


async def test_unknown_seeds_and_missing_snapshots_are_errors(
    infra: Infra, indexed: Indexed, tmp_path: Path
) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        with pytest.raises(UnknownSeed, match=re.escape("'src/nope.py'")):
            await graph_context(
                conn, indexed.repository_id, ["src/api.py", "src/nope.py"], cache=GraphCache()
            )
    fresh = await register_path(infra.pool, indexed.tenant, init_repo(tmp_path / "empty"))
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        with pytest.raises(IndexNotReady):
            await graph_context(conn, fresh, ["src/api.py"], cache=GraphCache())


async def test_co_change_and_recency_come_from_the_recency_tables(infra: Infra, indexed: Indexed) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        await conn.execute(
            "INSERT INTO cochange (tenant_id, repository_id, path_a, path_b, count, last_at)"
            " VALUES (%s, %s, 'config/settings.yaml', 'src/billing/invoice.py', 4, %s)",
            (indexed.tenant, indexed.repository_id, datetime(2024, 4, 1, tzinfo=UTC)),
        )
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at)"
            " VALUES (%s, %s, 'config/settings.yaml', %s, %s)",
            (indexed.tenant, indexed.repository_id, indexed.commit, datetime(2024, 4, 1, tzinfo=UTC)),
        )
        with_history = await graph_context(
            conn, indexed.repository_id, ["src/billing/invoice.py"], cache=GraphCache()
        )
        without = await graph_context(
            conn, indexed.repository_id, ["src/billing/invoice.py"], history=False, cache=GraphCache()
        )
        await conn.execute("DELETE FROM cochange WHERE repository_id = %s", (indexed.repository_id,))
        await conn.execute("DELETE FROM file_recency WHERE repository_id = %s", (indexed.repository_id,))
    first = with_history.entries[0]
    assert (first.path, first.via) == ("config/settings.yaml", "cochange")
    assert first.reason == "changed together with the seeds in 4 commits, last 2024-04-01"
    assert with_history.signals == {"cochange_partners": 1, "dated_files": 1}
    assert "config/settings.yaml" not in {e.path for e in without.entries}


async def test_stored_evidence_ranks_co_change_partners_before_the_count_does(
    infra: Infra, indexed: Indexed
) -> None:
    """The scanner's evidence (migration 0016) reaches the ranking: a partner of many sweeping
    commits (count 6, evidence 1.2) ranks below one of two small commits (count 2, evidence 2.0);
    by the count alone it was the other way round. Two seeds sharing a partner add their evidence."""
    when = datetime(2024, 4, 1, tzinfo=UTC)
    rows = [
        ("config/settings.yaml", "src/billing/invoice.py", 6, 1.2),
        ("docs/billing.md", "src/billing/invoice.py", 2, 2.0),
        ("docs/billing.md", "src/api.py", 1, 1.0),
    ]
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        for a, b, count, evidence in rows:
            await conn.execute(
                "INSERT INTO cochange (tenant_id, repository_id, path_a, path_b, count, last_at, evidence)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (indexed.tenant, indexed.repository_id, a, b, count, when, evidence),
            )
        one = await graph_context(conn, indexed.repository_id, ["src/billing/invoice.py"], cache=GraphCache())
        _, graph, _ = await snapshot_graph(conn, indexed.repository_id, cache=GraphCache())
        seeds = resolve_seeds(graph, ["src/billing/invoice.py", "src/api.py"])
        signals = await history_signals(conn, indexed.repository_id, graph, seeds)
        await conn.execute("DELETE FROM cochange WHERE repository_id = %s", (indexed.repository_id,))
    order = [e.path for e in one.entries if e.via == "cochange"]
    assert order[:2] == ["docs/billing.md", "config/settings.yaml"]
    shared = signals.cochange["docs/billing.md"]
    assert (shared.commits, shared.evidence) == (3, pytest.approx(3.0))
    assert signals.cochange["config/settings.yaml"].evidence == pytest.approx(1.2)


async def test_a_cached_graph_is_not_visible_to_another_tenant(infra: Infra, indexed: Indexed) -> None:
    cache = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        await graph_context(conn, indexed.repository_id, ["src/api.py"], cache=cache)
    other = await create_tenant(infra.pool, "graph-other")
    async with tenant_tx(infra.pool, other) as conn:
        with pytest.raises(IndexNotReady):
            await graph_context(conn, indexed.repository_id, ["src/api.py"], cache=cache)
        with pytest.raises(IndexNotReady):
            await graph_report(conn, indexed.repository_id, cache=cache)


async def test_dates_are_read_once_per_recency_scan_and_again_after_the_next(
    infra: Infra, indexed: Indexed
) -> None:
    """The ranking's dates are cached per recency scan (a 50 000-file repository's take ~0.5 s to
    read): a date written without a new scan is not seen; the next scan's is."""
    first, second = datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 4, 20, tzinfo=UTC)

    async def recent_reason() -> str:
        result = await graph_context(
            conn, indexed.repository_id, ["src/billing/invoice.py"], cache=GraphCache()
        )
        return next(e.reason for e in result.entries if e.path == "config/settings.yaml")

    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        await conn.execute(
            "INSERT INTO recency_scans (tenant_id, repository_id, status, scanned_at) VALUES (%s, %s, 'ok', %s)",
            (indexed.tenant, indexed.repository_id, first),
        )
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at)"
            " VALUES (%s, %s, 'config/settings.yaml', %s, %s)",
            (indexed.tenant, indexed.repository_id, indexed.commit, first),
        )
        assert await recent_reason() == "recently changed (2024-04-01)"
        await conn.execute(
            "UPDATE file_recency SET last_modified_at = %s WHERE repository_id = %s",
            (second, indexed.repository_id),
        )
        assert await recent_reason() == "recently changed (2024-04-01)"  # same scan: cached
        await conn.execute(
            "UPDATE recency_scans SET scanned_at = %s WHERE repository_id = %s",
            (second, indexed.repository_id),
        )
        assert await recent_reason() == "recently changed (2024-04-20)"  # the next scan: read again
        await conn.execute("DELETE FROM file_recency WHERE repository_id = %s", (indexed.repository_id,))
        await conn.execute("DELETE FROM recency_scans WHERE repository_id = %s", (indexed.repository_id,))


async def _stored(infra: Infra, tenant: uuid.UUID, snapshot_id: object) -> list[str]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT resolver FROM code_graphs WHERE snapshot_id = %s", (snapshot_id,))
        return sorted(r["resolver"] for r in await cur.fetchall())


async def test_a_resolved_graph_is_stored_and_another_process_loads_it(
    infra: Infra, indexed: Indexed
) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        snapshot, _, _ = await snapshot_graph(conn, indexed.repository_id, cache=GraphCache())
        sid = snapshot.snapshot_id
        await conn.execute("DELETE FROM code_graphs WHERE snapshot_id = %s", (sid,))
    first = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        _, resolved, report = await snapshot_graph(conn, indexed.repository_id, cache=first)
    assert (first.builds, first.loads) == (1, 0)
    assert await _stored(infra, indexed.tenant, sid) == [RESOLVER]
    second = GraphCache()  # another replica, or the MCP server: loads, does not resolve
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        _, loaded, loaded_report = await snapshot_graph(conn, indexed.repository_id, cache=second)
        result = await graph_context(conn, indexed.repository_id, ["src/billing/invoice.py"], cache=second)
    assert (second.builds, second.loads) == (0, 1)
    assert (loaded, loaded_report) == (resolved, report)
    assert "src/billing/printer.py" in {e.path for e in result.entries}


async def test_a_graph_stored_by_another_resolver_or_unreadable_is_resolved_again(
    infra: Infra, indexed: Indexed
) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        snapshot, graph, _ = await snapshot_graph(conn, indexed.repository_id, cache=GraphCache())
        sid = snapshot.snapshot_id
        await conn.execute("DELETE FROM code_graphs WHERE snapshot_id = %s", (sid,))
        await conn.execute(
            "INSERT INTO code_graphs (tenant_id, snapshot_id, resolver, payload) VALUES (%s, %s, 'older', 'x')",
            (indexed.tenant, sid),
        )
    cache = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        _, again, _ = await snapshot_graph(conn, indexed.repository_id, cache=cache)
    assert (cache.builds, cache.loads, again) == (1, 0, graph)
    assert await _stored(infra, indexed.tenant, sid) == sorted(["older", RESOLVER])
    async with tenant_tx(infra.pool, indexed.tenant) as conn:  # damaged: resolved and replaced
        await conn.execute(
            "UPDATE code_graphs SET payload = 'PALGRAPH-damaged' WHERE snapshot_id = %s AND resolver = %s",
            (sid, RESOLVER),
        )
    cache = GraphCache()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        _, again, _ = await snapshot_graph(conn, indexed.repository_id, cache=cache)
        assert await read_graph(conn, sid) is not None
        await conn.execute("DELETE FROM code_graphs WHERE snapshot_id = %s AND resolver = 'older'", (sid,))
    assert (cache.builds, again) == (1, graph)


async def test_another_tenant_can_neither_read_nor_plant_a_stored_graph(
    infra: Infra, indexed: Indexed
) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        snapshot, graph, report = await snapshot_graph(conn, indexed.repository_id, cache=GraphCache())
    sid = snapshot.snapshot_id
    assert await _stored(infra, indexed.tenant, sid) == [RESOLVER]
    other = await create_tenant(infra.pool, "graph-thief")
    empty, nothing = graph_of_nothing()
    async with tenant_tx(infra.pool, other) as conn:
        assert await read_graph(conn, sid) is None  # the row is there, but not for this tenant
        # planting a graph for the victim's snapshot: as the victim (RLS), or as itself (no such snapshot)
        assert await write_graph(conn, indexed.tenant, sid, empty, nothing) is False
        assert await write_graph(conn, other, sid, empty, nothing) is False
        cur = await conn.execute("UPDATE code_graphs SET payload = 'x' WHERE snapshot_id = %s", (sid,))
        assert cur.rowcount == 0
        cur = await conn.execute("DELETE FROM code_graphs WHERE snapshot_id = %s", (sid,))
        assert cur.rowcount == 0
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        assert await read_graph(conn, sid) == (graph, report)


async def test_a_stored_graph_goes_with_its_snapshot(infra: Infra, indexed: Indexed) -> None:
    sid = uuid.uuid4()
    empty, nothing = graph_of_nothing()
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        await conn.execute(
            "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, state)"
            " VALUES (%s, %s, %s, 'gone', 'superseded')",
            (indexed.tenant, indexed.repository_id, sid),
        )
        assert await write_graph(conn, indexed.tenant, sid, empty, nothing) is True
    assert await _stored(infra, indexed.tenant, sid) == [RESOLVER]
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        await conn.execute("DELETE FROM code_index_snapshots WHERE snapshot_id = %s", (sid,))
    assert await _stored(infra, indexed.tenant, sid) == []


def graph_of_nothing() -> tuple[Graph, GraphReport]:
    return build_graph(SnapshotFacts([]))
