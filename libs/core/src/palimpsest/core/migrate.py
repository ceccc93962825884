"""Versioned SQL migrations, applied in order by the owner role, idempotently and under a lock.

Files live in ``palimpsest/core/migrations/NNNN_name.sql``. Each runs in its own transaction and is
recorded in ``schema_migrations`` with its checksum; an applied file whose text changed is an error
(edit history by adding a migration, never by rewriting one). A file whose first line is
``-- optional-extension: NAME`` runs only when ``CREATE EXTENSION NAME`` succeeds (pgvector is
optional: managed servers without it still get a working lexical index).

After the files, the application role gets exactly the privileges it needs: DML on tenant and
infrastructure tables, EXECUTE on the functions a migration comments as ``app-callable:``, nothing on
``schema_migrations``, and never ownership or BYPASSRLS.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from importlib import resources

import psycopg
from psycopg import sql

from palimpsest.core.errors import MigrationError

log = logging.getLogger(__name__)

_LOCK_KEY = 0x5A1_1957  # advisory lock id for "palimpsest migrate"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_OPTIONAL = re.compile(r"^--\s*optional-extension:\s*([a-z0-9_]+)\s*$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def optional_extension(self) -> str | None:
        first = self.text.splitlines()[0] if self.text else ""
        m = _OPTIONAL.match(first)
        return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class MigrationReport:
    applied: list[str]
    skipped: list[str]
    already: int
    extensions: list[str]


def available() -> list[Migration]:
    found: list[Migration] = []
    for entry in resources.files("palimpsest.core").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda mig: mig.version)
    versions = [mig.version for mig in found]
    if len(versions) != len(set(versions)):
        raise MigrationError(f"two migrations share a version number: {versions}")
    return found


async def migrate(owner_url: str, *, app_role: str, until: int | None = None) -> MigrationReport:
    """Apply pending migrations as the owner and (re)grant the app role. Safe to run concurrently.

    ``until`` stops after that version (a database kept at an older schema, as an upgrade test
    starts from); the default applies every migration.
    """
    # One migrator at a time: a transaction-scoped advisory lock, held by a transaction of its own
    # (on a second connection) for as long as the migrations run, so it holds behind a
    # transaction-mode pooler too, and ends with that transaction, or with a migrator that dies.
    # The holding transaction takes no snapshot between statements, so it never holds back
    # vacuum nor a CREATE INDEX CONCURRENTLY.
    try:
        async with (
            await psycopg.AsyncConnection.connect(owner_url, prepare_threshold=None) as holder,
            await psycopg.AsyncConnection.connect(owner_url, autocommit=True, prepare_threshold=None) as conn,
        ):
            await holder.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            try:
                return await _migrate_locked(conn, app_role, until)
            finally:
                await holder.rollback()
    except psycopg.Error as exc:
        raise MigrationError(f"migration failed: {exc}") from exc


async def _migrate_locked(
    conn: psycopg.AsyncConnection[tuple[object, ...]], app_role: str, until: int | None
) -> MigrationReport:
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
        " status text NOT NULL DEFAULT 'applied', applied_at timestamptz NOT NULL DEFAULT now())"
    )
    await conn.execute(
        "COMMENT ON TABLE schema_migrations IS 'infrastructure: applied migrations; owner only.'"
    )
    cur = await conn.execute("SELECT version, checksum, status FROM schema_migrations")
    done = {int(str(v)): (str(c), str(s)) for v, c, s in await cur.fetchall()}
    await _ensure_role(conn, app_role)
    applied: list[str] = []
    skipped: list[str] = []
    already = 0
    for mig in available():
        if until is not None and mig.version > until:
            break
        label = f"{mig.version:04d}_{mig.name}"
        if mig.version in done:
            checksum, status = done[mig.version]
            if status == "applied" and checksum != mig.checksum:
                raise MigrationError(f"migration {label} changed after it was applied")
            if status == "applied" or not await _extension_ok(conn, mig.optional_extension):
                already += 1
                continue
        ext = mig.optional_extension
        if ext is not None and not await _extension_ok(conn, ext):
            log.warning("migration %s skipped: extension %s is not available", label, ext)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum, status) VALUES (%s, %s, %s, 'skipped')"
                " ON CONFLICT (version) DO NOTHING",
                (mig.version, mig.name, mig.checksum),
            )
            skipped.append(label)
            continue
        async with conn.transaction():
            await conn.execute(mig.text.encode())  # trusted packaged SQL
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)"
                " ON CONFLICT (version) DO UPDATE SET status = 'applied', checksum = EXCLUDED.checksum,"
                " applied_at = now()",
                (mig.version, mig.name, mig.checksum),
            )
        applied.append(label)
        log.info("applied migration %s", label)
    await _grant(conn, app_role)
    cur = await conn.execute("SELECT extname FROM pg_extension ORDER BY 1")
    extensions = [str(r[0]) for r in await cur.fetchall()]
    return MigrationReport(applied=applied, skipped=skipped, already=already, extensions=extensions)


async def _extension_ok(conn: psycopg.AsyncConnection[tuple[object, ...]], name: str | None) -> bool:
    if name is None:
        return True
    try:
        async with conn.transaction():
            await conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(name)))
        return True
    except psycopg.Error:
        return False


async def _ensure_role(conn: psycopg.AsyncConnection[tuple[object, ...]], role: str) -> None:
    cur = await conn.execute("SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = %s", (role,))
    row = await cur.fetchone()
    if row is None:
        try:
            await conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                    sql.Identifier(role)
                )
            )
        except psycopg.errors.DuplicateObject:
            pass  # created concurrently by another migrator on the same cluster
        except psycopg.Error as exc:
            raise MigrationError(
                f"the application role {role!r} does not exist and cannot be created by the migration"
                f" role ({exc.diag.message_primary}); create it (LOGIN, no BYPASSRLS) and re-run"
            ) from exc
    elif row[0] or row[1]:
        raise MigrationError(f"the application role {role!r} must not be superuser or have BYPASSRLS")


async def _grant(conn: psycopg.AsyncConnection[tuple[object, ...]], role: str) -> None:
    r = sql.Identifier(role)
    cur = await conn.execute("SELECT current_schema()")
    row = await cur.fetchone()
    schema = sql.Identifier(str(row[0]) if row else "public")
    cur = await conn.execute("SELECT current_database()")
    row = await cur.fetchone()
    db = sql.Identifier(str(row[0]) if row else "")
    for stmt in (
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, r),
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, r),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(schema, r),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}").format(schema, r),
        sql.SQL("REVOKE ALL ON schema_migrations FROM {}").format(r),
    ):
        await conn.execute(stmt)
    # Functions a migration marks 'app-callable:' (e.g. SECURITY DEFINER lookups, revoked from PUBLIC).
    cur = await conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = current_schema() AND obj_description(p.oid, 'pg_proc') LIKE 'app-callable:%'"
    )
    for (signature,) in await cur.fetchall():
        await conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(str(signature)), r))
