"""The ingest CLI as an operator runs it, against ``palimpsest up`` and against a stack of its own.

``palimpsest up`` serves the ingest API on ``127.0.0.1:$PALIMPSEST_INGEST_PORT``; the commands
create a tenant, an installation (secrets from the environment and from stdin), register a local
repository, and list what a signed webhook delivery left behind. The benchmark runs small.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gitrepo import base_env
from tests.support.servers import ServerSet

CLI = [sys.executable, "-m", "palimpsest.cli.main"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(servers: ServerSet, home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update(
        {
            "PALIMPSEST_HOME": str(home),
            "PALIMPSEST_OPS_PORT": "0",
            "PALIMPSEST_LOG_FORMAT": "text",
            "PALIMPSEST_INGEST_PORT": str(port),
        }
    )
    if servers.db_mode == "external":
        env["PALIMPSEST_MIGRATION_DATABASE_URL"] = servers.owner_url
        env["PALIMPSEST_DATABASE_URL"] = servers.app_url
    if servers.nats_mode == "external":
        env["PALIMPSEST_NATS_URL"] = servers.nats_url
    return env


def _run(env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 120) -> Any:
    out = subprocess.run(
        [*CLI, *args], env=env, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if "--json" in args else out.stdout


@pytest.fixture
def running_up(stack: ServerSet, tmp_path: Path) -> Iterator[dict[str, str]]:
    with serving_up(_env(stack, tmp_path / "home", _free_port()), tmp_path / "up.log") as env:
        yield env


@contextlib.contextmanager
def serving_up(env: dict[str, str], log: Path) -> Iterator[dict[str, str]]:
    """``palimpsest up`` with ``env``, until it serves the ingest API on $PALIMPSEST_INGEST_PORT."""
    port = env["PALIMPSEST_INGEST_PORT"]
    with log.open("wb") as sink:
        proc = subprocess.Popen([*CLI, "up"], env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the stack did not serve the ingest API in 120 s"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield env
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()


def _git_repo(path: Path) -> Path:
    path.mkdir()
    env = base_env("2024-05-01T12:00:00+00:00")
    (path / "README.md").write_text("# service\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-C", str(path), *args], env=env, check=True, capture_output=True)
    return path


def test_operator_flow_against_palimpsest_up(running_up: dict[str, str], tmp_path: Path) -> None:
    env = running_up
    tenant = _run(env, "tenant", "create", "northwind", "--json")
    assert tenant["api_token"].startswith("pal_")
    tid = tenant["tenant_id"]

    secret = "whsec_e2e-secret"
    added = _run(
        {**env, "HOOK_SECRET": secret},
        "installation", "add", "--tenant", tid, "--provider", "github", "--external-id", "52817999",
        "--webhook-secret-env", "HOOK_SECRET", "--json",
    )  # fmt: skip
    assert added["has_webhook_secret"] is True and secret not in json.dumps(added)
    gitlab = _run(
        {**env, "GL_TOKEN": "glpat-e2e"},
        "installation", "add", "--tenant", tid, "--provider", "gitlab", "--external-id", "94821",
        "--webhook-secret", "-", "--token-env", "GL_TOKEN", "--json", stdin="glwt-token\n",
    )  # fmt: skip
    assert (gitlab["has_webhook_secret"], gitlab["credentials_kind"]) == (True, "token")
    both = subprocess.run(
        [*CLI, "installation", "add", "--tenant", tid, "--provider", "bitbucket", "--external-id", "{w}",
         "--webhook-secret", "-", "--token", "-"],
        env=env, input="a\nb\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert both.returncode != 0 and "only one secret" in both.stderr

    repo = _run(env, "repo", "add", "--tenant", tid, str(_git_repo(tmp_path / "svc")), "--json")
    assert (repo["provider"], repo["full_name"]) == ("local", "svc")
    listed = _run(env, "repo", "list", "--tenant", tid, "--json")
    assert [r["repository_id"] for r in listed] == [repo["repository_id"]]
    rebuild = _run(env, "repo", "rebuild", "--tenant", tid, repo["repository_id"], "--json")
    assert rebuild["event_id"]
    github = _run(
        env, "repo", "add", "--tenant", tid, "https://github.com/northwind-labs/ledger-service.git",
        "--installation", added["installation_id"], "--json",
    )  # fmt: skip
    assert github["installation_id"] == added["installation_id"]

    body = json.dumps(
        {
            "ref": "refs/tags/v1",
            "before": "1" * 40,
            "after": "2" * 40,
            "repository": {
                "id": 712384561,
                "full_name": "northwind-labs/ledger-service",
                "clone_url": "https://github.com/northwind-labs/ledger-service.git",
                "private": True,
                "default_branch": "main",
            },
            "installation": {"id": 52817999},
        }
    ).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "e2e-1",
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        "Content-Type": "application/json",
    }
    port = env["PALIMPSEST_INGEST_PORT"]
    res = httpx.post(f"http://127.0.0.1:{port}/webhooks/github", content=body, headers=headers, timeout=30)
    assert (res.status_code, res.json()["outcome"]) == (202, "ignored")
    seen = _run(env, "deliveries", "--tenant", tid, "--json")
    assert [(d["delivery_id"], d["outcome"]) for d in seen] == [("e2e-1", "ignored")]
    text = _run(env, "deliveries", "--tenant", tid)
    assert "tag push" in text

    _run(env, "repo", "remove", "--tenant", tid, repo["repository_id"], "--json")
    assert len(_run(env, "repo", "list", "--tenant", tid, "--json")) == 1

    # a tenant's own token sees its tenant and nothing else
    own = {**env, "PALIMPSEST_API_TOKEN": tenant["api_token"]}
    assert len(_run(own, "installation", "list", "--tenant", tid, "--json")) == 2
    other = _run(env, "tenant", "create", "other", "--json")["tenant_id"]
    denied = subprocess.run(
        [*CLI, "repo", "list", "--tenant", other],
        env=own,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert denied.returncode != 0 and "404" in denied.stderr


def test_a_secret_on_the_command_line_is_refused(running_up: dict[str, str]) -> None:
    env = running_up
    tid = _run(env, "tenant", "create", "refused", "--json")["tenant_id"]
    for flag in ("--webhook-secret", "--token"):
        out = subprocess.run(
            [*CLI, "installation", "add", "--tenant", tid, "--provider", "bitbucket", "--external-id", "{ws}",
             flag, "on-argv"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert out.returncode != 0 and "process table" in out.stderr, out.stderr
        assert "on-argv" not in out.stdout + out.stderr
    listed = _run(env, "installation", "list", "--tenant", tid, "--json")
    assert listed == []  # nothing was created


def test_command_without_a_running_stack_starts_one(stack: ServerSet, tmp_path: Path) -> None:
    env = _env(stack, tmp_path / "home", 0)
    created = _run(env, "tenant", "create", "solo", "--json")
    assert created["tenant_id"] and created["api_token"]


def test_bench_ingest_small_run(stack: ServerSet, tmp_path: Path) -> None:
    env = _env(stack, tmp_path / "home", 0)
    result = _run(
        env,
        "bench",
        "ingest",
        "--json",
        "--deliveries",
        "150",
        "--warmup",
        "20",
        "--concurrency",
        "4",
        timeout=300,
    )
    for key in ("deliveries_per_s", "p50_ms", "p99_ms", "accepted", "events"):
        assert key in result
    assert result["accepted"] == 170
    assert result["events"] == result["accepted"] and result["events_equal_accepted"] is True
    assert result["statuses"] == {"202": 150}


def test_organisation_operations_through_the_cli(running_up: dict[str, str], tmp_path: Path) -> None:
    """Tokens with scopes, tenant list/show/suspend/resume/delete, installation suspension, links and
    the audit log, each with --json."""
    env = running_up
    tenant = _run(env, "tenant", "create", "ops", "--json")
    tid = tenant["tenant_id"]
    issued = _run(env, "token", "create", "--tenant", tid, "--name", "ci", "--scope", "read", "--scope", "review",
                  "--expires-in-days", "30", "--json")  # fmt: skip
    assert issued["scopes"] == ["read", "review"] and issued["api_token"].startswith("pal_")
    listed = _run(env, "token", "list", "--tenant", tid, "--json")
    assert {t["name"] for t in listed} == {"initial", "ci"} and "api_token" not in json.dumps(listed)
    rotated = _run(env, "token", "rotate", "--tenant", tid, issued["token_id"], "--json")
    assert rotated["token_id"] == issued["token_id"] and rotated["api_token"] != issued["api_token"]
    reader = {**env, "PALIMPSEST_API_TOKEN": rotated["api_token"]}
    denied = subprocess.run([*CLI, "token", "list", "--tenant", tid], env=reader, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert denied.returncode != 0 and "403" in denied.stderr and "manage" in denied.stderr
    _run(env, "token", "revoke", "--tenant", tid, issued["token_id"], "--json")
    assert len(_run(env, "token", "list", "--tenant", tid, "--all", "--json")) == 2
    assert len(_run(env, "token", "list", "--tenant", tid, "--json")) == 1

    assert tid in {t["tenant_id"] for t in _run(env, "tenant", "list", "--json")}
    assert _run(env, "tenant", "suspend", tid, "--json")["state"] == "suspended"
    assert _run(env, "tenant", "resume", tid, "--json")["state"] == "active"
    added = _run(env, "installation", "add", "--tenant", tid, "--provider", "github", "--external-id", "61111",
                 "--json")  # fmt: skip
    assert (
        _run(env, "installation", "suspend", "--tenant", tid, added["installation_id"], "--json")[
            "suspended_reason"
        ]
        == "api"
    )
    assert (
        _run(env, "installation", "resume", "--tenant", tid, added["installation_id"], "--json")[
            "suspended_at"
        ]
        is None
    )

    app = _run(
        env, "repo", "add", "--tenant", tid, str(_git_repo(tmp_path / "app")), "--mode", "off", "--json"
    )
    lib = _run(
        env, "repo", "add", "--tenant", tid, str(_git_repo(tmp_path / "lib")), "--mode", "off", "--json"
    )
    linked = _run(env, "link", "add", "--tenant", tid, "--from", app["repository_id"], "--to", lib["repository_id"],
                  "--json")  # fmt: skip
    pattern = _run(
        env, "link", "add", "--tenant", tid, "--to", lib["repository_id"], "--role", "pattern", "--json"
    )
    assert pattern["source"] is None and linked["source"] == "app"
    assert len(_run(env, "link", "list", "--tenant", tid, "--json")) == 2
    _run(env, "link", "remove", "--tenant", tid, linked["link_id"], "--json")
    assert "(every repository) -> lib" in _run(env, "link", "list", "--tenant", tid)

    shown = _run(env, "tenant", "show", tid, "--json")
    assert shown["repositories"] == 2 and shown["installations"] == 1
    audit = _run(env, "audit", "--tenant", tid, "--json")
    actions = {a["action"] for a in audit}
    assert {
        "issue_token",
        "rotate_token",
        "revoke_token",
        "add_link",
        "remove_link",
        "suspend_installation",
    } <= actions
    assert all(a["actor"] == "operator" for a in audit if a["action"] == "add_link")

    # both repositories are off: the backfill has nothing of this tenant to request
    planned = _run(env, "backfill", "--dry-run", "--tenant", tid, "--json")
    assert planned == {"dry_run": True, "candidates": [], "requested": 0}

    gone = _run(env, "tenant", "delete", tid, "--yes", "--json")
    assert gone["existed"] is True and gone["deleted_rows"] > 0
    again = _run(env, "tenant", "delete", tid, "--yes", "--json")
    assert again["existed"] is False and again["deleted_rows"] == 0
