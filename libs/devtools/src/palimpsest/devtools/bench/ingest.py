"""``palimpsest bench ingest``: signed webhook deliveries through the real HTTP server into the outbox.

The benchmark starts a temporary embedded stack (or uses the configured servers), runs the ingest
service as its own process (``python -m palimpsest.ingest``, with its outbox relay) on a loopback
port, registers a tenant, a GitHub App installation and a repository through the API, and then
sends full-size signed GitHub ``push`` deliveries to the default branch (each with its own
delivery id and head commit) from an async HTTP client with bounded concurrency. It reports the
sustained deliveries per second and the latency percentiles of the measured phase, and proves
delivery into the bus: once the relay has drained the outbox it reads the stream back and checks
that every accepted delivery's event is on it exactly once (``events == accepted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet
from nats.aio.client import Client as NATS
from nats.js import api
from pydantic import SecretStr

from palimpsest.core import bus
from palimpsest.core.db import Pool, fetch_all, fetch_one, open_pool, system_tx, tenant_tx
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.ingest_payload import CLONE_URL, push_payload
from palimpsest.devtools.scratch import scratch_home
from palimpsest.ingest.errors import BenchError


@dataclass(frozen=True, slots=True)
class Sender:
    """The benchmark's GitHub App installation: a fresh id and secret per run."""

    secret: bytes
    installation_id: int

    @classmethod
    def new(cls) -> Sender:
        return cls(secrets.token_hex(24).encode(), 10**9 + secrets.randbelow(10**9))


def signed_delivery(sender: Sender) -> tuple[bytes, dict[str, str]]:
    payload = push_payload(secrets.token_hex(20), secrets.token_hex(20), sender.installation_id)
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(sender.secret, body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/4f1a2b3",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "503219876",
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": "914203",
        "X-Hub-Signature-256": signature,
    }
    return body, headers


# --------------------------------------------------------------------------- the run


@dataclass
class Sample:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    accepted_events: list[str] = field(default_factory=list)
    errors: int = 0


