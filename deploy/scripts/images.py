"""Build the six service images from deploy/Dockerfile, offline from the wheelhouse, and report.

    .venv/bin/python deploy/scripts/images.py --wheelhouse DIR --out dist/images [--services a,b]

The engine is ``docker build`` (BuildKit) when a Docker engine answers ``docker info``, and
otherwise ``buildah bud`` with the vfs storage driver and chroot isolation (no daemon, no cgroups),
on the local Debian bases made by ``deploy/images/base-image.sh`` (debootstrap: nothing is pulled
from a registry). With buildah the build runs in a network namespace of its own with no interface
up, so an image that builds here provably needed nothing but the build context and the wheelhouse.

Each image is tagged ``<prefix>-<service>:<version>`` (the chart's convention; the version is the
project's). The build writes the image's CycloneDX SBOM inside the image; this script copies it to
``<out>/sbom/`` and writes ``<out>/images.json`` (engine, per image: tag, id, size, build seconds).
A failed build is reported and the others still build; the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("ingest", "recency-scanner", "chunker", "embedder", "analyzer", "reviewer")
GIT_SERVICES = frozenset({"ingest", "recency-scanner", "chunker", "analyzer", "reviewer"})
SBOM_IN_IMAGE = "/opt/venv/share/palimpsest/sbom.cdx.json"
DPKG_STATUS = "/var/lib/dpkg/status"
OS_RELEASE = "/usr/lib/os-release"
BUILDAH = ("buildah", "--storage-driver", "vfs")
DEFAULT_BASE = "localhost/palimpsest-base:bookworm"


class BuildError(Exception):
    """An image could not be built or inspected."""


@dataclass(frozen=True)
class Built:
    service: str
    tag: str
    ok: bool
    seconds: float
    size_bytes: int = 0
    image_id: str = ""
    sbom: str = ""
    error: str = ""


def project_version(root: Path) -> str:
    return str(tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]["version"])


def docker_answers() -> bool:
    """Whether a Docker engine answers (a docker CLI alone is not enough)."""
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


def run(command: list[str], log: Path, *, cwd: Path = ROOT) -> None:
    with log.open("ab") as sink:
        done = subprocess.run(command, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text("utf-8", errors="replace").strip().splitlines()[-3:]
        raise BuildError(f"{command[0]} exited {done.returncode}: " + " | ".join(tail))


def capture(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"{' '.join(command[:3])} failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


class Engine:
    name = ""

    def build_command(self, service: str, tag: str, args: argparse.Namespace) -> list[str]:
        raise NotImplementedError

    def image_facts(self, tag: str) -> tuple[str, int]:
        raise NotImplementedError

    def copy_out(self, tag: str, files: dict[str, Path]) -> None:
        """Copy files (image path → host path) out of the image."""
        raise NotImplementedError

    def prune(self) -> None:
        """Drop what a rebuild left behind (the previous image under the same tag)."""

    def common_args(self, service: str, tag: str, args: argparse.Namespace) -> list[str]:
        out = ["-f", "deploy/Dockerfile", "-t", tag, "--build-arg", f"SERVICE={service}"]
        out += ["--build-arg", f"VERSION={args.version}"]
        out += ["--build-context", f"wheelhouse={args.wheelhouse}"]
        return out


class Buildah(Engine):
    name = "buildah"

    def build_command(self, service: str, tag: str, args: argparse.Namespace) -> list[str]:
        base = args.base_image
        runtime = f"{base}-git" if service in GIT_SERVICES else base
        command = ["unshare", "--net", *BUILDAH, "bud", "--isolation", "chroot", "--layers=false"]
        command += self.common_args(service, tag, args)
        command += ["--build-arg", f"PYTHON_IMAGE={runtime}", "--build-arg", f"BUILDER_IMAGE={base}-build-cc"]
        return [*command, "."]

    def image_facts(self, tag: str) -> tuple[str, int]:
        facts = json.loads(capture([*BUILDAH, "inspect", "--type", "image", tag]))
        layers = json.loads(facts["Manifest"])["layers"]  # uncompressed layer tars (vfs)
        return str(facts["FromImageID"]), sum(int(layer["size"]) for layer in layers)

    def copy_out(self, tag: str, files: dict[str, Path]) -> None:
        container = capture([*BUILDAH, "from", "--quiet", tag])
        try:
            mount = Path(capture([*BUILDAH, "mount", container]))
            for path, dest in files.items():
                shutil.copyfile(mount / path.lstrip("/"), dest)
        finally:
            subprocess.run([*BUILDAH, "rm", container], capture_output=True, check=False)

    def prune(self) -> None:
        # vfs keeps every layer as a full copy: an untagged previous build is ~0.5 GB each.
        subprocess.run([*BUILDAH, "rmi", "--prune"], capture_output=True, check=False)


class Docker(Engine):
    name = "docker"

    def build_command(self, service: str, tag: str, args: argparse.Namespace) -> list[str]:
        command = ["docker", "build", *self.common_args(service, tag, args)]
        if os.environ.get("PYTHON_IMAGE"):
            command += ["--build-arg", f"PYTHON_IMAGE={os.environ['PYTHON_IMAGE']}"]
        return [*command, "."]

    def image_facts(self, tag: str) -> tuple[str, int]:
        facts = capture(["docker", "image", "inspect", "--format", "{{.Id}} {{.Size}}", tag]).split()
        return facts[0], int(facts[1])

    def copy_out(self, tag: str, files: dict[str, Path]) -> None:
        container = capture(["docker", "create", tag])
        try:
            for path, dest in files.items():
                capture(["docker", "cp", "--follow-link", f"{container}:{path}", str(dest)])
        finally:
            subprocess.run(["docker", "rm", container], capture_output=True, check=False)


def choose_engine(requested: str) -> Engine:
    if requested == "docker" or (requested == "auto" and docker_answers()):
        return Docker()
    if shutil.which("buildah") is None:
        raise BuildError("no Docker engine answers and buildah is not installed (apt-get install buildah)")
    return Buildah()


def ensure_bases(args: argparse.Namespace, log: Path) -> None:
    env_base = {"BASE_IMAGE": args.base_image, "IMAGE_CACHE": str(args.cache)}
    with log.open("ab") as sink:
        done = subprocess.run(
            ["bash", str(ROOT / "deploy" / "images" / "base-image.sh")],
            env={**os.environ, **env_base},
            stdout=sink,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        raise BuildError(f"the base images could not be made (see {log})")


def dpkg_installed(status: str) -> list[dict[str, str]]:
    """The installed packages of a dpkg status file: Package, Version, Architecture, Source."""
    packages = []
    for paragraph in status.split("\n\n"):
        fields: dict[str, str] = {}
        for line in paragraph.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages.append(fields)
    return packages


def add_debian_packages(sbom: dict[str, Any], status: str, os_release: str) -> int:
    """Add the image's installed Debian packages to a CycloneDX SBOM (purl ``pkg:deb/debian``).

    The build's SBOM covers the Python environment; the operating system's packages are read
    from the built image's dpkg database. Returns how many were added.
    """
    release = dict(line.split("=", 1) for line in os_release.splitlines() if "=" in line)
    distro = f"debian-{release.get('VERSION_ID', '').strip(chr(34))}"
    components = sbom.setdefault("components", [])
    known = {c.get("bom-ref") for c in components}
    added = 0
    for pkg in dpkg_installed(status):
        purl = f"pkg:deb/debian/{pkg['Package']}@{pkg['Version']}?arch={pkg.get('Architecture', 'all')}"
        purl += f"&distro={distro}"
        if purl in known:
            continue
        component: dict[str, Any] = {
            "type": "library",
            "bom-ref": purl,
            "name": pkg["Package"],
            "version": pkg["Version"],
            "purl": purl,
        }
        if pkg.get("Source"):
            component["properties"] = [{"name": "debian:source", "value": pkg["Source"].split()[0]}]
        components.append(component)
        added += 1
    return added


def build_one(engine: Engine, service: str, args: argparse.Namespace) -> Built:
    tag = f"{args.prefix}-{service}:{args.version}"
    log = args.out / "logs" / f"{service}.log"
    log.write_text("", encoding="utf-8")
    started = time.monotonic()
    try:
        run(engine.build_command(service, tag, args), log)
        seconds = round(time.monotonic() - started, 1)
        image_id, size = engine.image_facts(tag)
        sbom = args.out / "sbom" / f"{args.prefix.rsplit('/', 1)[-1]}-{service}-{args.version}.cdx.json"
        dpkg, os_release = (
            args.out / "logs" / f"{service}.dpkg-status",
            args.out / "logs" / f"{service}.os-release",
        )
        engine.copy_out(tag, {SBOM_IN_IMAGE: sbom, DPKG_STATUS: dpkg, OS_RELEASE: os_release})
        document = json.loads(sbom.read_text("utf-8"))  # the build wrote a JSON document
        add_debian_packages(document, dpkg.read_text("utf-8"), os_release.read_text("utf-8"))
        sbom.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    except (BuildError, OSError, ValueError, KeyError) as exc:
        return Built(service, tag, False, round(time.monotonic() - started, 1), error=str(exc))
    return Built(service, tag, True, seconds, size, image_id, str(sbom.relative_to(args.out)))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wheelhouse", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "images")
    parser.add_argument("--cache", type=Path, default=Path("/var/cache/palimpsest-images"))
    parser.add_argument("--prefix", default="localhost/palimpsest/palimpsest")
    parser.add_argument("--version", default=project_version(ROOT))
    parser.add_argument("--services", default=",".join(SERVICES))
    parser.add_argument("--engine", choices=["auto", "docker", "buildah"], default="auto")
    parser.add_argument("--base-image", default=DEFAULT_BASE)
    args = parser.parse_args(argv)
    args.wheelhouse = args.wheelhouse.resolve()
    args.out = args.out.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    services = [s for s in args.services.split(",") if s]
    unknown = sorted(set(services) - set(SERVICES))
    if unknown:
        print(f"error: unknown services: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if not (args.wheelhouse / "wheelhouse.json").is_file():
        print(f"error: no wheelhouse at {args.wheelhouse} (run: make wheelhouse)", file=sys.stderr)
        return 2
    for sub in ("logs", "sbom"):
        (args.out / sub).mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        engine = choose_engine(args.engine)
        if isinstance(engine, Buildah):
            ensure_bases(args, args.out / "logs" / "base-image.log")
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bases_seconds = round(time.monotonic() - started, 1)
    results = []
    for service in services:
        built = build_one(engine, service, args)
        engine.prune()
        results.append(built)
        state = f"{built.size_bytes / 1e6:.0f} MB" if built.ok else f"FAILED: {built.error}"
        print(f"{built.tag}: {built.seconds:.0f} s, {state}", file=sys.stderr)
    report = {
        "engine": engine.name,
        "version": args.version,
        "bases_seconds": bases_seconds,
        "total_seconds": round(time.monotonic() - started, 1),
        "images": [asdict(b) for b in results],
    }
    (args.out / "images.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))
    return 0 if all(b.ok for b in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
