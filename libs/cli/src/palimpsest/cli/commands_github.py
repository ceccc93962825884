"""CLI: ``palimpsest github manifest`` — the GitHub App manifest, so nobody types permissions by hand.

The permissions and events come from :mod:`palimpsest.ingest.github_manifest` (which takes the
events from the webhook parser); docs/connect-github.md walks through the flow.
"""

from __future__ import annotations

import html
import json
import re

import click

from palimpsest.cli.output import emit, fail, progress

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}")


@click.group()
def github() -> None:
    """GitHub App setup (docs/connect-github.md)."""


@github.command("manifest")
@click.option(
    "--url",
    required=True,
    help="The https URL GitHub reaches the ingest service at (webhooks go to URL/webhooks/github).",
)
@click.option("--org", default=None, help="Create the App in this organization (default: your account).")
@click.option("--name", default="Palimpsest", show_default=True, help="The App's name (unique on GitHub).")
@click.option(
    "--redirect-url", default=None, help="Where GitHub sends you back with the code (default: URL/)."
)
@click.option("--host", default="github.com", show_default=True, help="GitHub Enterprise Server: its host.")
@click.option("--public", is_flag=True, help="Let other accounts install the App (default: only the owner).")
@click.option(
    "--html",
    "as_html",
    is_flag=True,
    help="Print an HTML page whose button posts the manifest to GitHub (open it in a browser).",
)
def manifest_cmd(
    url: str, org: str | None, name: str, redirect_url: str | None, host: str, public: bool, as_html: bool
) -> None:
    """Print the App manifest (JSON of GitHub's manifest flow): name, url, webhook URL, redirect
    URL, permissions and events."""
    from palimpsest.ingest.github_manifest import creation_url, manifest

    if org is not None and _ORG.fullmatch(org) is None:
        fail(f"--org {org!r} is not a GitHub organization name")
    if _HOST.fullmatch(host) is None:
        fail(f"--host {host!r} is not a host name")
    try:
        found = manifest(url, name=name, redirect_url=redirect_url, public=public)
    except ValueError as exc:
        fail(f"--url: {exc}")
    target = creation_url(org, host)
    if as_html:
        click.echo(_page(target, json.dumps(found)))
        return
    emit(found, as_json=True)
    progress(f"POST it as the form field 'manifest' to {target} (or use --html); see docs/connect-github.md")


def _page(target: str, manifest_json: str) -> str:
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8"><title>Create the Palimpsest GitHub App</title>'
        "</head>\n<body>\n"
        f'<form action="{html.escape(target)}" method="post">\n'
        f'<input type="hidden" name="manifest" value="{html.escape(manifest_json)}">\n'
        '<button type="submit">Create the GitHub App</button>\n</form>\n</body></html>'
    )
