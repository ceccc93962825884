"""Generated git repositories for the soak: a small Python service each, changed while it runs.

Every git call has a fixed identity and ignores system/global configuration. Calls on one
repository are serialised (a lock per repository); the soak pushes to ``main`` and opens and
updates pull-request branches concurrently across repositories.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

_IDENTITY = {
    "GIT_AUTHOR_NAME": "Palimpsest Chaos",
    "GIT_AUTHOR_EMAIL": "chaos@palimpsest.invalid",
    "GIT_COMMITTER_NAME": "Palimpsest Chaos",
    "GIT_COMMITTER_EMAIL": "chaos@palimpsest.invalid",
}

_MODULES = ("billing", "ledger", "accounts", "invoices", "payments", "reports", "users", "audit")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_IDENTITY)
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"})
    return env


def _function(module: str, n: int) -> str:
    return (
        f"\n\ndef {module}_step_{n}(value: int) -> int:\n"
        f'    """Step {n} of the {module} pipeline."""\n'
        f"    return {module}_base(value) + {n}\n"
    )


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    parent: str | None
    timestamp: str  # ISO 8601, as GitHub sends it
    added: list[str]
    modified: list[str]
    removed: list[str]


@dataclass(slots=True)
class ChaosRepo:
    tenant: str  # "a" or "b"
    name: str
    path: Path
    external_id: int
    seed: int
    repository_id: str | None = None
    prs: dict[int, tuple[str, str]] = field(default_factory=dict)  # number → (base sha, head sha)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _steps: int = 0

    @property
    def full_name(self) -> str:
        return f"chaos-{self.tenant}/{self.name}"

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            env=_env(),
            capture_output=True,
            check=True,
            timeout=60,
        )
        return done.stdout.decode()

    def _write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def _commit(self, message: str) -> Commit:
        self._git("add", "-A")
        self._git("commit", "-q", "-m", message)
        sha = self._git("rev-parse", "HEAD").strip()
        parents = self._git("rev-list", "--parents", "-n", "1", sha).split()
        stamp = self._git("show", "-s", "--format=%cI", sha).strip()
        added: list[str] = []
        modified: list[str] = []
        removed: list[str] = []
        if len(parents) > 1:
            out = self._git("diff", "--name-status", "--no-renames", parents[1], sha)
            for line in out.splitlines():
                status, path = line.split("\t", 1)
                {"A": added, "D": removed}.get(status, modified).append(path)
        return Commit(sha, parents[1] if len(parents) > 1 else None, stamp, added, modified, removed)

    def create(self) -> Commit:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "init", "-q", "-b", "main", str(self.path)],
            env=_env(),
            check=True,
            capture_output=True,
        )
        rng = random.Random(self.seed)  # noqa: S311 - test data, not security
        modules = rng.sample(_MODULES, 4)
        for m in modules:
            body = f'"""The {m} module of {self.name}."""\n\n\ndef {m}_base(value: int) -> int:\n    return value * 2\n'
            self._write(f"src/{self.name}/{m}.py", body + _function(m, 0))
        self._write("README.md", f"# {self.name}\n\nA generated service for the chaos soak.\n")
        self._write(
            "docs/design.md", f"# Design\n\nGoverns: src/{self.name}\n\nThe modules: {', '.join(modules)}.\n"
        )
        return self._commit("initial import")

    def _change(self, rng: random.Random) -> str:
        files = sorted(p.relative_to(self.path).as_posix() for p in (self.path / "src").rglob("*.py"))
        self._steps += 1
        roll = rng.random()
        if roll < 0.15 and len(files) < 12:
            m = rng.choice(_MODULES)
            rel = f"src/{self.name}/extra_{self._steps}.py"
            self._write(rel, f"from .{m} import {m}_base\n" + _function(m, self._steps))
            # the design doc names the new module: a later change that deletes it leaves this line
            # behind, so the reviews of the soak carry left-behind doc findings too
            with (self.path / "docs/design.md").open("a") as fh:
                fh.write(f"\n- `{rel}` adds `{m}_step_{self._steps}`.\n")
        elif roll < 0.22 and len(files) > 4:
            victim = next((f for f in files if "/extra_" in f), None)
            if victim is not None:
                (self.path / victim).unlink()
        rel = rng.choice(files)
        if (self.path / rel).exists():
            module = Path(rel).stem.removeprefix("extra_")
            module = module if module in _MODULES else "billing"
            with (self.path / rel).open("a") as fh:
                fh.write(_function(module, self._steps))
        return rel

    def push_commit(self) -> Commit:
        """A new commit on ``main`` (the working tree is always on main between calls)."""
        rng = random.Random(self.seed * 1000 + self._steps)  # noqa: S311
        self._change(rng)
        return self._commit(f"change {self._steps}")

    def open_pr(self, number: int) -> tuple[str, str]:
        """Branch ``pr-N`` from main with one change; returns (base sha, head sha)."""
        base = self._git("rev-parse", "main").strip()
        self._git("checkout", "-q", "-b", f"pr-{number}")
        try:
            rng = random.Random(self.seed * 7919 + number)  # noqa: S311
            self._change(rng)
            head = self._commit(f"pull request {number}").sha
        finally:
            self._git("checkout", "-q", "main")
        self.prs[number] = (base, head)
        return base, head

    def update_pr(self, number: int) -> tuple[str, str]:
        """One more commit on ``pr-N`` (a `synchronize`)."""
        base, _ = self.prs[number]
        self._git("checkout", "-q", f"pr-{number}")
        try:
            rng = random.Random(self.seed * 104729 + number * 31 + self._steps)  # noqa: S311
            self._change(rng)
            head = self._commit(f"pull request {number}, update").sha
        finally:
            self._git("checkout", "-q", "main")
        self.prs[number] = (base, head)
        return base, head

    def head(self) -> str:
        return self._git("rev-parse", "main").strip()

    def tree(self, rev: str) -> dict[str, str]:
        """Every blob path at ``rev`` → its blob sha (what the newest snapshot must list)."""
        out = self._git("ls-tree", "-r", "-z", rev)
        entries: dict[str, str] = {}
        for record in out.split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob":
                entries[path] = sha
        return entries


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
