"""Deleting a tenant leaves no row of it in any table, takes nothing of another tenant, and can
be run again (after a crash midway, or a second time) with the same result.

The tenant is filled through the product's own flows — the API (installations, repositories,
tokens, links, a diff review submission, the audit log), signed webhooks (deliveries, events), the
real chunker and recency-scanner (snapshots, blobs, chunks, recency, co-change), the analyzer and
the reviewer through the bus (analyses, reviews with a model on the local fake: findings, context,
LLM usage). The few tables no flow of the test fills get one row each by SQL, named in
``NO_FLOW``. Every table with a ``tenant_id`` — found in the catalog —
must hold a row of the tenant before the deletion, so a table a later migration adds fails here
until it is seeded and deleted too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import psycopg
from pydantic import SecretStr

from palimpsest.cli.local import register_path
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import AnalysisCompleted, AnalysisRequested, ReviewCompleted, ReviewRequested
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.ingest.admin import deletion
from palimpsest.reviewer.service import Settings as ReviewerSettings
from palimpsest.reviewer.service import definition as reviewer_definition
from tests.integration.analyzer.support import (
    _scoped,
    analyzer_for,
    analyzer_settings,
    index,
    indexer_definitions,
    running,
)
from tests.integration.ingest.support import REPOS, Served, admin, deliver, new_tenant, populate
from tests.integration.ingest.test_web_ui import _signed_in
from tests.integration.security.catalog import tenant_rows, tenant_state
from tests.support.gitrepo import commit, git, init_repo
from tests.support.pipeline import request_and_wait
from tests.support.servers import ServerSet
from tests.support.tenant_tables import tenant_tables

# tables no flow of this test fills — they need routes and budgets an operator sets by SQL, an
# embedding model, a failure, a documentation claim the doc check resolves, the analyzer's
# debounce timer, or a review posted to a provider's pull request and its threads' feedback (the
# review here is a local one): one row each by SQL
NO_FLOW = (
    "llm_routes",
    "llm_budgets",
    "event_failures",
    "dead_letters",
    "code_chunk_embeddings",
    "analysis_schedule",
    "doc_findings",
    "review_pull_requests",
    "review_threads",
    "review_feedback",
)


def _repository(root: Path) -> tuple[Path, str, str]:
    repo = init_repo(root / "repo")
    files = {
        "src/app.py": "def handler():\n    return 1\n",
        "README.md": "# app\n",
        "docs/guide.md": "# Guide\n\nCall `start_engine` from `src/engine.py` to begin.\n",
    }
    commit(repo, "2024-01-01", files)
    base = commit(repo, "2024-02-01", {"src/app.py": "def handler():\n    return 2\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    feature = commit(repo, "2024-03-01", {"src/app.py": "def handler():\n    return 3\n"}, message="three")
    git(repo, "checkout", "-q", "main")
    return repo, base, feature


KEY = "sk-deletion-test"
FINDING = (
    '{"summary": "handler returns 3.", "findings": [{"path": "src/app.py", "start_line": 2, "end_line": 2,'
    ' "severity": "minor", "category": "bug", "message": "why 3?"}]}'
)


def _reviewer_settings(fake: FakeLLM) -> ReviewerSettings:
    values: dict[str, Any] = {
        "allow_local_sources": True,
        "ack_wait_s": 5.0,
        "llm_model": "openai/fake-model",
        "llm_api_base": fake.base_url,
        "llm_api_key": SecretStr(KEY),
        "llm_timeout_s": 5.0,
    }
    return ReviewerSettings.model_construct(**{**ReviewerSettings().model_dump(), **values})


async def _no_flow_rows(infra: Infra, tenant: UUID) -> None:
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO llm_routes (tenant_id, feature, model) VALUES (%s, 'review', 'local/none')",
            (tenant,),
        )
        await conn.execute("INSERT INTO llm_budgets (tenant_id, monthly_usd) VALUES (%s, 5)", (tenant,))
        await conn.execute(
            "INSERT INTO event_failures (consumer, event_id, tenant_id, last_error) VALUES ('t', %s, %s, 'x')",
            (uuid7(), tenant),
        )
        await conn.execute("SELECT palimpsest_embedding_partition(repository_id) FROM code_chunks LIMIT 1")
        await conn.execute(
            "INSERT INTO code_chunk_embeddings (tenant_id, repository_id, blob_sha, ordinal, model, embedding)"
            " SELECT tenant_id, repository_id, blob_sha, ordinal, 'local', ARRAY[0.5, 0.5]::real[]"
            " FROM code_chunks LIMIT 1"
        )
        await conn.execute(
            "INSERT INTO doc_findings (tenant_id, analysis_id, ordinal, repository_id, doc_path, kind, claim)"
            " SELECT tenant_id, analysis_id, 0, repository_id, 'docs/guide.md', 'missing_identifier', 'x'"
            " FROM analyses LIMIT 1"
        )
        await conn.execute(
            "INSERT INTO analysis_schedule (tenant_id, repository_id, snapshot_id, due_at)"
            " SELECT tenant_id, repository_id, snapshot_id, now() FROM code_index_snapshots LIMIT 1"
        )
        posted = "SELECT tenant_id, repository_id, 'github', 7, {} FROM reviews LIMIT 1"
        await conn.execute(
            "INSERT INTO review_pull_requests (tenant_id, repository_id, provider, number, review_id, head_sha,"
            " requested_at) " + posted.format("review_id, repeat('a', 40), now()")
        )
        await conn.execute(
            "INSERT INTO review_threads (tenant_id, repository_id, provider, number, fingerprint, thread_ref,"
            " review_id, path, category, severity) "
            + posted.format("repeat('f', 32), 'thread-1', review_id, 'src/app.py', 'bug', 'minor'")
        )
        await conn.execute(
            "INSERT INTO review_feedback (tenant_id, feedback_id, repository_id, provider, number, fingerprint,"
            " category, kind, source) SELECT tenant_id, %s, repository_id, 'github', 7, repeat('f', 32), 'bug',"
            " 'resolved', 'delivery:x' FROM reviews LIMIT 1",
            (uuid7(),),
        )
        await conn.execute(
            "INSERT INTO dead_letters (consumer, stream_seq, subject, tenant_id, payload, deliveries)"
            " VALUES ('t', %s, 's', %s, '\\x00', 1)",
            (int(uuid7().int % 2**62), tenant),
        )


def _partitions(owner_url: str, tenant: UUID) -> int:
    """The tenant's embeddings partitions (migration 0037 names the tenant in their comment)."""
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relispartition AND obj_description(oid, 'pg_class') LIKE %s",
            (f"% of tenant {tenant}",),
        ).fetchone()
    return int(row[0]) if row else 0


