"""A snapshot's resolved graph, stored once in the index so that every process loads it.

Resolving a 50 000-file snapshot from its facts takes seconds (reading and decoding the facts,
then the passes of :mod:`.build`); every process that queried a new snapshot paid it once — each
reviewer replica, the MCP server, the analyzer. The resolved :class:`~.model.Graph` and its
:class:`~.report.GraphReport` are a pure function of the snapshot and of the resolver's code,
so they are stored in ``code_graphs`` (migration 0036), one row per snapshot and *resolver*: a
digest of the modules resolution runs (:data:`RESOLVER`), so a release that resolves differently
never reads a graph an older one stored, and recomputes instead.

The payload is the graph's compressed-sparse-row arrays as raw bytes, the strings (paths, symbol
names) and the report as JSON, compressed with zlib. Loading it is decompression, ``frombytes``
and one pass over the nodes to rebuild the lookup dictionaries — no resolution. A payload that
cannot be read (another format, damage) counts as absent: the graph is resolved again.

The row is the tenant's, under forced row-level security like every index table, and is deleted
with its snapshot (a foreign key, so pruning, repository and tenant deletion take it along). The
table is a derived cache, filled by whichever process first needs a snapshot's graph; its
statements are :mod:`.store`'s.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import operator
import struct
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable
from importlib import resources
from itertools import compress, repeat
from typing import Any, Final, Literal, cast
from uuid import UUID

import psycopg

from palimpsest.core.db import Conn
from palimpsest.index.graph import store
from palimpsest.index.graph.build import build_graph
from palimpsest.index.graph.gcpause import gc_paused
from palimpsest.index.graph.load import load_snapshot_facts
from palimpsest.index.graph.model import Graph
from palimpsest.index.graph.report import (
    AmbiguousName,
    DynamicSite,
    GraphReport,
    UnmatchedHeader,
    UnresolvedImport,
)

__all__ = [
    "RESOLVER",
    "SnapshotGraphStore",
    "decode_graph",
    "encode_graph",
    "read_graph",
    "store_snapshot_graph",
    "write_graph",
]

log = logging.getLogger(__name__)

_MAGIC: Final = b"PALGRAPH"
_FORMAT: Final = 1
_KINDS: Final[dict[str, Literal["file", "doc"]]] = {"d": "doc", "f": "file"}
_HEAD = struct.Struct("<II")  # format, length of the JSON head
# the payload's arrays in order: (name, typecode); the first five are the graph's own
_ARRAYS: Final = (
    ("node_owner", "i"),
    ("offsets", "i"),
    ("targets", "i"),
    ("weights", "f"),
    ("codes", "b"),
    ("path_offsets", "i"),  # Graph.path_nodes and Graph.names: lists of nodes, grouped (_grouped)
    ("path_members", "i"),
    ("name_offsets", "i"),
    ("name_members", "i"),
)
# what resolution runs: a change to any of these makes a different graph
_RESOLVER_SOURCES: Final = (
    (
        "palimpsest.index.graph",
        ("build.py", "docs.py", "facts.py", "load.py", "model.py", "report.py", "tree.py"),
    ),
    (
        "palimpsest.index.graph.imports",
        ("__init__.py", "base.py", "go.py", "javascript.py", "other.py", "python.py", "rust.py"),
    ),
    ("palimpsest.index", ("records.py", "languages.py")),
    ("palimpsest.index.codefacts", ("classify.py",)),  # which definers a reference may reach
)


def _resolver() -> str:
    digest = hashlib.sha256(f"format {_FORMAT}".encode())
    for package, names in _RESOLVER_SOURCES:
        root = resources.files(package)
        for name in names:
            digest.update(f"\0{package}/{name}\0".encode())
            digest.update(root.joinpath(name).read_bytes())
    return digest.hexdigest()[:32]


RESOLVER: Final = _resolver()
"""The digest of the payload format and the resolver's source: which stored graphs this code may read."""


def _grouped(groups: Iterable[list[int]]) -> tuple[array[int], array[int]]:
    """Lists of node ids as offsets and members (one list ``i`` is ``members[offsets[i]:offsets[i+1]]``)."""
    offsets, members = array("i", [0]), array("i")
    for group in groups:
        members.extend(group)
        offsets.append(len(members))
    return offsets, members


def _joined(strings: Iterable[str]) -> list[Any]:
    """Strings as [count, one string] (a JSON list of 230 000 strings takes longer to read back).
    Paths and symbol names come from text columns, which cannot hold NUL."""
    listed = list(strings)
    return [len(listed), "\0".join(listed)]


