"""List known vulnerabilities of requirements.lock with pip-audit, and say plainly when it cannot.

    .venv/bin/python deploy/scripts/audit.py --wheelhouse DIR --tools-venv DIR --out dist/images

pip-audit runs from a throw-away virtualenv installed offline from the wheelhouse
(``deploy/requirements/tools.txt``, hash-pinned, ``--no-index``), against the lock as pinned
(``--no-deps --disable-pip``: nothing is resolved or installed). It asks an advisory service about
every pin: PyPI's JSON API first, then OSV. A service that cannot be reached — or that answers
"not found" for every single pin, which is what a package mirror without the JSON API does — is
recorded as **unreachable**, never as "no known vulnerabilities". The listing goes to
``<out>/vulnerabilities.json``: per source the status, the counts, and each vulnerable pin with
its advisories, fixed versions and the images that install it. Exit status 0 unless
``--fail-on-vulnerable`` and a vulnerability was found; 2 when pip-audit cannot run at all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pypi", "osv")


def ensure_tools(tools_venv: Path, wheelhouse: Path) -> Path:
    """The venv's pip-audit, installed (once) from the wheelhouse with hashes, offline."""
    audit = tools_venv / "bin" / "pip-audit"
    requirements = ROOT / "deploy" / "requirements" / "tools.txt"
    stamp = tools_venv / ".tools.txt"
    if audit.exists() and stamp.exists() and stamp.read_text("utf-8") == requirements.read_text("utf-8"):
        return audit
    venv.EnvBuilder(clear=True, with_pip=True).create(tools_venv)
    pip = [
        str(tools_venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    pip += [
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--require-hashes",
        "--no-deps",
        "-r",
        str(requirements),
    ]
    subprocess.run(pip, check=True, capture_output=True)
    stamp.write_text(requirements.read_text("utf-8"), encoding="utf-8")
    return audit


def images_by_package() -> dict[str, list[str]]:
    """Normalized package name → the images whose requirement file pins it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "deploy" / "requirements").glob("*.txt")):
        if path.stem in ("build", "tools"):
            continue
        for line in path.read_text("utf-8").splitlines():
            if "==" in line and not line.startswith((" ", "#")):
                name = line.split("==")[0].strip().lower().replace("_", "-")
                found.setdefault(name, []).append(path.stem)
    return found


def run_source(audit: Path, lock: Path, source: str, timeout_s: float) -> dict[str, Any]:
    command = [str(audit), "--disable-pip", "--no-deps", "-r", str(lock), "-s", source]
    command += ["-f", "json", "--progress-spinner", "off", "--timeout", "15"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"source": source, "status": "unreachable", "detail": f"no answer in {timeout_s:.0f}s"}
    try:
        listing = json.loads(done.stdout)
    except json.JSONDecodeError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"source": source, "status": "unreachable", "detail": last[-300:]}
    return summarize(source, listing)


def summarize(source: str, listing: dict[str, Any]) -> dict[str, Any]:
    deps = listing.get("dependencies", [])
    skipped = [d for d in deps if "skip_reason" in d]
    audited = [d for d in deps if "skip_reason" not in d]
    owners = images_by_package()
    vulnerable = [
        {
            "name": d["name"],
            "version": d["version"],
            "images": owners.get(d["name"].lower().replace("_", "-"), []),
            "advisories": [
                {"id": v["id"], "aliases": v.get("aliases", []), "fix_versions": v.get("fix_versions", [])}
                for v in d["vulns"]
            ],
        }
        for d in audited
        if d.get("vulns")
    ]
    status = "listed" if audited else "unreachable"
    result: dict[str, Any] = {
        "source": source,
        "status": status,
        "pins": len(deps),
        "audited": len(audited),
        "skipped": len(skipped),
        "vulnerable": vulnerable,
    }
    if not audited and skipped:
        result["detail"] = f"every pin skipped, e.g. {skipped[0]['skip_reason']}"
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wheelhouse", type=Path, required=True)
    parser.add_argument("--tools-venv", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "images")
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--fail-on-vulnerable", action="store_true")
    args = parser.parse_args(argv)
    try:
        audit = ensure_tools(args.tools_venv, args.wheelhouse)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: pip-audit could not be installed from the wheelhouse: {exc}", file=sys.stderr)
        return 2
    results = []
    for source in SOURCES:
        result = run_source(audit, args.lock, source, args.timeout)
        results.append(result)
        if result["status"] == "listed":
            break
    listed = [r for r in results if r["status"] == "listed"]
    report: dict[str, Any] = {
        "lock": str(args.lock.relative_to(ROOT)) if args.lock.is_relative_to(ROOT) else str(args.lock),
        "status": "listed" if listed else "unreachable",
        "attempts": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vulnerabilities.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if listed:
        found = listed[0]["vulnerable"]
        print(
            f"pip-audit ({listed[0]['source']}): {len(found)} vulnerable of {listed[0]['audited']} pins audited"
        )
        for item in found:
            ids = ", ".join(a["id"] for a in item["advisories"])
            print(f"  {item['name']} {item['version']} ({', '.join(item['images']) or 'no image'}): {ids}")
        return 1 if found and args.fail_on_vulnerable else 0
    for result in results:
        print(f"pip-audit: advisory source '{result['source']}' unreachable: {result.get('detail', '')}")
    print("pip-audit: NO vulnerability listing could be made on this machine (see vulnerabilities.json)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
