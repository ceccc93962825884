"""The embedded PostgreSQL stops on exit even when ``pg_ctl stop`` cannot (seen under load: pg_ctl
could not read the data directory, the failure was swallowed and the server outlived the command)."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from palimpsest.cli.embedded import EmbeddedPostgres

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="pg_ctl runs as another user only under root, where a file can be kept from it"
)


def test_a_failing_pg_ctl_stop_still_stops_the_server(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "pg", durable=False)
    url = pg.start()
    pid_file = pg.pgdata / "postmaster.pid"
    pid = int(pid_file.read_text().splitlines()[0])
    pid_file.chmod(0)  # pg_ctl (PostgreSQL's own user) can no longer read it: its stop fails
    try:
        pg.stop()
        assert not pg.running()
        stat = Path(f"/proc/{pid}/stat")
        # gone, or a zombie an init that does not reap keeps listed
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2).close()
    finally:
        if pid_file.exists():
            pid_file.chmod(0o600)
        pg.stop(quiet=True)


def test_the_server_starts_again_after_that_stop(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "pg", durable=False)
    pg.start()
    (pg.pgdata / "postmaster.pid").chmod(0)
    pg.stop()
    url = pg.start()
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pg.stop()
