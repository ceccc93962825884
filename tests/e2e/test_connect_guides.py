"""The connect guides' "check it works", followed against ``palimpsest up`` and loopback fakes.

docs/connect-github.md, connect-gitlab.md and connect-bitbucket.md each end with two checks: the
provider's first delivery (GitHub's ping, GitLab's "Test → Push events", Bitbucket's first push) is
visible in ``palimpsest deliveries``, and a test pull request gets a review posted on it. Here the
provider is played by signed deliveries (the headers each provider sends, signed with the
installation's secret) and by the fake provider APIs of ``tests.support.fake_providers`` (GitHub's
App token minting included); the model by the fake OpenAI-compatible server. The CLI commands are
the guides' own; what differs is where the repository comes from (a local git repository
registered under the provider's name, since nothing here reaches github.com) — the guides register
it from the installation event or ``installation sync``.

Run with ``-s`` to see the transcript: each command and what it printed.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from palimpsest.core.db import with_user
from palimpsest.devtools.fakes.llm import FakeLLM
from tests.e2e.test_ingest_cli import CLI, _env, _free_port
from tests.support.fake_providers import FakeApp, FakeProviders
from tests.support.gitrepo import git
from tests.support.servers import APP_ROLE, ServerSet, scratch_database
from tests.unit.ingest.webhook_support import SECRET, TOKEN, encode, headers_for, load

PROVIDER_TOKEN = "ghs_guide-check-token-7a1f"
MODEL_KEY = "sk-guide-check"
GITLAB_HOST = "gitlab.northwind.example"
WORKSPACE = "{a7e41c08-92d3-4f6b-b15e-0c8d3a9f6e21}"
APP_ID, INSTALLATION = "914203", "52817364"
REPLY = (
    '{"summary": "discount() can return None.", "findings": [{"path": "src/billing.py", "start_line": 2,'
    ' "end_line": 2, "severity": "major", "category": "bug", "message": "discount() may return None",'
    ' "suggested_change": "total = discount(items) or 0"}]}'
)
# the fixtures' repositories, and the pull request number each fixture names
NAMES = {
    "github": ("northwind-labs/ledger-service", 131),
    "gitlab": ("platform/billing/invoice-engine", 57),
    "bitbucket": ("kestrel-freight/route-planner", 88),
}


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text)
        print(text)


def _repo(path: Path) -> tuple[str, str]:
    """A repository with main and a feature branch that adds src/billing.py: (base, head)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# ledger\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first", date="2025-03-01T10:00:00+00:00")
    base = git(path, "rev-parse", "HEAD").strip()
    git(path, "checkout", "-q", "-b", "feature")
    (path / "src").mkdir()
    (path / "src/billing.py").write_text("def total(items):\n    total = discount(items)\n    return total\n")
    git(path, "add", "src/billing.py")
    git(path, "commit", "-q", "-m", "billing", date="2025-03-02T10:00:00+00:00")
    head = git(path, "rev-parse", "HEAD").strip()
    git(path, "checkout", "-q", "main")
    return base, head


