"""Printing results: JSON for machines (``--json``), short aligned text for people."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click


def emit(data: Any, *, as_json: bool, text: str | None = None) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))
    elif text is not None:
        click.echo(text)
    else:
        click.echo(json.dumps(data, indent=2, default=str))


def progress(message: str) -> None:
    """Progress goes to stderr so ``--json`` output stays parseable."""
    click.echo(message, err=True)


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
