"""A TypeScript workspace through the real build: the chunker indexes a repository made here,
the graph is resolved from the stored facts (and read back under the tenant's RLS).

The app imports its sibling package by name (an ``exports`` map whose targets are built
files), calls ``z.union()`` on the namespace, and the package's entry reaches the definition
only through a chain of ``export *`` barrels. Decoys define ``union`` where a bare-name match
would look: a superseded ``v3`` folder, a test helper and a benchmark.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest

from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from palimpsest.index.graph import GraphCache, graph_context, snapshot_graph
from palimpsest.index.graph.model import EdgeKind
from tests.integration.graph.support import index_path, running_chunker
from tests.support.gitrepo import commit, init_repo
from tests.support.tenants import create_tenant

KIT = {
    "name": "@acme/kit",
    "main": "./dist/index.cjs",
    "exports": {
        ".": {"types": "./dist/index.d.ts", "import": "./dist/index.mjs", "require": "./dist/index.cjs"}
    },
}
FILES = {
    "package.json": json.dumps({"name": "root", "private": True, "workspaces": ["packages/*"]}),
    "packages/kit/package.json": json.dumps(KIT),
    "packages/kit/src/index.ts": 'export * from "./v4/index"\n',
    "packages/kit/src/v4/index.ts": 'export * from "./classic/external"\n',
    "packages/kit/src/v4/classic/external.ts": 'export * as core from "../core/api"\nexport * from "./schemas"\n',
    "packages/kit/src/v4/classic/schemas.ts": "export function union(options: unknown[]) {\n  return options\n}\n",
    "packages/kit/src/v4/core/api.ts": "export function parse(input: unknown) {\n  return input\n}\n",
    "packages/kit/src/v3/types.ts": "export function union(options: unknown[]) {\n  return [options]\n}\n",
    "packages/kit/src/helpers/union.test.ts": "export function union() {\n  return 0\n}\n",
    "packages/bench/union.bench.ts": "export function union() {\n  return 0\n}\n",
    "packages/app/package.json": json.dumps({"name": "@acme/app"}),
    "packages/app/src/main.ts": (
        'import * as z from "@acme/kit"\n\nexport function schema() {\n  return z.union([1, 2])\n}\n'
    ),
}


@dataclass
class Indexed:
    tenant: uuid.UUID
    repository_id: uuid.UUID


@pytest.fixture(scope="module")
async def indexed(infra: Infra, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    repo = init_repo(tmp_path_factory.mktemp("workspace") / "repo")
    commit(repo, "2024-05-01", FILES)
    tenant = await create_tenant(infra.pool, "workspace")
    async with running_chunker(infra):
        repo_id, built = await index_path(infra, tenant, repo)
    assert built.state == "ready", built
    return Indexed(tenant, repo_id)


async def test_a_member_call_on_a_workspace_package_reaches_its_definition_through_the_barrels(
    infra: Infra, indexed: Indexed
) -> None:
    async with tenant_tx(infra.pool, indexed.tenant) as conn:
        _, graph, report = await snapshot_graph(conn, indexed.repository_id, cache=GraphCache())
        context = await graph_context(
            conn, indexed.repository_id, ["packages/app/src/main.ts"], hops=1, cache=GraphCache()
        )
    app = graph.path_node("packages/app/src/main.ts")
    assert app is not None
    targets = {
        graph.paths[graph.node_owner[edge.target]]: edge.kind
        for node in graph.path_nodes[graph.node_owner[app]]
        for edge in graph.edges(node)
        if not edge.backward
    }
    # the package self-import: the exports map's built target maps back to src/index.ts
    assert targets["packages/kit/src/index.ts"] == EdgeKind.IMPORTS
    # the member call lands on the definition the barrels re-export, and on no decoy
    used = {path for path, kind in targets.items() if kind in (EdgeKind.REFERENCES, EdgeKind.CALLS)}
    assert used == {"packages/kit/src/v4/classic/schemas.ts"}
    # the barrel hops stay in the graph
    index = graph.path_node("packages/kit/src/v4/index.ts")
    assert index is not None
    assert {graph.paths[graph.node_owner[e.target]] for e in graph.edges(index) if not e.backward} == {
        "packages/kit/src/v4/classic/external.ts"
    }
    assert report.barrels == 3
    assert report.workspace_packages == 3
    assert report.routes["barrel"] >= 1
    assert "packages/kit/src/v4/classic/schemas.ts" in {entry.path for entry in context.entries}
