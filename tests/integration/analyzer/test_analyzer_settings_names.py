"""The doc check knows the environment variables a settings library reads: the code's names,
though the code never writes them.

The repository declares a pydantic-settings base class with ``env_prefix=ENV_PREFIX`` (a constant,
``"SHOP_"``) and, in another module, a subclass with more fields, one of them read under a
``validation_alias``. Its README names four variables. Three are read today, though no file spells
them: ``SHOP_DATABASE_URL`` (the base's field), ``SHOP_WORKER_HISTORY_TIMEOUT_S`` (the subclass's
field, which another module once read by hand: history alone called it removed, "read as a key
in shop/env.py") and
``SHOP_WORKER_TOKEN`` (the alias, which the code spells). The fourth, ``SHOP_LEGACY_CACHE_DIR``, was the field
``legacy_cache_dir`` until a later commit removed it: history proves that one removed, and it stays
a finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    check_doc_claims,
    index,
    indexer_definitions,
    new_repository,
    running,
)
from tests.support.gitrepo import commit, init_repo

CONFIG = '''"""Settings."""

from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "SHOP_"


class BaseConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    database_url: str = "postgresql://localhost/shop"
    legacy_cache_dir: str = "/var/cache/shop"
'''
WORKER = '''"""The worker's settings."""

from pydantic import Field

from shop.config import BaseConfig


class WorkerConfig(BaseConfig):
    worker_history_timeout_s: float = 30.0
    api_key: str = Field(default="", validation_alias="SHOP_WORKER_TOKEN")


def run(config: WorkerConfig) -> float:
    return config.worker_history_timeout_s
'''
ENV = """import os


def timeout() -> float:
    return float(os.environ.get("SHOP_WORKER_HISTORY_TIMEOUT_S", "30"))
"""
README = (
    "# Shop\n\n"
    "Point `SHOP_DATABASE_URL` at the database.\n"
    "`SHOP_WORKER_HISTORY_TIMEOUT_S` bounds a worker's history read.\n"
    "The worker authenticates with `SHOP_WORKER_TOKEN`.\n"
    "Caches go to `SHOP_LEGACY_CACHE_DIR`.\n"
)
CURRENT = ("SHOP_DATABASE_URL", "SHOP_WORKER_HISTORY_TIMEOUT_S", "SHOP_WORKER_TOKEN")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("settings") / "shop")
    first = commit(
        repo,
        "2024-01-10T00:00:00+00:00",
        {
            "README.md": README,
            "shop/__init__.py": "",
            "shop/config.py": CONFIG,
            "shop/worker.py": WORKER,
            "shop/env.py": ENV,
        },
    )
    removed = commit(
        repo,
        "2024-06-01T00:00:00+00:00",
        {
            "shop/config.py": CONFIG.replace('    legacy_cache_dir: str = "/var/cache/shop"\n', ""),
            "shop/env.py": "def timeout() -> float:\n    return 30.0\n",
        },
        message="drop the legacy cache; the settings class reads the timeout",
    )
    return repo, {"first": first, "removed": removed}


@pytest.fixture(scope="module")
async def judged(infra: Infra, shop: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = shop
    tenant, repo_id = await new_repository(infra, repo, "settings-names")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return await check_doc_claims(infra, tenant, repo_id, repo)


async def test_variables_a_settings_class_reads_are_the_codes_names(judged: Judged) -> None:
    claimed = {f.claim for f in judged.findings if f.doc == "README.md"}
    for name in CURRENT:
        assert f"`{name}`" not in claimed, judged.findings
    # the two the code never spells are decided by the settings rule (they hold); the alias is
    # written in the code, so it was always found there
    assert judged.rules.get("identifier.setting") == 2, judged.rules


async def test_a_field_truly_removed_is_still_a_finding(
    judged: Judged, shop: tuple[Path, dict[str, str]]
) -> None:
    _, shas = shop
    [found] = [f for f in judged.findings if f.doc == "README.md"]
    assert (found.kind, found.claim, found.line) == ("missing_identifier", "`SHOP_LEGACY_CACHE_DIR`", 6)
    assert found.evidence is not None
    assert (found.evidence.last_seen_commit, found.evidence.removed_in_commit) == (
        shas["first"],
        shas["removed"],
    )
    assert found.evidence.seen_in == "shop/config.py" and found.evidence.how == "defined"
