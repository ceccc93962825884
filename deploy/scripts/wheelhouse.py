"""Download every wheel the six images need, once, with hashes, into one folder (the wheelhouse).

The images are then built offline from it (``pip install --no-index --find-links /wheelhouse
--require-hashes``), which is what a build without network — or a regulated cluster's pipeline —
needs. The requirement files are ``deploy/requirements/*.txt``: each service's closure copied
verbatim out of ``requirements.lock``, the build backend, and the image tools (SBOM). pip checks
every file against the hashes while downloading; a file already in the folder with a matching hash
is not fetched again, and wheels no requirement file names any more are removed.

Wheels are chosen for the images' interpreter and platform (CPython 3.11, glibc Linux, this
machine's architecture unless ``--arch`` says otherwise), not for the machine running the script.
Only wheels are accepted: an image build never compiles anything.

    .venv/bin/python deploy/scripts/wheelhouse.py --dest /var/cache/palimpsest-images/wheelhouse
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_VERSION = "3.11"
ABIS = ("cp311", "abi3", "none")
# glibc manylinux tags, newest first: bookworm has glibc 2.36, the images' floor.
GLIBC_MINORS = range(36, 16, -1)
LEGACY_MANYLINUX = ("manylinux2014", "manylinux2010", "manylinux1")
MANIFEST = "wheelhouse.json"


class WheelhouseError(Exception):
    """The wheelhouse cannot be completed (a wheel is missing for the target, pip failed)."""


def platforms(arch: str) -> list[str]:
    """The wheel platform tags an image on ``arch`` (glibc 2.36) can install."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in GLIBC_MINORS]
    return tags + [f"{legacy}_{arch}" for legacy in LEGACY_MANYLINUX]


def requirement_files(root: Path) -> list[Path]:
    files = sorted((root / "deploy" / "requirements").glob("*.txt"))
    if not files:
        raise WheelhouseError(f"no requirement files in {root / 'deploy' / 'requirements'}")
    return files


def pinned_hashes(files: Iterable[Path]) -> set[str]:
    """Every sha256 the requirement files allow (``--hash=sha256:...``)."""
    found: set[str] = set()
    for path in files:
        for token in path.read_text("utf-8").replace("\\\n", " ").split():
            if token.startswith("--hash=sha256:"):
                found.add(token.removeprefix("--hash=sha256:"))
    return found


def entry_hashes(path: Path) -> list[set[str]]:
    """Per requirement of the file, the sha256 values it allows."""
    entries: list[set[str]] = []
    for line in path.read_text("utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            entries.append(set())
        for token in line.replace("\\", " ").split():
            if token.startswith("--hash=sha256:") and entries:
                entries[-1].add(token.removeprefix("--hash=sha256:"))
    return entries


def satisfied(requirements: Path, present: set[str]) -> bool:
    """Whether the folder already holds a wheel for every requirement (by hash): no pip needed."""
    return all(hashes & present for hashes in entry_hashes(requirements))


def present_hashes(dest: Path, arch: str) -> set[str]:
    """The hashes of the wheels in the folder, if it was made for ``arch`` (else none count)."""
    manifest = dest / MANIFEST
    if not manifest.is_file() or json.loads(manifest.read_text("utf-8")).get("arch") != arch:
        return set()
    return {sha256(wheel) for wheel in dest.glob("*.whl")}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_download_command(dest: Path, requirements: Path, arch: str) -> list[str]:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += ["--no-deps", "--require-hashes", "--only-binary=:all:", "--dest", str(dest)]
    command += ["--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for abi in ABIS:
        command += ["--abi", abi]
    for tag in platforms(arch):
        command += ["--platform", tag]
    return [*command, "--requirement", str(requirements)]


def download(dest: Path, requirements: Path, arch: str) -> None:
    command = pip_download_command(dest, requirements, arch)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        detail = [line for line in done.stderr.splitlines() if "is ignored" not in line][-5:]
        raise WheelhouseError(f"pip download -r {requirements.name} failed: " + " | ".join(detail))


def prune(dest: Path, allowed: set[str]) -> list[str]:
    """Remove wheels whose hash no requirement file names (left over from an older lock)."""
    removed = []
    for wheel in sorted(dest.glob("*.whl")):
        if sha256(wheel) not in allowed:
            wheel.unlink()
            removed.append(wheel.name)
    return removed


def build(dest: Path, root: Path, arch: str) -> dict[str, object]:
    files = requirement_files(root)
    dest.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    present = present_hashes(dest, arch)
    fetched = []
    # One file at a time (the tools may pin other versions than the lock), largest first: what it
    # brings usually covers the smaller service files, which then need no pip run at all.
    for requirements in sorted(files, key=lambda p: -p.stat().st_size):
        if not satisfied(requirements, present):
            download(dest, requirements, arch)
            fetched.append(requirements.name)
            present = {sha256(wheel) for wheel in dest.glob("*.whl")}
    removed = prune(dest, pinned_hashes(files))
    wheels = sorted(dest.glob("*.whl"))
    manifest = {
        "python": PYTHON_VERSION,
        "arch": arch,
        "requirements": [str(p.relative_to(root)) for p in files],
        "wheels": {w.name: sha256(w) for w in wheels},
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return {
        "dest": str(dest),
        "wheels": len(wheels),
        "bytes": sum(w.stat().st_size for w in wheels),
        "downloaded_for": fetched,
        "removed": removed,
        "seconds": round(time.monotonic() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dest", type=Path, required=True, help="the wheelhouse folder")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument(
        "--arch", default=platform.machine(), help="x86_64 or aarch64 (default: this machine)"
    )
    args = parser.parse_args(argv)
    try:
        report = build(args.dest.resolve(), args.root, args.arch)
    except WheelhouseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
