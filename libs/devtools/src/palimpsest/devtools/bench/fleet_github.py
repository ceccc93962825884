"""``bench fleet``'s GitHub: the fleet's repositories, the provider they live on, and its deliveries.

The provider is a loopback fake of a GitHub instance at ``https://127.0.0.1`` (port 443, so
Palimpsest takes it as it takes an Enterprise Server host: an installation's repositories are
registered only as https URLs on the installation's host, on the default port):

* git smart HTTP over TLS (:class:`palimpsest.devtools.fakes.git_http.GitHttpServer`, a fresh
  self-signed certificate that the services trust through ``GIT_SSL_CAINFO``), serving every
  tenant's bare repositories as ``/<login>/<name>.git`` to that tenant's installation token only
  (GitHub's ``Basic x-access-token:<token>``);
* the REST API of :class:`palimpsest.devtools.chaos.github.FakeGitHubAPI`: each installation's
  repository listing (``GET /installation/repositories``, what installation sync reads) and the
  endpoints the reviewer posts its reviews through.

Each tenant is made through the admin API and its GitHub App installation registered through the
tenant API (the webhook secret must be known before a delivery can be verified: the product has no
webhook path for either). Everything after that arrives as GitHub sends it, signed with the
installation's secret: ``installation`` ``created`` with the selected repositories, an
``installation_repositories`` ``added`` for the ones selected afterwards, then pushes and pull
requests (:mod:`palimpsest.devtools.bench.fleet_day`). A delivery answered 5xx or not at all is
redelivered with the same ``X-GitHub-Delivery``, as GitHub does.

Repositories are bare; the day's commits are written with ``git fast-import`` onto ``main`` or a
pull request's branch (:func:`commit_change`), each appending one TypeScript function to a file of
the tree and now and then adding a new file.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from palimpsest.core.credentials import auth_for
from palimpsest.devtools.bench.index import _fast_import, generate
from palimpsest.devtools.bench.recency import git_env
from palimpsest.devtools.chaos.github import (
    FakeGitHubAPI,
    delivery_headers,
    install_tenant,
    installation_payload,
    installation_repositories_payload,
    repository_object,
    serving,
)
from palimpsest.devtools.chaos.repos import Commit
from palimpsest.devtools.fakes.git_http import GitHttpServer, self_signed_tls

BYTES_PER_FILE = 1500
PROVIDER_HOST = "127.0.0.1"
SEND_GIVE_UP_S = 300.0


@dataclass(slots=True)
class FleetRepo:
    tenant: int
    name: str
    files: int
    path: Path
    login: str = ""
    external_id: int = 0
    repository_id: str = ""
    registered: float = 0.0  # wall clock: its installation delivery was accepted
    ready: float | None = None  # wall clock: its first snapshot was ready
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    prs: dict[int, str] = field(default_factory=dict)  # open pull request number → head sha
    steps: int = 0

    @property
    def full_name(self) -> str:
        return f"{self.login}/{self.name}"

    @property
    def wait_s(self) -> float | None:
        return None if self.ready is None else round(self.ready - self.registered, 2)


@dataclass(slots=True)
class FleetTenant:
    index: int
    login: str
    tenant_id: str
    api_token: str
    installation_external_id: int
    webhook_secret: str
    access_token: str
    installation_id: str = ""


def make_repo(path: Path, files: int, seed: int) -> None:
    """A bare repository of ``files`` generated files (content seeded: no two repositories alike)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(path)], check=True, env=git_env())
    corpus = [(p, t) for p, t, _ in generate(files, files * BYTES_PER_FILE, seed=seed)]
    _fast_import(path, corpus, parent=False, message="initial import")


def _git(repo: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=data, capture_output=True, check=True, env=git_env()
    )
    return done.stdout.decode()


