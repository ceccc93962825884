"""Build real git repositories with controlled commit dates for tests.

Every git call runs with a fixed identity and ``GIT_AUTHOR_DATE``/``GIT_COMMITTER_DATE`` in
its environment, and with system/global config ignored, so the tests behave the same on a
machine with no git identity or with an unusual ``~/.gitconfig``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Palimpsest Test",
    "GIT_AUTHOR_EMAIL": "test@palimpsest.invalid",
    "GIT_COMMITTER_NAME": "Palimpsest Test",
    "GIT_COMMITTER_EMAIL": "test@palimpsest.invalid",
}

FileContent = str | bytes | None  # None deletes the file


def base_env(date: str | None = None) -> dict[str, str]:
    """Environment for a test git call: isolated config, fixed identity, optional date."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(IDENTITY)
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"})
    if date is not None:
        env["GIT_AUTHOR_DATE"] = date
        env["GIT_COMMITTER_DATE"] = date
    return env


def when(date: str) -> datetime:
    """A test date string ("2024-01-02" or full ISO) as an aware datetime (UTC if naive)."""
    parsed = datetime.fromisoformat(date)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(date: str) -> str:
    return when(date).isoformat()


def git(
    repo: Path,
    *args: str | Path,
    date: str | None = None,
    input: bytes | None = None,
    ok: tuple[int, ...] = (0,),
) -> str:
    """Run git in ``repo``; raise with git's stderr unless the exit code is in ``ok``."""
    proc = subprocess.run(
        ["git", *map(str, args)],
        cwd=repo,
        env=base_env(iso(date) if date else None),
        input=input,
        capture_output=True,
        check=False,
    )
    if proc.returncode not in ok:
        raise AssertionError(f"git {args} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def init_repo(path: Path, branch: str = "main", *, bare: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch, *(["--bare"] if bare else []))
    git(path, "config", "uploadpack.allowFilter", "true")
    return path


def write(repo: Path, files: Mapping[str | bytes, FileContent]) -> None:
    """Create, overwrite or (value None) delete working-tree files; bytes names allowed."""
    for name, content in files.items():
        target = repo / os.fsdecode(name)
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)


def commit(
    repo: Path,
    date: str,
    files: Mapping[str | bytes, FileContent] | None = None,
    *,
    message: str = "change",
) -> str:
    """Apply ``files``, stage everything and commit at ``date``; returns the commit sha."""
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", message, date=date)
    return head(repo)


def move(repo: Path, date: str, old: str, new: str, *, append: str = "") -> str:
    """``git mv old new`` (optionally appending text to make it a partial rename) and commit."""
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", old, new)
    if append:
        with (repo / new).open("a") as handle:
            handle.write(append)
    return commit(repo, date, message=f"move {old} to {new}")


def merge(
    repo: Path,
    date: str,
    *branches: str,
    message: str = "merge",
    files: Mapping[str | bytes, FileContent] | None = None,
) -> str:
    """Merge ``branches`` (two or more makes an octopus) with ``--no-ff`` at ``date``.

    ``files`` are applied before committing the merge, as a hand-made resolution would be
    (so a conflicting merge is fine when ``files`` resolves it).
    """
    git(repo, "merge", "-q", "--no-ff", "--no-commit", *branches, date=date, ok=(0, 1) if files else (0,))
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message, date=date)
    return head(repo)


def checkout(repo: Path, branch: str, *, create: bool = False) -> None:
    git(repo, "checkout", "-q", *(["-b"] if create else []), branch)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def linear_repo(path: Path, commits: int = 3, *, start_year: int = 2020) -> Path:
    """A small repository: commit i (yearly from ``start_year``) changes ``f{i}.txt``."""
    init_repo(path)
    for i in range(commits):
        commit(path, f"{start_year + i}-01-01T00:00:00+00:00", {f"f{i}.txt": f"{i}\n"})
    return path
