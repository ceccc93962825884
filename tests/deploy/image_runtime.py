"""Run built images on this machine: buildah's storage, the chart's pod settings, host network.

``podman run`` needs cgroups this sandbox lacks and ``buildah run`` cannot make the root
read-only, so a container here is: a buildah working container of the image, mounted (its root
filesystem), and ``image_launch.py`` started under ``unshare --mount --pid --fork`` with the
image's own configuration (``USER``, ``ENTRYPOINT``, ``Env``, ``WorkingDir``). See that module
for what it enforces (read-only root, tmpfs ``/tmp``, no capabilities, ``no_new_privs``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BUILDAH = ("buildah", "--storage-driver", "vfs")
LAUNCHER = Path(__file__).with_name("image_launch.py")


@dataclass(frozen=True)
class ImageConfig:
    user: str
    env: dict[str, str]
    entrypoint: list[str]
    cmd: list[str]
    workdir: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Volume:
    source: Path
    target: str
    read_only: bool = True


def _buildah(*args: str) -> str:
    done = subprocess.run([*BUILDAH, *args], capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"buildah {args[0]} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


def image_config(tag: str) -> ImageConfig:
    config: dict[str, Any] = json.loads(_buildah("inspect", "--type", "image", tag))["OCIv1"]["config"]
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    return ImageConfig(
        user=str(config.get("User") or "0"),
        env=env,
        entrypoint=list(config.get("Entrypoint") or []),
        cmd=list(config.get("Cmd") or []),
        workdir=str(config.get("WorkingDir") or "/"),
        labels=dict(config.get("Labels") or {}),
    )


@dataclass
class Container:
    """One process started from a mounted image; stop() ends it (SIGTERM, then SIGKILL)."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def status(self) -> dict[str, str]:
        """``/proc/<pid>/status`` of the image's process (the child ``unshare`` forked)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        assert len(children) == 1, children
        lines = Path(f"/proc/{children[0]}/status").read_text().splitlines()
        return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}

    def output(self) -> str:
        return self.log.read_text("utf-8", errors="replace")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode


@dataclass
class MountedImage:
    """An image's root filesystem in buildah's storage, for as long as the context lasts."""

    tag: str
    logs: Path
    config: ImageConfig = field(init=False)
    rootfs: Path = field(init=False)
    _container: str = field(init=False, default="")

    def __enter__(self) -> MountedImage:
        self.config = image_config(self.tag)
        self._container = _buildah("from", "--quiet", "--pull-never", self.tag)
        self.rootfs = Path(_buildah("mount", self._container))
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*BUILDAH, "umount", self._container], capture_output=True, check=False)
        subprocess.run([*BUILDAH, "rm", self._container], capture_output=True, check=False)

    def _spec(self, argv: Sequence[str], env: Mapping[str, str], volumes: Sequence[Volume]) -> str:
        return json.dumps(
            {
                "rootfs": str(self.rootfs),
                "user": self.config.user,
                "workdir": self.config.workdir,
                "argv": list(argv),
                "env": {**self.config.env, **env},
                "volumes": [
                    {"source": str(v.source), "target": v.target, "read_only": v.read_only} for v in volumes
                ],
            }
        )

    def start(
        self,
        name: str,
        env: Mapping[str, str],
        *,
        argv: Sequence[str] | None = None,
        volumes: Sequence[Volume] = (),
    ) -> Container:
        """Start the image's entrypoint (or ``argv``) in the background."""
        command = list(argv) if argv is not None else [*self.config.entrypoint, *self.config.cmd]
        log = self.logs / f"{name}.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [
                    "unshare",
                    "--mount",
                    "--pid",
                    "--fork",
                    "--kill-child=SIGTERM",
                    sys.executable,
                    str(LAUNCHER),
                ],
                env={
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "PALIMPSEST_LAUNCH": self._spec(command, env, volumes),
                },
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return Container(name, proc, log)

    def run(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        volumes: Sequence[Volume] = (),
        timeout_s: float = 180.0,
    ) -> tuple[int, str]:
        """Run ``argv`` to completion; its exit status and output."""
        container = self.start(name, env or {}, argv=argv, volumes=volumes)
        try:
            container.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            container.stop()
            raise
        return container.proc.returncode, container.output()


@contextlib.contextmanager
def mounted(tag: str, logs: Path) -> Iterator[MountedImage]:
    with MountedImage(tag, logs) as image:
        yield image


def wait_ready(container: Container, port: int, timeout_s: float = 120.0) -> dict[str, Any]:
    """Poll ``/readyz`` until it answers 200; the body. Fails with the container's log otherwise."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if container.proc.poll() is not None:
            raise AssertionError(
                f"{container.name} exited {container.proc.returncode}:\n{container.output()[-3000:]}"
            )
        try:
            res = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=3)
            if res.status_code == 200:
                body: dict[str, Any] = res.json()
                return body
            last = f"{res.status_code} {res.text[:300]}"
        except httpx.HTTPError as exc:
            last = exc.__class__.__name__
        time.sleep(0.5)
    raise AssertionError(
        f"{container.name}: /readyz not 200 in {timeout_s:.0f}s ({last}):\n{container.output()[-3000:]}"
    )
