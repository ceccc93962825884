"""The chunker through the bus: snapshots, blob reuse, GC, skips, limits, search, delete."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from palimpsest.chunker.parsing import analyze_file, detect_language
from palimpsest.chunker.service import Chunker, Settings
from palimpsest.cli.local import register_path
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import IndexRequested, SnapshotBuilt
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.devtools.bench.index import delete_repository_index
from palimpsest.index.graph.load import load_snapshot_facts
from palimpsest.index.records import encode_facts, encode_symbols
from palimpsest.index.search import lexical_search
from palimpsest.index.snapshots import list_snapshots
from tests.support.gitrepo import commit, git, init_repo
from tests.support.pipeline import request_and_wait, services
from tests.support.tenants import create_tenant

PY = '''"""Billing helpers."""


def compute_invoice_total(lines):
    """Sum the lines."""
    return sum(line.amount for line in lines)


class InvoicePrinter:
    def render(self, invoice):
        return f"total={compute_invoice_total(invoice.lines)}"
'''
TS = """export interface Ledger {
  entries: number[];
}

export function balanceOf(ledger: Ledger): number {
  return ledger.entries.reduce((a, b) => a + b, 0);
}
"""
MD = "# Billing\n\nGoverns: src/billing\n\nUse `compute_invoice_total` to add up an invoice.\n"


def chunker_definition(name: str, **limits: Any) -> tuple[ServiceDefinition, Chunker]:
    settings = Settings.model_construct(
        **{**Settings().model_dump(), "allow_local_sources": True, "parse_workers": 1, **limits}
    )
    chunker = Chunker(settings)
    spec = ConsumerSpec(name, CONSUMERS["chunker"].event_types, batch=2, deliver_new=True)
    return ServiceDefinition(
        name, {"index.requested": chunker.handle}, spec, on_stop=[chunker.close]
    ), chunker


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    commit(
        r,
        "2024-01-01",
        {
            "src/billing/invoice.py": PY,
            "src/ledger.ts": TS,
            "docs/billing.md": MD,
            "assets/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
            "empty.py": "",
            "data/nul.txt": b"text\x00with nul",
            "big/huge.py": "x = 1\n" * 60_000,
            "dist/bundle.min.js": "var a=1;" * 5000,
            "latin1.txt": "caf\xe9 ".encode("latin-1") * 400,
            "odd name with spaces ü.py": "def odd():\n    return 'ü'\n",
            "broken.py": "def broken(:\n    return (\n",
        },
    )
    (r / "link.py").symlink_to("src/billing/invoice.py")
    commit(r, "2024-01-02", {})
    # a submodule (gitlink) entry, without a checkout
    git(r, "update-index", "--add", "--cacheinfo", "160000", "a" * 40, "vendor/lib")
    git(r, "commit", "-q", "-m", "submodule", date="2024-01-03")
    return r


@pytest.fixture
async def tenant_repo(infra: Infra, repo: Path) -> tuple[uuid.UUID, uuid.UUID]:
    tenant = await create_tenant(infra.pool, "chunker")
    return tenant, await register_path(infra.pool, tenant, repo)


@pytest.fixture
async def chunker(infra: Infra) -> AsyncIterator[None]:
    definition, _ = chunker_definition(f"t-chunker-{uuid.uuid4().hex[:6]}")
    async with services(infra, [definition]):
        yield


async def build(infra: Infra, tenant: uuid.UUID, repo_id: uuid.UUID, reason: str = "cli") -> SnapshotBuilt:
    event = IndexRequested(tenant_id=tenant, repository_id=repo_id, reason=reason)  # type: ignore[arg-type]
    found = await request_and_wait(infra, event, (SnapshotBuilt,))
    return found[SnapshotBuilt]


async def test_snapshot_lifecycle_reuse_and_gc(
    infra: Infra, repo: Path, tenant_repo: tuple[uuid.UUID, uuid.UUID], chunker: None
) -> None:
    tenant, repo_id = tenant_repo
    first = await build(infra, tenant, repo_id)
    assert first.state == "ready", first
    assert first.skipped == {
        "symlink": 1,
        "submodule": 1,
        "too_large": 1,
        "binary": 2,
        "empty": 1,
        "minified": 1,
        "invalid_utf8": 1,
    }
    assert first.files == 11  # every regular file is listed, skipped ones with their reason
    assert first.parsed_blobs == 11
    again = await build(infra, tenant, repo_id)
    assert again.state == "skipped"
    assert again.reason == "up_to_date"
    # one changed file → one parsed blob
    commit(repo, "2024-02-01", {"src/ledger.ts": TS + "\nexport const zero = 0;\n"})
    second = await build(infra, tenant, repo_id)
    assert second.state == "ready"
    assert second.parsed_blobs == 1
    commit(repo, "2024-03-01", {"src/billing/invoice.py": PY + "\n\ndef refund():\n    return 0\n"})
    third = await build(infra, tenant, repo_id)
    async with tenant_tx(infra.pool, tenant) as conn:
        snaps = await list_snapshots(conn, repo_id)
        states = [(s.snapshot_id, s.state) for s in snaps]
        assert states == [
            (third.snapshot_id, "ready"),
            (second.snapshot_id, "superseded"),
        ]
        # the first ledger.ts blob was only referenced by the deleted first snapshot: collected
        old_blob = git(repo, "rev-parse", "HEAD~3:src/ledger.ts").strip()
        cur = await conn.execute("SELECT count(*) AS n FROM code_blobs WHERE blob_sha = %s", (old_blob,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]
        cur = await conn.execute("SELECT count(*) AS n FROM code_chunks WHERE blob_sha = %s", (old_blob,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]
        # a file tree-sitter cannot parse is still indexed, with its errors counted
        cur = await conn.execute(
            "SELECT b.parse_errors, b.chunk_count FROM code_index_files f JOIN code_blobs b USING (blob_sha)"
            " WHERE f.snapshot_id = %s AND f.path = 'broken.py'",
            (third.snapshot_id,),
        )
        broken = await cur.fetchone()
        assert broken is not None
        assert broken["parse_errors"] > 0
        assert broken["chunk_count"] > 0


async def _files(infra: Infra, tenant: uuid.UUID, snapshot_id: uuid.UUID | None) -> list[tuple[Any, ...]]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT path, blob_sha, language, kind, size, skip_reason FROM code_index_files"
            " WHERE snapshot_id = %s ORDER BY path",
            (snapshot_id,),
        )
        return [tuple(r.values()) for r in await cur.fetchall()]


async def test_incremental_build_equals_a_full_listing(
    infra: Infra, repo: Path, tenant_repo: tuple[uuid.UUID, uuid.UUID], chunker: None
) -> None:
    """A build on top of a ready snapshot copies its unchanged file rows and lists only what
    ``git diff-tree`` reports; rows and totals must be exactly those of listing the whole tree."""
    tenant, repo_id = tenant_repo
    assert (await build(infra, tenant, repo_id)).state == "ready"
    (repo / "link.py").unlink()  # a symlink removed
    (repo / "empty.py").unlink()
    (repo / "empty.py").symlink_to("src/ledger.ts")  # a (skipped) regular file becomes a symlink
    commit(
        repo,
        "2024-02-01",
        {
            "src/ledger.ts": TS + "\nexport const zero = 0;\n",  # changed
            "src/fresh.py": "def fresh():\n    return 1\n",  # added
            "assets/more.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),  # added, skipped as binary
            "latin1.txt": None,  # deleted (was skipped as invalid UTF-8)
            "docs/billing.md": None,  # deleted
            "docs/copy.md": MD,  # an existing blob at a new path: reused, not parsed
        },
    )
    incremental = await build(infra, tenant, repo_id)
    assert incremental.state == "ready", incremental
    assert "diff_tree_s" in incremental.timings and "ls_tree_s" not in incremental.timings
    assert incremental.parsed_blobs == 3  # ledger.ts, fresh.py, more.png
    full = await build(infra, tenant, repo_id, reason="rebuild")  # the same commit: a full listing
    assert full.state == "ready", full
    assert "ls_tree_s" in full.timings and full.parsed_blobs == 0
    for key in ("files", "chunks", "symbols", "bytes", "skipped"):
        assert getattr(incremental, key) == getattr(full, key), key
    assert incremental.skipped["symlink"] == 1 and "invalid_utf8" not in incremental.skipped
    rows = await _files(infra, tenant, incremental.snapshot_id)
    assert rows == await _files(infra, tenant, full.snapshot_id)
    paths = [r[0] for r in rows]
    assert "src/fresh.py" in paths and "docs/copy.md" in paths
    assert not {"latin1.txt", "docs/billing.md", "empty.py", "link.py"} & set(paths)
    async with tenant_tx(infra.pool, tenant) as conn:
        snaps = await list_snapshots(conn, repo_id)
    assert [s.files for s in snaps[:2]] == [len(rows), len(rows)]


async def test_the_planner_knows_the_files_of_the_snapshot_a_build_wrote(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """An incremental build writes a whole snapshot of file rows (its base's copied). Lexical
    search looks every hit's path up by that snapshot's id; while the statistics did not know the
    id the planner estimated its files at one row and read all of them per hit (migration 0055).
    After the build the estimate is the snapshot's size, with statistics taken before it."""
    r = init_repo(tmp_path / "stats")
    files = {f"src/m{i}.py": f"def part_{i}():\n    return {i}\n" for i in range(300)}
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "stats")
    repo_id = await register_path(infra.pool, tenant, r)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("SELECT palimpsest_analyze_code_index()")  # statistics that predate the next build
    commit(r, "2024-02-01", {"src/m0.py": "def part_0():\n    return -1\n"})
    second = await build(infra, tenant, repo_id)
    assert second.state == "ready" and second.parsed_blobs == 1
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM code_index_files WHERE snapshot_id = %s",
            (second.snapshot_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    plan = next(iter(row.values()))[0]["Plan"]
    assert plan["Plan Rows"] >= 150, plan  # 300 files; 1 when the id was unknown to the statistics


async def test_file_rows_carry_what_the_parse_found(infra: Infra, tmp_path: Path, chunker: None) -> None:
    """File rows are written as listed while the first batches parse; a row whose blob the parse
    saw otherwise (binary, or the language of the blob's first path) is corrected before ready."""
    r = init_repo(tmp_path / "rows")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    commit(r, "2024-01-01", {"a.py": PY, "docs/copy.txt": PY, "logo.bin": png, "notes.md": MD})
    tenant = await create_tenant(infra.pool, "rows")
    built = await build(infra, tenant, await register_path(infra.pool, tenant, r))
    assert built.state == "ready", built
    assert built.skipped == {"binary": 1}
    size = len(PY.encode())
    assert [row[:1] + row[2:] for row in await _files(infra, tenant, built.snapshot_id)] == [
        ("a.py", "python", "code", size, None),
        ("docs/copy.txt", "python", "doc", size, None),  # one blob, analysed at its first path
        ("logo.bin", None, "code", len(png), "binary"),  # listed without a reason; corrected
        ("notes.md", "markdown", "doc", len(MD.encode()), None),
    ]


async def test_renamed_to_another_language_is_rechunked(infra: Infra, tmp_path: Path, chunker: None) -> None:
    r = init_repo(tmp_path / "lang")
    commit(r, "2024-01-01", {"util.txt": "def helper():\n    return 42\n"})
    tenant = await create_tenant(infra.pool, "lang")
    repo_id = await register_path(infra.pool, tenant, r)
    first = await build(infra, tenant, repo_id)
    assert first.symbols == 0
    git(r, "mv", "util.txt", "util.py")
    git(r, "commit", "-q", "-m", "now python", date="2024-01-02")
    second = await build(infra, tenant, repo_id)
    assert second.parsed_blobs == 1  # same blob sha, new language: chunked again
    assert second.symbols == 1


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"max_files": 3}, "file_cap"),
        ({"tenant_storage_bytes": 100}, "storage_cap"),
        ({"build_time_budget_s": 1e-6}, "time_budget"),
    ],
)
async def test_limits_fail_with_their_reason(
    infra: Infra, repo: Path, limits: dict[str, Any], reason: str
) -> None:
    tenant = await create_tenant(infra.pool, f"limit-{reason}")
    repo_id = await register_path(infra.pool, tenant, repo)
    definition, _ = chunker_definition(f"t-limit-{uuid.uuid4().hex[:6]}", **limits)
    async with services(infra, [definition]):
        built = await build(infra, tenant, repo_id)
    assert built.state == "failed"
    assert built.reason == reason
    async with tenant_tx(infra.pool, tenant) as conn:
        snaps = await list_snapshots(conn, repo_id)
    assert [(s.state, s.reason) for s in snaps] == [("failed", reason)]


