"""``bench fleet``'s live parts: the lag sampler on a real NATS, the git host over real TLS.

The sampler reads the service consumers that ``bus init`` declared on the session's JetStream: a
backlog published to one consumer's subject must show as that consumer's pending, and only its.
The git host serves a bare repository over https with a fresh self-signed certificate that git
trusts through ``GIT_SSL_CAINFO``, to the owner's token only (GitHub's ``x-access-token`` form).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from palimpsest.core import bus, topology
from palimpsest.core.credentials import auth_for
from palimpsest.core.events import subject_of
from palimpsest.devtools.bench.fleet_github import make_repo
from palimpsest.devtools.bench.fleet_lag import LagSampler
from palimpsest.devtools.fakes.git_http import GitHttpServer, self_signed_tls
from tests.support.servers import ServerSet


async def test_the_lag_sampler_reads_each_service_consumers_backlog_on_a_real_stream(
    stack: ServerSet,
) -> None:
    consumer = "analyzer"
    subject = subject_of(topology.consumed_by(consumer)[0])
    nc = await bus.connect(stack.nats_url, name="test-fleet-lag")
    js = nc.jetstream()
    try:
        await js.purge_stream(bus.STREAM, subject=subject)
        sampler = LagSampler(stack.nats_url)
        sampler.phase = "before"
        await sampler.sample(nc)
        for i in range(7):
            await js.publish(subject, json.dumps({"n": i}).encode())
        sampler.phase = "after"
        await sampler.sample(nc)
        report = sampler.report()
        assert set(report["after"]) == set(bus.CONSUMERS), report
        assert report["after"][consumer]["pending_max"] == report["before"][consumer]["pending_max"] + 7
        others = [c for c in bus.CONSUMERS if c != consumer and subject not in bus.CONSUMERS[c].subjects]
        for other in others:
            assert report["after"][other]["max"] == report["before"][other]["max"], other
        assert report["sample_errors"] == 0
    finally:
        await js.purge_stream(bus.STREAM, subject=subject)
        await nc.close()


def _ls_remote(url: str, ca: Path, header: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_SSL_CAINFO": str(ca), "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"})
    config = ["-c", f"http.extraHeader={header}"] if header else []
    return subprocess.run(
        ["git", *config, "ls-remote", url], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_the_git_host_serves_https_with_its_own_certificate_to_the_owners_token_only(tmp_path: Path) -> None:
    root = tmp_path / "github"
    make_repo(root / "acme" / "svc.git", 12, seed=3)
    make_repo(root / "other" / "svc.git", 12, seed=4)
    tokens = {"acme": "ghs_acme-token", "other": "ghs_other-token"}

    def authorize(path: str, header: str | None) -> bool:
        owner = path.lstrip("/").split("/", 1)[0]
        return header is not None and auth_for("github", tokens[owner]).header == f"Authorization: {header}"

    tls, ca = self_signed_tls(tmp_path / "tls")
    with GitHttpServer(root, authorize=authorize, tls=tls) as server:
        url = server.url("acme/svc.git")
        assert url.startswith("https://127.0.0.1:")
        good = _ls_remote(url, ca, auth_for("github", tokens["acme"]).header)
        assert good.returncode == 0 and "refs/heads/main" in good.stdout, good.stderr
        wrong = _ls_remote(url, ca, auth_for("github", tokens["other"]).header)
        assert wrong.returncode != 0
        untrusted = _ls_remote(url, tmp_path / "no-such-ca.pem", auth_for("github", tokens["acme"]).header)
        assert untrusted.returncode != 0
