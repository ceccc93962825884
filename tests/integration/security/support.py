"""Helpers of the security tests: a recording ``git`` shim, redirecting and broken HTTP remotes.

The shim is a real executable named ``git`` put first on ``PATH``: it appends its argv (NUL
separated, one invocation per line) to a log and then runs the real git, so a test can prove that
git never ran for a refused URL and that no secret was ever on a git command line. The scripted
remotes are the tests' git server (127.0.0.1 only, every request recorded) with a fixed answer.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from palimpsest.devtools.fakes.git_http import GitHttpHandler, GitHttpServer


@dataclass
class GitShim:
    """``git`` first on PATH, recording each invocation's argv before running the real git."""

    log: Path

    def invocations(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        raw = self.log.read_bytes()
        return [
            [arg.decode("utf-8", "surrogateescape") for arg in line.split(b"\0") if arg]
            for line in raw.split(b"\0\n")
            if line
        ]

    def clear(self) -> None:
        self.log.unlink(missing_ok=True)


def install_git_shim(directory: Path, monkeypatch: pytest.MonkeyPatch) -> GitShim:
    real = shutil.which("git")
    assert real is not None, "git is not installed"
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "argv.log"
    script = directory / "git"
    script.write_text(
        "#!/bin/sh\n"
        f"for arg in \"$@\"; do printf '%s\\0' \"$arg\" >> '{log}'; done\n"
        f"printf '\\0\\n' >> '{log}'\n"
        f"exec '{real}' \"$@\"\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    return GitShim(log)


class ScriptedRemote(GitHttpServer):
    """A :class:`GitHttpServer` whose every authorised request gets one fixed answer instead of git.

    ``redirecting_to(base)`` answers with a redirect to ``base`` + the request path (another
    server); otherwise the answer is ``status``, ``headers`` and ``body`` (a broken remote).
    ``authorization`` works as in GitHttpServer: None accepts requests that carry no credential.
    """

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        *,
        authorization: str | None = None,
        location: str | None = None,
    ) -> None:
        super().__init__(Path("/nonexistent"), authorization=authorization)
        self.status = status
        self.headers = headers or []
        self.body = body
        self.location = location.rstrip("/") if location is not None else None

    @classmethod
    def redirecting_to(cls, location: str, status: int = 302) -> ScriptedRemote:
        return cls(status, location=location)

    def respond(self, handler: GitHttpHandler, body: bytes) -> None:
        if self.location is not None:
            handler.reply(self.status, [("Location", f"{self.location}{handler.path}")], b"")
        else:
            handler.reply(self.status, self.headers, self.body)
