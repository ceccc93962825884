"""The settings registry: derived from the Settings classes, documented, and enforced at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.cli import settings_registry
from palimpsest.cli.settings_registry import registry, service_classes
from palimpsest.core.errors import SettingsError
from palimpsest.core.settings import (
    NOT_SETTINGS,
    BaseServiceSettings,
    check_environment,
    closest_name,
    load,
    setting_names,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_every_field_of_every_settings_class_is_listed_with_a_meaning() -> None:
    listed = {s.name: s for s in registry()}
    for svc, classes in service_classes().items():
        for cls in classes:
            for field in cls.model_fields:
                name = f"PALIMPSEST_{field.upper()}"
                assert name in listed, name
                assert svc in listed[name].services
    missing = [s.name for s in listed.values() if not (s.description or "").strip()]
    assert not missing, f"fields without description=: {missing}"
    assert all("\n" not in (s.description or "") for s in listed.values()), "one line of meaning each"


def test_the_registry_knows_types_defaults_readers_and_secrets() -> None:
    by = {s.name: s for s in registry()}
    assert by["PALIMPSEST_MAX_FILES"].type == "int"
    assert by["PALIMPSEST_MAX_FILES"].default == 50_000
    assert by["PALIMPSEST_MAX_FILES"].services == ("chunker",)
    assert ">= 1" in by["PALIMPSEST_MAX_FILES"].constraints
    assert by["PALIMPSEST_LOG_LEVEL"].type == "DEBUG|INFO|WARNING|ERROR"
    assert set(by["PALIMPSEST_DATABASE_URL"].services) == set(service_classes())
    assert set(by["PALIMPSEST_LLM_REVIEW_MODEL"].services) == {"ingest", "embedder", "analyzer", "reviewer"}
    secret = {s.name for s in by.values() if s.secret}
    assert {"PALIMPSEST_DATABASE_URL", "PALIMPSEST_ENCRYPTION_KEY", "PALIMPSEST_LLM_API_KEY"} <= secret
    assert {"PALIMPSEST_ADMIN_TOKEN", "PALIMPSEST_MIGRATION_DATABASE_URL"} <= secret
    assert "PALIMPSEST_EMBED_CHARS_PER_TOKEN" not in secret and "PALIMPSEST_NATS_URL" not in secret
    assert by["PALIMPSEST_PROVIDER_HOSTS"].default == ["github.com", "gitlab.com", "bitbucket.org"]
    assert str(by["PALIMPSEST_HOME"].default).startswith("(computed: ")
    assert [s.name for s in registry("chunker")] == sorted(s.name for s in registry("chunker"))
    assert "PALIMPSEST_REVIEW_POST" not in {s.name for s in registry("chunker")}


def test_the_generated_doc_and_names_file_match_the_classes() -> None:
    """Fails when a setting was added or changed without `make settings-doc`."""
    doc = REPO_ROOT / "docs" / "settings.md"
    assert settings_registry.main([str(doc), "--check"]) == 0, "run `make settings-doc`"
    assert doc.read_text("utf-8") == settings_registry.markdown(registry())
    assert setting_names() == {s.name for s in registry()}


def test_the_drift_check_can_fail(tmp_path: Path) -> None:
    stale = tmp_path / "settings.md"
    stale.write_text(settings_registry.markdown(registry()).replace("PALIMPSEST_MAX_FILES", "X", 1))
    assert settings_registry.main([str(stale), "--check"]) == 1


def test_an_unknown_name_is_refused_with_the_closest_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_MAX_FILES_PER_REPOSITORY", "50000")
    with pytest.raises(SettingsError) as info:
        load(BaseServiceSettings)
    message = str(info.value)
    assert "\n" not in message
    assert "PALIMPSEST_MAX_FILES_PER_REPOSITORY (did you mean PALIMPSEST_MAX_FILES?)" in message


def test_a_typo_gets_the_most_similar_name() -> None:
    assert closest_name("PALIMPSEST_LLM_MODLE") == "PALIMPSEST_LLM_MODEL"
    assert closest_name("PALIMPSEST_DATABSE_URL") == "PALIMPSEST_DATABASE_URL"
    assert closest_name("PALIMPSEST_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ") is None


def test_declared_non_settings_and_real_settings_pass() -> None:
    env = dict.fromkeys(setting_names(), "x")
    env |= {n if not n.endswith("_") else n + "ANYTHING": "x" for n in NOT_SETTINGS}
    env |= {"palimpsest_log_level": "INFO", "OTHER_PALIMPSEST_X": "x"}  # case, and other prefixes
    check_environment(env, secrets_dir=None)


def test_secret_files_are_checked_too(tmp_path: Path) -> None:
    (tmp_path / "palimpsest_database_url").write_text("postgresql://db/x")
    (tmp_path / "nats.creds").write_text("creds")  # not a setting's file: the NATS credentials
    check_environment({}, secrets_dir=tmp_path)
    (tmp_path / "palimpsest_encryption_kee").write_text("k")
    with pytest.raises(
        SettingsError, match=r"PALIMPSEST_ENCRYPTION_KEE \(did you mean PALIMPSEST_ENCRYPTION_KEY\?\)"
    ):
        check_environment({}, secrets_dir=tmp_path)
