"""SQL text lives only in store modules, the migrations and the measurement code (issue 53).

A store module declares ``STORE = Store(...)`` (:mod:`palimpsest.core.stores`): the tables it
writes and for which owner. Any other source module holding SQL text fails here, unless it is
listed in :data:`NOT_YET_MOVED` — modules whose statements have not yet moved into their table's
store. That list may only shrink: a listed module that no longer holds SQL, or has become a store,
fails too, so it is taken off the list when its statements move.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from palimpsest.devtools.owners import declares_store, store_modules

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*ROOT.glob("libs/*/src/palimpsest"), *ROOT.glob("services/*/src/palimpsest")])

# A statement's opening words at the start of a string, or its shape anywhere in one (a statement
# split over concatenated literals is one string to the parser). Keywords are upper case, as the
# source writes SQL; docstrings are prose, not statements.
_STARTS = re.compile(
    r"^\s*\(?\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|CREATE|ALTER|DROP"
    r"|TRUNCATE|LOCK\s+TABLE)\b"
)
_SHAPES = re.compile(
    r"\b(SELECT\b.*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS\s*\(|TRUNCATE\s"
    r"|CREATE\s+(TEMP|TABLE|INDEX|UNLOGGED)|DROP\s+TABLE|LOCK\s+TABLE)",
    re.S,
)
_WRITES = re.compile(r"(?<!FOR )(?<!DO )\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_]+)\b(?!\()")

# The migrations: the .sql files, and the runner that applies them.
MIGRATIONS = ("core/migrations/", "core/migrate.py")
# Measurement code: the benchmarks and the chaos soak's checks read the database directly.
MEASUREMENT = ("devtools/bench/", "devtools/chaos/")

# Modules whose statements have not yet moved into a store (relative to palimpsest/). Only shrinks.
NOT_YET_MOVED: frozenset[str] = frozenset()


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_strings(source: str) -> list[str]:
    """The string literals of ``source`` (f-strings' literal parts joined) that are SQL text."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        else:
            continue
        if _STARTS.match(text) or _SHAPES.search(text):
            found.append(text)
    return found


def written_tables(source: str) -> set[str]:
    return {m.group(1) for text in sql_strings(source) for m in _WRITES.finditer(text)}


def _modules() -> dict[str, Path]:
    """palimpsest/-relative path → file, for every first-party source module."""
    return {str(path.relative_to(root)): path for root in SOURCES for path in sorted(root.rglob("*.py"))}


def _allowed(relative: str) -> bool:
    return relative.startswith(MIGRATIONS) or relative.startswith(MEASUREMENT)


def test_the_sources_are_found() -> None:
    modules = _modules()
    assert "core/stores.py" in modules
    assert "ingest/store/repositories.py" in modules
    assert "chunker/build.py" in modules


def test_sql_text_is_recognised() -> None:
    assert sql_strings('q = "SELECT 1"')
    assert sql_strings('q = f"SELECT {cols} FROM repositories WHERE repository_id = %s"')
    assert sql_strings('q = ("INSERT INTO tenants (tenant_id, name)" " VALUES (%s, %s)")')
    assert sql_strings('q = "  UPDATE repositories SET index_updated_at = now()"')
    assert sql_strings('q = "WITH due AS (SELECT 1) DELETE FROM outbox"')
    assert sql_strings('q = sql.SQL("DELETE FROM {} WHERE {} = %s")')
    assert not sql_strings('"""SELECT a snapshot FROM the newest ready ones (a docstring)."""')
    assert not sql_strings('msg = "select the repository to update"')
    assert not sql_strings('msg = "Update the settings"')
    assert written_tables('q = "INSERT INTO a (x) VALUES (1) ON CONFLICT (x) DO UPDATE SET x = 2"') == {"a"}
    assert written_tables('q = "SELECT x FROM b FOR UPDATE SKIP LOCKED"') == set()
    assert written_tables('q = "UPDATE c SET y = 1 WHERE x = 2"') == {"c"}


def test_sql_text_only_in_stores_migrations_and_measurement() -> None:
    offenders = sorted(
        relative
        for relative, path in _modules().items()
        if not _allowed(relative)
        and relative not in NOT_YET_MOVED
        and sql_strings(source := path.read_text(encoding="utf-8"))
        and not declares_store(ast.parse(source))
    )
    assert offenders == [], (
        "SQL text outside a store module (move the statements into their table's store,"
        f" palimpsest.core.stores): {offenders}"
    )


@pytest.mark.parametrize("relative", sorted(NOT_YET_MOVED))
def test_each_module_not_yet_moved_still_holds_sql(relative: str) -> None:
    """The list only shrinks: a module whose statements have moved comes off it."""
    path = _modules().get(relative)
    assert path is not None, f"{relative} is gone: take it off NOT_YET_MOVED"
    source = path.read_text(encoding="utf-8")
    assert sql_strings(source), f"{relative} holds no SQL any more: take it off NOT_YET_MOVED"
    assert not declares_store(ast.parse(source)), f"{relative} is a store now: take it off NOT_YET_MOVED"


def test_a_store_writes_only_the_tables_it_declares() -> None:
    stores = store_modules()
    modules = _modules()
    undeclared = {}
    for name, store in stores.items():
        relative = name.removeprefix("palimpsest.").replace(".", "/")
        path = modules.get(f"{relative}.py") or modules[f"{relative}/__init__.py"]
        extra = written_tables(path.read_text(encoding="utf-8")) - {o.table for o in store.writes}
        if extra:
            undeclared[name] = sorted(extra)
    assert undeclared == {}


def test_each_table_has_one_home() -> None:
    """A table (or a part of one) is declared by one store."""
    seen: dict[tuple[str, str | None], str] = {}
    twice = []
    for name, store in store_modules().items():
        for owns in store.writes:
            key = (owns.table, owns.part)
            if key in seen:
                twice.append(f"{owns.table} ({owns.part}): {seen[key]} and {name}")
            seen[key] = name
    assert twice == []