def _split(joined: list[Any]) -> list[str]:
    count, text = joined
    found: list[str] = text.split("\0") if count else []
    if len(found) != count:
        raise ValueError("damaged stored graph: a string list of the wrong length")
    return found


def _ungrouped(offsets: array[int], members: array[int]) -> list[list[int]]:
    every = members.tolist()
    return list(map(every.__getitem__, map(slice, offsets, offsets[1:])))


@gc_paused
def encode_graph(graph: Graph, report: GraphReport) -> bytes:
    """The graph and its report as one compressed payload (CPU-bound: run it in a thread)."""
    columns: dict[str, array[Any]] = {name: getattr(graph, name) for name, _ in _ARRAYS[:5]}
    columns["path_offsets"], columns["path_members"] = _grouped(graph.path_nodes)
    columns["name_offsets"], columns["name_members"] = _grouped(graph.names.values())
    head = {
        "byteorder": sys.byteorder,
        "itemsize": {name: column.itemsize for name, column in columns.items()},
        "lengths": {name: len(column) for name, column in columns.items()},
        "paths": _joined(graph.paths),
        "docs": "".join("d" if kind == "doc" else "f" for kind in graph.path_kinds),
        "names": _joined(name or "" for name in graph.node_names),  # "": a file or doc node
        "name_keys": _joined(graph.names),
        "report": _report_dict(report),
    }
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":")).encode()
    body = [_HEAD.pack(_FORMAT, len(text)), text]
    body += [columns[name].tobytes() for name, _ in _ARRAYS]
    return _MAGIC + zlib.compress(b"".join(body), 1)


@gc_paused  # it makes ~300 000 lists and tuples at once
def decode_graph(payload: bytes) -> tuple[Graph, GraphReport]:
    """The graph and report of :func:`encode_graph`; ``ValueError`` for anything else."""
    return _decode(payload)


def _decode(payload: bytes) -> tuple[Graph, GraphReport]:
    if not payload.startswith(_MAGIC):
        raise ValueError("not a stored graph")
    try:
        body = zlib.decompress(payload[len(_MAGIC) :])
    except zlib.error as exc:
        raise ValueError(f"damaged stored graph: {exc}") from None
    if len(body) < _HEAD.size:
        raise ValueError("damaged stored graph: truncated")
    version, size = _HEAD.unpack_from(body)
    if version != _FORMAT:
        raise ValueError(f"stored graph format {version}, expected {_FORMAT}")
    head = json.loads(body[_HEAD.size : _HEAD.size + size])
    position = _HEAD.size + size
    columns: dict[str, array[Any]] = {}
    for name, typecode in _ARRAYS:
        column: array[Any] = array(typecode)
        if head["itemsize"][name] != column.itemsize:
            raise ValueError(f"stored graph: {name} items of {head['itemsize'][name]} bytes")
        end = position + head["lengths"][name] * column.itemsize
        if end > len(body):
            raise ValueError("damaged stored graph: truncated")
        column.frombytes(body[position:end])
        if head["byteorder"] != sys.byteorder:
            column.byteswap()
        columns[name] = column
        position = end
    if position != len(body):
        raise ValueError("damaged stored graph: trailing bytes")
    paths = _split(head["paths"])
    names: list[str | None] = [name or None for name in _split(head["names"])]
    name_keys = _split(head["name_keys"])
    owners = columns["node_owner"]
    path_nodes = _ungrouped(columns["path_offsets"], columns["path_members"])
    by_name = _ungrouped(columns["name_offsets"], columns["name_members"])
    if (
        len(names) != len(owners)
        or not len(head["docs"]) == len(paths) == len(path_nodes)
        or len(name_keys) != len(by_name)
    ):
        raise ValueError("damaged stored graph: node and path counts disagree")
    # the lookups by C-level iteration: a Python loop over 230 000 nodes costs ~0.5 s
    symbols = list(compress(range(len(names)), map(operator.is_not, names, repeat(None))))
    keys = zip(map(owners.__getitem__, symbols), map(names.__getitem__, symbols), strict=True)
    graph = Graph(
        paths=paths,
        path_kinds=list(map(_KINDS.__getitem__, head["docs"])),
        node_owner=owners,
        node_names=names,
        offsets=columns["offsets"],
        targets=columns["targets"],
        weights=columns["weights"],
        codes=columns["codes"],
        path_index=dict(zip(paths, range(len(paths)), strict=True)),
        symbol_index=dict(zip(cast("Iterable[tuple[int, str]]", keys), symbols, strict=True)),
        names=dict(zip(name_keys, by_name, strict=True)),
        path_nodes=path_nodes,
    )
    return graph, _report_of(head["report"])


