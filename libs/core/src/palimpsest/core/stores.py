"""The database as a declared contract: which module may hold SQL, and which service writes what.

A *store* is a module that declares itself with a module-level ``STORE = Store(...)``: the tables
it writes, for which owner, and the tables it only reads. A table is declared by one store, its
home: where its statements still live in a module not yet split into the store, the placement
test lists that module as not yet moved. Only stores, the migrations and marked
measurement code in the devtools may hold SQL text (``tests/unit/core/test_sql_placement.py``
checks the source), and a store writes only the tables it declares.

The "owns (writes)" column of ``docs/architecture.md``'s service table is derived from these
declarations (``make owners-doc`` regenerates it; ``tests/unit/devtools/test_store_owners.py``
fails while it is out of date), so who may write a table is answered here, once. A derived cache
(:data:`CACHE`) has no owning service: the document lists it, with its store, below that table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["CACHE", "CORE", "Owns", "Store"]

# The owner of the tables every service writes through the shared machinery (outbox, inbox, dead
# letters, failures, migrations, model usage): the core library, not one service.
CORE: Final = "core"
# The owner of a derived cache: a table whose rows are a pure function of other tables, so no one
# service owns it. Whichever process first needs a row fills the miss, with an idempotent insert
# (the same row whoever writes it); its statements still live in its one store. The architecture
# document lists these tables below its owner table (``make owners-doc``).
CACHE: Final = "cache"


@dataclass(frozen=True, slots=True)
class Owns:
    """A table the owner writes; ``part`` says which part when another owner writes the rest
    (a ``kind`` of row, a state column)."""

    table: str
    part: str | None = None
    # another owner than the store's own, for a store that keeps one table's rows for two
    # services (a repository's outcomes: the chunker's builds, the analyzer's analyses)
    by: str | None = None

    def text(self) -> str:
        return f"`{self.table}`" + (f" ({self.part})" if self.part else "")


@dataclass(frozen=True, slots=True)
class Store:
    """A store module's declaration: its owner (a service of ``topology.SERVICES``, :data:`CORE`,
    or :data:`CACHE`), the tables it writes for that owner, and the tables it only reads."""

    owner: str
    writes: tuple[Owns, ...] = ()
    reads: tuple[str, ...] = ()

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(o.table for o in self.writes) | frozenset(self.reads)

    def owned(self) -> list[tuple[str, Owns]]:
        """(owner, what it owns) for each table written here, in the declared order."""
        return [(o.by or self.owner, o) for o in self.writes]
