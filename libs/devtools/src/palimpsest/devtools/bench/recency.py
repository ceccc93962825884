"""``palimpsest bench recency``: a large real history, scanned through the real handler.

:func:`generate_history` writes a repository of ``commits`` commits over ``files`` files with
``git fast-import`` (one process, seconds — not 100 000 ``git commit`` runs): a first stretch
of commits adds the files a hundred at a time, then most commits touch one to four files, some
none, one in fifty touches forty (over the co-change bound), and a few rename or delete. Dates
advance an hour per commit. The repository is repacked with bitmaps, as hosting servers keep
theirs.

The history is served over smart HTTP (``git http-backend``) by a separate process
(:mod:`palimpsest.devtools.fakes.git_http`) that also generates it, so the generator's and
the server's memory never count as the scanner's. :func:`time_scan` then runs one
``index.requested`` through the consumer runtime and the real handler — blob-less clone over
HTTP, streamed log, parse, COPY and merge, scan record, outbox event — and reports the figures.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from uuid import UUID

from palimpsest.cli.output import progress
from palimpsest.core.consumer import ConsumerRuntime
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import IndexRequested
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.recency_scanner.scanner import RecencyScanner, ScanOptions

__all__ = [
    "BenchServer",
    "GeneratedHistory",
    "generate_history",
    "peak_rss_mb",
    "run_bench_recency",
    "time_scan",
]

_ADD_BATCH = 100
_START = 1_420_070_400  # 2015-01-01T00:00:00Z
_IDENTITY = b"Bench <bench@palimpsest.invalid>"


@dataclass(frozen=True, slots=True)
class GeneratedHistory:
    path: Path
    commits: int
    files: int  # files in the head tree
    generate_s: float


def git_env() -> dict[str, str]:
    """An environment for generation git calls: no user or system config, fixed locale."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"})
    return env


class _Tree:
    """The live file list, with O(1) random pick, add and remove."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paths: list[str] = []
        self.index: dict[str, int] = {}
        self.created = 0

    def new_path(self) -> str:
        i = self.created
        self.created += 1
        folder = f"pkg{i % 97}/mod{i % 13}"
        return f"{folder}/note_{i}.md" if i % 25 == 0 else f"{folder}/file_{i}.py"

    def add(self, path: str) -> None:
        self.index[path] = len(self.paths)
        self.paths.append(path)

    def remove(self, path: str) -> None:
        at = self.index.pop(path)
        last = self.paths.pop()
        if at < len(self.paths):
            self.paths[at] = last
            self.index[last] = at

    def pick(self) -> str:
        return self.paths[self.rng.randrange(len(self.paths))]


def _data(payload: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(payload), payload)


def _modify(path: str, n: int) -> bytes:
    return b"M 100644 inline %s\n" % path.encode() + _data(b"%s %d\n" % (path.encode(), n))


def _changes(tree: _Tree, rng: random.Random, n: int, files: int) -> list[bytes]:
    """The file commands of commit ``n``."""
    if len(tree.paths) < files:  # the first stretch adds the files in batches
        out = []
        for _ in range(min(_ADD_BATCH, files - len(tree.paths))):
            path = tree.new_path()
            tree.add(path)
            out.append(_modify(path, n))
        return out
    roll = rng.random()
    count = 0 if roll < 0.03 else 40 if roll < 0.05 else rng.choice((1, 1, 2, 2, 3, 4))
    out = []
    touched: set[str] = set()
    for _ in range(count):
        path = tree.pick()
        if path in touched:
            continue
        touched.add(path)
        kind = rng.random()
        if kind < 0.02:  # an exact rename
            new = tree.new_path()
            tree.remove(path)
            tree.add(new)
            touched.add(new)
            out.append(b"R %s %s\n" % (path.encode(), new.encode()))
        elif kind < 0.04:  # a delete, and a new file to keep the tree's size
            tree.remove(path)
            new = tree.new_path()
            tree.add(new)
            touched.add(new)
            out += [b"D %s\n" % path.encode(), _modify(new, n)]
        else:
            out.append(_modify(path, n))
    return out


def fast_import_stream(commits: int, files: int, *, seed: int = 0) -> Iterator[bytes]:
    """The ``git fast-import`` input, one commit per item (deterministic for a seed)."""
    rng = random.Random(seed)  # noqa: S311 - benchmark data, not security
    tree = _Tree(rng)
    for n in range(commits):
        header = b"commit refs/heads/main\ncommitter %s %d +0000\n" % (_IDENTITY, _START + n * 3600) + _data(
            b"change %d" % n
        )
        yield header + b"".join(_changes(tree, rng, n, files))
    yield b"done\n"


def generate_history(path: Path, *, commits: int, files: int, seed: int = 0) -> GeneratedHistory:
    """Write the bare repository at ``path`` (see the module docstring); returns its shape."""
    started = time.perf_counter()
    env = git_env()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, env=env)
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--done"], cwd=path, stdin=subprocess.PIPE, env=env
    )
    assert proc.stdin is not None
    try:
        buffer = bytearray()
        for part in fast_import_stream(commits, files, seed=seed):
            buffer += part
            if len(buffer) >= 1 << 20:
                proc.stdin.write(buffer)
                buffer.clear()
        proc.stdin.write(buffer)
    finally:
        proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "repack", "-a", "-d", "-b", "-q"], cwd=path, check=True, env=env)
    head_files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "-z", "main"],
        cwd=path,
        check=True,
        env=env,
        capture_output=True,
    ).stdout.count(b"\0")
    return GeneratedHistory(path, commits, head_files, time.perf_counter() - started)


# ------------------------------------------------------------------------------ the server process


class BenchServer:
    """The generating-and-serving subprocess: ``with BenchServer([...]) as srv: srv.info["url"]``."""

    def __init__(self, args: list[str], *, ready_timeout_s: float = 1800.0) -> None:
        self.args = args
        self.ready_timeout_s = ready_timeout_s
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BenchServer:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "palimpsest.devtools.fakes.git_http", *self.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._proc.stdout is not None
        line = _readline(self._proc.stdout, self.ready_timeout_s)
        if not line:
            self.__exit__()
            raise RuntimeError("the benchmark's git server did not start")
        self.info = json.loads(line)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the server stops when its stdin closes
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None


def _readline(stream: IO[bytes], timeout_s: float) -> bytes:
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return b""
    return stream.readline()


# ------------------------------------------------------------------------------ measuring


def peak_rss_mb() -> dict[str, float]:
    """Peak resident memory (MiB) of this process and of its largest finished child."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"self": round(own, 1), "children": round(children, 1), "total": round(own + children, 1)}


