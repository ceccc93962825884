"""Cross-repository context and huge diffs reviewed in parts, through the real reviewer core.

Five real git repositories of one tenant are indexed by the real chunker and recency-scanner:
``acme/payments`` (the one under review; its base commit links the others in
``.palimpsest/config.yml``), ``acme/shared-protos`` (public), ``acme/vault`` (private),
``acme/receipts`` (internal) and ``acme/service-template`` (a public pattern repository). A second
tenant owns ``acme/other-secret``. Most tests call :meth:`ReviewerService.review` — the whole
review of one request, without the writes — so one head can be reviewed under several settings;
one goes through the bus and checks the stored review. The model is the local fake (real HTTP).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import ReviewRequested
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM, count_tokens
from palimpsest.index.context.crossrepo import LinkConfig, resolve_links
from palimpsest.reviewer.review import OTHER_REPOSITORIES_ARE_HINTS
from palimpsest.reviewer.service import ReviewerService
from palimpsest.reviewer.store import ReviewRecord, repository
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.integration.reviewer.test_reviewer_flow import KEY, review, settings
from tests.support.gitrepo import commit, git, init_repo

PAYMENTS = """def charge_card(card, amount):
    return {"card": card, "amount": amount}
"""
CHARGED = """def charge_card(card, amount):
    blob = encode_payment(amount, "EUR")
    sealed = vault_seal(blob)
    return {"card": card, "amount": amount, "receipt": format_receipt(sealed)}
"""
CONFIG = """review:
  linked_repositories: [acme/shared-protos, acme/vault, acme/receipts, acme/other-secret]
  pattern_repositories: [acme/service-template]
