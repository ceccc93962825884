"""The event map: for each event type, its subject, who writes it and who consumes it.

This is the one place the event flow is declared; everything else follows from it or is checked
against it:

- :data:`palimpsest.core.bus.CONSUMERS` (each service's durable consumer, the subjects it is filtered
  to, its batch size) is derived from :data:`FLOWS` and :data:`CONSUMER_BATCH`;
- :func:`palimpsest.core.service.run` refuses to start a service whose handler map differs from
  what the map says it consumes (:func:`check_handlers`), and
  :func:`palimpsest.core.outbox.emit` refuses an event type the map does not declare;
- tests check every module that constructs an event against the producers declared here, and
  every service's handler map against the consumers (``tests/unit/core/test_topology.py``);
- the flow table in ``README.md`` and the diagram in ``docs/architecture.md`` are generated from it
  (:func:`render_blocks`; ``python -m palimpsest.core.topology README.md docs/architecture.md``
  rewrites them, and ``--check`` fails when they drifted).

*Producers* are components whose code writes the event to the outbox; *consumers* are services
with a durable JetStream consumer and a handler (exactly-once effect through the inbox);
*observers* only watch the subject with a plain NATS subscription to report a result (the CLI
waiting for its request to finish) and keep no state.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from palimpsest.core.errors import PalimpsestError
from palimpsest.core.events import (
    EVENT_TYPES,
    AnalysisCompleted,
    AnalysisRequested,
    Event,
    IndexRequested,
    Probe,
    RecencyScanned,
    ReviewCompleted,
    ReviewRequested,
    SnapshotBuilt,
    SnapshotEmbedded,
    subject_of,
)

SERVICES: tuple[str, ...] = ("ingest", "recency-scanner", "chunker", "embedder", "analyzer", "reviewer")
# every component that may produce or observe events: the six services and the ``palimpsest`` CLI
COMPONENTS: tuple[str, ...] = (*SERVICES, "cli")


class TopologyError(PalimpsestError):
    """Code and the event map disagree (an undeclared event, a missing or extra handler)."""


@dataclass(frozen=True, slots=True)
class Flow:
    """One event type: what it means, who writes it, who consumes it and who only watches it."""

    event: type[Event]
    meaning: str
    producers: tuple[str, ...]
    consumers: tuple[str, ...] = ()
    observers: tuple[str, ...] = ()

    @property
    def type(self) -> str:
        return self.event.TYPE

    @property
    def subject(self) -> str:
        return subject_of(self.type)


FLOWS: tuple[Flow, ...] = (
    Flow(
        IndexRequested,
        "index one repository at one commit (push, registration, rebuild, mode change, backfill, CLI, a review's base)",
        producers=("ingest", "cli"),
        consumers=("recency-scanner", "chunker"),
    ),
    Flow(
        RecencyScanned,
        "the repository's history was scanned for per-file recency and co-change",
        producers=("recency-scanner",),
        observers=("cli",),
    ),
    Flow(
        SnapshotBuilt,
        "a snapshot (files, chunks, symbols, graph) is ready, failed or was skipped",
        producers=("chunker",),
        consumers=("embedder", "analyzer", "reviewer"),
        observers=("cli",),
    ),
    Flow(
        SnapshotEmbedded,
        "the snapshot's chunks have vectors of the tenant's embedding model (or why not)",
        producers=("embedder",),
        consumers=("analyzer",),
    ),
    Flow(
        AnalysisRequested,
        "write the doc-skeptical analysis of a repository",
        producers=("ingest", "cli"),
        consumers=("analyzer",),
    ),
    Flow(
        AnalysisCompleted,
        "an analysis was stored (or failed)",
        producers=("analyzer",),
        observers=("cli",),
    ),
    Flow(
        ReviewRequested,
        "review a pull request (webhook, API submission, comment command) or a local change",
        producers=("ingest", "cli"),
        consumers=("reviewer",),
    ),
    Flow(
        ReviewCompleted,
        "a review was stored, posted, skipped or failed",
        producers=("reviewer",),
        observers=("cli",),
    ),
    Flow(
        Probe,
        "a no-op for the bus benchmark and tests, consumed only by their own throw-away consumers",
        producers=(),
    ),
)

# how many messages each consuming service pulls at once (its durable consumer's batch)
CONSUMER_BATCH: dict[str, int] = {
    "recency-scanner": 4,
    "chunker": 2,
    "embedder": 2,
    "analyzer": 4,
    "reviewer": 4,
}

BY_TYPE: dict[str, Flow] = {flow.type: flow for flow in FLOWS}


def consumed_by(service: str) -> tuple[str, ...]:
    """The event types ``service`` has a durable consumer and a handler for, in map order."""
    return tuple(flow.type for flow in FLOWS if service in flow.consumers)


def produced_by(component: str) -> tuple[str, ...]:
    return tuple(flow.type for flow in FLOWS if component in flow.producers)


def require_declared(event_type: str) -> Flow:
    flow = BY_TYPE.get(event_type)
    if flow is None:
        raise TopologyError(f"event type {event_type!r} is not declared in palimpsest.core.topology.FLOWS")
    return flow


def check_handlers(service: str, handled: Iterable[str], received: Iterable[str] | None) -> None:
    """Refuse a handler map that does not match what the service's consumer receives.

    ``received`` is the consumer's event types (None: the service consumes nothing). Every event
    it receives needs a handler and every handler an event it receives; for a service of the map
    (a test may run one under another consumer name, never with other events) the handled types
    must be exactly those :data:`FLOWS` routes to it.
    """
    have, get = set(handled), set(received or ())
    problems = [f"no handler for {t!r}, which its consumer receives" for t in sorted(get - have)]
    problems += [f"a handler for {t!r}, which its consumer never receives" for t in sorted(have - get)]
    if service in SERVICES:
        want = set(consumed_by(service))
        problems += [f"no handler for {t!r}, which the event map routes to it" for t in sorted(want - have)]
        problems += [
            f"a handler for {t!r}, which the event map does not route to it" for t in sorted(have - want)
        ]
    if problems:
        raise TopologyError(f"{service}: " + "; ".join(dict.fromkeys(problems)))


def _check_map() -> None:
    undeclared = sorted(set(EVENT_TYPES) - set(BY_TYPE))
    unknown = sorted(set(BY_TYPE) - set(EVENT_TYPES))
    strangers = sorted(
        {c for f in FLOWS for c in (*f.producers, *f.observers) if c not in COMPONENTS}
        | {c for f in FLOWS for c in f.consumers if c not in SERVICES}
        | (set(CONSUMER_BATCH) ^ {c for f in FLOWS for c in f.consumers})
    )
    if undeclared or unknown or strangers:
        raise TopologyError(f"event map: undeclared {undeclared}, unknown {unknown}, components {strangers}")


_check_map()


# ------------------------------------------------------------------------------------ documents

_NODE = re.compile(r"[^A-Za-z0-9]")


def flow_table() -> str:
    """The Markdown table of every event: subject, producers, consumers, observers."""
    rows = [
        "| event (subject) | meaning | written by | consumed by (durable, batch) | watched by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for flow in FLOWS:
        consumers = ", ".join(f"{c} ({CONSUMER_BATCH[c]})" for c in flow.consumers) or "—"
        rows.append(
            f"| `{flow.type}` (`{flow.subject}`) | {flow.meaning} | {', '.join(flow.producers) or 'benchmarks, tests'}"
            f" | {consumers} | {', '.join(flow.observers) or '—'} |"
        )
    return "\n".join(rows)


def mermaid() -> str:
    """A Mermaid flowchart: components as boxes, an arrow per (producer → consumer) labelled with the event."""
    lines = ["```mermaid", "flowchart LR"]
    for component in COMPONENTS:
        label = "palimpsest CLI" if component == "cli" else component
        lines.append(f"    {_NODE.sub('_', component)}[{label}]")
    for flow in FLOWS:
        for producer in flow.producers:
            for consumer in flow.consumers:
                lines.append(f"    {_NODE.sub('_', producer)} -->|{flow.type}| {_NODE.sub('_', consumer)}")
            for observer in flow.observers:
                lines.append(f"    {_NODE.sub('_', producer)} -.->|{flow.type}| {_NODE.sub('_', observer)}")
    lines.append("```")
    return "\n".join(lines)


BLOCKS = {"flow-table": flow_table, "flow-diagram": mermaid}
REGENERATE = "python -m palimpsest.core.topology README.md docs/architecture.md"


def render_blocks(text: str) -> str:
    """``text`` with each ``<!-- topology:NAME -->`` … ``<!-- /topology:NAME -->`` block regenerated."""
    for name, render in BLOCKS.items():
        pattern = re.compile(rf"(<!-- topology:{name} -->\n)(?:.*?\n)?(<!-- /topology:{name} -->)", re.DOTALL)
        body = render()
        text = pattern.sub(lambda m: f"{m.group(1)}{body}\n{m.group(2)}", text)  # noqa: B023 - used at once
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m palimpsest.core.topology",
        description="Regenerate the event-flow blocks (<!-- topology:... -->) of Markdown files from the event map.",
    )
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 when a file is out of date"
    )
    args = parser.parse_args(argv)
    return rewrite_generated(args.files, render_blocks, check=args.check)


def rewrite_generated(files: Sequence[Path], render: Callable[[str], str], *, check: bool) -> int:
    """Regenerate each file's generated parts with ``render`` (``check``: change nothing); the
    exit code of a generator's command line: 1 when ``check`` finds a file out of date."""
    stale = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        fresh = render(text)
        if fresh != text:
            stale.append(str(path))
            if not check:
                path.write_text(fresh, encoding="utf-8")
    if stale:
        print(("out of date: " if check else "rewrote: ") + ", ".join(stale))
    return 1 if stale and check else 0


if __name__ == "__main__":
    sys.exit(main())
