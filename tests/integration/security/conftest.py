"""Fixtures of the security tests: the ingest tests' served app and client, and a served repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.ingest.conftest import client, served
from tests.support.gitrepo import commit, git, head, init_repo

__all__ = ["client", "served", "served_repo"]


@pytest.fixture
def served_repo(tmp_path: Path) -> tuple[Path, str]:
    """A server root holding the bare repository ``team/app.git`` (two files), and its tip commit."""
    source = init_repo(tmp_path / "source")
    commit(source, "2024-05-01", {"svc/app.py": "def handler():\n    return 42\n", "README.md": "# svc\n"})
    root = tmp_path / "served"
    (root / "team").mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(source), "team/app.git")
    return root, head(source)
