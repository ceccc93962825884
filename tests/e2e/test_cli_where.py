"""A CLI that says where it acts, refuses what it cannot do there, and checks arguments first.

Real processes throughout: ``palimpsest up`` serving the ingest API, the CLI run as a subprocess
against it locally (the same home) and remotely (``PALIMPSEST_INGEST_URL``, a fresh home that must
stay empty: no local stack is ever started there), and the services' own entry points.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_ingest_cli import CLI, _env, _free_port, _git_repo, _run, serving_up
from tests.support.gitrepo import base_env
from tests.support.servers import ServerSet

TRACEBACK = "Traceback (most recent call last)"


@pytest.fixture
def running_up(stack: ServerSet, tmp_path: Path) -> Iterator[dict[str, str]]:
    """``palimpsest up`` that indexes local paths (as the embedded default does) on any servers."""
    env = _env(stack, tmp_path / "home", _free_port()) | {"PALIMPSEST_ALLOW_LOCAL_SOURCES": "true"}
    with serving_up(env, tmp_path / "up.log") as serving:
        yield serving


def _fails(env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 120) -> str:
    """Run a command that must fail with exit 2 and one error line on stderr (after the target
    line, if the command got that far); return the error line."""
    out = subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd
    )
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert TRACEBACK not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    if len(lines) == 2 and lines[0].startswith("target: "):  # where it acted, then why it stopped
        lines = lines[1:]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    return lines[0]


def _remote(env: dict[str, str], home: Path) -> dict[str, str]:
    """The environment of an operator elsewhere: the cluster's URL and token, a home of its own."""
    token = (Path(env["PALIMPSEST_HOME"]) / "admin-token").read_text().strip()
    home.mkdir()
    remote = {k: v for k, v in env.items() if not k.startswith("PALIMPSEST_")}
    remote |= {
        "PALIMPSEST_HOME": str(home),
        "PALIMPSEST_INGEST_URL": f"http://127.0.0.1:{env['PALIMPSEST_INGEST_PORT']}",
        "PALIMPSEST_ADMIN_TOKEN": token,
    }
    return remote


def _two_commits(path: Path) -> Path:
    _git_repo(path)
    env = base_env("2024-05-02T12:00:00+00:00")
    (path / "app.py").write_text("def total(items):\n    return sum(i.price for i in items)\n")
    for args in (["add", "app.py"], ["commit", "-q", "-m", "add total"]):
        subprocess.run(["git", "-C", str(path), *args], env=env, check=True, capture_output=True)
    return path


# ----------------------------------------------------------------------------- no stack needed


def test_version_and_where_help(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(tmp_path)}
    version = subprocess.run([*CLI, "--version"], env=env, capture_output=True, text=True, check=True)
    assert version.stdout.startswith("palimpsest, version ")
    shown = subprocess.run([*CLI, "--help"], env=env, capture_output=True, text=True, check=True).stdout
    for name in ("PALIMPSEST_INGEST_URL", "PALIMPSEST_API_TOKEN", "PALIMPSEST_TENANT"):
        assert name in shown
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    for name in ("PALIMPSEST_INGEST_URL", "PALIMPSEST_API_TOKEN", "PALIMPSEST_TENANT"):
        assert name in readme


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "palimpsest.chunker"],
        [sys.executable, "-m", "palimpsest.ingest"],
        [sys.executable, "-m", "palimpsest.core.admin", "migrate"],
        [*CLI, "up"],
        [*CLI, "tenant", "list"],
    ],
    ids=["chunker", "ingest", "migrate-job", "up", "cli"],
)
def test_a_process_with_an_unknown_setting_refuses_to_start(command: list[str], tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(tmp_path / "home")}
    env["PALIMPSEST_MAX_FILES_PER_REPOSITORY"] = "50000"
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: unknown setting PALIMPSEST_MAX_FILES_PER_REPOSITORY (did you mean PALIMPSEST_MAX_FILES?):"
        " no Palimpsest setting has this name (`palimpsest settings` lists them)"
    ]
    assert not (tmp_path / "home").exists(), "nothing started"


