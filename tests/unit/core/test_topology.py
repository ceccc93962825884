"""The event map against the code: producers, handler maps, observers and the generated docs."""

from __future__ import annotations

import ast
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from palimpsest.core import bus, topology
from palimpsest.core.events import EVENT_TYPES
from palimpsest.core.topology import FLOWS, TopologyError

ROOT = Path(__file__).resolve().parents[3]
CLASS_TO_TYPE = {cls.__name__: t for t, cls in EVENT_TYPES.items()}
# palimpsest.<package> → the component of the event map it belongs to
PACKAGES = {
    "ingest": "ingest",
    "recency_scanner": "recency-scanner",
    "chunker": "chunker",
    "embedder": "embedder",
    "analyzer": "analyzer",
    "reviewer": "reviewer",
    "cli": "cli",
    "core": None,  # the contracts and the runtime: constructs nothing on its own behalf
    "index": None,  # the read side
}


def _modules() -> list[tuple[str | None, Path]]:
    """Every source module with its component; benchmark modules drive the pipeline only to measure it."""
    found = []
    for path in sorted(
        [*ROOT.glob("libs/*/src/palimpsest/**/*.py"), *ROOT.glob("services/*/src/palimpsest/**/*.py")]
    ):
        package = path.parts[path.parts.index("palimpsest", len(ROOT.parts)) + 1]
        if path.name.startswith("bench") or package == "devtools":  # measuring and soak tooling
            continue
        assert package in PACKAGES, f"{path}: add palimpsest.{package} to PACKAGES (which component it is)"
        found.append((PACKAGES[package], path))
    return found


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _scan() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per component: the event types its code constructs, and the event types it names (a type
    string or an event class)."""
    constructs: dict[str, set[str]] = defaultdict(set)
    spelled: dict[str, set[str]] = defaultdict(set)
    for component, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in CLASS_TO_TYPE:
                assert component, f"{path} constructs an event but belongs to no producing component"
                constructs[component].add(CLASS_TO_TYPE[str(_called_name(node))])
            elif (
                component
                and isinstance(node, ast.Constant)
                and node.value in EVENT_TYPES
                and "." in node.value
            ):
                spelled[component].add(node.value)
            elif component and isinstance(node, ast.Name) and node.id in CLASS_TO_TYPE:
                spelled[component].add(CLASS_TO_TYPE[node.id])  # an event class named (awaited, matched)
    return constructs, spelled


def test_every_event_constructed_in_the_code_is_declared_for_its_producer() -> None:
    constructs, _ = _scan()
    declared = {c: set(topology.produced_by(c)) for c in topology.COMPONENTS}
    for component in topology.COMPONENTS:
        assert constructs.get(component, set()) == declared[component], (
            f"{component}: the code writes {sorted(constructs.get(component, set()))},"
            f" topology.FLOWS says {sorted(declared[component])}"
        )


def test_every_event_type_a_component_names_is_one_it_produces_consumes_or_watches() -> None:
    _, spelled = _scan()
    for component, names in spelled.items():
        known = {f.type for f in FLOWS if component in (*f.producers, *f.consumers, *f.observers)}
        assert names <= known, (
            f"{component} names {sorted(names - known)}, which topology.FLOWS does not give it"
        )
    assert {c for f in FLOWS for c in f.observers} <= set(spelled)


def _handler_maps() -> dict[str, set[str]]:
    """The ``handlers={...}`` of each service's ``ServiceDefinition``, read from its service.py."""
    maps: dict[str, set[str]] = {}
    for path in sorted(ROOT.glob("services/*/src/palimpsest/*/service.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called_name(node) == "ServiceDefinition":
                kwargs = {k.arg: k.value for k in node.keywords}
                name = kwargs.get("name", node.args[0] if node.args else None)
                assert isinstance(name, ast.Constant), f"{path}: ServiceDefinition without a literal name"
                handlers = kwargs.get("handlers")
                keys = set() if handlers is None else {ast.literal_eval(k) for k in handlers.keys}  # type: ignore[attr-defined]
                maps[str(name.value)] = keys
    return maps


def test_each_service_handles_exactly_what_the_map_routes_to_it() -> None:
    maps = _handler_maps()
    assert set(maps) == set(topology.SERVICES)
    for service, handled in maps.items():
        assert handled == set(topology.consumed_by(service)), service


def test_consumers_are_derived_from_the_map() -> None:
    assert {name: set(spec.event_types) for name, spec in bus.CONSUMERS.items()} == {
        s: set(topology.consumed_by(s)) for s in topology.SERVICES if topology.consumed_by(s)
    }
    assert bus.CONSUMERS["analyzer"].batch == topology.CONSUMER_BATCH["analyzer"]


def test_a_handler_map_that_disagrees_is_refused() -> None:
    received = bus.CONSUMERS["reviewer"].event_types
    with pytest.raises(TopologyError, match=r"reviewer: no handler for 'snapshot.built'"):
        topology.check_handlers("reviewer", ["review.requested"], received)
    with pytest.raises(TopologyError, match=r"a handler for 'probe', which its consumer never receives"):
        topology.check_handlers("t-probe", ["probe"], None)
    with pytest.raises(TopologyError, match=r"which the event map does not route to it"):
        topology.check_handlers("chunker", ["index.requested", "probe"], ("index.requested", "probe"))
    topology.check_handlers("t-probe", ["probe"], ("probe",))  # a test's own consumer
    topology.check_handlers("reviewer", ["snapshot.built", "review.requested"], received)
    with pytest.raises(TopologyError, match="not declared"):
        topology.require_declared("snapshot.deleted")


@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md"])
def test_generated_flow_docs_match_the_map(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert "<!-- topology:" in text, f"{doc} lost its generated event-flow block"
    assert topology.render_blocks(text) == text, (
        f"{doc} is out of date: run `.venv/bin/{topology.REGENERATE}`"
    )


def test_nothing_in_the_repository_points_outside_it() -> None:
    """The design lives in docs/architecture.md; no file sends a reader to a document a clone lacks."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    outside = re.compile(r"\.\./shared/DESIGN|DESIGN(\.md|\s§)")
    offenders = [
        name
        for name in listed.splitlines()
        if (ROOT / name).is_file()
        and outside.search((ROOT / name).read_text(encoding="utf-8", errors="replace"))
    ]
    # an applied migration is checksummed and never edited: three old header comments stay as they are
    assert [name for name in offenders if "/core/migrations/" not in name] == []
