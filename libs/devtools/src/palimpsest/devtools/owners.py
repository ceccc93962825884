"""The "owns (writes)" column of docs/architecture.md's service table, derived from the stores.

Every store module declares ``STORE = Store(...)`` (:mod:`palimpsest.core.stores`); this module finds
them in the source, collects what each service writes, and rewrites the third cell of each service's
row of the table, and the list of derived caches (tables no one service owns, :data:`CACHE`) between
``<!-- owners:caches -->`` and ``<!-- /owners:caches -->``. Regenerate with ``make owners-doc``
(``python -m palimpsest.devtools.owners docs/architecture.md``; ``--check`` only reports);
``tests/unit/devtools/test_store_owners.py`` fails while the document is out of date.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import palimpsest
from palimpsest.core.stores import CACHE, Owns, Store
from palimpsest.core.topology import SERVICES, rewrite_generated

__all__ = [
    "cache_lines",
    "declares_store",
    "document_caches",
    "owned_by_service",
    "owner_cells",
    "render",
    "store_modules",
]


def declares_store(tree: ast.Module) -> bool:
    """Whether a module's top level assigns ``STORE``."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "STORE" for t in targets):
            return True
    return False


def _source_roots() -> list[Path]:
    return sorted({Path(p) for p in palimpsest.__path__})


def store_modules(roots: Iterable[Path] | None = None) -> dict[str, Store]:
    """Module name → its declaration, for every store module of the first-party source, ordered
    by name with a package after its modules (a package's own declaration gathers the tables
    whose statements have not yet moved into a module of it)."""
    found: dict[str, Store] = {}
    order: dict[str, str] = {}
    for root in roots if roots is not None else _source_roots():
        for path in sorted(root.rglob("*.py")):
            if not declares_store(ast.parse(path.read_text(encoding="utf-8"))):
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(("palimpsest", *parts))
            order[name] = name + (".~" if path.name == "__init__.py" else "")
            store = importlib.import_module(name).STORE
            if not isinstance(store, Store):
                raise TypeError(f"{name}.STORE is not a palimpsest.core.stores.Store")
            found[name] = store
    return {name: found[name] for name in sorted(found, key=order.__getitem__)}


def owned_by_service(stores: dict[str, Store]) -> dict[str, list[Owns]]:
    """Service → the tables (and parts) it writes, in the stores' order, each once."""
    owned: dict[str, list[Owns]] = {}
    # a service's own stores first, then its parts of the stores it shares (``Owns.by``)
    for shared in (False, True):
        for store in stores.values():
            for owner, owns in store.owned():
                if (owns.by is not None) == shared and owns not in owned.setdefault(owner, []):
                    owned[owner].append(owns)
    return owned


def owner_cells(stores: dict[str, Store]) -> dict[str, str]:
    """Service → the text of its "owns (writes)" cell."""
    owned = owned_by_service(stores)
    return {service: ", ".join(o.text() for o in owned.get(service, [])) for service in SERVICES}


def cache_lines(stores: dict[str, Store]) -> str:
    """The derived caches' list: one Markdown item per table a :data:`CACHE` store writes, with
    the store that holds its statements."""
    return "".join(
        f"- {owns.text()}: `{name}`\n"
        for name, store in stores.items()
        for owner, owns in store.owned()
        if owner == CACHE
    )


_CACHES = re.compile(r"(<!-- owners:caches -->\n)(.*?)(<!-- /owners:caches -->)", re.DOTALL)


def document_caches(text: str) -> str | None:
    """The derived caches' list the document has now (None: it has no such block)."""
    m = _CACHES.search(text)
    return m[2] if m else None


_ROW = re.compile(r"^\| (?P<service>[a-z-]+) \| (?P<does>.*?) \| (?P<owns>.*) \|$")


def render(text: str, cells: dict[str, str], caches: str | None = None) -> str:
    """``text`` with the third cell of each service's table row set from ``cells``, and its
    derived caches' block (if it has one) from ``caches``."""
    out = []
    for line in text.split("\n"):
        m = _ROW.match(line)
        hit = m is not None and m["service"] in cells
        out.append(f"| {m['service']} | {m['does']} | {cells[m['service']]} |" if m and hit else line)
    rendered = "\n".join(out)
    if caches is None:
        return rendered
    return _CACHES.sub(lambda m: m[1] + caches + m[3], rendered)


def document_cells(text: str) -> dict[str, str]:
    """Service → the "owns (writes)" cell the document has now."""
    return {
        m["service"]: m["owns"]
        for line in text.split("\n")
        if (m := _ROW.match(line)) and m["service"] in SERVICES
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m palimpsest.devtools.owners",
        description='Rewrite the "owns (writes)" cells of the service table and the derived caches\' list'
        " from the stores' declarations.",
    )
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 when a file is out of date"
    )
    args = parser.parse_args(argv)
    stores = store_modules()
    cells, caches = owner_cells(stores), cache_lines(stores)
    return rewrite_generated(args.files, lambda text: render(text, cells, caches), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