def commit_change(repo: FleetRepo, ref: str, parent: str, seed: int) -> Commit:
    """One new commit on ``refs/heads/<ref>`` whose parent is ``parent``: a function appended to a
    TypeScript file of the tree and, one time in five, a new file beside it."""
    repo.steps += 1
    step = repo.steps
    rng = random.Random(seed * 1_000_003 + step)  # noqa: S311 - a reproducible change
    paths = [
        p for p in _git(repo.path, "ls-tree", "-r", "--name-only", parent).splitlines() if p.endswith(".ts")
    ]
    target = rng.choice(paths)
    name = f"fleetStep{step}x{rng.randint(1000, 9999)}"
    function = (
        f"\n/** Step {step}: {name} scales a value for the fleet day. */\n"
        f"export function {name}(value: number): number {{\n  return value * {rng.randint(2, 99)} + {step};\n}}\n"
    )
    changes = [(target, _git(repo.path, "cat-file", "blob", f"{parent}:{target}") + function)]
    added: list[str] = []
    if rng.random() < 0.2:
        new = f"{target.rsplit('/', 1)[0]}/fleetAdded{step}.ts"
        changes.append((new, f"import {{ {name} }} from './{Path(target).stem}';\n{function}"))
        added.append(new)
    stamp = int(time.time())
    message = f"fleet change {step}".encode()
    stream = [
        b"".join(
            b"blob\nmark :%d\ndata %d\n%s\n" % (i, len(t.encode()), t.encode())
            for i, (_, t) in enumerate(changes, 1)
        ),
        b"commit refs/heads/%s\n" % ref.encode(),
        b"committer Fleet <fleet@palimpsest.invalid> %d +0000\n" % stamp,
        b"data %d\n%s\n" % (len(message), message),
        b"from %s\n" % parent.encode(),
        *(b"M 100644 :%d %s\n" % (i, p.encode()) for i, (p, _) in enumerate(changes, 1)),
        b"done\n",
    ]
    _git(repo.path, "fast-import", "--quiet", "--done", "--force", data=b"".join(stream))
    sha = _git(repo.path, "rev-parse", f"refs/heads/{ref}").strip()
    when = datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")
    return Commit(sha, parent, when, added, [target], [])


def head(repo: FleetRepo, ref: str = "main") -> str:
    return _git(repo.path, "rev-parse", f"refs/heads/{ref}").strip()


@dataclass(slots=True)
class Delivered:
    status: int | None
    outcome: str | None
    at: float  # wall clock when it was answered