"""


def _library(root: Path, name: str, files: dict[str, str]) -> Path:
    r = init_repo(root / name)
    commit(r, "2024-02-01T00:00:00+00:00", files)
    return r


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("crossrepo")
    encode_body = "".join(f"    step_{i} = amount * {i}  # encoding step {i}\n" for i in range(40))
    libs = {
        "acme/shared-protos": _library(
            root,
            "shared-protos",
            {
                "proto/payment.py": f"def encode_payment(amount, currency):\n{encode_body}    return currency\n",
                "proto/client.py": "def pay(card):\n    return charge_card(card, 10)\n",
            },
        ),
        "acme/vault": _library(
            root, "vault", {"vault/seal.py": "def vault_seal(blob):\n    return blob[::-1]\n"}
        ),
        "acme/receipts": _library(
            root, "receipts", {"receipts/fmt.py": "def format_receipt(sealed):\n    return str(sealed)\n"}
        ),
        "acme/service-template": _library(
            root,
            "service-template",
            {"handlers/payments.py": "def handle_payments(request):\n    return charge(request)\n"},
        ),
    }
    r = init_repo(root / "payments")
    plain = commit(r, "2024-03-01T00:00:00+00:00", {"src/payments.py": PAYMENTS})
    base = commit(r, "2024-04-01T00:00:00+00:00", {".palimpsest/config.yml": CONFIG})
    git(r, "checkout", "-q", "-b", "feature")
    feature = commit(r, "2024-05-01T00:00:00+00:00", {"src/payments.py": CHARGED}, message="seal")
    # a PR from a base without links that adds the links itself: its head's config is not read
    git(r, "checkout", "-q", "-b", "sneaky", plain)
    sneaky = commit(
        r, "2024-05-02T00:00:00+00:00", {"src/payments.py": CHARGED, ".palimpsest/config.yml": CONFIG}
    )
    # a base whose config is not YAML, and a PR on it
    git(r, "checkout", "-q", "-b", "broken", base)
    broken = commit(r, "2024-05-03T00:00:00+00:00", {".palimpsest/config.yml": "review: [unclosed\n"})
    on_broken = commit(r, "2024-05-04T00:00:00+00:00", {"src/payments.py": CHARGED})
    # a huge PR: one file larger than the diff limit, then six that each fill a part
    git(r, "checkout", "-q", "-b", "huge", base)
    big = "".join(f"value_{i} = {i}  # a long generated line to make the file big\n" for i in range(80))
    files = {"gen/0big.py": big}
    for n in range(6):
        files[f"gen/a{n}.py"] = "".join(f"item_{n}_{i} = {i}  # generated line\n" for i in range(22))
    huge = commit(r, "2024-05-05T00:00:00+00:00", files)
    git(r, "checkout", "-q", "main")
    return {
        "path": r,
        "libs": libs,
        "plain": plain,
        "base": base,
        "feature": feature,
        "sneaky": sneaky,
        "broken": broken,
        "on_broken": on_broken,
        "huge": huge,
    }


@pytest.fixture(scope="module")
async def world(infra: Infra, repos: dict[str, Any]) -> dict[str, Any]:
    """Everything registered and indexed; full names and visibilities set as in the docstring."""
    tenant, main = await new_repository(infra, repos["path"], "crossrepo")
    ids = {"acme/payments": main}
    from palimpsest.cli.local import register_path

    for name, path in repos["libs"].items():
        ids[name] = await register_path(infra.pool, tenant, path)
    visibility = {"acme/shared-protos": "public", "acme/vault": "private", "acme/receipts": "internal"}
    async with tenant_tx(infra.pool, tenant) as conn:
        for name, rid in ids.items():
            await conn.execute(
                "UPDATE repositories SET full_name = %s, visibility = %s WHERE repository_id = %s",
                (name, visibility.get(name, "public" if name == "acme/service-template" else "private"), rid),
            )
    other_tenant, other = await new_repository(infra, repos["libs"]["acme/vault"], "crossrepo-other")
    async with tenant_tx(infra.pool, other_tenant) as conn:
        await conn.execute(
            "UPDATE repositories SET full_name = 'acme/other-secret', visibility = 'private'"
            " WHERE repository_id = %s",
            (other,),
        )
    async with running(infra, indexer_definitions({tenant, other_tenant})):
        for rid in ids.values():
            await index(infra, tenant, rid)
        await index(infra, other_tenant, other)
    return {"tenant": tenant, "ids": ids, "other_tenant": other_tenant}


@pytest.fixture
async def visibility_of_payments(infra: Infra, world: dict[str, Any]) -> AsyncIterator[None]:
    yield
    await _set_visibility(infra, world, "private")


async def _set_visibility(infra: Infra, world: dict[str, Any], value: str) -> None:
    async with tenant_tx(infra.pool, world["tenant"]) as conn:
        await conn.execute(
            "UPDATE repositories SET visibility = %s WHERE repository_id = %s",
            (value, world["ids"]["acme/payments"]),
        )


async def core_review(
    infra: Infra, world: dict[str, Any], base: str, head: str, **overrides: Any
) -> ReviewRecord:
    """The reviewer core on one request (no writes, no bus)."""
    s = settings(**overrides)
    gateway = Gateway(infra.pool, s)
    service = ReviewerService(infra.pool, gateway, s)
    rid = world["ids"]["acme/payments"]
    event = ReviewRequested(
        tenant_id=world["tenant"], repository_id=rid, base_sha=base, head_sha=head, provider="local"
    )
    try:
        async with tenant_tx(infra.pool, world["tenant"]) as conn:
            repo = await repository(conn, rid)
        assert repo is not None
        record = await service.review(event, repo)
    finally:
        await gateway.aclose()
    assert record.state == "completed", record.reason
    return record


def _repos_in(context: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in context:
        if c.get("repository"):
            out.setdefault(c["source"], set()).add(c["repository"])
    return out


def _refused(record_dropped: list[dict[str, Any]]) -> dict[str, str]:
    return {
        d["repository"]: d["reason"] for d in record_dropped if d.get("path") is None and d.get("repository")
    }


async def test_linked_and_pattern_context_is_labelled_in_prompt_and_stored_review(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    tenant, rid = world["tenant"], world["ids"]["acme/payments"]
    with FakeLLM(reply='{"summary": "ok", "findings": []}', api_key=KEY) as fake:
        s = settings(llm_model="openai/fake-model", llm_api_base=fake.base_url, llm_api_key=SecretStr(KEY))
        event = ReviewRequested(
            tenant_id=tenant,
            repository_id=rid,
            base_sha=repos["base"],
            head_sha=repos["feature"],
            provider="local",
        )
        stored = await review(infra, tenant, event, s)
        prompt = fake.requests("chat")[0].text()
    by_source = _repos_in(stored["context"])
    assert by_source["linked"] == {"acme/shared-protos", "acme/vault", "acme/receipts"}
    assert by_source["pattern"] == {"acme/service-template"}
    own = [c for c in stored["context"] if c["source"] not in ("linked", "pattern")]
    assert own and all(c["repository"] is None for c in own)
    vault = next(c for c in stored["context"] if c["repository"] == "acme/vault")
    assert (vault["source"], vault["path"]) == ("linked", "vault/seal.py")
    # another tenant's repository of that name resolves to nothing
    assert _refused(stored["dropped"]) == {"acme/other-secret": "not_found"}
    cross = stored["sources"]["cross_repo"]
    assert cross["config"]["state"] == "ok" and cross["config"]["path"] == ".palimpsest/config.yml"
    assert cross["pattern"] == ["acme/service-template"]
    # in the prompt: labelled with source and repository, framed as a hint
    assert OTHER_REPOSITORIES_ARE_HINTS in prompt
    assert (
        "### Linked repository acme/vault" in prompt
        and "### Pattern repository acme/service-template" in prompt
    )
    assert "// acme/vault: vault/seal.py:L1-L2" in prompt
    # one heading per repository: shared-protos lends a definition and a use, grouped
    assert len([c for c in stored["context"] if c["repository"] == "acme/shared-protos"]) == 2
    assert prompt.count("### Linked repository acme/shared-protos") == 1
    if "// src/" in prompt:  # the PR's own context comes first
        assert prompt.index("### Linked repository") > prompt.index("// src/")


@pytest.mark.parametrize(
    ("receiver", "allowed", "refused"),
    [
        ("public", {"acme/shared-protos"}, {"acme/vault", "acme/receipts"}),
        ("internal", {"acme/shared-protos", "acme/receipts"}, {"acme/vault"}),
        ("private", {"acme/shared-protos", "acme/receipts", "acme/vault"}, set()),
    ],
)
@pytest.mark.usefixtures("visibility_of_payments")
async def test_visibility_rules(
    infra: Infra,
    world: dict[str, Any],
    repos: dict[str, Any],
    receiver: str,
    allowed: set[str],
    refused: set[str],
) -> None:
    await _set_visibility(infra, world, receiver)
    record = await core_review(infra, world, repos["base"], repos["feature"])
    assert _repos_in(record.context).get("linked", set()) == allowed
    # the public pattern repository is allowed for every receiver
    assert _repos_in(record.context)["pattern"] == {"acme/service-template"}
    reasons = _refused(record.dropped)
    assert {name for name, reason in reasons.items() if reason == "visibility"} == refused
    # never named in the summary that is posted to the provider
    assert all(name not in record.summary for name in refused)


async def test_the_config_is_read_from_the_base_not_the_head(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    record = await core_review(infra, world, repos["plain"], repos["sneaky"])
    assert _repos_in(record.context) == {}
    assert record.sources["cross_repo"]["config"]["state"] == "absent"
    assert _refused(record.dropped) == {}


async def test_an_invalid_config_is_a_reason_not_a_failure(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    record = await core_review(infra, world, repos["broken"], repos["on_broken"])
    assert record.state == "completed"
    assert record.reason is not None and record.reason.startswith(
        "config_invalid: .palimpsest/config.yml: not valid YAML"
    )
    assert {
        "path": ".palimpsest/config.yml",
        "repository": None,
        "source": None,
        "reason": "config_invalid",
    } in (record.dropped)
    assert _repos_in(record.context) == {}
    assert "src/payments.py" in record.summary  # the review itself went on


async def test_cross_repo_context_takes_at_most_a_quarter_of_the_budget(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    budget = 400
    record = await core_review(infra, world, repos["base"], repos["feature"], review_budget_tokens=budget)
    cross = [c for c in record.context if c["source"] in ("linked", "pattern")]
    used = sum(c["tokens"] for c in cross)
    assert cross and used <= budget // 4
    truncated = [d for d in record.dropped if d["reason"] == "cross_repo_budget"]
    # the 40-step encode_payment definition alone is larger than the quarter: reported, not shown
    assert {"repository": "acme/shared-protos", "path": "proto/payment.py"}.items() <= next(
        d for d in truncated if d["path"] == "proto/payment.py"
    ).items()
    assert record.sources["cross_repo"]["budget"] == budget // 4
    assert record.sources["cross_repo"]["tokens"] == used
    assert record.sources["cross_repo"]["truncated"] == len(truncated)
    assert sum(c["tokens"] for c in record.context) <= budget


async def test_at_most_five_linked_and_three_pattern_repositories(
    infra: Infra, world: dict[str, Any]
) -> None:
    config = LinkConfig(
        ".palimpsest/config.yml",
        "ok",
        linked=[
            "acme/vault",
            "ACME/Vault",
            "acme/receipts",
            "acme/payments",
            "acme/missing-1",
            "acme/missing-2",
            "acme/shared-protos",
            "acme/missing-3",
        ],
        pattern=["acme/service-template", "acme/missing-4", "acme/missing-5", "acme/shared-protos"],
    )
    dropped: list[dict[str, Any]] = []
    async with tenant_tx(infra.pool, world["tenant"]) as conn:
        links = await resolve_links(conn, world["ids"]["acme/payments"], config, dropped)
    assert [(lk.role, lk.full_name) for lk in links] == [
        ("linked", "acme/vault"),
        ("linked", "acme/receipts"),
        ("pattern", "acme/service-template"),
    ]
    assert [(d["source"], d["repository"], d["reason"]) for d in dropped] == [
        ("linked", "ACME/Vault", "duplicate"),
        ("linked", "acme/payments", "self"),
        ("linked", "acme/missing-1", "not_found"),
        ("linked", "acme/missing-2", "not_found"),
        ("linked", "acme/shared-protos", "limit"),  # the 6th distinct entry
        ("linked", "acme/missing-3", "limit"),
        ("pattern", "acme/missing-4", "not_found"),
        ("pattern", "acme/missing-5", "not_found"),
        ("pattern", "acme/shared-protos", "limit"),  # the 4th
    ]


async def test_the_other_tenant_sees_only_its_own_repository(infra: Infra, world: dict[str, Any]) -> None:
    config = LinkConfig(".palimpsest/config.yml", "ok", linked=["acme/vault", "acme/other-secret"])
    dropped: list[dict[str, Any]] = []
    async with tenant_tx(infra.pool, world["other_tenant"]) as conn:
        cur = await conn.execute("SELECT repository_id FROM repositories")
        (own,) = [r["repository_id"] for r in await cur.fetchall()]
        links = await resolve_links(conn, own, config, dropped)
    assert links == []  # its own repository is "self"; tenant A's acme/vault does not exist for it
    assert [(d["repository"], d["reason"]) for d in dropped] == [
        ("acme/vault", "not_found"),
        ("acme/other-secret", "self"),
    ]


async def test_a_huge_diff_is_reviewed_in_parts(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    def reply(body: dict[str, Any]) -> str:
        user = str(body["messages"][-1]["content"])
        first = re.search(r"^diff --git a/(\S+)", user, re.M)
        assert first is not None
        path = first.group(1)
        own = {
            "path": path,
            "start_line": 1,
            "severity": "minor",
            "category": "style",
            "message": f"own {path}",
        }
        same = {
            "path": "gen/a0.py",
            "start_line": 1,
            "severity": "major",
            "category": "bug",
            "message": "The same   issue",
        }
        return json.dumps({"summary": f"part about {path}", "findings": [own, same]})

    with FakeLLM(reply=reply, api_key=KEY) as fake:
        record = await core_review(
            infra,
            world,
            repos["base"],
            repos["huge"],
            llm_model="openai/fake-model",
            llm_api_base=fake.base_url,
            llm_api_key=SecretStr(KEY),
            review_max_diff_chars=1000,
            review_max_diff_parts=4,
            review_max_findings=3,
        )
        chats = fake.requests("chat")
    assert len(chats) == 4  # one call per part, up to the cap
    shown = [re.findall(r"^diff --git a/(\S+)", str(c.body["messages"][-1]["content"]), re.M) for c in chats]
    assert shown == [["gen/0big.py"], ["gen/a0.py"], ["gen/a1.py"], ["gen/a2.py"]]
    assert all("part" in str(c.body["messages"][-1]["content"]).split("## Diff", 1)[1][:20] for c in chats)
    assert record.mode == "model"
    assert "reviewed in 4 parts" in record.summary and "part about gen/a2.py" in record.summary
    assert "Cut to fit the limit" in record.summary and "gen/0big.py" in record.summary
    assert "Left out: 3 changed file(s)" in record.summary
    assert all(p in record.summary for p in ("gen/a3.py", "gen/a4.py", "gen/a5.py"))
    assert record.reason is not None and "diff_reviewed_in_part" in record.reason
    # merged: "the same issue" once, then the cap of 3 (5 distinct findings → 2 dropped)
    assert [(f.path, f.message) for f in record.findings] == [
        ("gen/0big.py", "own gen/0big.py"),
        ("gen/a0.py", "The same   issue"),
        ("gen/a0.py", "own gen/a0.py"),
    ]
    assert record.findings_dropped == 2
    # usage summed over the parts
    assert record.prompt_tokens == sum(count_tokens(c.text()) for c in chats)
    assert record.completion_tokens > 0


@pytest.fixture
async def vault_elsewhere(infra: Infra, world: dict[str, Any]) -> AsyncIterator[None]:
    """acme/vault moved into an installation of its own (acme/payments has none)."""
    tenant, vault = world["tenant"], world["ids"]["acme/vault"]
    installation = uuid7()
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO installations (tenant_id, installation_id, provider, kind, external_id, host)"
            " VALUES (%s, %s, 'github', 'installation', %s, 'github.com')",
            (tenant, installation, str(uuid7().int % 10**12)),
        )
        await conn.execute(
            "UPDATE repositories SET installation_id = %s WHERE repository_id = %s", (installation, vault)
        )
    yield
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("DELETE FROM repository_links WHERE target_id = %s", (vault,))
        await conn.execute(
            "UPDATE repositories SET installation_id = NULL WHERE repository_id = %s", (vault,)
        )
        await conn.execute("DELETE FROM installations WHERE installation_id = %s", (installation,))


@pytest.mark.usefixtures("vault_elsewhere")
async def test_a_config_link_to_another_installation_is_dropped_unless_an_admin_linked_it(
    infra: Infra, world: dict[str, Any], repos: dict[str, Any]
) -> None:
    """ADR D8, through the whole review: the context report says why acme/vault is missing."""
    record = await core_review(infra, world, repos["base"], repos["feature"])
    assert _refused(record.dropped)["acme/vault"] == "other_installation"
    assert _repos_in(record.context)["linked"] == {"acme/shared-protos", "acme/receipts"}
    async with tenant_tx(infra.pool, world["tenant"]) as conn:
        await conn.execute(
            "INSERT INTO repository_links (tenant_id, link_id, source_id, target_id, role)"
            " VALUES (%s, %s, %s, %s, 'linked')",
            (world["tenant"], uuid7(), world["ids"]["acme/payments"], world["ids"]["acme/vault"]),
        )
    record = await core_review(infra, world, repos["base"], repos["feature"])
    assert "acme/vault" not in _refused(record.dropped)
    assert "acme/vault" in _repos_in(record.context)["linked"]
