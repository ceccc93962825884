"""The six built images, run the way the chart runs them (``make images-test``).

Skipped unless ``PALIMPSEST_IMAGES_REPORT`` names the ``images.json`` that
``deploy/scripts/images.py`` wrote (``make images-test`` builds the images, then sets it). Each
image runs from buildah's storage with the chart's pod settings — its own ``USER`` (10001), a
read-only root with only ``/tmp`` writable, no capabilities, no privilege escalation — on the host
network, against this session's embedded PostgreSQL and NATS (``image_runtime.py``).

- every image: uid 10001, no pip and no compiler in the runtime, git exactly where the code runs
  git, an SBOM naming the image's own distributions;
- the migration hook's commands (``python -m palimpsest.core.admin migrate`` / ``bus-init``) from
  the ingest image, as the chart's Job runs them;
- every entrypoint starts and answers ``/readyz`` (database, NATS, its durable consumer);
- end to end: a local repository mounted read-only is registered through the ingest image,
  indexed by the chunker image and scanned by the recency-scanner image; signed webhooks are
  verified by the ingest image (a good signature accepted, a forged one refused); the analyzer
  image writes an analysis that the ingest API serves.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from cryptography.fernet import Fernet
from packaging.utils import canonicalize_name

from tests.support.gitrepo import commit, init_repo
from tests.support.servers import ServerSet

from .image_runtime import Container, MountedImage, Volume, wait_ready
from .support import SERVICES

REPORT_ENV = "PALIMPSEST_IMAGES_REPORT"
GIT_SERVICES = {"ingest", "recency-scanner", "chunker", "analyzer", "reviewer"}
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "tcc")
REPO_IN_CONTAINER = "/mnt/repo"
APP_UID = 10001

pytestmark = pytest.mark.skipif(
    not os.environ.get(REPORT_ENV), reason=f"images not built here: `make images-test` sets {REPORT_ENV}"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(os.environ[REPORT_ENV]).read_text("utf-8"))
    built = {image["service"]: image for image in data["images"] if image["ok"]}
    assert set(built) == set(SERVICES), f"images that did not build: {set(SERVICES) - set(built)}"
    data["by_service"] = built
    return data


@pytest.fixture(scope="module")
def images(
    report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, MountedImage]]:
    logs = tmp_path_factory.mktemp("image-logs")
    with contextlib.ExitStack() as stack:
        yield {
            service: stack.enter_context(MountedImage(report["by_service"][service]["tag"], logs))
            for service in SERVICES
        }


@pytest.fixture(scope="module")
def migrated(servers: ServerSet, images: dict[str, MountedImage]) -> ServerSet:
    """The schema and the bus, made by the ingest image the way the chart's hook Job makes them."""
    ingest = images["ingest"]
    env = {"PALIMPSEST_MIGRATION_DATABASE_URL": servers.owner_url, "PALIMPSEST_NATS_URL": servers.nats_url}
    for command in ("migrate", "bus-init"):
        status, out = ingest.run(f"admin-{command}", ["python", "-m", "palimpsest.core.admin", command], env)
        assert status == 0, out
        assert json.loads(out.strip().splitlines()[-1])  # one JSON report line
    return servers


def _service_env(servers: ServerSet, ops_port: int, **extra: str) -> dict[str, str]:
    return {
        "PALIMPSEST_DATABASE_URL": servers.app_url,
        "PALIMPSEST_NATS_URL": servers.nats_url,
        "PALIMPSEST_OPS_PORT": str(ops_port),
        "PALIMPSEST_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        **extra,
    }