async def test_exact_identifier_outranks_substring_mention(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    r = init_repo(tmp_path / "rank")
    commit(
        r,
        "2024-01-01",
        {
            "a_mentions.py": "def unrelated():\n    # get the user, then the name\n    return get_user().name\n",
            "b_defines.py": "def getUserName(user):\n    return user.name\n",
            "c_calls.py": "def show(u):\n    return getUserName(u)\n",
        },
    )
    tenant = await create_tenant(infra.pool, "rank")
    repo_id = await register_path(infra.pool, tenant, r)
    await build(infra, tenant, repo_id)
    async with tenant_tx(infra.pool, tenant) as conn:
        hits = await lexical_search(conn, repo_id, "getUserName", limit=5)
        assert [h.path for h in hits[:2]] == ["b_defines.py", "c_calls.py"]
        assert hits[0].name == "getUserName"
        assert all(h.path != "a_mentions.py" for h in hits[:2])
        phrase = await lexical_search(conn, repo_id, "user name", limit=5)
        assert {h.path for h in phrase} >= {"a_mentions.py", "b_defines.py"}
        only_b = await lexical_search(conn, repo_id, "user", path_prefix="b_", limit=5)
        assert [h.path for h in only_b] == ["b_defines.py"]


async def test_a_filter_finds_its_few_chunks_beneath_many_better_ranked_ones(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """The filters select the candidates, not a ranked pool of them: 250 Python files say
    "widget" often (they rank first); the three Go files and the one under go/ still come back."""
    r = init_repo(tmp_path / "filtered")
    files = {
        f"py/mod{i}.py": "def widget():\n    " + f"widget = widget + {i}\n    " * 8 + "return widget\n"
        for i in range(250)
    }
    files |= {
        f"go/w{i}.go": f"package w\n\n// a widget\nfunc W{i}() int {{ return {i} }}\n" for i in range(3)
    }
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "filtered")
    repo_id = await register_path(infra.pool, tenant, r)
    await build(infra, tenant, repo_id)
    async with tenant_tx(infra.pool, tenant) as conn:
        go = await lexical_search(conn, repo_id, "widget", language="go", limit=10)
        assert sorted(h.path for h in go) == ["go/w0.go", "go/w1.go", "go/w2.go"]
        under = await lexical_search(conn, repo_id, "widget", path_prefix="go/", limit=10)
        assert sorted(h.path for h in under) == ["go/w0.go", "go/w1.go", "go/w2.go"]
        assert len(await lexical_search(conn, repo_id, "widget", limit=10)) == 10


async def test_candidates_are_the_snapshots_chunks_not_older_kept_versions(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """A repository keeps the blobs of its previous snapshot: thirty files said "widget" in the
    first tree and no longer do; of the second tree only two files say it. A search of the
    second snapshot over a pool smaller than the older matches (migration 0047) still finds both
    (it found neither when the pool was any of the repository's chunks)."""
    r = init_repo(tmp_path / "kept")
    old = {f"py/mod{i}.py": f"def part_{i}():\n    widget = {i}\n    return widget\n" for i in range(30)}
    commit(r, "2024-01-01", old)
    tenant = await create_tenant(infra.pool, "kept")
    repo_id = await register_path(infra.pool, tenant, r)
    first = await build(infra, tenant, repo_id)
    new = {path: text.replace("widget", "gadget") for path, text in old.items()}
    new |= {
        "py/keep_a.py": "def keep_a():\n    return 'widget a'\n",
        "py/keep_b.py": "def keep_b():\n    return 'widget b'\n",
    }
    commit(r, "2024-02-01", new)
    second = await build(infra, tenant, repo_id)
    assert first.state == second.state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        kept = await list_snapshots(conn, repo_id)
        assert {s.snapshot_id for s in kept} >= {first.snapshot_id, second.snapshot_id}  # old blobs kept
        hits = await lexical_search(conn, repo_id, "widget", limit=10, candidates=8)
    assert sorted(h.path for h in hits) == ["py/keep_a.py", "py/keep_b.py"]


async def test_an_identifiers_definition_ranks_first_however_many_chunks_name_it(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """Sixty files call ``WidgetFactory`` and one defines it; the ranked pool (four candidates
    here, 2 000 in production) holds the first GIN matches in storage order, which need not
    include the definition. The definition is a candidate of its own (migration 0053), so it
    comes first, filtered or not."""
    r = init_repo(tmp_path / "defs")
    files = {
        f"app/use_{i:02}.py": f"from zz.widgets import WidgetFactory\n\ndef use_{i}():\n"
        f"    return WidgetFactory().make({i})\n"
        for i in range(60)
    }
    files["zz/widgets.py"] = "class WidgetFactory:\n    def make(self, n):\n        return n\n"
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "defs")
    repo_id = await register_path(infra.pool, tenant, r)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        for kwargs in ({}, {"language": "python"}, {"path_prefix": "zz/"}):
            hits = await lexical_search(conn, repo_id, "WidgetFactory", limit=5, candidates=4, **kwargs)
            assert (hits[0].path, hits[0].name) == ("zz/widgets.py", "WidgetFactory"), kwargs
            assert len({(h.blob_sha, h.ordinal) for h in hits}) == len(hits)  # each chunk once


async def test_product_code_outranks_tests_examples_generated_and_vendored_at_one_text_score(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """Five files say "ledger" alike (the same text score) and only one is product code; the
    others sort before it by path, as equal scores used to come back. The chunker stores each
    chunk's prior by its file's kind (migration 0056) and the product file ranks first, then the
    example, the test, and the generated and vendored files, filtered or not."""
    r = init_repo(tmp_path / "prior")
    files = {
        "dist/ledger_a.py": "a",
        "examples/ledger_b.py": "b",
        "tests/test_ledger_c.py": "c",
        "vendor/lib/ledger_d.py": "d",
        "zz/ledger_e.py": "e",
    }
    commit(r, "2024-01-01", {p: f"def case_{x}():\n    return ledger + 1\n" for p, x in files.items()})
    tenant = await create_tenant(infra.pool, "prior")
    repo_id = await register_path(infra.pool, tenant, r)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT f.path, c.prior FROM code_chunks c JOIN code_index_files f ON f.blob_sha = c.blob_sha"
            " WHERE c.repository_id = %s ORDER BY f.path",
            (repo_id,),
        )
        priors = {row["path"]: round(row["prior"], 2) for row in await cur.fetchall()}
        assert priors == {
            "dist/ledger_a.py": 0.4,
            "examples/ledger_b.py": 0.7,
            "tests/test_ledger_c.py": 0.6,
            "vendor/lib/ledger_d.py": 0.4,
            "zz/ledger_e.py": 1.0,
        }
        for kwargs in ({}, {"language": "python"}, {"kind": "function"}):
            hits = await lexical_search(conn, repo_id, "ledger", limit=10, **kwargs)
            paths = [h.path for h in hits]
            assert paths[:3] == ["zz/ledger_e.py", "examples/ledger_b.py", "tests/test_ledger_c.py"], kwargs
            assert set(paths[3:]) == {"dist/ledger_a.py", "vendor/lib/ledger_d.py"}, kwargs
            assert hits[0].score > hits[1].score > hits[2].score > hits[3].score, kwargs


async def test_a_pool_smaller_than_the_matches_is_drawn_product_code_first(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """Twelve tests and two product files say "ledger" alike, and the ranked pool holds four chunks.
    The pool is drawn tier by tier of the prior (migration 0057), so both product files are in it
    and rank first wherever the rows are stored; drawn in storage order (the tests are built first,
    but a shared table's free space can place later rows anywhere), it usually held tests only."""
    r = init_repo(tmp_path / "pool_order")
    files = {
        f"tests/test_ledger_{i:02d}.py": f"def test_{i}():\n    assert ledger + {i}\n" for i in range(12)
    }
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "pool_order")
    repo_id = await register_path(infra.pool, tenant, r)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    files |= {f"zz/ledger_{x}.py": f"def total_{x}():\n    return ledger + 1\n" for x in ("a", "b")}
    commit(r, "2024-01-02", files)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        for kwargs in ({}, {"language": "python", "filter_plan": "ranked"}, {"kind": "function"}):
            hits = await lexical_search(conn, repo_id, "ledger", limit=3, candidates=4, **kwargs)  # type: ignore[arg-type]
            assert {h.path for h in hits[:2]} == {"zz/ledger_a.py", "zz/ledger_b.py"}, kwargs
            assert hits[2].path.startswith("tests/"), kwargs


async def test_an_identifiers_definition_ranks_first_and_the_products_before_a_tests(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """``LedgerBook`` is defined alike in a test's fake and in the product, and product code
    mentions it: the product's definition ranks first, the fake's second, above every mention
    (however strong a mention's text score, a definition of the identifier comes first). An
    identifier defined only in a test still ranks its definition first."""
    r = init_repo(tmp_path / "prior_defs")
    files = {
        "tests/fakes.py": "class LedgerBook:\n    def add(self, n):\n        return n\n\n\n"
        "class FakeClock:\n    def now(self):\n        return 0\n",
        "zz/book.py": "class LedgerBook:\n    def add(self, m):\n        return m\n",
        "app/use.py": "def use(book: LedgerBook) -> LedgerBook:\n    # LedgerBook LedgerBook FakeClock\n"
        "    return LedgerBook()\n",
    }
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "prior_defs")
    repo_id = await register_path(infra.pool, tenant, r)
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        for kwargs in ({}, {"language": "python"}):
            hits = await lexical_search(conn, repo_id, "LedgerBook", limit=5, **kwargs)
            assert [(h.path, h.name) for h in hits[:2]] == [
                ("zz/book.py", "LedgerBook"),
                ("tests/fakes.py", "LedgerBook"),
            ], kwargs
            assert hits[2].path == "app/use.py", kwargs
            fake = await lexical_search(conn, repo_id, "FakeClock", limit=5, **kwargs)
            assert (fake[0].path, fake[0].name) == ("tests/fakes.py", "FakeClock"), kwargs


async def test_an_identifier_is_padded_with_chunks_holding_all_its_words_not_one(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    r = init_repo(tmp_path / "pad")
    files = {
        "a_defines.py": "def computeInvoiceTotal(lines):\n    return sum(lines)\n",
        "b_words.py": "def by_hand(lines):\n    # compute the invoice total by hand\n    return 0\n",
    }
    files |= {f"c_total_{i}.py": f"def total_rate_{i}():\n    return {i}\n" for i in range(12)}
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "pad")
    repo_id = await register_path(infra.pool, tenant, r)
    await build(infra, tenant, repo_id)
    async with tenant_tx(infra.pool, tenant) as conn:
        hits = await lexical_search(conn, repo_id, "computeInvoiceTotal", limit=10)
        assert [h.path for h in hits] == ["a_defines.py", "b_words.py"]
        # a phrase still accepts any of its words
        phrase = await lexical_search(conn, repo_id, "invoice total", limit=10)
        assert {h.path for h in phrase} >= {"b_words.py", "c_total_0.py"}


async def test_delete_and_index_mode_off_leave_no_rows(
    infra: Infra, repo: Path, tenant_repo: tuple[uuid.UUID, uuid.UUID], chunker: None
) -> None:
    tenant, repo_id = tenant_repo
    assert (await build(infra, tenant, repo_id)).state == "ready"
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("UPDATE repositories SET index_mode = 'off' WHERE repository_id = %s", (repo_id,))
    off = await build(infra, tenant, repo_id)
    assert (off.state, off.reason) == ("skipped", "index_mode_off")
    assert await _rows(infra, tenant, repo_id) == 0
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "UPDATE repositories SET index_mode = 'lexical' WHERE repository_id = %s", (repo_id,)
        )
    assert (await build(infra, tenant, repo_id)).state == "ready"
    assert await _rows(infra, tenant, repo_id) > 0
    async with tenant_tx(infra.pool, tenant) as conn:
        await delete_repository_index(conn, repo_id)
        await conn.execute("DELETE FROM repositories WHERE repository_id = %s", (repo_id,))
    assert await _rows(infra, tenant, repo_id) == 0


async def test_deleting_the_repository_row_alone_removes_its_index(
    infra: Infra, repo: Path, tenant_repo: tuple[uuid.UUID, uuid.UUID], chunker: None
) -> None:
    """The foreign-key cascade from repositories reaches blobs and snapshots; their statement
    triggers (migration 0013) remove chunks, symbols, facts, embeddings and file rows."""
    tenant, repo_id = tenant_repo
    assert (await build(infra, tenant, repo_id)).state == "ready"
    other = await register_path(infra.pool, tenant, init_repo(repo.parent / "other"))
    commit(repo.parent / "other", "2024-01-01", {"kept.py": "def kept():\n    return 1\n"})
    assert (await build(infra, tenant, other)).state == "ready"
    assert await _rows(infra, tenant, repo_id) > 0
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("DELETE FROM repositories WHERE repository_id = %s", (repo_id,))
    assert await _rows(infra, tenant, repo_id) == 0
    async with tenant_tx(infra.pool, tenant) as conn:  # the other repository's index is untouched
        hits = await lexical_search(conn, other, "kept", limit=5)
    assert [h.path for h in hits] == ["kept.py"]


async def _rows(infra: Infra, tenant: uuid.UUID, repo_id: uuid.UUID) -> int:
    total = 0
    async with tenant_tx(infra.pool, tenant) as conn:
        for table in ("code_chunks", "code_symbols", "code_facts", "code_blobs", "code_index_snapshots"):
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM {table} WHERE repository_id = %s", (repo_id,)
            )
            total += (await cur.fetchone())["n"]  # type: ignore[index]
        cur = await conn.execute(
            "SELECT count(*) AS n FROM code_index_files f WHERE NOT EXISTS"
            " (SELECT 1 FROM code_index_snapshots s WHERE s.snapshot_id = f.snapshot_id)"
        )
        total += (await cur.fetchone())["n"]  # type: ignore[index]
    return total


