"""The /v1 read side over real HTTP: snapshots, search, graph context, the index report, analyses,
and tenant isolation of every one of these routes.

A real repository is indexed by the real chunker and recency-scanner; analyses are made by the
real analyzer service (no model: the mechanical report) after a request through the API.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from palimpsest.cli.local import register_path
from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.core.service import Infra
from palimpsest.ingest.api import v1_analyses, v1_index, v1_reviews
from tests.integration.analyzer.support import analyzer_for, analyzer_settings, running
from tests.integration.ingest.read_support import Indexed, indexed_world, poll
from tests.integration.ingest.support import Served, drop_tenant, new_tenant
from tests.support.gitrepo import commit, init_repo


@pytest.fixture(scope="module")
async def indexed(client: httpx.AsyncClient, served: Served, tmp_path_factory: pytest.TempPathFactory) -> Any:
    async with indexed_world(
        client, served.infra, tmp_path_factory.mktemp("read-api") / "repo", "reader"
    ) as w:
        yield w


async def _request_analysis(client: httpx.AsyncClient, infra: Infra, w: Indexed) -> dict[str, Any]:
    """POST an analysis request with the analyzer running; the analysis stored for that request."""
    async with running(infra, [analyzer_for(infra, {w.world.tenant_id}, analyzer_settings())]):
        posted = await client.post(w.repo_path("/analyses"), json={}, headers=w.world.auth)
        assert posted.status_code == 202, posted.text
        request_id = posted.json()["request_id"]

        async def listed() -> httpx.Response:
            return await client.get(w.repo_path("/analyses"), headers=w.world.auth)

        found = await poll(listed, lambda r: any(i["request_id"] == request_id for i in r.json()["items"]))
    return next(i for i in found.json()["items"] if i["request_id"] == request_id)


@pytest.fixture(scope="module")
async def analysed(client: httpx.AsyncClient, served: Served, indexed: Indexed) -> dict[str, Any]:
    return await _request_analysis(client, served.infra, indexed)


async def test_snapshots_show_state_counts_and_embedding_state(
    client: httpx.AsyncClient, indexed: Indexed
) -> None:
    auth = indexed.world.auth
    listed = await client.get(indexed.repo_path("/snapshots"), headers=auth)
    assert listed.status_code == 200, listed.text
    items = listed.json()["items"]
    assert [i["snapshot_id"] for i in items] == [str(indexed.snapshot_id)]
    snap = items[0]
    assert snap["state"] == "ready" and snap["reason"] is None
    assert snap["commit_sha"] == indexed.repo["base"]
    assert snap["files"] == 4 and snap["chunks"] > 0 and snap["symbols"] > 0
    assert isinstance(snap["skipped"], dict) and snap["embedding_state"]
    assert snap["duration_s"] is not None and snap["ready_at"] is not None
    one = await client.get(indexed.path(f"/snapshots/{indexed.snapshot_id}"), headers=auth)
    assert one.status_code == 200 and one.json() == snap
    # pagination: a full page says where to continue; the page after the last is empty
    page = (await client.get(indexed.repo_path("/snapshots?limit=1"), headers=auth)).json()
    assert page["next_before"] == str(indexed.snapshot_id)
    after = (
        await client.get(indexed.repo_path(f"/snapshots?before={page['next_before']}"), headers=auth)
    ).json()
    assert after == {"items": [], "next_before": None}
    missing = uuid.uuid4()
    assert (await client.get(indexed.path(f"/snapshots/{missing}"), headers=auth)).status_code == 404
    gone = await client.get(indexed.path(f"/repositories/{missing}/snapshots"), headers=auth)
    assert gone.status_code == 404 and gone.json()["detail"] == "no such repository"


async def test_search_lexical_with_filters(client: httpx.AsyncClient, indexed: Indexed) -> None:
    auth = indexed.world.auth
    res = await client.get(indexed.repo_path("/search"), params={"q": "compute_total"}, headers=auth)
    assert res.status_code == 200, res.text
    body = res.json()
    assert (body["mode"], body["semantic"], body["snapshot_id"]) == (
        "lexical",
        "not_requested",
        str(indexed.snapshot_id),
    )
    assert body["hits"][0]["path"] == "src/billing.py" and body["hits"][0]["name"] == "compute_total"
    assert "def compute_total" in body["hits"][0]["content"]
    assert {h["path"] for h in body["hits"]} >= {"src/billing.py", "src/invoice.py"}
    only = await client.get(
        indexed.repo_path("/search"), params={"q": "compute_total", "path_prefix": "src/inv"}, headers=auth
    )
    assert {h["path"] for h in only.json()["hits"]} == {"src/invoice.py"}
    one = await client.get(
        indexed.repo_path("/search"), params={"q": "compute_total", "limit": 1}, headers=auth
    )
    assert len(one.json()["hits"]) == 1
    nothing = await client.get(indexed.repo_path("/search"), params={"q": "?!"}, headers=auth)
    assert nothing.status_code == 400 and "no searchable words" in nothing.json()["detail"]
    bad = await client.get(indexed.repo_path("/search"), params={"q": "x", "limit": 0}, headers=auth)
    assert bad.status_code == 422


async def test_hybrid_search_says_why_the_semantic_half_is_unavailable(
    client: httpx.AsyncClient, indexed: Indexed
) -> None:
    # a lexical-mode index has no embeddings: the answer is the lexical ranking, with the reason
    res = await client.get(
        indexed.repo_path("/search"),
        params={"q": "compute_total", "mode": "hybrid"},
        headers=indexed.world.auth,
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert (body["mode"], body["semantic"]) == ("lexical", "unavailable")
    assert body["reason"].split(":")[0] in {"pgvector_missing", "no_embeddings"}
    assert body["hits"] and body["hits"][0]["path"] == "src/billing.py"


async def test_search_of_an_unindexed_repository_is_a_conflict(
    client: httpx.AsyncClient, served: Served, indexed: Indexed, tmp_path: Path
) -> None:
    bare = init_repo(tmp_path / "unindexed")
    commit(bare, "2024-01-01T00:00:00+00:00", {"a.py": "x = 1\n"})
    repo_id = await register_path(served.ctx.pool, indexed.world.tenant_id, bare)
    base = indexed.path(f"/repositories/{repo_id}")
    for suffix, params in (("/search", {"q": "x"}), ("/context", {"seed": "a.py"}), ("/index-report", {})):
        res = await client.get(base + suffix, params=params, headers=indexed.world.auth)
        assert res.status_code == 409 and "no ready snapshot" in res.json()["detail"], (suffix, res.text)
    posted = await client.post(base + "/analyses", json={}, headers=indexed.world.auth)
    assert posted.status_code == 409


async def test_graph_context_and_unmatched_seeds(client: httpx.AsyncClient, indexed: Indexed) -> None:
    auth = indexed.world.auth
    res = await client.get(indexed.repo_path("/context"), params={"seed": "src/billing.py"}, headers=auth)
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["seeds"] and "src/billing.py" in body["seeds"]
    assert (body["hops"], body["budget"], body["commit"]) == (1, 2000, indexed.repo["base"])
    paths = [r["path"] for r in body["results"]]
    assert "src/invoice.py" in paths  # it imports compute_total from billing
    assert all(r["reason"] and r["tokens"] >= 0 for r in body["results"])
    two = await client.get(
        indexed.repo_path("/context"),
        params=[("seed", "src/billing.py"), ("seed", "compute_total"), ("hops", "all"), ("budget", "50")],
        headers=auth,
    )
    assert two.status_code == 200 and set(two.json()["seeds"]) == {"src/billing.py", "compute_total"}
    assert two.json()["hops"] is None and two.json()["tokens"] <= 50
    unknown = await client.get(
        indexed.repo_path("/context"),
        params=[("seed", "src/billing.py"), ("seed", "no_such_thing")],
        headers=auth,
    )
    assert unknown.status_code == 404 and "no_such_thing" in unknown.json()["detail"]
    assert "matches no file" in unknown.json()["detail"]
    for bad in ({"seed": "x", "hops": "0"}, {"seed": "x", "budget": "0"}, {}):
        assert (await client.get(indexed.repo_path("/context"), params=bad, headers=auth)).status_code == 422


async def test_index_report(client: httpx.AsyncClient, indexed: Indexed) -> None:
    res = await client.get(indexed.repo_path("/index-report"), headers=indexed.world.auth)
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["snapshot_id"] == str(indexed.snapshot_id) and body["commit"] == indexed.repo["base"]
    assert body["files"] == 4 and body["nodes"] > 0
    assert {"resolved", "unresolved", "external_packages"} <= set(body["imports"])


async def test_analyses_requested_through_the_api(
    client: httpx.AsyncClient, served: Served, indexed: Indexed, analysed: dict[str, Any]
) -> None:
    auth = indexed.world.auth
    assert analysed["state"] == "completed" and analysed["mode"] == "mechanical"
    assert analysed["snapshot_id"] == str(indexed.snapshot_id) and analysed["commit"] == indexed.repo["base"]
    full = await client.get(indexed.path(f"/analyses/{analysed['analysis_id']}"), headers=auth)
    assert full.status_code == 200, full.text
    body = full.json()
    assert body["request_id"] == analysed["request_id"] and body["repository"] == "repo"
    assert "Documentation Accuracy" in body["analysis"]
    assert isinstance(body["doc_findings"], list) and len(body["doc_findings"]) == analysed["doc_findings"]
    assert all({"doc", "line", "claim", "kind"} <= set(f) for f in body["doc_findings"])
    assert body["selection"]
    # a second request, then pagination newest first
    second = await _request_analysis(client, served.infra, indexed)
    page = (await client.get(indexed.repo_path("/analyses?limit=1"), headers=auth)).json()
    assert [i["analysis_id"] for i in page["items"]] == [second["analysis_id"]]
    rest = await client.get(
        indexed.repo_path(f"/analyses?limit=1&before={page['next_before']}"), headers=auth
    )
    assert [i["analysis_id"] for i in rest.json()["items"]] == [analysed["analysis_id"]]
    missing = await client.get(indexed.path(f"/analyses/{uuid.uuid4()}"), headers=auth)
    assert missing.status_code == 404
    wrong = await client.post(
        indexed.repo_path("/analyses"), json={"snapshot_id": str(uuid.uuid4())}, headers=auth
    )
    assert wrong.status_code == 404


# --------------------------------------------------------------------------- tenant isolation


def _read_routes() -> list[tuple[str, str]]:
    routers = (v1_index.router, v1_analyses.router, v1_reviews.router)
    return [
        (method, r.path)
        for router in routers
        for r in router.routes
        if isinstance(r, APIRoute)
        for method in sorted(r.methods)
    ]


def _fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


async def test_tenant_a_cannot_read_or_request_anything_of_tenant_b(
    client: httpx.AsyncClient, served: Served, indexed: Indexed, analysed: dict[str, Any]
) -> None:
    victim = indexed.world
    head = {"base": indexed.repo["base"], "head": indexed.repo["feature"]}
    posted = await client.post(indexed.repo_path("/reviews"), json=head, headers=victim.auth)
    assert posted.status_code == 202, posted.text
    request_id = posted.json()["request_id"]
    mine = await client.get(victim.path(f"/reviews/{request_id}"), headers=victim.auth)
    assert mine.status_code == 200 and mine.json()["request_id"] == request_id
    ids = {
        "tenant_id": str(victim.tenant_id),
        "repository_id": str(indexed.repository_id),
        "snapshot_id": str(indexed.snapshot_id),
        "analysis_id": analysed["analysis_id"],
        "review_id": request_id,
    }
    bodies: dict[str, dict[str, Any]] = {"/analyses": {}, "/reviews": head}
    params = {"/search": {"q": "compute_total"}, "/context": {"seed": "src/billing.py"}}
    routes = _read_routes()
    assert len(routes) == 12, routes  # 12: review-feedback (issue 21)
    before = await _requests_of(served, indexed)
    attacker = await new_tenant(client, "attacker")
    try:
        own = {**ids, "tenant_id": str(attacker.tenant_id)}
        for method, template in routes:
            tail = "/" + template.rsplit("/", 1)[-1]
            kw: dict[str, Any] = {"params": params.get(tail), "headers": attacker.auth}
            if method == "POST":
                kw["json"] = bodies[tail]
            res = await client.request(method, _fill(template, ids), **kw)
            assert res.status_code == 404, (method, template, res.status_code, res.text)
            res = await client.request(method, _fill(template, own), **kw)
            assert res.status_code == 404, (method, template, "own tenant", res.status_code, res.text)
            assert str(indexed.repository_id) not in res.text
        async with tenant_tx(served.ctx.pool, attacker.tenant_id) as conn:  # nor stored in A's
            assert await fetch_all(conn, "SELECT 1 FROM review_submissions") == []
    finally:
        await drop_tenant(served.ctx.pool, attacker.tenant_id)
    # nothing was requested in B's name
    assert await _requests_of(served, indexed) == before


async def _requests_of(served: Served, w: Indexed) -> tuple[int, int, int]:
    async with tenant_tx(served.ctx.pool, w.world.tenant_id) as conn:
        counts = [
            len(await fetch_all(conn, f"SELECT 1 FROM {table}"))
            for table in ("analyses", "reviews", "review_submissions")
        ]
    return counts[0], counts[1], counts[2]


async def test_openapi_documents_the_read_side(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    prefix = "/v1/tenants/{tenant_id}"
    for path in (
        "/repositories/{repository_id}/snapshots",
        "/snapshots/{snapshot_id}",
        "/repositories/{repository_id}/search",
        "/repositories/{repository_id}/context",
        "/repositories/{repository_id}/index-report",
        "/repositories/{repository_id}/analyses",
        "/analyses/{analysis_id}",
        "/repositories/{repository_id}/reviews",
        "/reviews/{review_id}",
    ):
        assert prefix + path in doc["paths"], path
    post = doc["paths"][prefix + "/repositories/{repository_id}/reviews"]["post"]
    assert "202" in post["responses"] and "400" in post["responses"]
    assert {"ReviewCreate", "Snapshot", "SearchResult", "GraphContext", "Analysis", "Review"} <= set(
        doc["components"]["schemas"]
    )