PROBE = r"""
import errno, glob, json, os, shutil, subprocess
def writable(path):  # True, or why not: EROFS is the read-only mount, EACCES mere permissions
    try:
        with open(path, "w") as handle:
            handle.write("x")
        os.unlink(path)
        return True
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
pythons = sorted({os.path.realpath(p) for p in glob.glob("/usr/bin/python3*") + glob.glob("/usr/local/bin/python3*")
                  + ["/opt/venv/bin/python"] if os.path.isfile(p) and os.access(p, os.X_OK)})
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "root_writable": writable("/probe"), "venv_writable": writable("/opt/venv/probe"),
    "tmp_writable": writable("/tmp/probe"),
    "pip_importable": [p for p in pythons + ["/opt/venv/bin/python"]
                       if subprocess.run([p, "-c", "import pip"], capture_output=True).returncode == 0],
    "pip_dirs": sorted(glob.glob("/usr/lib/python3*/*-packages/pip") + glob.glob("/usr/local/lib/python3*/*-packages/pip")
                       + glob.glob("/opt/venv/lib/python3*/site-packages/pip")),
    "executables": {n: shutil.which(n) for n in ("pip", "pip3") + COMPILERS},
    "git": shutil.which("git"),
    "native": subprocess.run(["/opt/venv/bin/python", "-c", "from palimpsest.index import tokens; print(tokens.NATIVE)"],
                             capture_output=True, text=True).stdout.strip(),
    "no_new_privs": [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0],
    "cap_eff": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0],
}))
"""


@pytest.mark.parametrize("service", SERVICES)
def test_runtime_is_non_root_read_only_without_pip_or_compiler(
    service: str, images: dict[str, MountedImage]
) -> None:
    image = images[service]
    assert image.config.user == f"{APP_UID}:{APP_UID}"
    assert image.config.labels["org.opencontainers.image.title"] == f"palimpsest-{service}"

    status, out = image.run(f"probe-{service}", ["python", "-c", f"COMPILERS = {COMPILERS!r}\n{PROBE}"])

    assert status == 0, out
    facts = json.loads(out.strip().splitlines()[-1])
    assert (facts["uid"], facts["gid"], facts["groups"]) == (APP_UID, APP_UID, [])
    assert (facts["no_new_privs"], int(facts["cap_eff"], 16)) == ("1", 0)
    assert (facts["root_writable"], facts["venv_writable"], facts["tmp_writable"]) == ("EROFS", "EROFS", True)
    assert facts["pip_importable"] == [] and facts["pip_dirs"] == []
    assert {name: path for name, path in facts["executables"].items() if path} == {}
    assert (facts["git"] is not None) == (service in GIT_SERVICES), facts["git"]
    assert facts["native"] == "True"  # palimpsest-index's C lexical vector, compiled in the builder


@pytest.mark.parametrize("service", SERVICES)
def test_the_sbom_lists_what_the_image_installs(service: str, report: dict[str, Any]) -> None:
    path = Path(os.environ[REPORT_ENV]).parent / report["by_service"][service]["sbom"]
    sbom = json.loads(path.read_text("utf-8"))
    locked = (Path(__file__).parents[2] / "deploy" / "requirements" / f"{service}.txt").read_text("utf-8")

    assert sbom["bomFormat"] == "CycloneDX"
    main = sbom["metadata"]["component"]  # the service itself, from its pyproject.toml
    assert (main["name"], main["type"]) == (f"palimpsest-{service}", "application")
    components = {
        canonicalize_name(c["name"]): c["version"]
        for c in sbom["components"]
        if not c.get("purl", "").startswith("pkg:deb/")  # the Python distributions
    }
    assert {"palimpsest-core", "palimpsest-index"} <= set(components)
    assert "pip" not in components and "setuptools" not in components
    debian = {c["name"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/debian/")}
    assert {"libc6", "python3.11", "ca-certificates"} <= debian  # the image's own dpkg database
    assert ("git" in debian) == (service in GIT_SERVICES) and "python3-venv" not in debian
    pins = [line.split(" ")[0] for line in locked.splitlines() if "==" in line and not line.startswith("#")]
    for pin in pins:
        name, version = pin.split("==")
        assert components.get(canonicalize_name(name)) == version, pin


def test_the_migration_hook_commands_run_from_the_ingest_image(migrated: ServerSet) -> None:
    with psycopg.connect(migrated.owner_url) as conn:
        roles = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'palimpsest_app'"
        ).fetchall()
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert roles == [(False, False)]
    assert tables is not None and tables[0] > 10


@pytest.mark.parametrize("service", SERVICES)
def test_the_entrypoint_starts_and_answers_readyz(
    service: str, images: dict[str, MountedImage], migrated: ServerSet
) -> None:
    ops = _free_port()
    extra = {"PALIMPSEST_INGEST_PORT": str(_free_port())} if service == "ingest" else {}
    container = images[service].start(service, _service_env(migrated, ops, **extra))
    try:
        checks = wait_ready(container, ops)
        assert checks and all(checks.values()), checks
        status = container.status()  # the service itself, seen from the host
        assert status["Uid"].split() == [str(APP_UID)] * 4 and status["Gid"].split() == [str(APP_UID)] * 4
        assert (status["NoNewPrivs"], int(status["CapEff"], 16), status["Groups"]) == ("1", 0, "")
        assert httpx.get(f"http://127.0.0.1:{ops}/healthz", timeout=5).status_code == 200
        metrics = httpx.get(f"http://127.0.0.1:{ops}/metrics", timeout=5).text
        assert "palimpsest_" in metrics
    finally:
        exit_status = container.stop()
    assert exit_status == 0, container.output()[-3000:]  # SIGTERM: a clean stop


# ------------------------------------------------------------------------------------ end to end


def _wait_for(what: str, probe: Callable[[], Any], timeout_s: float = 180.0, every_s: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} within {timeout_s:.0f}s"
        time.sleep(every_s)


def _signed(secret: str, body: bytes, event: str, delivery: str) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        "Content-Type": "application/json",
    }