def _counts(owner_url: str, tenant: UUID) -> dict[str, int]:
    return {t: len(rows) for t, rows in tenant_rows(owner_url, tenant).items()}


async def test_deleting_a_tenant_leaves_nothing_of_it_and_nothing_else_goes(
    client: httpx.AsyncClient, served: Served, stack: ServerSet, infra: Infra, tmp_path: Path
) -> None:
    path, base, feature = _repository(tmp_path)
    # installations by the API; their repositories too, with indexing off (nothing leaves the machine)
    doomed = await populate(client, await new_tenant(client, "doomed"), repos=False)
    for name, (installation, url) in REPOS.items():
        body = {
            "url": url,
            "installation_id": doomed.installations[installation]["installation_id"],
            "index_mode": "off",
        }
        res = await client.post(doomed.path("/repositories"), json=body, headers=doomed.auth)
        assert res.status_code == 201, res.text
        doomed.repos[name] = res.json()
    keeper = await new_tenant(client, "keeper")
    pool = infra.pool
    doomed_repo = await register_path(pool, doomed.tenant_id, path)
    keeper_repo = await register_path(pool, keeper.tenant_id, path)
    tenants = {doomed.tenant_id, keeper.tenant_id}
    try:
        async with running(infra, indexer_definitions(tenants)):
            await index(infra, doomed.tenant_id, doomed_repo)
            await index(infra, keeper.tenant_id, keeper_repo)
        # analyses and reviews through the bus, as the CLI and the API request them
        gateway = Gateway(pool, analyzer_settings())
        fake = FakeLLM(reply=FINDING, api_key=KEY)
        fake.start()
        review_gateway = Gateway(pool, _reviewer_settings(fake))
        try:
            async with running(
                infra, [analyzer_for(infra, {doomed.tenant_id}, analyzer_settings(), gateway)]
            ):
                event = AnalysisRequested(tenant_id=doomed.tenant_id, repository_id=doomed_repo)
                await request_and_wait(infra, event, (AnalysisCompleted,), timeout_s=90)
            reviewer = _scoped(
                reviewer_definition(infra, _reviewer_settings(fake), gateway=review_gateway),
                tenants,
                "reviewer",
            )
            async with running(infra, [reviewer]):
                for tenant, repo in ((doomed.tenant_id, doomed_repo), (keeper.tenant_id, keeper_repo)):
                    asked = ReviewRequested(
                        tenant_id=tenant,
                        repository_id=repo,
                        base_sha=base,
                        head_sha=feature,
                        provider="local",
                    )
                    done = await request_and_wait(infra, asked, (ReviewCompleted,), timeout_s=90)
                    assert done[ReviewCompleted].state == "completed", done
        finally:
            await gateway.aclose()
            await review_gateway.aclose()
            fake.stop()
        # admin links: one of a repository, one organisation-wide pattern repository
        ledger, invoices = doomed.repos["github"]["repository_id"], doomed.repos["gitlab"]["repository_id"]
        for link in (
            {"role": "linked", "source_repository_id": str(doomed_repo), "target_repository_id": ledger},
            {"role": "pattern", "target_repository_id": invoices},
        ):
            res = await client.post(doomed.path("/links"), json=link, headers=doomed.auth)
            assert res.status_code == 201, res.text
        # the API and webhooks: a diff submission, a token revoked, deliveries, audit entries
        diff = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# app\n+# app!\n"
        res = await client.post(
            doomed.path(f"/repositories/{doomed_repo}/reviews"),
            json={"base": "main", "diff": diff},
            headers=doomed.auth,
        )
        assert res.status_code == 202, res.text
        for who in (doomed, keeper):
            res = await client.post(
                who.path("/tokens"), json={"name": "ci", "scopes": ["read"]}, headers=who.auth
            )
            assert res.status_code == 201, res.text
            async with httpx.AsyncClient(base_url=served.url) as browser:  # a web view session
                signed = await _signed_in(browser, who.token)
                assert signed.status_code == 303, signed.text
        res = await deliver(client, "github", "push_default_branch", "push", delivery=f"del-{uuid7().hex}")
        assert res.status_code == 202, res.text
        await _no_flow_rows(infra, doomed.tenant_id)

        before = _counts(stack.owner_url, doomed.tenant_id)
        assert _partitions(stack.owner_url, doomed.tenant_id) == 1
        empty = sorted(t for t, n in before.items() if n == 0)
        assert empty == [], f"tables without a row of the tenant before the deletion: {empty}"
        with psycopg.connect(stack.owner_url) as conn:
            assert {t["table"] for t in tenant_tables(conn)} == set(before)
        kept = tenant_state(stack.owner_url, keeper.tenant_id)

        # a crash midway: the mark and a part of the tables done, the rest (and the tenant row) left
        async with tenant_tx(pool, doomed.tenant_id) as conn:
            await conn.execute(
                "UPDATE tenants SET deleting_at = now() WHERE tenant_id = %s", (doomed.tenant_id,)
            )
        tables = await deletion.tenant_tables(pool)
        for table in tables[: len(tables) // 2]:
            if table not in ("repositories", "installations"):
                await deletion._empty(pool, doomed.tenant_id, table)
        served.ctx.tokens.clear()  # as another replica sees it once its lookup cache expires
        assert (await client.get(doomed.path(), headers=doomed.auth)).status_code == 401
        res = await deliver(client, "github", "push_default_branch", "push", delivery=f"del-{uuid7().hex}")
        assert res.status_code in (200, 202, 404), res.text

        res = await client.delete(f"/v1/tenants/{doomed.tenant_id}", headers=admin())
        assert res.status_code == 200, res.text
        report = res.json()
        assert report["existed"] is True and report["deleted_rows"] > 0
        after = _counts(stack.owner_url, doomed.tenant_id)
        assert {t: n for t, n in after.items() if n} == {}
        assert _partitions(stack.owner_url, doomed.tenant_id) == 0  # its embeddings partitions too
        assert tenant_state(stack.owner_url, keeper.tenant_id) == kept

        # idempotent: again, nothing to do, same answer shape; the operator's list has it no more
        res = await client.delete(f"/v1/tenants/{doomed.tenant_id}", headers=admin())
        assert res.status_code == 200 and res.json()["existed"] is False and res.json()["deleted_rows"] == 0
        listed = (await client.get("/v1/tenants", headers=admin())).json()["items"]
        assert str(doomed.tenant_id) not in {t["tenant_id"] for t in listed}
        assert str(keeper.tenant_id) in {t["tenant_id"] for t in listed}
        assert (await client.get(keeper.path(), headers=keeper.auth)).status_code == 200
    finally:
        for tenant in tenants:
            await deletion.delete_tenant(served.ctx, tenant)