def test_a_bad_setting_value_stops_up_before_anything_starts(tmp_path: Path) -> None:
    """Every service's settings judge the environment before a database or a bus is made: one line
    per bad value, naming the variable and what it expects, never a secret's value."""
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(tmp_path / "home")}
    env["PALIMPSEST_REVIEW_BUDGET_TOKENS"] = "lots"  # read by the reviewer only
    env["PALIMPSEST_LLM_API_BASE"] = "http://ops:hunter2@127.0.0.1:9/v1"
    out = subprocess.run([*CLI, "up"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: invalid setting: PALIMPSEST_LLM_API_BASE: Value error, the LLM API base must not contain"
        " credentials; use PALIMPSEST_LLM_API_KEY",
        "error: invalid setting: PALIMPSEST_REVIEW_BUDGET_TOKENS: Input should be a valid integer, unable"
        " to parse string as an integer",
    ]
    assert "hunter2" not in out.stderr + out.stdout
    assert not (tmp_path / "home").exists(), "no database, bus or token was made"


def test_a_bad_setting_value_stops_a_command_before_it_calls_the_stack(tmp_path: Path) -> None:
    """A command against a running stack refuses too: the value would be ignored there, silently."""
    calls: list[str] = []

    class Stack(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            calls.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"items": []}')

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stack)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "PATH": "/usr/bin:/bin",
            "PALIMPSEST_HOME": str(tmp_path / "home"),
            "PALIMPSEST_INGEST_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "PALIMPSEST_API_TOKEN": "pal_t_settings-test",
            "PALIMPSEST_REVIEW_MAX_FINDINGS": "lots",  # the reviewer's: no CLI command reads it
        }
        assert _fails(env, "tenant", "list") == (
            "error: invalid setting: PALIMPSEST_REVIEW_MAX_FINDINGS: Input should be a valid integer,"
            " unable to parse string as an integer (got 'lots')"
        )
        assert calls == [], "the stack was never asked"
        env["PALIMPSEST_REVIEW_MAX_FINDINGS"] = "12"  # the same command with a good value reaches it
        subprocess.run([*CLI, "tenant", "list"], env=env, capture_output=True, timeout=60, check=False)
        assert calls, "the command reaches the stack once its settings are valid"
    finally:
        server.shutdown()
        server.server_close()


