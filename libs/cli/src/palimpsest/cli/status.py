"""``palimpsest status``: is each component there, and how far behind is each consumer?"""

from __future__ import annotations

from typing import TypeAlias, TypedDict

import psycopg
from psycopg.rows import dict_row

from palimpsest.cli.stack import read_running
from palimpsest.core import bus, outcomes
from palimpsest.core.db import describe, server_facts, set_tenant
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.ingest.store import lookups

# One component's answer: "ok" (and "degraded") and what else it reports, each a plain value (the
# stream's replicas are keyed by name, so the keys are not a fixed set).
Component: TypeAlias = dict[str, str | int | float | bool | None]


class StatusReport(TypedDict):
    """``palimpsest status --json``."""

    ok: bool  # every component answers (a degraded one answers, but some of its work cannot be done)
    degraded: bool
    components: dict[str, Component]


async def collect(settings: BaseServiceSettings) -> StatusReport:
    running = read_running(settings.home)
    components: dict[str, Component] = {}
    if running is not None:
        components["stack"] = {
            "ok": True,
            "pid": running.pid,
            "embedded_db": running.embedded_db,
            "embedded_nats": running.embedded_nats,
            "ops": running.ops_url,
        }
        db_url: str | None = running.app_url
        nats_url: str | None = running.nats_url
    else:
        db_url = settings.database_url.get_secret_value() if settings.database_url else None
        nats_url = settings.nats_url
        components["stack"] = {
            "ok": db_url is not None and nats_url is not None,
            "running": False,
            "hint": "start it with `palimpsest up`" if db_url is None else None,
        }
    if db_url is not None:
        components["database"] = await _database(db_url)
        if components["database"]["ok"]:
            components["repositories"] = await _repositories(db_url)
    if nats_url is not None:
        components.update(await _bus(nats_url, settings))
    return {
        # every component answers (a degraded one answers, but some of its work cannot be done)
        "ok": all(c.get("ok") or c.get("degraded") for c in components.values()),
        "degraded": any(c.get("degraded") for c in components.values()),
        "components": components,
    }


async def _repositories(url: str) -> Component:
    """Repositories that cannot be indexed or analysed now (their last outcome failed, is
    retrying or was dead-lettered), per active tenant, read in each tenant's transaction."""
    try:
        async with await psycopg.AsyncConnection.connect(
            url, connect_timeout=5, prepare_threshold=None, row_factory=dict_row
        ) as conn:
            tenants = await lookups.active_tenants(conn)
            failing: dict[str, dict[str, int]] = {}
            for t in tenants:
                async with conn.transaction():
                    await set_tenant(conn, t.tenant_id)
                    counts = await outcomes.failing_counts(conn)
                if any(counts.values()):
                    failing[f"{t.name} ({t.tenant_id})"] = counts
    except psycopg.Error as exc:
        return {"ok": False, "error": exc.__class__.__name__}
    out: Component = {
        "ok": not failing,
        "degraded": bool(failing),
        "tenants": len(tenants),
        "cannot_build": sum(c["build"] for c in failing.values()),
        "cannot_analyse": sum(c["analysis"] for c in failing.values()),
    }
    if failing:
        out["failing"] = "; ".join(
            f"{name}: {c['build']} build, {c['analysis']} analysis" for name, c in failing.items()
        )
        out["hint"] = "`palimpsest repo list --tenant T` shows each one's reason"
    return out


async def _database(url: str) -> Component:
    try:
        async with await psycopg.AsyncConnection.connect(
            url, connect_timeout=5, prepare_threshold=None
        ) as conn:
            facts = await server_facts(conn)
            return {
                "ok": True,
                "server": describe(url),
                "version": facts.version,
                "pgvector": facts.pgvector,
                "pgvector_available": facts.pgvector_available,
            }
    except psycopg.Error as exc:
        return {"ok": False, "server": describe(url), "error": exc.__class__.__name__}


def cluster_view(c: bus.StreamCluster) -> Component:
    """The stream's replicas: ok when the count it asks for is there, led, and every follower current."""
    behind = [r.name for r in c.followers if r.offline or not r.current]
    out: Component = {
        "ok": (c.leader is not None or c.replicas == 1) and len(c.followers) == c.replicas - 1 and not behind,
        "cluster": c.cluster or "-",
        "leader": c.leader or "-",
        "replicas": c.replicas,
    }
    for r in c.followers:
        state = "offline" if r.offline else "current" if r.current else "behind"
        out[f"replica:{r.name}"] = f"{state} lag={r.lag} seen={r.active_s}s"
    if behind:
        out["behind"] = ",".join(behind)
    return out


async def _bus(url: str, settings: BaseServiceSettings) -> dict[str, Component]:
    out: dict[str, Component] = {}
    try:
        nc = await bus.connect(url, name="status", creds_file=settings.nats_creds_file, reconnect=False)
    except Exception as exc:
        return {"nats": {"ok": False, "url": url, "error": str(exc)}}
    try:
        js = nc.jetstream()
        info = await js.stream_info(bus.STREAM)
        out["nats"] = {"ok": True, "url": url, "stream": bus.STREAM, "messages": info.state.messages}
        out["stream:cluster"] = cluster_view(await bus.stream_cluster(nc))
        for name, lag in (await bus.consumer_lag(nc)).items():
            out[f"consumer:{name}"] = (
                {"ok": False, "error": lag.__class__.__name__}
                if isinstance(lag, BaseException)
                else {
                    "ok": True,
                    "pending": lag.pending,
                    "ack_pending": lag.ack_pending,
                    "redelivered": lag.redelivered,
                }
            )
    except Exception as exc:
        out["nats"] = {"ok": False, "url": url, "error": exc.__class__.__name__}
    finally:
        await nc.close()
    return out