def _local_repository(path: Path) -> Path:
    repo = init_repo(path)
    commit(
        repo,
        "2026-03-02",
        {
            "README.md": "# ledger\n\nCall `post_entry` to add an entry; `balance` sums them.\n",
            "ledger/__init__.py": "",
            "ledger/book.py": (
                "from dataclasses import dataclass\n\n\n@dataclass\nclass Entry:\n    account: str\n"
                "    amount: int\n\n\ndef post_entry(book: list[Entry], entry: Entry) -> None:\n"
                "    book.append(entry)\n\n\ndef balance(book: list[Entry], account: str) -> int:\n"
                "    return sum(e.amount for e in book if e.account == account)\n"
            ),
        },
    )
    commit(
        repo,
        "2026-03-09",
        {
            "ledger/report.py": "from ledger.book import balance\n\n\ndef show(book):\n"
            "    return {a: balance(book, a) for a in {e.account for e in book}}\n"
        },
    )
    # The services run as uid 10001 and git refuses a repository another user owns.
    subprocess.run(["chown", "-R", f"{APP_UID}:{APP_UID}", str(repo)], check=True)
    return repo


@pytest.fixture
def running(images: dict[str, MountedImage], migrated: ServerSet, tmp_path: Path) -> Iterator[dict[str, Any]]:
    repo = _local_repository(tmp_path / "ledger")
    admin = secrets.token_urlsafe(24)
    api_port = _free_port()
    key = Fernet.generate_key().decode()
    volume = [Volume(repo, REPO_IN_CONTAINER, read_only=True)]
    started: dict[str, Container] = {}
    try:
        for service in ("ingest", "chunker", "recency-scanner", "analyzer"):
            ops = _free_port()
            env = _service_env(
                migrated, ops, PALIMPSEST_ENCRYPTION_KEY=key, PALIMPSEST_ALLOW_LOCAL_SOURCES="true"
            )
            if service == "ingest":
                env.update({"PALIMPSEST_INGEST_PORT": str(api_port), "PALIMPSEST_ADMIN_TOKEN": admin})
            started[service] = images[service].start(f"e2e-{service}", env, volumes=volume)
            wait_ready(started[service], ops)
        base = f"http://127.0.0.1:{api_port}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"}, timeout=30) as api:
            yield {"api": base, "client": api, "repo": repo, "containers": started}
    finally:
        for container in started.values():
            container.stop()