async def test_symbols_and_facts_read_back_as_the_parser_made_them(
    infra: Infra, repo: Path, tenant_repo: tuple[uuid.UUID, uuid.UUID], chunker: None
) -> None:
    """A blob's records live in its row (migration 0015): the views, the graph loader and the
    name index return what the parser produced, in order; another tenant gets none of it."""
    tenant, repo_id = tenant_repo
    built = await build(infra, tenant, repo_id)
    assert built.state == "ready"
    expected: dict[str, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {}
    for path in ("src/billing/invoice.py", "src/ledger.ts", "docs/billing.md", "odd name with spaces ü.py"):
        analysis = analyze_file(path, (repo / path).read_text(), detect_language(path))
        expected[path] = ([tuple(s) for s in analysis.symbols], [tuple(f) for f in analysis.facts])
    assert expected["src/billing/invoice.py"][0] and expected["docs/billing.md"][1]
    snapshot = built.snapshot_id
    assert snapshot is not None
    async with tenant_tx(infra.pool, tenant) as conn:
        loaded = {f.path: f for f in (await load_snapshot_facts(conn, repo_id, snapshot)).files}
        for path, (symbols, facts) in expected.items():
            cur = await conn.execute(
                "SELECT s.name, s.kind, s.start_line, s.end_line, s.parent FROM code_index_files f"
                " JOIN code_symbols s ON s.repository_id = %s AND s.blob_sha = f.blob_sha"
                " WHERE f.snapshot_id = %s AND f.path = %s ORDER BY s.ordinal",
                (repo_id, snapshot, path),
            )
            assert [tuple(r.values()) for r in await cur.fetchall()] == symbols, path
            cur = await conn.execute(
                "SELECT x.kind, x.name, x.line, x.target, x.detail FROM code_index_files f"
                " JOIN code_facts x ON x.repository_id = %s AND x.blob_sha = f.blob_sha"
                " WHERE f.snapshot_id = %s AND f.path = %s ORDER BY x.ordinal",
                (repo_id, snapshot, path),
            )
            assert [tuple(r.values()) for r in await cur.fetchall()] == facts, path
            assert [tuple(s) for s in loaded[path].symbols] == symbols, path
            assert [tuple(x) for x in loaded[path].facts] == facts, path
        cur = await conn.execute(
            "SELECT f.path FROM palimpsest_symbol_blobs(%s, %s) b JOIN code_index_files f"
            " ON f.snapshot_id = %s AND f.blob_sha = b.blob_sha",
            (repo_id, ["compute_invoice_total", "balanceOf", "no_such_name"], snapshot),
        )
        assert sorted(r["path"] for r in await cur.fetchall()) == ["src/billing/invoice.py", "src/ledger.ts"]
    intruder = await create_tenant(infra.pool, "records-intruder")
    async with tenant_tx(infra.pool, intruder) as conn:
        for view in ("code_symbols", "code_facts"):
            cur = await conn.execute(f"SELECT count(*) AS n FROM {view} WHERE repository_id = %s", (repo_id,))
            assert (await cur.fetchone())["n"] == 0, view  # type: ignore[index]
        cur = await conn.execute(
            "SELECT count(*) AS n FROM palimpsest_symbol_blobs(%s, %s)", (repo_id, ["compute_invoice_total"])
        )
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_the_sql_reading_of_records_matches_python(infra: Infra) -> None:
    """palimpsest_symbol_rows / palimpsest_fact_rows / palimpsest_symbol_names read the format of
    palimpsest.index.records exactly, odd characters and NULLs included."""
    symbols = [
        ("größe", "function", 1, 2, None),
        ("a\\b", "class", 3, 9, None),
        ("m", "method", 4, 5, "a\\b"),
    ]
    facts = [
        ("import", "../x y", 1, None, "named"),
        ("governs", "src/ü", 2, None, None),
        ("call", "f", 7, "m", None),
    ]
    async with infra.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT name, kind, start_line, end_line, parent FROM palimpsest_symbol_rows(%s) ORDER BY ordinal",
            (encode_symbols(symbols),),
        )
        assert [tuple(r.values()) for r in await cur.fetchall()] == symbols
        cur = await conn.execute(
            "SELECT kind, name, line, target, detail FROM palimpsest_fact_rows(%s) ORDER BY ordinal",
            (encode_facts(facts),),
        )
        assert [tuple(r.values()) for r in await cur.fetchall()] == facts
        cur = await conn.execute("SELECT palimpsest_symbol_names(%s) AS names", (encode_symbols(symbols),))
        assert sorted((await cur.fetchone())["names"]) == sorted({s[0] for s in symbols})  # type: ignore[index]
        cur = await conn.execute("SELECT count(*) AS n FROM palimpsest_symbol_rows(NULL)")
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_unknown_repository_is_acknowledged(infra: Infra, chunker: None) -> None:
    tenant = await create_tenant(infra.pool, "ghost")
    built = await build(infra, tenant, uuid.uuid4())
    assert (built.state, built.reason) == ("skipped", "repository_not_found")
    await asyncio.sleep(0)