def _report_dict(report: GraphReport) -> dict[str, Any]:
    return {
        "files": report.files,
        "nodes": report.nodes,
        "edges": report.edges,
        "no_parser": report.no_parser,
        "not_indexed": report.not_indexed,
        "dynamic": report.dynamic,
        "unresolved_imports": report.unresolved_imports,
        "external_imports": report.external_imports,
        "resolved_imports": report.resolved_imports,
        "ambiguous": [[a.name, a.definers, a.references, a.dropped] for a in report.ambiguous.values()],
        "governs_unmatched": report.governs_unmatched,
        "supersedes_unmatched": report.supersedes_unmatched,
        "barrels": report.barrels,
        "workspace_packages": report.workspace_packages,
        "routes": report.routes,
        "member_routes": report.member_routes,
        "bare_name_by_language": report.bare_name_by_language,
    }


def _report_of(data: dict[str, Any]) -> GraphReport:
    return GraphReport(
        files=data["files"],
        nodes=data["nodes"],
        edges=data["edges"],
        no_parser=Counter(data["no_parser"]),
        not_indexed=Counter(data["not_indexed"]),
        dynamic=[DynamicSite(*row) for row in data["dynamic"]],
        unresolved_imports=[UnresolvedImport(*row) for row in data["unresolved_imports"]],
        external_imports=Counter(data["external_imports"]),
        resolved_imports=data["resolved_imports"],
        ambiguous={row[0]: AmbiguousName(*row) for row in data["ambiguous"]},
        governs_unmatched=[UnmatchedHeader(*row) for row in data["governs_unmatched"]],
        supersedes_unmatched=[UnmatchedHeader(*row) for row in data["supersedes_unmatched"]],
        barrels=data["barrels"],
        workspace_packages=data["workspace_packages"],
        routes=Counter(data["routes"]),
        member_routes=Counter(data["member_routes"]),
        bare_name_by_language=Counter(data["bare_name_by_language"]),
    )


async def read_graph(conn: Conn, snapshot_id: UUID) -> tuple[Graph, GraphReport] | None:
    """The stored graph of ``snapshot_id`` in the caller's tenant, or None (never stored, stored by
    another resolver, unreadable)."""
    payload = await store.stored_payload(conn, snapshot_id, RESOLVER)
    if payload is None:
        return None
    try:
        return await asyncio.to_thread(decode_graph, payload)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("stored graph of snapshot %s is unreadable (%s); resolving it again", snapshot_id, exc)
        return None


async def write_graph(
    conn: Conn, tenant_id: UUID, snapshot_id: UUID, graph: Graph, report: GraphReport
) -> bool:
    """Store the graph of ``snapshot_id`` in the caller's transaction; True when this call stored it.

    Idempotent: the payload is a function of the snapshot and :data:`RESOLVER`, so a row already
    there is replaced by the same graph (callers write only when they found none, or one they
    could not read). It never blocks on, or fails, the caller: when another transaction is storing
    the same graph right now this one leaves it to that one, and a failure (the snapshot deleted
    meanwhile) is logged and rolled back to a savepoint.
    """
    payload = await asyncio.to_thread(encode_graph, graph, report)
    try:
        return await store.fill(conn, tenant_id, snapshot_id, RESOLVER, payload)
    except psycopg.Error as exc:
        log.warning("could not store the graph of snapshot %s: %s", snapshot_id, exc)
        return False


class SnapshotGraphStore:
    """The stored graph of one snapshot, through the caller's tenant transaction (a ``GraphStore``)."""

    def __init__(self, conn: Conn, tenant_id: UUID, snapshot_id: UUID) -> None:
        self.conn, self.tenant_id, self.snapshot_id = conn, tenant_id, snapshot_id

    async def read(self) -> tuple[Graph, GraphReport] | None:
        return await read_graph(self.conn, self.snapshot_id)

    async def write(self, graph: Graph, report: GraphReport) -> bool:
        return await write_graph(self.conn, self.tenant_id, self.snapshot_id, graph, report)


async def store_snapshot_graph(conn: Conn, tenant_id: UUID, repository_id: UUID, snapshot_id: UUID) -> bool:
    """Resolve and store the graph of a snapshot unless it is stored already; True when stored now."""
    if await store.is_stored(conn, snapshot_id, RESOLVER):
        return False
    facts = await load_snapshot_facts(conn, repository_id, snapshot_id)
    graph, report = await asyncio.to_thread(build_graph, facts)
    return await write_graph(conn, tenant_id, snapshot_id, graph, report)
