"""The GitHub App's permissions and events come from one place: the manifest, the webhook parser and
docs/connect-github.md agree with ``palimpsest.ingest.github_manifest``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from palimpsest.cli.commands_github import github
from palimpsest.ingest.github_manifest import (
    ALWAYS_SENT,
    EVENT_PERMISSION,
    EVENTS,
    PERMISSIONS,
    creation_url,
    manifest,
)
from palimpsest.ingest.webhooks import github as github_webhooks

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "connect-github.md"
LABELS = {p.name: p.label for p in PERMISSIONS}


def test_the_events_are_the_handled_ones_less_those_github_always_sends() -> None:
    handled = set(github_webhooks.PARSER.handlers)
    assert handled >= ALWAYS_SENT  # no stale name
    assert set(EVENTS) == handled - ALWAYS_SENT
    assert list(EVENTS) == sorted(EVENTS)


def test_every_event_has_its_permission_and_every_permission_a_use() -> None:
    granted = {p.name: p.access for p in PERMISSIONS}
    assert set(EVENT_PERMISSION) == set(EVENTS)
    assert set(EVENT_PERMISSION.values()) <= set(granted)
    assert granted["metadata"] == "read"  # GitHub requires it of every App
    assert granted["pull_requests"] == "write"  # the reviewer posts comments and resolves threads
    assert all(p.access in ("read", "write") and p.why for p in PERMISSIONS)


def test_the_manifest_is_the_json_of_githubs_manifest_flow() -> None:
    found = manifest("https://palimpsest.example.com/", name="Palimpsest Northwind")
    assert found == {
        "name": "Palimpsest Northwind",
        "url": "https://palimpsest.example.com",
        "hook_attributes": {"url": "https://palimpsest.example.com/webhooks/github", "active": True},
        "redirect_url": "https://palimpsest.example.com/",
        "public": False,
        "default_permissions": {p.name: p.access for p in PERMISSIONS},
        "default_events": list(EVENTS),
    }
    assert creation_url("northwind") == "https://github.com/organizations/northwind/settings/apps/new"
    assert creation_url(None, "github.example.com") == "https://github.example.com/settings/apps/new"


@pytest.mark.parametrize(
    "url",
    ["http://palimpsest.example.com", "https://user:pw@palimpsest.example.com", "https://x.example?a=1", "x"],
)
def test_a_url_github_cannot_deliver_to_safely_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="URL"):
        manifest(url)


def _table_rows(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_guide_lists_exactly_the_codes_permissions_and_events() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    permissions = _table_rows(text, "| permission | access | why |")
    assert permissions == [f"| {p.label} (`{p.name}`) | {p.access} | {p.why} |" for p in PERMISSIONS]
    events = _table_rows(text, "| event | permission |")
    assert events == [f"| `{e}` | {LABELS[EVENT_PERMISSION[e]]} |" for e in EVENTS]
    for name in sorted(ALWAYS_SENT):
        assert f"`{name}`" in text


def test_the_cli_prints_the_manifest_and_a_form() -> None:
    runner = CliRunner()
    out = runner.invoke(github, ["manifest", "--url", "https://palimpsest.example.com", "--org", "northwind"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == manifest("https://palimpsest.example.com")
    assert "https://github.com/organizations/northwind/settings/apps/new" in out.stderr
    page = runner.invoke(github, ["manifest", "--url", "https://palimpsest.example.com", "--html"])
    assert page.exit_code == 0
    assert '<form action="https://github.com/settings/apps/new" method="post">' in page.stdout
    value = re.search(r'name="manifest" value="([^"]*)"', page.stdout)
    assert value is not None and "&quot;default_events&quot;" in value.group(1)
    for args in (["--url", "http://x.example"], ["--url", "https://x.example", "--org", "no/such"]):
        bad = runner.invoke(github, ["manifest", *args])
        assert bad.exit_code == 2 and bad.stderr.startswith("error: ") and len(bad.stderr.splitlines()) == 1
