"""The "owns (writes)" column of docs/architecture.md is derived from the stores' declarations.

Each store module declares ``STORE = Store(owner, writes, reads)`` (:mod:`palimpsest.core.stores`);
the document's service table must say exactly what they declare. ``make owners-doc`` rewrites it.
"""

from __future__ import annotations

from pathlib import Path

from palimpsest.core.stores import CACHE, CORE, Owns, Store
from palimpsest.core.topology import SERVICES
from palimpsest.devtools.owners import (
    cache_lines,
    document_caches,
    document_cells,
    owned_by_service,
    owner_cells,
    render,
    store_modules,
)

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs/architecture.md"


def test_the_stores_are_found() -> None:
    stores = store_modules()
    assert "palimpsest.ingest.store.repositories" in stores
    assert "palimpsest.chunker.store" in stores
    assert "palimpsest.reviewer.store" in stores


def test_every_owner_is_a_service_the_core_or_a_cache() -> None:
    owners = {owner for store in store_modules().values() for owner, _ in store.owned()}
    assert owners <= {*SERVICES, CORE, CACHE}
    assert set(SERVICES) <= owners, "every service owns a table"


def test_the_document_says_what_the_stores_declare() -> None:
    derived = owner_cells(store_modules())
    written = document_cells(ARCHITECTURE.read_text(encoding="utf-8"))
    assert set(written) == set(SERVICES), "the service table has a row per service"
    assert written == derived, "docs/architecture.md's owner table is out of date: run `make owners-doc`"


def test_the_document_lists_the_derived_caches() -> None:
    stores = store_modules()
    assert stores["palimpsest.index.graph.store"].owned() == [
        (CACHE, Owns("code_graphs", "a snapshot's resolved graph"))
    ]
    written = document_caches(ARCHITECTURE.read_text(encoding="utf-8"))
    assert written is not None, "docs/architecture.md has no <!-- owners:caches --> block"
    assert written == cache_lines(stores), (
        "docs/architecture.md's caches are out of date: run `make owners-doc`"
    )


def test_a_derived_cache_is_no_services_table() -> None:
    stores = {
        "palimpsest.a.store": Store(owner="reviewer", writes=(Owns("reviews"),)),
        "palimpsest.b.store": Store(owner=CACHE, writes=(Owns("code_graphs", "a graph"),)),
    }
    assert owner_cells(stores)["reviewer"] == "`reviews`"
    assert cache_lines(stores) == "- `code_graphs` (a graph): `palimpsest.b.store`\n"
    text = "before\n<!-- owners:caches -->\n- `old`: `x`\n<!-- /owners:caches -->\nafter"
    fresh = render(text, {}, cache_lines(stores))
    assert document_caches(fresh) == cache_lines(stores)
    assert fresh.startswith("before\n") and fresh.endswith("\nafter")
    assert render(text, {}) == text


def test_the_cells_are_derived_from_the_declarations() -> None:
    stores = {
        "palimpsest.a.store": Store(owner="ingest", writes=(Owns("tenants"), Owns("repositories"))),
        "palimpsest.b.store": Store(
            owner=CORE,
            writes=(Owns("repository_outcomes", "kind `build`", by="chunker"), Owns("outbox")),
        ),
        "palimpsest.c.store": Store(
            owner="chunker", writes=(Owns("repositories", "its `index_updated_at`"),)
        ),
    }
    owned = owned_by_service(stores)
    assert owned[CORE] == [Owns("outbox")]
    cells = owner_cells(stores)
    assert cells["ingest"] == "`tenants`, `repositories`"
    assert cells["chunker"] == "`repositories` (its `index_updated_at`), `repository_outcomes` (kind `build`)"
    assert cells["reviewer"] == ""


def test_rendering_rewrites_only_the_owner_cells() -> None:
    text = "\n".join(
        [
            "| service | what it does | owns (writes) |",
            "| --- | --- | --- |",
            "| ingest | the only door | tenants, the old words |",
            "| other | not a service | x |",
            "prose | with | bars |",
        ]
    )
    fresh = render(text, {"ingest": "`tenants`"})
    assert fresh.split("\n")[2] == "| ingest | the only door | `tenants` |"
    assert fresh.split("\n")[3:] == text.split("\n")[3:]
    assert fresh.split("\n")[:2] == text.split("\n")[:2]