async def time_scan(pool: Pool, tenant_id: UUID, repository_id: UUID, options: ScanOptions) -> dict[str, Any]:
    """One ``index.requested`` through the consumer runtime and the real handler; the figures."""
    scanner = RecencyScanner(options)
    runtime = ConsumerRuntime("bench-recency", pool, {"index.requested": scanner.handle})
    event = IndexRequested(tenant_id=tenant_id, repository_id=repository_id, reason="cli")
    started = time.perf_counter()
    outcome = await runtime.handle(event.to_json(), {})
    scan_s = time.perf_counter() - started
    async with tenant_tx(pool, tenant_id) as conn:
        cur = await conn.execute(
            "SELECT status, reason, detail, commits, files, pairs, stats, duration_s FROM recency_scans"
            " WHERE repository_id = %s",
            (repository_id,),
        )
        record = await cur.fetchone()
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM file_recency WHERE repository_id = %(r)s)"
            " + (SELECT count(*) FROM cochange WHERE repository_id = %(r)s) AS n",
            {"r": repository_id},
        )
        rows = await cur.fetchone()
    if record is None or rows is None:
        raise RuntimeError(f"the scan left no record (outcome {outcome.status})")
    return {
        "status": record["status"],
        "reason": record["reason"],
        "detail": record["detail"],
        "scan_s": round(scan_s, 3),
        "handler_duration_s": record["duration_s"],
        "commits_scanned": record["commits"],
        "files_dated": record["files"],
        "pairs": record["pairs"],
        "rows": int(rows["n"]),
        "stats": record["stats"],
    }


async def run_bench_recency(
    settings: BaseServiceSettings, *, commits: int, files: int, seed: int, repo: Path | None
) -> dict[str, Any]:
    """Serve a generated (or given) history over HTTP and scan it on a scratch stack."""
    from pydantic import SecretStr

    from palimpsest.cli.stack import open_stack, scratch_settings
    from palimpsest.cli.tenants import create_tenant
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.ids import uuid7
    from palimpsest.core.service import close_infra, open_infra
    from palimpsest.recency_scanner.service import Settings

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-recency-") as tmp:
        root = Path(tmp)
        source = (
            ["--repo", str(repo)] if repo is not None else ["--generate", str(commits), str(files), str(seed)]
        )
        progress("generating the history with git fast-import…" if repo is None else f"serving {repo}…")
        s = scratch_settings(settings, root / "home", local_sources=False)
        with BenchServer(["--root", str(root), *source]) as server:
            info = server.info
            progress(f"history ready ({info.get('generate_s', 0)}s); starting a scratch stack…")
            async with open_stack(s, durable=False) as stack:
                app = s.model_copy(
                    update={"database_url": SecretStr(stack.app_url), "nats_url": stack.nats_url}
                )
                infra = await open_infra(app, "bench-recency")
                try:
                    tenant = await create_tenant(infra.pool, f"bench-recency-{uuid7().hex[-8:]}")
                    repository_id = uuid7()
                    async with tenant_tx(infra.pool, tenant) as conn:
                        await conn.execute(
                            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url,"
                            " default_branch) VALUES (%s, %s, 'github', 'bench/recency', %s, %s)",
                            (tenant, repository_id, info["url"], info["branch"]),
                        )
                    options = Settings.model_construct(
                        **{
                            **Settings().model_dump(),
                            "recency_scan": True,
                            "recency_tmp_dir": root,
                            # the bench's own git server on loopback: an explicit allowance
                            "private_provider_hosts": ("127.0.0.1",),
                        }
                    ).scan_options()
                    progress("scanning: clone + log + parse + write…")
                    t0 = time.perf_counter()
                    figures = await time_scan(infra.pool, tenant, repository_id, options)
                    wall = time.perf_counter() - t0
                    rss = peak_rss_mb()  # before the server process ends: its memory is not ours
                finally:
                    await close_infra(infra)
                postgres = "embedded" if stack.embedded_db else "external"
    return {
        "benchmark": "recency",
        "source": str(repo) if repo is not None else "generated",
        "commits": info.get("commits", commits),  # in the branch; the scan walks first parents
        "files": info.get("head_files", figures["files_dated"]),
        "scan_s": figures["scan_s"],
        "peak_rss_mb": rss["total"],
        "rows": figures["rows"],
        "status": figures["status"],
        "reason": figures["reason"],
        "detail": figures["detail"],
        "commits_scanned": figures["commits_scanned"],
        "files_dated": figures["files_dated"],
        "cochange_pairs": figures["pairs"],
        "rss_self_mb": rss["self"],
        "rss_largest_child_mb": rss["children"],
        "wall_s": round(wall, 3),
        "generate_s": info.get("generate_s"),
        "postgres": postgres,
        "target_s": 20.0,
        "stats": figures["stats"],
    }
