"""The chunker's tables: a snapshot of a repository's default branch and what it is built from.

The declaration below is their home; the statements are still in ``build.py`` and ``service.py``
(listed as not yet moved by ``tests/unit/core/test_sql_placement.py``). The chunker also stamps
``repositories.index_updated_at`` in the build's own transaction (a build and its stamp commit
together, and a service may not import the ingest service's store); ingest clears the stamp when a
repository's index data is deleted.
"""

from __future__ import annotations

from palimpsest.core.stores import Owns, Store

STORE = Store(
    owner="chunker",
    writes=(
        Owns("code_index_snapshots"),
        Owns("code_index_files"),
        Owns("code_blobs"),
        Owns("code_chunks"),
        Owns("code_symbols"),
        Owns("code_facts"),
        Owns("repositories", "its `index_updated_at`"),
    ),
)
