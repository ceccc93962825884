"""``palimpsest up --processes``: each service its own OS process, restarted after ``kill -9``.

The stack is driven through the running processes afterwards (``palimpsest index`` goes through
the bus to the restarted chunker), and Ctrl-C leaves no service process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.e2e.test_cli_stack import CLI, _env
from tests.support.gitrepo import commit, init_repo
from tests.support.servers import ServerSet

MODULES = {
    "ingest",
    "recency_scanner",
    "chunker",
    "embedder",
    "analyzer",
    "reviewer",
}


def _children(parent: int) -> dict[str, int]:
    """module → pid of the `python -m palimpsest.<module>` children of ``parent``."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"-m" in argv:
            module = argv[argv.index(b"-m") + 1].decode()
            if module.startswith("palimpsest."):
                found[module.removeprefix("palimpsest.")] = int(entry.name)
    return found


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _index(env: dict[str, str], repo: Path) -> dict[str, object]:
    out = subprocess.run(
        [*CLI, "index", str(repo), "--json"], env=env, capture_output=True, timeout=180, check=False
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    built: dict[str, object] = json.loads(out.stdout)
    assert built["state"] == "ready", built
    return built


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _wait(predicate: object, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} within {timeout_s:.0f}s"
        time.sleep(0.2)


def test_services_run_as_processes_and_come_back_after_kill_9(stack: ServerSet, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(stack, home)
    env["PALIMPSEST_ALLOW_LOCAL_SOURCES"] = "true"  # explicit with an external database; embedded default
    repo = init_repo(tmp_path / "repo")
    commit(repo, "2026-01-05", {"src/app.py": "def handler(event):\n    return event\n"})
    log = tmp_path / "up.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*CLI, "up", "--processes", "--json"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        state = home / "stack.json"
        _wait(lambda: state.exists() or proc.poll() is not None, "the stack comes up")
        assert proc.poll() is None, log.read_text()
        info = json.loads(state.read_text())
        assert set(info["processes"]) == {m.replace("_", "-") for m in MODULES}
        children = _children(proc.pid)
        assert set(children) == MODULES, children
        for name, p in info["processes"].items():
            assert children[name.replace("-", "_")] == p["pid"]
            assert _ready(p["ops_port"]), name
        cmdlines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children.values()]
        assert all(b"postgresql://" not in c and b"nats://" not in c for c in cmdlines)  # config in env only
        _wait(lambda: "running; Ctrl-C" in log.read_text(), "up describes the stack")
        web_url = f"{info['ingest_url']}/ui/"  # up --json says where to sign in, and it answers there
        assert f'"web_url": "{web_url}"' in log.read_text()
        assert "API token" in httpx.get(f"{web_url}sign-in", timeout=10).text

        assert _index(env, repo)["files"] == 1  # the chunker now runs its parse-worker pool
        old = children["chunker"]
        assert len(_group(old)) > 1, "the chunker's parse workers share its process group"
        os.kill(old, signal.SIGKILL)
        _wait(lambda: _children(proc.pid).get("chunker") not in (None, old), "the chunker is restarted")
        _wait(lambda: _group(old) == [], "the killed chunker's parse workers are reaped")
        chunker_ops = info["processes"]["chunker"]["ops_port"]
        _wait(lambda: _ready(chunker_ops), "the new chunker is ready")
        commit(repo, "2026-01-06", {"src/util.py": "def helper():\n    return 1\n"})
        built = _index(env, repo)  # through the restarted chunker
        assert (built["state"], built["files"]) == ("ready", 2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert _children(proc.pid) == {}
    assert "chunker exited with -9; restarting" in log.read_text()