class FleetGitHub:
    """The loopback GitHub of one fleet run (see the module docstring). Use as a context manager;
    the repositories live under ``root``/``<login>``/``<name>.git``."""

    def __init__(self, root: Path, *, host: str = PROVIDER_HOST) -> None:
        self.root = root
        self.host = host
        self.web = f"https://{host}"
        self.api = FakeGitHubAPI()
        self.tenants: dict[str, FleetTenant] = {}
        self.api_url = ""
        self.ca_file: Path | None = None
        self._stack = ExitStack()
        self._sends = 0
        self.redeliveries = 0

    def __enter__(self) -> FleetGitHub:
        tls, self.ca_file = self_signed_tls(self.root / "tls", self.host)
        try:
            self._stack.enter_context(
                GitHttpServer(self.root, authorize=self._authorized, tls=tls, host=self.host, port=443)
            )
        except PermissionError as exc:
            raise RuntimeError(
                f"the fake git host must listen on {self.host}:443 (Palimpsest registers an"
                " installation's repositories only as https URLs on the default port): run as root, or"
                " lower net.ipv4.ip_unprivileged_port_start to 443"
            ) from exc
        except OSError as exc:
            raise RuntimeError(
                f"the fake git host cannot listen on {self.host}:443 ({exc.strerror})"
            ) from exc
        self.api_url = self._stack.enter_context(serving(self.api))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def env(self) -> dict[str, str]:
        """What the services need to reach this provider as a private (self-hosted) GitHub."""
        assert self.ca_file is not None, "not started"
        return {
            "PALIMPSEST_GITHUB_API_URL": self.api_url,
            "PALIMPSEST_REVIEW_GITHUB_API_URL": self.api_url,
            "PALIMPSEST_PROVIDER_HOSTS": self.host,
            "PALIMPSEST_PRIVATE_PROVIDER_HOSTS": self.host,
            "GIT_SSL_CAINFO": str(self.ca_file),
        }

    def _authorized(self, path: str, header: str | None) -> bool:
        login = path.lstrip("/").split("/", 1)[0]
        tenant = self.tenants.get(login)
        if tenant is None or header is None:
            return False
        return auth_for("github", tenant.access_token).header == f"Authorization: {header}"

    def repo(self, tenant: FleetTenant, index: int, name: str, files: int) -> FleetRepo:
        return FleetRepo(
            tenant.index,
            name,
            files,
            self.root / tenant.login / f"{name}.git",
            login=tenant.login,
            external_id=tenant.installation_external_id * 10_000 + index,
        )

    async def add_tenant(
        self, http: httpx.AsyncClient, ingest_url: str, admin: str, index: int, name: str
    ) -> FleetTenant:
        """A tenant (admin API) with its GitHub App installation (tenant API); its repositories
        come later, by webhook."""
        made = await install_tenant(http, ingest_url, admin, name, 30_000_000 + index, host=self.host)
        tenant = FleetTenant(
            index=index,
            login=name,
            tenant_id=made.tenant_id,
            api_token=made.api_token,
            installation_external_id=made.installation_external_id,
            webhook_secret=made.webhook_secret,
            access_token=made.access_token,
            installation_id=made.installation_id,
        )
        self.tenants[tenant.login] = tenant
        self.api.listings[tenant.access_token] = []
        return tenant

    def _select(self, tenant: FleetTenant, repos: Sequence[FleetRepo]) -> None:
        """The repositories join the installation on the provider's side (its listing, its tokens)."""
        with self.api.lock:
            for r in repos:
                self.api.tokens[r.full_name] = tenant.access_token
                self.api.listings[tenant.access_token].append(repository_object(r, tenant.login, self.web))

    async def install(
        self,
        http: httpx.AsyncClient,
        urls: Sequence[str],
        tenant: FleetTenant,
        first: Sequence[FleetRepo],
        later: Sequence[FleetRepo] = (),
    ) -> None:
        """The App installed on ``first`` (``installation created``), then ``later`` added to it
        (``installation_repositories added``); each repository's ``registered`` is when the
        delivery naming it was accepted."""
        for action, repos in (("created", first), ("added", later)):
            if not repos:
                continue
            self._select(tenant, repos)
            if action == "created":
                event = "installation"
                payload = installation_payload(
                    "created", tenant.installation_external_id, tenant.login, repos, self.web
                )
            else:
                event = "installation_repositories"
                payload = installation_repositories_payload(
                    "added", tenant.installation_external_id, tenant.login, repos, web=self.web
                )
            done = await self.send(http, urls, tenant, event, payload)
            if done.status != 202 or done.outcome != "accepted":
                raise RuntimeError(
                    f"{event} {action} for {tenant.login} answered {done.status} ({done.outcome})"
                )
            for r in repos:
                r.registered = done.at

    async def send(
        self, http: httpx.AsyncClient, urls: Sequence[str], tenant: FleetTenant, event: str, payload: Any
    ) -> Delivered:
        """POST one signed delivery (round robin over the ingest replicas, like a load balancer),
        redelivering with the same id on a connection error, a timeout or a 5xx."""
        body = json.dumps(payload).encode()
        headers = delivery_headers(event, str(uuid.uuid4()), tenant.webhook_secret, body)
        deadline = time.monotonic() + SEND_GIVE_UP_S
        delay = 0.25
        status: int | None = None
        while True:
            self._sends += 1
            try:
                r = await http.post(
                    f"{urls[self._sends % len(urls)]}/webhooks/github",
                    content=body,
                    headers=headers,
                    timeout=30.0,
                )
                status = r.status_code
                if status < 500:
                    outcome = r.json().get("outcome") if r.content else None
                    return Delivered(status, outcome, time.time())
            except httpx.HTTPError:
                status = None
            if time.monotonic() > deadline:
                return Delivered(status, None, time.time())
            self.redeliveries += 1
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)