def test_end_to_end_through_the_images(running: dict[str, Any], migrated: ServerSet) -> None:
    api: httpx.Client = running["client"]
    tenant = api.post("/v1/tenants", json={"name": "northwind"})
    assert tenant.status_code == 201, tenant.text
    tid = tenant.json()["tenant_id"]
    hook_secret = secrets.token_urlsafe(16)
    installation = api.post(
        f"/v1/tenants/{tid}/installations",
        json={"provider": "github", "external_id": "4242", "webhook_secret": hook_secret},
    )
    assert installation.status_code == 201, installation.text

    # A local repository, mounted read-only: registration emits index.requested.
    registered = api.post(f"/v1/tenants/{tid}/repositories", json={"url": REPO_IN_CONTAINER})
    assert registered.status_code == 201, registered.text
    rid = registered.json()["repository_id"]
    head = subprocess.run(
        ["git", "-c", f"safe.directory={running['repo']}", "-C", str(running["repo"]), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    def ready_snapshot() -> dict[str, Any] | None:
        items = api.get(f"/v1/tenants/{tid}/repositories/{rid}/snapshots").json()["items"]
        failed = [s for s in items if s["state"] == "failed"]
        assert not failed, failed
        return next((s for s in items if s["state"] == "ready"), None)

    snapshot = _wait_for("the chunker image builds the snapshot", ready_snapshot)
    assert (snapshot["commit_sha"], snapshot["files"]) == (head, 4)
    assert snapshot["chunks"] > 0 and snapshot["symbols"] >= 4
    found = api.get(f"/v1/tenants/{tid}/repositories/{rid}/search", params={"q": "post_entry"}).json()
    assert any(hit["path"] == "ledger/book.py" for hit in found["hits"]), found

    def scanned() -> list[tuple[str, Any]] | None:
        with psycopg.connect(migrated.owner_url) as conn:
            rows = conn.execute(
                "SELECT status, commit_sha FROM recency_scans WHERE repository_id = %s", (rid,)
            ).fetchall()
            dated = conn.execute(
                "SELECT path, last_modified_at FROM file_recency WHERE repository_id = %s ORDER BY path",
                (rid,),
            ).fetchall()
        return dated if rows and rows[0][0] not in ("running", "pending") and dated else None

    dated = _wait_for("the recency-scanner image scans the history", scanned)
    assert [path for path, _ in dated] == [
        "README.md",
        "ledger/__init__.py",
        "ledger/book.py",
        "ledger/report.py",
    ]
    assert {path: at.date().isoformat() for path, at in dated}["ledger/report.py"] == "2026-03-09"

    # Signed webhooks: the ingest image verifies them (a forged signature is refused).
    ping = json.dumps(
        {"zen": "Keep it logically awesome.", "hook_id": 7, "installation": {"id": 4242}}
    ).encode()
    accepted = httpx.post(f"{running['api']}/webhooks/github", content=ping,
                          headers=_signed(hook_secret, ping, "ping", "e2e-ping-1"), timeout=30)  # fmt: skip
    assert accepted.status_code == 200, accepted.text
    forged = httpx.post(f"{running['api']}/webhooks/github", content=ping,
                        headers=_signed("not-the-secret", ping, "ping", "e2e-ping-2"), timeout=30)  # fmt: skip
    assert forged.status_code == 401, forged.text
    deliveries = api.get(f"/v1/tenants/{tid}/deliveries").json()["items"]
    assert [(d["delivery_id"], d["outcome"]) for d in deliveries if d["delivery_id"] == "e2e-ping-1"] == [
        ("e2e-ping-1", "accepted")
    ]

    # An analysis, by the analyzer image.
    requested = api.post(f"/v1/tenants/{tid}/repositories/{rid}/analyses")
    assert requested.status_code == 202, requested.text
    request_id = requested.json()["request_id"]

    def analysed() -> dict[str, Any] | None:
        items = api.get(f"/v1/tenants/{tid}/repositories/{rid}/analyses").json()["items"]
        return next((a for a in items if a["request_id"] == request_id), None)

    head_of_analysis = _wait_for("the analyzer image writes the analysis", analysed)
    assert head_of_analysis["state"] == "completed", head_of_analysis
    analysis = api.get(f"/v1/tenants/{tid}/analyses/{head_of_analysis['analysis_id']}").json()
    assert analysis["commit"] == head and "ledger" in analysis["analysis"]
    for name, container in running["containers"].items():
        assert container.proc.poll() is None, f"{name} died:\n{container.output()[-2000:]}"
