"""The environment variables settings classes read (:mod:`palimpsest.index.codefacts.settings`)."""

from __future__ import annotations

from palimpsest.index.codefacts.definitions import definitions
from palimpsest.index.codefacts.settings import env_names, read_settings, settings_classes

BASE = b"""
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "APP_"


class Base(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX + "CORE_")

    home: str = "/srv"
    _private: int = 0
"""
SERVICE = b"""
from typing import ClassVar

from pydantic import AliasChoices, Field

from app.base import Base


class Settings(Base):
    port: int = 8080
    token: str = Field(default="", validation_alias=AliasChoices("APP_TOKEN", "LEGACY_TOKEN"))
    names: ClassVar[list[str]] = []
"""
V1 = b"""
from pydantic import BaseSettings


class Old(BaseSettings):
    timeout_s: float = 1.0
    region: str = Field("eu", env="CLOUD_REGION")

    class Config:
        env_prefix = "OLD_"
        case_sensitive = True
"""


def _names(*files: bytes) -> set[str]:
    return {e.name for e in env_names(read_settings(f) for f in files)}


def test_fields_under_the_prefix_inherited_across_files() -> None:
    assert _names(BASE, SERVICE) == {"APP_CORE_HOME", "APP_CORE_PORT", "APP_TOKEN", "LEGACY_TOKEN"}
    assert settings_classes([read_settings(BASE), read_settings(SERVICE)]) == {"Base", "Settings"}


def test_a_subclass_alone_says_nothing_of_its_base() -> None:
    assert _names(SERVICE) == set()  # Base is unknown: no settings class, no guess


def test_pydantic_1_config_case_sensitive_and_env() -> None:
    assert _names(V1) == {"OLD_timeout_s", "CLOUD_REGION"}


def test_a_prefix_that_cannot_be_read_gives_no_names() -> None:
    computed = BASE.replace(b'env_prefix=PREFIX + "CORE_"', b"env_prefix=os.environ['X']")
    assert _names(computed) == set()
    assert _names(b"class Config(object):\n    port: int = 1\n", b"def broken(:\n") == set()


def test_the_blob_s_definitions_carry_its_own_settings() -> None:
    found = [d for d in definitions("app/base.py", BASE).items if d.kind == "setting"]
    assert [(d.name, d.parent, d.binding) for d in found] == [("APP_CORE_HOME", "Base", True)]
    assert not [d for d in definitions("app/base.js", BASE).items if d.kind == "setting"]