@pytest.fixture(scope="module")
def guide_stack(
    stack: ServerSet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, str], FakeProviders, FakeLLM, Path]]:
    tmp_path = tmp_path_factory.mktemp("guides")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "app.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    app = FakeApp(APP_ID, key.public_key(), INSTALLATION)
    with (
        FakeProviders(token=PROVIDER_TOKEN, app=app) as api,
        FakeLLM(reply=REPLY, api_key=MODEL_KEY) as model,
        scratch_database(stack, "guides") as owner_url,
    ):
        port = _free_port()
        env = _env(stack, tmp_path / "home", port)
        env.pop("PALIMPSEST_NATS_URL", None)
        env.update(
            {
                # a database of its own on the session's server, embedded or external (the set-up's
                # SQL below needs the database `up` runs on), and up's own embedded NATS: up
                # declares the bus with its production settings, which the session's must keep
                "PALIMPSEST_MIGRATION_DATABASE_URL": owner_url,
                "PALIMPSEST_DATABASE_URL": with_user(owner_url, APP_ROLE),
                # the quickstart's model settings, pointed at the fake model
                "PALIMPSEST_LLM_MODEL": "openai/fake-model",
                "PALIMPSEST_LLM_API_BASE": model.base_url,
                "PALIMPSEST_LLM_API_KEY": MODEL_KEY,
                "PALIMPSEST_BOT_NAME": "palimpsest-review",
                "PALIMPSEST_ALLOW_LOCAL_SOURCES": "true",  # the stand-in repositories are local
                "PALIMPSEST_PROVIDER_HOSTS": f"github.com,gitlab.com,bitbucket.org,{GITLAB_HOST}",
                # the provider APIs (GitHub Enterprise / self-managed style overrides) → the fakes
                "PALIMPSEST_GITHUB_API_URL": api.url,
                "PALIMPSEST_REVIEW_GITHUB_API_URL": api.url,
                "PALIMPSEST_REVIEW_GITLAB_API_URL": api.url,
                "PALIMPSEST_REVIEW_BITBUCKET_API_URL": api.url,
            }
        )
        log = tmp_path / "up.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen([*CLI, "up"], env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the stack did not serve the ingest API in 180 s"
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.3)
            yield env, api, model, tmp_path
        finally:
            proc.send_signal(2)
            try:
                proc.wait(60)
            finally:
                if proc.poll() is None:
                    proc.kill()


def _cli(t: Transcript, env: dict[str, str], *args: str, extra: dict[str, str] | None = None) -> Any:
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    t.say(f"$ palimpsest {shown}")
    out = subprocess.run(
        [*CLI, *args], env={**env, **(extra or {})}, capture_output=True, text=True, timeout=180, check=False
    )
    assert out.returncode == 0, out.stderr
    t.say(out.stdout.rstrip())
    return json.loads(out.stdout) if "--json" in args else out.stdout


def _post(
    t: Transcript, env: dict[str, str], provider: str, event: str, payload: dict[str, Any], delivery: str
) -> None:
    body = encode(payload)
    headers = headers_for(provider, event, body, delivery=delivery)
    url = f"http://127.0.0.1:{env['PALIMPSEST_INGEST_PORT']}/webhooks/{provider}"
    res = httpx.post(url, content=body, headers=headers, timeout=30)
    t.say(f"# {provider} delivers '{event}' ({delivery}), signed: HTTP {res.status_code} {res.text}")
    assert res.status_code in (200, 202), res.text


def _installation(t: Transcript, env: dict[str, str], tid: str, provider: str, tmp: Path) -> str:
    """The guide's `installation add` (secrets from the environment, never on the command line)."""
    secrets = {
        "HOOK_SECRET": SECRET.decode(),
        "GITLAB_TOKEN": PROVIDER_TOKEN,
        "BITBUCKET_TOKEN": PROVIDER_TOKEN,
    }
    if provider == "github":
        found = _cli(
            t, env, "installation", "add", "--tenant", tid, "--provider", "github", "--external-id", INSTALLATION,
            "--app-id", APP_ID, "--private-key-file", str(tmp / "app.pem"), "--webhook-secret-env", "HOOK_SECRET",
            "--json", extra=secrets,
        )  # fmt: skip
        _cli(
            t, env, "installation", "add", "--tenant", tid, "--provider", "github", "--kind", "app",
            "--external-id", APP_ID, "--webhook-secret-env", "HOOK_SECRET", extra=secrets,
        )  # fmt: skip
    elif provider == "gitlab":
        found = _cli(
            t, env, "installation", "add", "--tenant", tid, "--provider", "gitlab", "--host", GITLAB_HOST,
            "--external-id", "4821", "--webhook-secret-env", "HOOK_TOKEN", "--token-env", "GITLAB_TOKEN",
            "--json", extra={**secrets, "HOOK_TOKEN": TOKEN},
        )  # fmt: skip
    else:
        found = _cli(
            t, env, "installation", "add", "--tenant", tid, "--provider", "bitbucket", "--external-id", WORKSPACE,
            "--webhook-secret-env", "HOOK_SECRET", "--token-env", "BITBUCKET_TOKEN", "--json", extra=secrets,
        )  # fmt: skip
    return str(found["installation_id"])


