"""Which database failures are an outage (the work is not at fault) and which are the work's own."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import PoolTimeout

from palimpsest.core.db import unreachable


def _raised_from(cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise RuntimeError("while indexing") from inner
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    ("exc", "outage"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),  # no SQLSTATE
        (errors.ConnectionFailure("pooler: no more connections allowed"), True),  # 08006
        (errors.SqlclientUnableToEstablishSqlconnection("no"), True),  # 08001
        (errors.AdminShutdown("terminating connection"), True),  # 57P01: a restart
        (errors.CannotConnectNow("the database system is starting up"), True),  # 57P03
        (PoolTimeout("couldn't get a connection after 30 sec"), True),
        (_raised_from(psycopg.OperationalError("connection refused")), True),
        (errors.DeadlockDetected("deadlock"), False),  # an OperationalError, but the work's
        (errors.QueryCanceled("statement timeout"), False),
        (errors.UniqueViolation("duplicate key"), False),
        (ValueError("bad input"), False),
        (_raised_from(ValueError("bad input")), False),
    ],
)
def test_an_outage_is_told_from_the_works_own_failure(exc: BaseException, outage: bool) -> None:
    assert unreachable(exc) is outage