class RawClient:
    """A minimal HTTP/1.1 keep-alive client for the load generator: one connection per worker.

    httpx spends about 3 ms of CPU per request on this class of machine — more than the server
    it would be measuring, on the same two cores — so the measured phase sends pre-serialized
    requests over plain asyncio streams instead (``--client httpx`` measures with httpx).
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Length: {len(body)}\r\n{lines}\r\n"
        writer.write(head.encode("latin-1") + body)
        status_line = await reader.readline()
        status = int(status_line.split(b" ", 2)[1])
        length = 0
        keep_alive = True
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
            elif name.strip().lower() == b"connection" and value.strip().lower() == b"close":
                keep_alive = False
        payload = await reader.readexactly(length)
        if not keep_alive:
            await self.close()
        return status, payload

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _send(
    client: httpx.AsyncClient | RawClient, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    if isinstance(client, RawClient):
        return await client.post("/webhooks/github", body, headers)
    res = await client.post("/webhooks/github", content=body, headers=headers)
    return res.status_code, res.content


async def _fire(url: str, sender: Sender, count: int, concurrency: int, sample: Sample, kind: str) -> float:
    """Send `count` deliveries with `concurrency` workers; returns the wall time in seconds."""
    prepared = iter([signed_delivery(sender) for _ in range(count)])
    parts = httpx.URL(url)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    shared = httpx.AsyncClient(base_url=url, timeout=30, limits=limits) if kind == "httpx" else None

    async def worker() -> None:
        client: httpx.AsyncClient | RawClient = shared or RawClient(parts.host, parts.port or 80)
        try:
            for body, headers in prepared:
                started = time.perf_counter()
                try:
                    status, payload = await asyncio.wait_for(_send(client, body, headers), 30)
                except (httpx.HTTPError, OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
                    sample.errors += 1
                    if isinstance(client, RawClient):
                        await client.close()
                    continue
                sample.latencies_ms.append((time.perf_counter() - started) * 1000)
                sample.statuses[status] = sample.statuses.get(status, 0) + 1
                answer = json.loads(payload)
                if answer.get("outcome") == "accepted":
                    sample.accepted_events.extend(answer.get("events", []))
        finally:
            if isinstance(client, RawClient):
                await client.close()

    try:
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started
    finally:
        if shared is not None:
            await shared.aclose()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def _setup(client: httpx.AsyncClient, admin_token: str, sender: Sender) -> str:
    auth = {"Authorization": f"Bearer {admin_token}"}
    res = await client.post("/v1/tenants", json={"name": "bench"}, headers=auth)
    _expect(res, 201)
    tenant = str(res.json()["tenant_id"])
    installation = {
        "provider": "github",
        "external_id": str(sender.installation_id),
        "webhook_secret": sender.secret.decode(),
    }
    res = await client.post(f"/v1/tenants/{tenant}/installations", json=installation, headers=auth)
    _expect(res, 201)
    repo = {"url": CLONE_URL, "installation_id": res.json()["installation_id"]}
    res = await client.post(f"/v1/tenants/{tenant}/repositories", json=repo, headers=auth)
    _expect(res, 201)
    return tenant


def _expect(res: httpx.Response, status: int) -> None:
    if res.status_code != status:
        raise BenchError(
            f"{res.request.method} {res.request.url.path} answered {res.status_code}: {res.text[:200]}"
        )


async def _await_relay(pool: Pool, tenant: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        async with system_tx(pool) as conn:
            row = await fetch_one(
                conn,
                "SELECT count(*) AS n FROM outbox WHERE tenant_id = %s AND published_at IS NULL",
                (tenant,),
            )
        if row is not None and int(row["n"]) == 0:
            return
        if time.monotonic() > deadline:
            raise BenchError("the relay did not publish every event in time")
        await asyncio.sleep(0.2)


async def _events_on_stream(nc: NATS, tenant: str) -> list[str]:
    js = nc.jetstream()
    info = await js.stream_info(bus.STREAM, subjects_filter="pal.index.requested")
    last = info.state.last_seq
    found: list[str] = []
    if not last:
        return found
    sub = await js.subscribe(
        "pal.index.requested", ordered_consumer=True, deliver_policy=api.DeliverPolicy.ALL
    )
    try:
        while True:
            msg = await sub.next_msg(timeout=10)
            data = json.loads(msg.data)
            if data.get("tenant_id") == tenant and data.get("reason") == "push":
                found.append(str(data["id"]))
            if msg.metadata.sequence.stream >= last or msg.metadata.num_pending == 0:
                return found
    finally:
        await sub.unsubscribe()


async def _accepted_in_db(pool: Pool, tenant: str) -> list[str]:
    async with tenant_tx(pool, tenant) as conn:
        rows = await fetch_all(
            conn, "SELECT event_ids FROM deliveries WHERE outcome = 'accepted' AND event = 'push'"
        )
    return [str(e) for r in rows for e in r["event_ids"]]


@contextlib.contextmanager
def _service_process(env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log_path.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "palimpsest.ingest"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def _wait_up(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(base_url=url, timeout=2) as client:
        while True:
            if proc.poll() is not None:
                tail = _tail(log_path)
                raise BenchError("the ingest service exited: " + " | ".join(tail))
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/openapi.json")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise BenchError("the ingest service did not start within 60 s")
            await asyncio.sleep(0.2)


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def _stack(settings: BaseServiceSettings) -> AsyncIterator[Any]:
    from palimpsest.cli.stack import open_stack

    with scratch_home(settings) as scratch:
        async with open_stack(scratch) as stack:
            yield stack


async def run_bench_ingest(
    settings: BaseServiceSettings,
    *,
    deliveries: int,
    concurrency: int,
    warmup: int,
    client_kind: str = "raw",
    replicas: int = 2,
) -> dict[str, Any]:
    """Run the benchmark; the dict is what ``palimpsest bench ingest --json`` prints."""
    sender = Sender.new()
    admin_token = "paladm_" + secrets.token_urlsafe(32)
    async with _stack(settings) as stack:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
        env.update(
            {
                "PALIMPSEST_DATABASE_URL": stack.app_url,
                "PALIMPSEST_NATS_URL": stack.nats_url,
                "PALIMPSEST_HOME": stack.home,
                "PALIMPSEST_INGEST_HOST": "127.0.0.1",
                "PALIMPSEST_INGEST_PORT": str(port),
                "PALIMPSEST_OPS_PORT": "0",
                "PALIMPSEST_OPS_HOST": "127.0.0.1",
                "PALIMPSEST_ENCRYPTION_KEY": Fernet.generate_key().decode(),
                "PALIMPSEST_ADMIN_TOKEN": admin_token,
                "PALIMPSEST_LOG_LEVEL": "WARNING",
                "PALIMPSEST_DB_POOL_MAX": str(max(4, min(concurrency, 16))),
            }
        )
        env["PALIMPSEST_INGEST_REUSE_PORT"] = "true"
        log_path = Path(stack.home) / "bench-ingest.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as processes:
            procs = [
                processes.enter_context(_service_process(env, log_path.with_suffix(f".{i}.log")))
                for i in range(replicas)
            ]
            for i, proc in enumerate(procs):
                await _wait_up(url, proc, log_path.with_suffix(f".{i}.log"))
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                tenant = await _setup(client, admin_token, sender)
            warm = Sample()
            await _fire(url, sender, warmup, concurrency, warm, client_kind)
            measured = Sample()
            before = sum(_cpu_seconds(p.pid) for p in procs), _machine_ticks()
            elapsed = await _fire(url, sender, deliveries, concurrency, measured, client_kind)
            after = sum(_cpu_seconds(p.pid) for p in procs), _machine_ticks()
            probe = settings.model_copy(update={"database_url": SecretStr(stack.app_url)})
            pool = await open_pool(
                stack.app_url,
                transaction_pooler=stack.transaction_pooler,
                min_size=1,
                max_size=2,
                name="bench-ingest",
            )
            try:
                await _await_relay(pool, tenant)
                accepted = warm.accepted_events + measured.accepted_events
                recorded = await _accepted_in_db(pool, tenant)
                nc = await bus.connect(stack.nats_url, name="bench-ingest", creds_file=probe.nats_creds_file)
                try:
                    on_stream = await _events_on_stream(nc, tenant)
                finally:
                    await nc.close()
            finally:
                await _forget(pool, tenant)
                await pool.close()
    report = _report(stack, deliveries, concurrency, warmup, elapsed, measured, accepted, recorded, on_stream)
    served = max(len(measured.latencies_ms), 1)
    busy, total = after[1][0] - before[1][0], after[1][1] - before[1][1]
    return {
        **report,
        "client": client_kind,
        "replicas": replicas,
        "server_cpu_ms_per_delivery": round((after[0] - before[0]) * 1000 / served, 3),
        "machine_cpu_busy_pct": round(100 * busy / total, 1) if total else None,
        "cpus": os.cpu_count(),
    }


def _report(
    stack: Any,
    deliveries: int,
    concurrency: int,
    warmup: int,
    elapsed: float,
    measured: Sample,
    accepted: list[str],
    recorded: list[str],
    on_stream: list[str],
) -> dict[str, Any]:
    accepted_set = set(accepted)
    stream_counts: dict[str, int] = {}
    for event_id in on_stream:
        stream_counts[event_id] = stream_counts.get(event_id, 0) + 1
    exactly_once = sum(1 for e in accepted_set if stream_counts.get(e) == 1)
    lat = measured.latencies_ms
    return {
        "benchmark": "ingest",
        "postgres": "embedded" if stack.embedded_db else "external",
        "nats": "embedded" if stack.embedded_nats else "external",
        "server": "python -m palimpsest.ingest (uvicorn; one process per replica, each with its relay)",
        "payload": "GitHub push to the default branch, signed (X-Hub-Signature-256)",
        "payload_bytes": len(json.dumps(push_payload("0" * 40, "1" * 40, 1234567890)).encode()),
        "concurrency": concurrency,
        "warmup": warmup,
        "deliveries": deliveries,
        "duration_s": round(elapsed, 3),
        "deliveries_per_s": round(len(lat) / elapsed, 1) if elapsed else None,
        "p50_ms": round(_pct(lat, 0.50), 2),
        "p90_ms": round(_pct(lat, 0.90), 2),
        "p99_ms": round(_pct(lat, 0.99), 2),
        "max_ms": round(max(lat), 2) if lat else None,
        "mean_ms": round(statistics.fmean(lat), 2) if lat else None,
        "statuses": {str(k): v for k, v in sorted(measured.statuses.items())},
        "client_errors": measured.errors,
        "accepted": len(accepted_set),
        "recorded_accepted": len(set(recorded)),
        "events": exactly_once,
        "events_on_stream": len(on_stream),
        "events_equal_accepted": exactly_once == len(accepted_set) == len(on_stream) == len(set(recorded)),
    }


def _tail(path: Path, lines: int = 3) -> list[str]:
    return path.read_text(errors="replace").strip().splitlines()[-lines:]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine, to show what else was running."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


async def _forget(pool: Pool, tenant: str) -> None:
    """Remove the bench tenant (and, by cascade, its installation and deliveries) from the database."""
    with contextlib.suppress(Exception):
        async with tenant_tx(pool, tenant) as conn:
            await conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant,))
