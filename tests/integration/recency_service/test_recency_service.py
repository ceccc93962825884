"""The recency-scanner service end to end: outbox → JetStream → handler → tables + recency.scanned.

Repositories are real git repositories with controlled dates, served by a smart-HTTP server on
127.0.0.1 that demands an exact ``Authorization`` header (tests/support/git_http.py). The
service is the real definition run by ``palimpsest.core.service.run``; credentials come from an
injected function, the seam the ingest service's installation credentials will use.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from palimpsest.core.db import Conn, system_tx, tenant_tx
from palimpsest.core.events import IndexRequested
from palimpsest.core.git import GitAuth
from palimpsest.core.ids import uuid7
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.index.cochange import PairEvidence
from palimpsest.index.evidence import add_evidence, pair_weight
from palimpsest.index.recency import (
    cochange_evidence,
    cochange_neighbours,
    last_modified_at,
    last_scan,
    list_recency,
)
from palimpsest.recency_scanner.scanner import AuthProvider
from palimpsest.recency_scanner.service import bootstrap
from palimpsest.recency_scanner.source import Repository
from tests.integration.recency_service.support import (
    ArgvWatcher,
    query,
    register,
    request_index,
    running_scanner,
    scanner_settings,
    watching_scans,
)
from tests.support.gitrepo import commit, git, init_repo, when
from tests.support.tenants import create_tenant

TOKEN = "ghs_Rec3ncyServiceT0kenAbc123"
WRONG = "ghs_Wr0ngRec3ncyT0kenXyz789"

EXPECTED = {
    "docs/design.md": "2019-01-01",
    "src/app.py": "2024-01-01",
    "src/util.py": "2023-06-01",
    "README.md": "2023-06-01",
}


def _auth(token: str) -> AuthProvider:
    async def provide(conn: Conn, repository: Repository) -> GitAuth:
        return GitAuth.bearer(token)

    return provide


@pytest.fixture
def served(tmp_path: Path) -> Path:
    source = init_repo(tmp_path / "source")
    commit(source, "2019-01-01", {"docs/design.md": "plan", "src/app.py": "1", "src/util.py": "1"})
    commit(source, "2021-06-01", {"src/app.py": "2", "src/util.py": "2"})
    commit(source, "2023-06-01", {"src/util.py": "3", "README.md": "hello"})
    commit(source, "2024-01-01", {"src/app.py": "3"})
    root = tmp_path / "served"
    root.mkdir()
    git(root, "clone", "-q", "--bare", str(source), "team/app.git")
    return root


@pytest.fixture
def clones(tmp_path: Path) -> Path:
    path = tmp_path / "clones"
    path.mkdir()
    return path


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="palimpsest")
    return caplog


async def _dates(infra: Infra, tenant: UUID, repo: UUID) -> dict[str, str | None]:
    rows = await query(
        infra, tenant, "SELECT path, last_modified_at FROM file_recency WHERE repository_id = %s", repo
    )
    return {
        r["path"]: r["last_modified_at"].astimezone(UTC).date().isoformat() if r["last_modified_at"] else None
        for r in rows
    }


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("palimpsest")
    ]


async def test_a_full_scan_over_authenticated_http_writes_recency_and_cochange(
    infra: Infra, served: Path, clones: Path, logs: pytest.LogCaptureFixture
) -> None:
    tenant = await create_tenant(infra.pool, "recency-ok")
    settings = scanner_settings(recency_tmp_dir=clones)
    with GitHttpServer(served, authorization=f"Bearer {TOKEN}") as server:
        repo = await register(infra, tenant, server.url("team/app.git"))
        event = IndexRequested(tenant_id=tenant, repository_id=repo)
        with ArgvWatcher() as watcher:
            async with (
                watching_scans(infra) as scans,
                running_scanner(infra, settings, {tenant}, auth_provider=_auth(TOKEN)),
            ):
                await request_index(infra, event)
                scanned = await scans.wait(event.request_id)
    assert scanned["status"] == "ok", scanned
    assert scanned["mode"] == "full"
    assert (scanned["files"], scanned["pairs"], scanned["commits"]) == (4, 4, 4)
    assert scanned["commit_sha"] == git(served / "team/app.git", "rev-parse", "main").strip()
    assert await _dates(infra, tenant, repo) == EXPECTED
    assert server.requests and all(r.authorized for r in server.requests)
    assert watcher.saw_clone() and not watcher.saw(TOKEN.encode())
    assert TOKEN not in logs.text
    assert _warnings(logs) == []
    assert list(clones.iterdir()) == []
    async with tenant_tx(infra.pool, tenant) as conn:
        dates = await last_modified_at(conn, repo, ["src/app.py", "nowhere.py"])
        assert dates == {"src/app.py": when("2024-01-01"), "nowhere.py": None}
        neighbours = await cochange_neighbours(conn, repo, "src/util.py", limit=5)
        # strongest first by evidence decayed to now (the order does not depend on when "now"
        # is): README's one recent 2-file commit outweighs app.py's two older ones
        app = add_evidence(pair_weight(3), when("2019-01-01"), when("2021-06-01"), 2)
        assert [tuple(n) for n in neighbours] == [
            ("README.md", 1, when("2023-06-01"), pytest.approx(1.0)),
            ("src/app.py", 2, when("2021-06-01"), pytest.approx(app, rel=1e-6)),
            ("docs/design.md", 1, when("2019-01-01"), pytest.approx(pair_weight(3), rel=1e-6)),
        ]
        # the counts that score the co-change warning: each path's counted commits and the oldest,
        # the scan's total; only pairs of 2+ shared commits are read
        evidence = await cochange_evidence(conn, repo, ["src/util.py"])
        assert evidence == [
            PairEvidence("src/util.py", "src/app.py", 2, 3, 3, 4, when("2019-01-01"), when("2021-06-01"))
        ]
        listing = await list_recency(conn, repo)
        scan = await last_scan(conn, repo)
    counted = await query(
        infra, tenant, "SELECT path, commits FROM file_recency WHERE repository_id = %s", repo
    )
    assert {r["path"]: r["commits"] for r in counted} == {
        "docs/design.md": 1,
        "src/app.py": 3,
        "src/util.py": 3,
        "README.md": 1,
    }
    assert listing.source == "recency"
    assert [(e.path, e.kind, e.stale) for e in listing.entries] == [
        ("docs/design.md", "doc", True),
        ("README.md", "doc", False),
        ("src/util.py", "code", False),
        ("src/app.py", "code", False),
    ]
    assert listing.entries[0].age == "4 years 8 months older than typical code in this repo"
    assert scan is not None and scan.status == "ok" and scan.request_id == event.request_id


async def test_a_rescan_replaces_rows_and_a_rename_moves_the_history(
    infra: Infra, served: Path, clones: Path, tmp_path: Path
) -> None:
    tenant = await create_tenant(infra.pool, "recency-rescan")
    settings = scanner_settings(recency_tmp_dir=clones)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(served / "team/app.git"), "work")
    with GitHttpServer(served, authorization=f"Bearer {TOKEN}") as server:
        repo = await register(infra, tenant, server.url("team/app.git"))
        async with (
            watching_scans(infra) as scans,
            running_scanner(infra, settings, {tenant}, auth_provider=_auth(TOKEN)),
        ):
            first = IndexRequested(tenant_id=tenant, repository_id=repo)
            await request_index(infra, first)
            assert (await scans.wait(first.request_id))["status"] == "ok"
            git(work, "mv", "src/util.py", "src/helpers.py")
            git(work, "rm", "-q", "docs/design.md")
            git(work, "commit", "-q", "-m", "move", date="2025-01-01")
            git(work, "push", "-q", "origin", "HEAD:main")
            second = IndexRequested(tenant_id=tenant, repository_id=repo)
            await request_index(infra, second)
            assert (await scans.wait(second.request_id))["status"] == "ok"
    assert await _dates(infra, tenant, repo) == {
        "src/app.py": "2024-01-01",
        "src/helpers.py": "2025-01-01",
        "README.md": "2023-06-01",
    }
    pairs = await query(
        infra,
        tenant,
        "SELECT path_a, path_b, count FROM cochange WHERE repository_id = %s ORDER BY 1, 2",
        repo,
    )
    assert [(p["path_a"], p["path_b"], p["count"]) for p in pairs] == [
        ("README.md", "src/helpers.py", 1),
        ("src/app.py", "src/helpers.py", 2),
    ]


@pytest.mark.parametrize("token", [WRONG, None], ids=["wrong-token", "no-token"])
async def test_refused_credentials_fail_once_with_reason_auth_and_leak_nothing(
    infra: Infra,
    served: Path,
    clones: Path,
    logs: pytest.LogCaptureFixture,
    token: str | None,
) -> None:
    tenant = await create_tenant(infra.pool, "recency-auth")
    settings = scanner_settings(recency_tmp_dir=clones)
    provider = _auth(token) if token else None
    with GitHttpServer(served, authorization=f"Bearer {TOKEN}") as server:
        repo = await register(infra, tenant, server.url("team/app.git"))
        event = IndexRequested(tenant_id=tenant, repository_id=repo)
        with ArgvWatcher() as watcher:
            async with watching_scans(infra) as scans:
                if provider is None:
                    running = running_scanner(infra, settings, {tenant})  # no installation: no auth
                else:
                    running = running_scanner(infra, settings, {tenant}, auth_provider=provider)
                async with running:
                    await request_index(infra, event)
                    scanned = await scans.wait(event.request_id)
    assert scanned["status"] == "failed"
    assert scanned["reason"] == "auth"
    assert server.requests and not any(r.authorized for r in server.requests)
    warnings = _warnings(logs)
    assert len(warnings) == 1, warnings
    assert "(auth)" in warnings[0]
    scan = (await query(infra, tenant, "SELECT * FROM recency_scans WHERE repository_id = %s", repo))[0]
    assert (scan["status"], scan["reason"]) == ("failed", "auth")
    assert await _dates(infra, tenant, repo) == {}
    for secret in (TOKEN, WRONG):
        assert not watcher.saw(secret.encode())
        assert secret not in logs.text
        assert secret not in str(scanned)
        assert secret not in str(scan)
    assert list(clones.iterdir()) == []
    async with system_tx(infra.pool) as conn:  # acknowledged once, never retried
        cur = await conn.execute("SELECT count(*) AS n FROM event_failures WHERE event_id = %s", (event.id,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]
        cur = await conn.execute("SELECT count(*) AS n FROM inbox WHERE event_id = %s", (event.id,))
        assert (await cur.fetchone())["n"] == 1  # type: ignore[index]


async def test_a_hanging_remote_times_out_fails_and_removes_the_clone(
    infra: Infra, served: Path, clones: Path, logs: pytest.LogCaptureFixture
) -> None:
    tenant = await create_tenant(infra.pool, "recency-hang")
    settings = scanner_settings(recency_tmp_dir=clones, recency_timeout_s=2.0)
    with GitHttpServer(served, authorization=f"Bearer {TOKEN}", hang=True) as server:
        repo = await register(infra, tenant, server.url("team/app.git"))
        event = IndexRequested(tenant_id=tenant, repository_id=repo)
        async with (
            watching_scans(infra) as scans,
            running_scanner(infra, settings, {tenant}, auth_provider=_auth(TOKEN)),
        ):
            await request_index(infra, event)
            scanned = await scans.wait(event.request_id)
        assert server.requests
    assert (scanned["status"], scanned["reason"]) == ("failed", "timeout")
    assert len(_warnings(logs)) == 1
    assert list(clones.iterdir()) == []
    assert await _dates(infra, tenant, repo) == {}


async def test_scanning_disabled_records_nothing_and_forgets_old_rows(infra: Infra, tmp_path: Path) -> None:
    tenant = await create_tenant(infra.pool, "recency-off")
    repo = await register(infra, tenant, "https://git.example.invalid/team/app.git")
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_modified_at)"
            " VALUES (%s, %s, 'old.md', '2020-01-01T00:00:00Z')",
            (tenant, repo),
        )
    event = IndexRequested(tenant_id=tenant, repository_id=repo)
    async with (
        watching_scans(infra) as scans,
        running_scanner(infra, scanner_settings(recency_scan=False), {tenant}),
    ):
        await request_index(infra, event)
        scanned = await scans.wait(event.request_id)
    assert (scanned["status"], scanned["mode"], scanned["files"]) == ("disabled", "none", 0)
    assert await _dates(infra, tenant, repo) == {}
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await last_modified_at(conn, repo, ["old.md"]) == {"old.md": None}
        scan = await last_scan(conn, repo)
    assert scan is not None and scan.status == "disabled"


async def test_incremental_pushes_use_the_head_commit_date_or_unknown_never_now(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "recency-push")
    repo = await register(infra, tenant, "https://git.example.invalid/team/app.git")  # never cloned
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at) VALUES"
            " (%(t)s, %(r)s, 'a.py', %(c)s, '2020-01-01T00:00:00Z'),"
            " (%(t)s, %(r)s, 'b.md', %(c)s, '2020-01-01T00:00:00Z'),"
            " (%(t)s, %(r)s, 'keep.py', %(c)s, '2020-01-01T00:00:00Z')",
            {"t": tenant, "r": repo, "c": "a" * 40},
        )
        # the last full scan's total of counted commits: an incremental push keeps it
        await conn.execute(
            "INSERT INTO recency_scans (tenant_id, repository_id, status, counted_commits) VALUES (%s, %s, 'ok', 7)",
            (tenant, repo),
        )
    head_at = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    dated = IndexRequested(
        tenant_id=tenant,
        repository_id=repo,
        reason="push",
        commit_sha="b" * 40,
        head_commit_at=head_at,
        changed_paths=["a.py", "new.py"],
    )
    undated = IndexRequested(
        tenant_id=tenant,
        repository_id=repo,
        reason="push",
        commit_sha="c" * 40,
        changed_paths=["b.md", "n2.py"],
    )
    older = IndexRequested(
        tenant_id=tenant,
        repository_id=repo,
        reason="push",
        commit_sha="d" * 40,
        head_commit_at=datetime(2022, 1, 1, tzinfo=UTC),
        changed_paths=["a.py"],
    )
    async with watching_scans(infra) as scans, running_scanner(infra, scanner_settings(), {tenant}):
        for event in (dated, undated, older):
            await request_index(infra, event)
            scanned = await scans.wait(event.request_id)
            assert (scanned["status"], scanned["mode"]) == ("ok", "incremental"), scanned
    rows = {
        r["path"]: (r["last_commit"], r["last_modified_at"])
        for r in await query(
            infra,
            tenant,
            "SELECT path, last_commit, last_modified_at FROM file_recency WHERE repository_id = %s",
            repo,
        )
    }
    assert rows == {
        "a.py": ("b" * 40, head_at),  # the late, older push does not move it back
        "new.py": ("b" * 40, head_at),
        "b.md": ("c" * 40, None),  # changed at an unknown time: unknown, not now()
        "n2.py": ("c" * 40, None),
        "keep.py": ("a" * 40, datetime(2020, 1, 1, tzinfo=UTC)),
    }
    [scan] = await query(
        infra, tenant, "SELECT mode, counted_commits FROM recency_scans WHERE repository_id = %s", repo
    )
    assert (scan["mode"], scan["counted_commits"]) == ("incremental", 7)


async def test_local_sources_are_read_in_place_only_when_allowed(infra: Infra, tmp_path: Path) -> None:
    source = init_repo(tmp_path / "local")
    commit(source, "2022-02-02", {"notes.txt": "x", "main.go": "package main"})
    tenant = await create_tenant(infra.pool, "recency-local")
    repo = await register(infra, tenant, f"file://{source}", provider="local")
    refused = IndexRequested(tenant_id=tenant, repository_id=repo)
    allowed = IndexRequested(tenant_id=tenant, repository_id=repo)
    async with watching_scans(infra) as scans:
        async with running_scanner(infra, scanner_settings(allow_local_sources=False), {tenant}):
            await request_index(infra, refused)
            first = await scans.wait(refused.request_id)
        async with running_scanner(infra, scanner_settings(allow_local_sources=True), {tenant}):
            await request_index(infra, allowed)
            second = await scans.wait(allowed.request_id)
    assert (first["status"], first["reason"]) == ("failed", "source_refused")
    assert (second["status"], second["files"], second["pairs"]) == ("ok", 2, 1)
    assert await _dates(infra, tenant, repo) == {"notes.txt": "2022-02-02", "main.go": "2022-02-02"}


async def test_a_window_and_an_incomplete_push_both_scan_in_full(infra: Infra, tmp_path: Path) -> None:
    source = init_repo(tmp_path / "windowed")
    commit(source, "2021-01-01", {"old.py": "1", "kept.md": "1"})
    commit(source, "2024-01-01", {"kept.md": "2", "new.py": "1"})
    tenant = await create_tenant(infra.pool, "recency-window")
    repo = await register(infra, tenant, str(source), provider="local")
    event = IndexRequested(  # the push's path list was truncated: only a full scan is right
        tenant_id=tenant, repository_id=repo, reason="push", changed_paths=["new.py"], paths_complete=False
    )
    settings = scanner_settings(allow_local_sources=True, recency_window="2023-01-01")
    async with watching_scans(infra) as scans, running_scanner(infra, settings, {tenant}):
        await request_index(infra, event)
        scanned = await scans.wait(event.request_id)
    assert (scanned["status"], scanned["mode"], scanned["commits"]) == ("ok", "full", 1)
    # old.py last changed before the window: absent, so its age reads as unknown
    assert await _dates(infra, tenant, repo) == {"kept.md": "2024-01-01", "new.py": "2024-01-01"}


async def test_a_deleted_repository_is_reported_failed_and_acknowledged(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "recency-gone")
    event = IndexRequested(tenant_id=tenant, repository_id=uuid7())
    async with watching_scans(infra) as scans, running_scanner(infra, scanner_settings(), {tenant}):
        await request_index(infra, event)
        scanned = await scans.wait(event.request_id)
    assert (scanned["status"], scanned["reason"]) == ("failed", "repository_not_found")


async def test_the_listing_follows_the_newest_ready_snapshot(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "recency-listing")
    repo = await register(infra, tenant, "https://git.example.invalid/team/app.git")
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT to_regclass('code_index_files') IS NOT NULL AS present")
        if not (await cur.fetchone())["present"]:  # type: ignore[index]
            pytest.skip("the code index tables do not exist in this schema")
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at) VALUES"
            " (%(t)s, %(r)s, 'guide.md', NULL, '2020-01-01T00:00:00Z'),"
            " (%(t)s, %(r)s, 'a.py', NULL, '2023-01-01T00:00:00Z'),"
            " (%(t)s, %(r)s, 'gone.py', NULL, '2023-01-01T00:00:00Z')",
            {"t": tenant, "r": repo},
        )
        old, new = uuid7(), uuid7()
        for snapshot, state in ((old, "superseded"), (new, "ready")):
            await conn.execute(
                "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, state)"
                " VALUES (%s, %s, %s, %s, %s)",
                (tenant, repo, snapshot, "e" * 40, state),
            )
        for snapshot, path in ((old, "gone.py"), (new, "guide.md"), (new, "a.py"), (new, "b.py")):
            await conn.execute(
                "INSERT INTO code_index_files (tenant_id, snapshot_id, path, blob_sha) VALUES (%s, %s, %s, %s)",
                (tenant, snapshot, path, "f" * 40),
            )
        listing = await list_recency(conn, repo)
    assert listing.source == "snapshot" and listing.snapshot_id == new
    assert [(e.path, e.kind, e.last_modified_at, e.stale) for e in listing.entries] == [
        ("guide.md", "doc", datetime(2020, 1, 1, tzinfo=UTC), True),
        ("a.py", "code", datetime(2023, 1, 1, tzinfo=UTC), False),
        ("b.py", "code", None, False),
    ]
    assert listing.entries[0].age == "3 years older than typical code in this repo"


async def test_bootstrap_builds_the_service_from_the_process_settings(infra: Infra) -> None:
    service = bootstrap(infra)
    assert service.name == "recency-scanner"
    assert list(service.handlers) == ["index.requested"]
    assert service.consumer is not None
    assert service.consumer.event_types == ("index.requested",)


async def test_a_local_bare_repository_without_a_config_file_is_still_scanned(
    infra: Infra, served: Path
) -> None:
    bare = served / "team/app.git"
    (bare / "config").unlink()  # as some mirrors ship: git cannot tell if it is a partial clone
    tenant = await create_tenant(infra.pool, "recency-noconfig")
    repo = await register(infra, tenant, str(bare), provider="local")
    event = IndexRequested(tenant_id=tenant, repository_id=repo)
    settings = scanner_settings(allow_local_sources=True)
    async with watching_scans(infra) as scans, running_scanner(infra, settings, {tenant}):
        await request_index(infra, event)
        scanned = await scans.wait(event.request_id)
    assert scanned["status"] == "ok", scanned
    assert await _dates(infra, tenant, repo) == EXPECTED


async def test_a_mailmap_at_the_head_does_not_need_a_blob(infra: Infra, tmp_path: Path, clones: Path) -> None:
    # log.mailmap (on by default) reads HEAD:.mailmap, which a blob-less clone does not have
    source = init_repo(tmp_path / "mailmapped")
    commit(source, "2023-01-01", {"a.py": "1", ".mailmap": "Real Name <real@x.invalid> <old@x.invalid>\n"})
    commit(source, "2024-01-01", {"a.py": "2"})
    root = tmp_path / "served-mailmap"
    root.mkdir()
    git(root, "clone", "-q", "--bare", str(source), "team/mm.git")
    tenant = await create_tenant(infra.pool, "recency-mailmap")
    with GitHttpServer(root, authorization=None) as server:
        repo = await register(infra, tenant, server.url("team/mm.git"))
        event = IndexRequested(tenant_id=tenant, repository_id=repo)
        settings = scanner_settings(recency_tmp_dir=clones)
        async with watching_scans(infra) as scans, running_scanner(infra, settings, {tenant}):
            await request_index(infra, event)
            scanned = await scans.wait(event.request_id)
    assert scanned["status"] == "ok", scanned
    assert await _dates(infra, tenant, repo) == {"a.py": "2024-01-01", ".mailmap": "2023-01-01"}


async def test_the_listing_is_judged_once_per_scan(infra: Infra) -> None:
    """The verdicts are kept per (snapshot, scan): the same scan answers the same listing, a new
    scan's dates are read again."""
    tenant = await create_tenant(infra.pool, "recency-listing-kept")
    repo = await register(infra, tenant, "https://git.example.invalid/team/kept.git")
    scan = (
        "INSERT INTO recency_scans (tenant_id, repository_id, status, request_id) VALUES (%s, %s, 'ok', %s)"
    )
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at) VALUES"
            " (%(t)s, %(r)s, 'guide.md', NULL, '2020-01-01T00:00:00Z'),"
            " (%(t)s, %(r)s, 'a.py', NULL, '2023-01-01T00:00:00Z')",
            {"t": tenant, "r": repo},
        )
        await conn.execute(scan, (tenant, repo, uuid7()))
        first = await list_recency(conn, repo)
        first.entries.clear()  # the caller's own list: the kept one is not touched
        again = await list_recency(conn, repo)
        assert [(e.path, e.stale) for e in again.entries] == [("guide.md", True), ("a.py", False)]
        await conn.execute(
            "UPDATE file_recency SET last_modified_at = '2023-06-01T00:00:00Z' WHERE repository_id = %s"
            " AND path = 'guide.md'",
            (repo,),
        )
        await conn.execute("DELETE FROM recency_scans WHERE repository_id = %s", (repo,))
        await conn.execute(scan, (tenant, repo, uuid7()))  # the scan that wrote the new date
        rescanned = await list_recency(conn, repo)
    assert [(e.path, e.stale) for e in rescanned.entries] == [("a.py", False), ("guide.md", False)]