def test_settings_runs_with_a_mistyped_name_and_flags_it(tmp_path: Path) -> None:
    """The command the refusals point to still runs, and shows what they refuse."""
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(tmp_path / "home")}
    env["PALIMPSEST_REVEIW_BUDGET_TOKENS"] = "5000"
    env["PALIMPSEST_LOG_FORMAT"] = "xml"
    out = subprocess.run([*CLI, "settings"], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines()[:3] == [
        "!! unknown setting PALIMPSEST_REVEIW_BUDGET_TOKENS (did you mean PALIMPSEST_REVIEW_BUDGET_TOKENS?):"
        " no Palimpsest setting has this name",
        "!! invalid setting: PALIMPSEST_LOG_FORMAT: Input should be 'json' or 'text' (got 'xml')",
        "!! (every other command refuses to run until these are fixed)",
    ]
    assert "PALIMPSEST_REVIEW_BUDGET_TOKENS  int = " in out.stdout  # the listing follows
    listed = subprocess.run(
        [*CLI, "settings", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    by = {s["name"]: s for s in json.loads(listed.stdout)}
    assert by["PALIMPSEST_REVEIW_BUDGET_TOKENS"]["unknown"] is True
    assert "did you mean PALIMPSEST_REVIEW_BUDGET_TOKENS?" in by["PALIMPSEST_REVEIW_BUDGET_TOKENS"]["problem"]
    assert by["PALIMPSEST_LOG_FORMAT"]["unknown"] is False
    assert "'json' or 'text'" in by["PALIMPSEST_LOG_FORMAT"]["problem"]
    assert by["PALIMPSEST_REVIEW_BUDGET_TOKENS"]["problem"] is None
    assert not (tmp_path / "home").exists()


def test_settings_json_lists_every_setting(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(tmp_path)}
    out = subprocess.run([*CLI, "settings", "--json"], env=env, capture_output=True, text=True, check=True)
    listed = json.loads(out.stdout)
    by = {s["name"]: s for s in listed}
    assert len(by) > 90 and all(s["description"] for s in listed)
    assert by["PALIMPSEST_LLM_API_KEY"]["secret"] is True
    assert set(by["PALIMPSEST_REVIEW_MAX_FINDINGS"]["services"]) == {"reviewer"}
    only = subprocess.run(
        [*CLI, "settings", "--service", "chunker", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all("chunker" in s["services"] for s in json.loads(only.stdout))


def test_bad_arguments_end_before_any_stack_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"PATH": "/usr/bin:/bin", "PALIMPSEST_HOME": str(home)}
    assert _fails(env, "analyze", "/nonexistent") == "error: no such path: /nonexistent"
    assert _fails(env, "analyze", str(tmp_path)) == f"error: {tmp_path} is not a git repository"
    assert _fails(env, "review", str(tmp_path / "gone"), "--base", "main").startswith("error: no such path")
    repo = _two_commits(tmp_path / "svc")
    assert "names no commit" in _fails(env, "review", str(repo), "--base", "no-such-branch")
    assert _fails(env, "review", "show", "nope") == "error: 'nope' is not a review id"
    # a detached HEAD has no branch to index (a "main" guessed for it built another commit)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", "HEAD~1"], check=True)
    for command in ("analyze", "index"):
        said = _fails(env, command, str(repo))
        assert said == (
            f"error: {repo}: HEAD is detached (on no branch), and indexing follows a branch:"
            " check one out (git switch -c NAME)"
        ), said
    assert not home.exists(), "no stack was started"


# ----------------------------------------------------------------------------- against `up`


def test_local_and_remote_targets(running_up: dict[str, str], tmp_path: Path) -> None:
    local = running_up
    remote = _remote(local, tmp_path / "elsewhere")
    repo = _two_commits(tmp_path / "svc")

    # a writing admin command names its target first: the local stack and its home ...
    out = subprocess.run(
        [*CLI, "tenant", "create", "acme", "--json"], env=local, capture_output=True, text=True, check=True
    )
    first = out.stderr.splitlines()[0]
    assert first.startswith(
        f"target: local stack, home {local['PALIMPSEST_HOME']} (the running `palimpsest up`, pid "
    )
    # ... or the remote URL, never the token
    out = subprocess.run(
        [*CLI, "tenant", "create", "globex", "--json"], env=remote, capture_output=True, text=True, check=True
    )
    assert out.stderr.splitlines()[0] == (
        f"target: remote ingest API {remote['PALIMPSEST_INGEST_URL']} (PALIMPSEST_INGEST_URL)"
    )
    assert remote["PALIMPSEST_ADMIN_TOKEN"] not in out.stderr + out.stdout

    # --tenant takes a name, locally and remotely; a name that matches nothing is one line
    added = _run(remote, "repo", "add", "--tenant", "globex", str(repo), "--mode", "off", "--json")
    assert added["full_name"] == "svc"
    globex = json.loads(out.stdout)
    own = {**remote, "PALIMPSEST_API_TOKEN": globex["api_token"], "PALIMPSEST_TENANT": globex["tenant_id"]}
    assert [r["full_name"] for r in _run(own, "repo", "list", "--json")] == ["svc"]  # PALIMPSEST_TENANT
    assert _fails(own, "repo", "list", "--tenant", "globex") == (
        "error: --tenant 'globex' is not a tenant id, and this token cannot look tenants up by name; give the id"
    )
    assert _fails(remote, "repo", "list", "--tenant", "initech") == (
        "error: no tenant 'initech': --tenant takes a tenant id or a tenant's name"
    )
    assert _fails(local, "analyze", ".", "--tenant", "initech", cwd=repo) == (
        "error: no tenant 'initech': --tenant takes a tenant id or a tenant's name"
    )

    # with a remote configured, commands without a remote form refuse, and start nothing
    for args in (
        ["analyze", str(repo)],
        ["status"],
        ["index", str(repo)],
        ["up"],
        ["db", "migrate"],
        ["bus", "init"],
    ):
        assert "acts only on a local stack, and PALIMPSEST_INGEST_URL is set" in _fails(remote, *args)
    assert list((tmp_path / "elsewhere").iterdir()) == [], "no local stack was started remotely"


def test_results_read_locally_and_through_the_api(running_up: dict[str, str], tmp_path: Path) -> None:
    local = running_up
    remote = _remote(local, tmp_path / "elsewhere")
    repo = _two_commits(tmp_path / "svc")

    analysed: dict[str, Any] = _run(local, "analyze", str(repo), "--json", timeout=600)
    tenant = (Path(local["PALIMPSEST_HOME"]) / "local-tenant").read_text().strip()
    here = _run(local, "analysis", "show", "--repo", str(repo), "--json")
    there = _run(remote, "analysis", "show", "--repo", str(repo), "--tenant", tenant, "--json")
    by_name = _run(remote, "analysis", "show", "--repo", "svc", "--tenant", "local", "--json")
    assert here["analysis_id"] == there["analysis_id"] == by_name["analysis_id"] == analysed["analysis_id"]
    assert here["analysis"] == there["analysis"] and here["state"] == there["state"]
    text = _run(remote, "analysis", "show", "--repo", "svc", "--tenant", tenant)
    assert text.strip().startswith(here["analysis"].strip().splitlines()[0])

    review = _run(local, "review", str(repo), "--base", "HEAD~1", "--json", timeout=600)
    assert review.get("review_id"), review
    here = _run(local, "review", "show", review["review_id"], "--json")
    there = _run(remote, "review", "show", review["review_id"], "--tenant", tenant, "--json")
    assert here["review_id"] == there["review_id"] == review["review_id"]
    assert [f["message"] for f in here["findings"]] == [f["message"] for f in there["findings"]]
    # another tenant's token cannot read it (row-level security behind the API)
    other = _run(remote, "tenant", "create", "snooper", "--json")  # names are unique: not "other"
    snooper = {**remote, "PALIMPSEST_API_TOKEN": other["api_token"]}
    denied = _fails(snooper, "review", "show", review["review_id"], "--tenant", tenant)
    assert denied.startswith(("error: 404", "error: 403")), denied
    assert _fails(local, "review", "show", review["review_id"], "--tenant", other["tenant_id"]) == (
        f"error: no review {review['review_id']} in tenant {other['tenant_id']}"
    )
    assert list((tmp_path / "elsewhere").iterdir()) == []