def _first_delivery(provider: str, base: str, head: str) -> tuple[str, dict[str, Any]]:
    """What the guide's first check sends: GitHub's ping, GitLab's test push, a Bitbucket push."""
    if provider == "github":
        return "ping", load("github", "ping")
    if provider == "gitlab":
        payload = load("gitlab", "push")
        payload.update(before=base, after=base, checkout_sha=base, commits=[], total_commits_count=0)
        return "Push Hook", payload
    payload = load("bitbucket", "repo_push")
    return "repo:push", payload


def _pull_request(provider: str, base: str, head: str) -> tuple[str, dict[str, Any]]:
    if provider == "github":
        payload = load("github", "pull_request_opened")
        payload["pull_request"]["base"].update(sha=base, ref="main")
        payload["pull_request"]["head"].update(sha=head, ref="feature")
        return "pull_request", payload
    if provider == "gitlab":
        payload = load("gitlab", "merge_request_open")
        attributes = payload["object_attributes"]
        attributes.update(target_branch="main", source_branch="feature")
        attributes["last_commit"]["id"] = head
        return "Merge Request Hook", payload
    payload = load("bitbucket", "pullrequest_created")
    pull = payload["pullrequest"]
    pull["source"]["branch"]["name"], pull["source"]["commit"]["hash"] = "feature", head[:12]
    pull["destination"]["branch"]["name"], pull["destination"]["commit"]["hash"] = "main", base[:12]
    return "pullrequest:created", payload


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
def test_a_guide_check_it_works(
    guide_stack: tuple[dict[str, str], FakeProviders, FakeLLM, Path],
    stack: ServerSet,
    tmp_path: Path,
    provider: str,
) -> None:
    env, api, _model, keys = guide_stack
    owner_url = env["PALIMPSEST_MIGRATION_DATABASE_URL"]
    t = Transcript()
    t.say(f"## docs/connect-{provider}.md — check it works (loopback fakes)")
    tid = _cli(t, env, "tenant", "create", f"northwind-{provider}", "--json")["tenant_id"]
    installation = _installation(t, env, tid, provider, keys)
    base, head = _repo(tmp_path / "repo")
    name, number = NAMES[provider]
    repo = _cli(t, env, "repo", "add", "--tenant", tid, str(tmp_path / "repo"), "--name", name, "--json")
    # stand-in for the installation event / `installation sync`: the local repository becomes the
    # provider's repository of this installation (an https clone URL would need the provider)
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE repositories SET provider = %s, installation_id = %s WHERE repository_id = %s",
            (provider, installation, repo["repository_id"]),
        )
    t.say(f"# (test set-up: repository {name} → {provider} installation {installation})")

    event, payload = _first_delivery(provider, base, head)
    _post(t, env, provider, event, payload, delivery=f"guide-{provider}-1")
    seen = _cli(t, env, "deliveries", "--tenant", tid, "--json")
    assert [(d["event"], d["outcome"]) for d in seen][:1] in (
        [("ping", "accepted")],
        [(event, "accepted")],
    ), seen
    _cli(t, env, "deliveries", "--tenant", tid)

    event, payload = _pull_request(provider, base, head)
    _post(t, env, provider, event, payload, delivery=f"guide-{provider}-2")
    deadline = time.monotonic() + 180
    while not api.summaries(provider, number):
        assert time.monotonic() < deadline, (keys / "up.log").read_text()[-3000:]
        time.sleep(0.5)
    [summary] = api.summaries(provider, number)
    [inline] = api.inline(provider, number)
    t.say(f"# the fake {provider} API now holds the review: summary comment\n{summary}")
    t.say(
        f"# and one inline comment: {json.dumps({k: v for k, v in inline.items() if not k.startswith('_')})[:400]}"
    )
    assert "discount() can return None." in summary
    assert api.rejected == []
    if provider == "github":  # posted with an installation token minted from the App's key
        assert api.app is not None and api.app.mints >= 1 and api.app.refused == []
    _cli(t, env, "deliveries", "--tenant", tid)
