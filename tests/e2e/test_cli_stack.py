"""``palimpsest up`` as a user runs it: start, report status, stop cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.servers import ServerSet

CLI = [sys.executable, "-m", "palimpsest.cli.main"]


def _env(servers: ServerSet, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env["PALIMPSEST_HOME"] = str(home)
    env["PALIMPSEST_OPS_PORT"] = "0"
    env["PALIMPSEST_INGEST_PORT"] = "0"
    env["PALIMPSEST_LOG_FORMAT"] = "text"
    if servers.db_mode == "external":
        env["PALIMPSEST_MIGRATION_DATABASE_URL"] = servers.owner_url
        env["PALIMPSEST_DATABASE_URL"] = servers.app_url
    if servers.nats_mode == "external":
        env["PALIMPSEST_NATS_URL"] = servers.nats_url
    return env


def test_up_status_and_clean_shutdown(stack: ServerSet, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(stack, home)
    log = tmp_path / "up.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([*CLI, "up", "--json"], env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        state = home / "stack.json"
        deadline = time.monotonic() + 120
        while not state.exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "stack did not come up in 120 s"
            time.sleep(0.2)
        info = json.loads(state.read_text())
        assert info["embedded_db"] == (stack.db_mode == "embedded")
        out = subprocess.run(
            [*CLI, "status", "--json"], env=env, capture_output=True, timeout=60, check=False
        )
        report = json.loads(out.stdout)
        assert out.returncode == 0, out.stderr.decode()
        assert report["ok"] is True
        assert report["components"]["database"]["ok"] is True
        assert report["components"]["nats"]["stream"] == "PALIMPSEST"
        one_server = report["components"]["stream:cluster"]  # a single server: one copy, no followers
        assert one_server["ok"] is True and one_server["replicas"] == 1
        assert not [k for k in one_server if k.startswith("replica:")]
        assert report["components"]["stack"]["pid"] == proc.pid
        if stack.db_mode == "embedded":
            assert report["components"]["database"]["pgvector_available"] is True
            assert report["components"]["database"]["version"].startswith("18")
        ops = info["ops_url"]
        assert httpx.get(f"{ops}/healthz", timeout=5).status_code == 200
        ready = httpx.get(f"{ops}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        assert "palimpsest_events_published_total" in httpx.get(f"{ops}/metrics", timeout=5).text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, log.read_text()
    assert not (home / "stack.json").exists()
    if stack.db_mode == "embedded":
        assert not (home / "postgres" / "data" / "postmaster.pid").exists()


def test_invalid_setting_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "PALIMPSEST_HOME": str(tmp_path), "PALIMPSEST_MAX_DELIVER": "lots"}
    out = subprocess.run([*CLI, "status"], env=env, capture_output=True, timeout=60, check=False)
    assert out.returncode == 2
    assert "PALIMPSEST_MAX_DELIVER" in out.stderr.decode()
    assert "Traceback" not in out.stderr.decode()