async def test_a_refused_or_missing_source_fails_at_once_with_its_reason(
    infra: Infra, tmp_path: Path
) -> None:
    """Deterministic source failures are answered with a failed snapshot.built, not retried until
    the event is dead-lettered (before this, a refused local path was redelivered four times and
    the CLI waited for an answer that never came)."""
    tenant = await create_tenant(infra.pool, "refused")
    gone = await register_path(infra.pool, tenant, init_repo(tmp_path / "gone"))
    (tmp_path / "gone" / ".git" / "HEAD").unlink()  # no longer a repository
    local = await register_path(infra.pool, tenant, init_repo(tmp_path / "local"))
    strict, _ = chunker_definition(f"t-chunker-{uuid.uuid4().hex[:6]}", allow_local_sources=False)
    async with services(infra, [strict]):
        refused = await build(infra, tenant, local)
    assert refused.state == "failed" and (refused.reason or "").startswith("source_refused"), refused
    definition, _ = chunker_definition(f"t-chunker-{uuid.uuid4().hex[:6]}")
    async with services(infra, [definition]):
        broken = await build(infra, tenant, gone)
    assert broken.state == "failed" and (broken.reason or "").startswith("source_"), broken
    async with infra.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM event_failures WHERE consumer = %s",
            (strict.consumer.name,),  # type: ignore[union-attr]
        )
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_a_dead_parse_worker_does_not_break_later_builds(infra: Infra, tmp_path: Path) -> None:
    """A parse worker that dies (here: SIGKILL) breaks a process pool for good; the chunker drops
    it and the redelivered request builds on a new pool (before, every later build failed with
    BrokenProcessPool until dead-lettered)."""
    repo = init_repo(tmp_path / "pool")
    commit(repo, "2024-01-01", {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(40)})
    tenant = await create_tenant(infra.pool, "pool")
    repo_id = await register_path(infra.pool, tenant, repo)
    definition, chunker = chunker_definition(f"t-chunker-{uuid.uuid4().hex[:6]}", parse_workers=2)
    async with services(infra, [definition]):
        assert (await build(infra, tenant, repo_id)).state == "ready"
        pool = chunker._executor
        assert pool is not None
        for pid in list(pool._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        commit(repo, "2024-01-02", {"src/m0.py": "def f0():\n    return 'changed'\n"})
        again = await build(infra, tenant, repo_id)
    assert again.state == "ready", again
    assert chunker._executor is not pool


async def test_two_requests_for_one_head_build_it_once(infra: Infra, tmp_path: Path, chunker: None) -> None:
    """Found by the chaos soak: two requests for the same head handled at once (a consumer batch)
    both passed the "already built?" check and built the commit twice."""
    repo = init_repo(tmp_path / "twice")
    commit(repo, "2024-01-01", {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    tenant = await create_tenant(infra.pool, "twice")
    repo_id = await register_path(infra.pool, tenant, repo)
    first, second = await asyncio.gather(build(infra, tenant, repo_id), build(infra, tenant, repo_id))
    assert sorted([first.state, second.state]) == ["ready", "skipped"], (first, second)
    assert {first.reason, second.reason} >= {"up_to_date"}
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT state, count(*) AS n FROM code_index_snapshots GROUP BY 1")
        assert {r["state"]: r["n"] for r in await cur.fetchall()} == {"ready": 1}


async def test_a_local_partial_clone_builds_with_its_blobs_fetched_at_once(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """A blob-less clone used in place: the blobs of the tree are fetched from its promisor remote
    in one batch before the listing (git would otherwise fetch them one by one, or not at all
    where the build forbids lazy fetching), then the build is the one of a full clone."""
    origin = init_repo(tmp_path / "origin")
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit(origin, "2024-01-01", {"src/billing/invoice.py": PY, "docs/billing.md": MD, "old.py": "x = 1\n"})
    commit(origin, "2024-02-01", {"src/ledger.ts": TS})
    partial = tmp_path / "partial.git"
    git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none", f"file://{origin}", str(partial))
    missing = git(partial, "rev-list", "--objects", "--missing=print", "HEAD")
    assert missing.count("\n?") >= 3, "the clone should hold no blobs"
    tenant = await create_tenant(infra.pool, "partial")
    repo_id = await register_path(infra.pool, tenant, partial)
    built = await build(infra, tenant, repo_id)
    assert built.state == "ready", built
    rows = await _files(infra, tenant, built.snapshot_id)
    assert [(r[0], r[2]) for r in rows] == [
        ("docs/billing.md", "markdown"),
        ("old.py", "python"),
        ("src/billing/invoice.py", "python"),
        ("src/ledger.ts", "typescript"),
    ]
    async with tenant_tx(infra.pool, tenant) as conn:
        hits = await lexical_search(conn, repo_id, "compute_invoice_total")
    assert hits and hits[0].path == "src/billing/invoice.py"
    # a later head, fetched blob-less again: the incremental build fetches only what is new
    commit(origin, "2024-03-01", {"src/extra.py": "def extra_total():\n    return 2\n"})
    git(partial, "fetch", "-q", "--filter=blob:none", "origin", "+refs/heads/*:refs/heads/*")
    again = await build(infra, tenant, repo_id)
    assert again.state == "ready", again
    assert "src/extra.py" in [r[0] for r in await _files(infra, tenant, again.snapshot_id)]
    assert "\n?" not in git(partial, "rev-list", "--objects", "--no-walk", "--missing=print", "HEAD")


async def test_a_bare_repository_without_a_config_file_builds(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """Some mirrors ship no ``config``: git then knows no promisor remote, and the build reads the
    repository as it is."""
    origin = init_repo(tmp_path / "origin")
    commit(origin, "2024-01-01", {"a.py": PY})
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    (bare / "config").unlink()
    tenant = await create_tenant(infra.pool, "noconfig")
    built = await build(infra, tenant, await register_path(infra.pool, tenant, bare))
    assert built.state == "ready", built
    assert built.files == 1


def _passes(hit: Any, language: str | None, prefix: str | None, kind: str | None) -> bool:
    return (
        (language is None or hit.language == language)
        and (prefix is None or hit.path.startswith(prefix))
        and (kind is None or hit.kind == kind)
    )


async def test_both_filter_plans_return_the_unfiltered_hits_restricted_to_the_filter(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    """A filtered search (migration 0046) reads either the chunks of the files that pass the filter
    or the query's GIN matches; both, and the database's own choice, must return exactly the
    unfiltered hits that pass the filter, in the same order. Every file's text is its own (a blob
    at one path), and the corpus is far below the candidate bound, so nothing is cut."""
    r = init_repo(tmp_path / "plans")
    files: dict[str, str] = {}
    for i in range(60):
        extra = "    # the ledger balance, once\n" if i % 7 == 0 else ""
        files[f"py/pkg{i % 3}/mod{i}.py"] = (
            f"def widget_{i}(parts):\n    # the widget total of part {i}\n{extra}"
            + f"    widget = parts[{i}] + {i}\n" * (1 + i % 4)
            + "    return widget\n"
        )
    for i in range(6):
        files[f"go/w{i}.go"] = f"package w\n\n// a widget total, {i}\nfunc Widget{i}() int {{ return {i} }}\n"
    for i in range(10):
        files[f"ts/src/l{i}.ts"] = (
            f"// ledger balance {i}\nexport function computeLedgerBalance{i}(widget: number): number {{\n"
            f"  return widget * {i};\n}}\n"
        )
    for i in range(4):
        files[f"docs/n{i}.md"] = f"# Note {i}\n\nThe widget total and the ledger balance, note {i}.\n"
    commit(r, "2024-01-01", files)
    tenant = await create_tenant(infra.pool, "plans")
    repo_id = await register_path(infra.pool, tenant, r)
    await build(infra, tenant, repo_id)
    filters: list[tuple[str | None, str | None, str | None]] = [
        ("go", None, None),
        ("typescript", None, None),
        ("markdown", None, None),
        ("python", None, None),
        (None, "go/", None),
        (None, "py/pkg1/", None),
        (None, "ts/", None),
        ("python", "py/pkg2/", None),
        ("python", None, "function"),
    ]
    checked = 0
    async with tenant_tx(infra.pool, tenant) as conn:
        for query in ("widget", "ledger balance", "widget total", "computeLedgerBalance3", "once"):
            everything = await lexical_search(conn, repo_id, query, limit=1000)
            assert everything, query
            for language, prefix, kind in filters:
                want = [
                    (h.path, h.start_line, h.score) for h in everything if _passes(h, language, prefix, kind)
                ]
                for plan in ("files", "ranked", None):
                    got = await lexical_search(
                        conn,
                        repo_id,
                        query,
                        limit=1000,
                        language=language,
                        path_prefix=prefix,
                        kind=kind,
                        filter_plan=plan,  # type: ignore[arg-type]
                    )
                    assert [(h.path, h.start_line, h.score) for h in got] == want, (
                        query,
                        language,
                        prefix,
                        plan,
                    )
                checked += bool(want)
    assert checked >= 25  # most (query, filter) pairs have hits: the comparison is not of empty lists
