"""Settings: environment and secret files, and errors that name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.core.errors import SettingsError
from palimpsest.core.settings import BaseServiceSettings, load


def test_invalid_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_OPS_PORT", "not-a-port")
    with pytest.raises(SettingsError) as info:
        load(BaseServiceSettings)
    assert "PALIMPSEST_OPS_PORT" in str(info.value)
    assert "not-a-port" in str(info.value)


def test_secret_url_value_is_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_DB_POOL_MAX", "0")
    monkeypatch.setenv("PALIMPSEST_DATABASE_URL", "postgresql://u:hunter2@db/x")
    with pytest.raises(SettingsError) as info:
        load(BaseServiceSettings)
    assert "PALIMPSEST_DB_POOL_MAX" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_secrets_from_mounted_files(tmp_path: Path) -> None:
    (tmp_path / "palimpsest_database_url").write_text("postgresql://app:s3cret@db/palimpsest")
    s = BaseServiceSettings(_secrets_dir=tmp_path)  # type: ignore[call-arg]
    assert s.database_url is not None
    assert s.database_url.get_secret_value().endswith("@db/palimpsest")
    assert "s3cret" not in repr(s)


def test_environment_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_NATS_URL", "nats://127.0.0.1:4333")
    monkeypatch.setenv("PALIMPSEST_MAX_DELIVER", "7")
    s = load(BaseServiceSettings)
    assert s.nats_url == "nats://127.0.0.1:4333"
    assert s.max_deliver == 7
