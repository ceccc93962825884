"""What ``palimpsest up`` says about signing in to the web view: where, with what, and never a token.

The embedded case (the operator token in the home's file) is walked end to end by
tests/e2e/test_quickstart.py; this is the configured one, where the operator token is
``PALIMPSEST_ADMIN_TOKEN`` and must not be printed.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from palimpsest.cli.commands_stack import _describe_stack, sign_in
from palimpsest.cli.stack import StackInfo
from palimpsest.ingest.settings import Settings

SECRET = "paladm_configured-operator-secret"


def test_a_configured_operator_token_is_named_by_its_variable_never_shown(tmp_path: Path) -> None:
    s = Settings(admin_token=SecretStr(SECRET), home=tmp_path)
    stack = StackInfo(
        owner_url="postgresql://postgres@127.0.0.1:5432/x",
        app_url="postgresql://palimpsest_app@127.0.0.1:5432/x",
        nats_url="nats://127.0.0.1:4222",
        embedded_db=False,
        embedded_nats=False,
        home=str(tmp_path),
        ingest_url="http://127.0.0.1:18080",
    )
    how = sign_in(s, stack)
    assert how == {
        "web_url": "http://127.0.0.1:18080/ui/",
        "token_command": "palimpsest token create --tenant TENANT --scope read",
        "operator_token": "PALIMPSEST_ADMIN_TOKEN",
    }
    text = _describe_stack(stack, how)
    assert "web view    http://127.0.0.1:18080/ui/" in text
    assert "operator token (every tenant) is in PALIMPSEST_ADMIN_TOKEN" in text
    assert SECRET not in text and SECRET not in repr(how)
