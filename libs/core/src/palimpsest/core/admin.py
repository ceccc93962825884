"""Deploy-time commands shipped in every image: ``python -m palimpsest.core.admin migrate|bus-init``.

The Helm pre-install/pre-upgrade (Argo CD PreSync) Job runs both; both are idempotent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from palimpsest.core import bus
from palimpsest.core.errors import PalimpsestError, SettingsError
from palimpsest.core.migrate import migrate
from palimpsest.core.settings import BaseServiceSettings, load


def bus_config(settings: BaseServiceSettings) -> bus.BusConfig:
    """The stream and consumer policy the settings describe (bus init, every process's Infra)."""
    return bus.BusConfig(
        ack_wait_s=settings.ack_wait_s,
        max_deliver=settings.max_deliver,
        max_age_days=settings.stream_max_age_days,
        duplicate_window_s=settings.duplicate_window_s,
        replicas=settings.stream_replicas,
    )


async def _migrate(settings: BaseServiceSettings) -> dict[str, object]:
    url = settings.migration_database_url or settings.database_url
    if url is None:
        raise SettingsError("PALIMPSEST_MIGRATION_DATABASE_URL is not set (the owner role's PostgreSQL URL)")
    report = await migrate(url.get_secret_value(), app_role=settings.app_role)
    return {
        "applied": report.applied,
        "skipped": report.skipped,
        "already": report.already,
        "extensions": report.extensions,
    }


async def _bus_init(settings: BaseServiceSettings) -> dict[str, object]:
    if settings.nats_url is None:
        raise SettingsError("PALIMPSEST_NATS_URL is not set")
    return dict(
        await bus.bus_init(settings.nats_url, bus_config(settings), creds_file=settings.nats_creds_file)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palimpsest.core.admin")
    parser.add_argument("command", choices=["migrate", "bus-init"])
    args = parser.parse_args(argv)
    try:
        settings = load(BaseServiceSettings)
        run = _migrate if args.command == "migrate" else _bus_init
        print(json.dumps(asyncio.run(run(settings))))
    except PalimpsestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
