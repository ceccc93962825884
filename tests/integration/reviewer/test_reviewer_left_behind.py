"""Docs a pull request leaves behind, without a model: a rename, a removal and a moved file leave
doc lines naming what is gone; each line is a ``docs`` finding, inline (with a suggestion) when the
doc line is on the diff, otherwise in the summary's section; a later push that fixes the line or
restores the name resolves it; changelogs, names still in the code and the repository's rules
(review.ignore, review.min_severity) are honoured. Real PostgreSQL, NATS, git, provider fakes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import SecretStr

from palimpsest.core.service import Infra
from palimpsest.index.context.leftbehind import SECTION_TITLE
from tests.integration.reviewer.test_reviewer_flow import settings
from tests.integration.reviewer.test_reviewer_posting import ENCRYPTION_KEY, TOKEN, provider_repository
from tests.integration.reviewer.test_reviewer_pushes import ask, event, reviewer
from tests.support.fake_providers import FakeProviders
from tests.support.gitrepo import commit, git, init_repo

SHOP = """def compute_total(items):
    return sum(i.price for i in items)


def legacy_price(item):
    return item.price


def shipping(order):
    return 5
"""
APP = (
    "from shop import compute_total, legacy_price, shipping\n\n\ndef run(items):\n"
    "    return compute_total(items) + legacy_price(items[0]) + shipping(items)\n"
)
GUIDE = """# Guide

Call `compute_total` to add up a cart.
Prices come from `legacy_price`.
Slugs are made in `src/helpers.py`.
`shipping` is flat.
"""
README = "# Shop\n\nIntro line.\nTotals: `compute_total(items)`.\nMore text.\n"
HELPERS = "def slugify(text):\n    return text.lower()\n"
RENAMED = SHOP.replace("compute_total", "calculate_total").replace(
    "def legacy_price(item):\n    return item.price\n\n\n", ""
)
APP_1 = "from shop import calculate_total, shipping\n\n\ndef run(items):\n    return calculate_total(items) + shipping(items)\n"
# the fixing push: the guide and the README name the new function; legacy_price is back
RESTORED = RENAMED + "\n\ndef legacy_price(item):\n    return item.price\n"
GUIDE_2 = GUIDE.replace("`compute_total`", "`calculate_total`")
README_2 = README.replace("Intro line.", "Intro line, edited.").replace("compute_total", "calculate_total")


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r = init_repo(tmp_path_factory.mktemp("leftbehind") / "repo")
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {
            "src/shop.py": SHOP,
            "src/app.py": APP,
            "src/helpers.py": HELPERS,
            "docs/guide.md": GUIDE,
            "README.md": README,
            "CHANGELOG.md": "# Changes\n\n- Added `legacy_price`.\n",
        },
    )
    git(r, "checkout", "-q", "-b", "pr")
    (r / "src" / "text").mkdir()
    git(r, "mv", "src/helpers.py", "src/text/helpers.py")
    h1 = commit(
        r,
        "2024-06-01T00:00:00+00:00",
        {
            "src/shop.py": RENAMED,
            "src/app.py": APP_1,
            "README.md": README.replace("Intro line.", "Intro line, edited."),
        },
        message="rename compute_total, drop legacy_price, move helpers",
    )
    h2 = commit(
        r,
        "2024-06-02T00:00:00+00:00",
        {"src/shop.py": RESTORED, "docs/guide.md": GUIDE_2, "README.md": README_2},
        message="fix the docs, bring legacy_price back",
    )
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "h1": h1, "h2": h2}


def _with_fingerprints(comments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in comments:
        text = str(c.get("body") or c.get("content", {}).get("raw") or "")
        found = re.search(r"fp=([0-9a-f]+)", text)
        out.append({**c, "_fp": found.group(1) if found else None})
    return out


def _docs(review: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(f["path"], f["start_line"]): f for f in review["findings"] if f["category"] == "docs"}


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_docs_left_behind_are_posted_and_resolved_without_a_model(
    infra: Infra, drifting: dict[str, Any], provider: str
) -> None:
    tenant, repo_id = await provider_repository(infra, drifting, provider)
    with FakeProviders(token=TOKEN) as api:
        s = settings(encryption_key=SecretStr(ENCRYPTION_KEY), **{f"review_{provider}_api_url": api.url})

        def diff_to(head: str) -> None:
            api.diffs[11] = git(
                drifting["path"], "diff", "--no-color", "-M", drifting["base"], drifting[head]
            )

        async with reviewer(infra, tenant, s):
            diff_to("h1")
            first = await ask(infra, event(tenant, repo_id, drifting, "h1", provider))
            assert first["mode"] == "brief"  # no model configured
            found = _docs(first)
            # the changelog is history, `shipping` is still defined: neither is drift
            assert sorted(found) == [
                ("README.md", 4),
                ("docs/guide.md", 3),
                ("docs/guide.md", 4),
                ("docs/guide.md", 5),
            ]
            readme = found[("README.md", 4)]
            assert readme["severity"] == "minor" and "renames to `calculate_total`" in readme["message"]
            assert readme["suggested_change"] == "Totals: `calculate_total(items)`."
            assert readme["posted_as"] == "inline"
            assert "removes (from `src/shop.py`)" in found[("docs/guide.md", 4)]["message"]
            assert found[("docs/guide.md", 4)]["suggested_change"] is None
            moved = found[("docs/guide.md", 5)]
            assert "moves to `src/text/helpers.py`" in moved["message"]
            assert moved["suggested_change"] == "Slugs are made in `src/text/helpers.py`."
            assert {found[k]["posted_as"] for k in found if k[0] == "docs/guide.md"} == {"summary"}
            assert first["sources"]["left_behind"]["findings"] == 4

            [comment] = api.inline(provider, 11)
            text = str(comment.get("body") or comment.get("content", {}).get("raw") or comment)
            assert "calculate_total" in text and readme["fingerprint"] in text
            if provider in ("github", "gitlab"):
                assert "```suggestion" in text
            [summary] = api.summaries(provider, 11)
            assert f"{SECTION_TITLE}:" in summary
            section = summary.split(f"\n{SECTION_TITLE}:\n")[1]
            assert "`docs/guide.md:4-4`" in section and "`docs/guide.md:5-5`" in section
            assert "legacy_price" in section and "CHANGELOG" not in section.split("<details>")[0]

            # the fixing push: the README and guide lines fixed, legacy_price restored; only the
            # moved file's line is left, now on the diff (the guide changed): inline, same fingerprint
            diff_to("h2")
            second = await ask(infra, event(tenant, repo_id, drifting, "h2", provider, trigger="synchronize"))
            after = _docs(second)
            assert sorted(after) == [("docs/guide.md", 5)]
            assert after[("docs/guide.md", 5)]["fingerprint"] == moved["fingerprint"]
            assert after[("docs/guide.md", 5)]["posted_as"] == "inline"
            assert sorted(second["resolved"]) == sorted(
                [
                    readme["fingerprint"],
                    found[("docs/guide.md", 3)]["fingerprint"],
                    found[("docs/guide.md", 4)]["fingerprint"],
                ]
            )
            comments = {c["_fp"]: c for c in _with_fingerprints(api.inline(provider, 11))}
            assert sorted(comments) == sorted([readme["fingerprint"], moved["fingerprint"]])
            assert (
                comments[readme["fingerprint"]]["resolved"] and not comments[moved["fingerprint"]]["resolved"]
            )
            [summary] = api.summaries(provider, 11)
            assert (
                f"\n{SECTION_TITLE}:\n" not in summary and "1 resolved" in summary
            )  # summary-only ones had no thread
    assert api.rejected == []


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("review:\n  min_severity: minor\n", [("README.md", 4), ("docs/guide.md", 3), ("docs/guide.md", 4)]),
        ("review:\n  min_severity: major\n", []),
        ('review:\n  ignore: ["docs/**"]\n', [("README.md", 4)]),
    ],
)
async def test_the_repository_rules_apply(
    infra: Infra, tmp_path_factory: pytest.TempPathFactory, config: str, expected: list[tuple[str, int]]
) -> None:
    r = init_repo(tmp_path_factory.mktemp("leftrules") / "repo")
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {
            "src/shop.py": SHOP,
            "src/app.py": APP,
            "docs/guide.md": GUIDE,
            "README.md": README,
            ".palimpsest/config.yml": config,
        },
    )
    h1 = commit(
        r, "2024-06-01T00:00:00+00:00", {"src/shop.py": RENAMED, "src/app.py": APP_1}, message="rename"
    )
    repo = {"path": r, "base": base, "h1": h1}
    tenant, repo_id = await provider_repository(infra, repo, "github")
    with FakeProviders(token=TOKEN) as api:
        s = settings(encryption_key=SecretStr(ENCRYPTION_KEY), review_github_api_url=api.url)
        api.diffs[11] = git(r, "diff", "--no-color", "-M", base, h1)
        async with reviewer(infra, tenant, s):
            done = await ask(infra, event(tenant, repo_id, repo, "h1", "github"))
    assert done["sources"]["left_behind"]["findings"] == 3  # found, then kept or not by the rules
    assert sorted(_docs(done)) == expected


async def test_what_the_base_blob_defines_is_read_by_the_code_facts(
    infra: Infra, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A TypeScript interface member (``_ctx_out: unknown``) is a definition the chunker's symbols
    leave out and no removed line's regex reads: the code facts read it on the base blob's removed
    lines, so a change that drops it takes it away."""
    from uuid import uuid4

    from palimpsest.index.context.diff import parse_diff
    from palimpsest.index.context.leftbehind import LeftBehind, _tree, taken_away

    r = init_repo(tmp_path_factory.mktemp("members") / "repo")
    types = "export interface Builder {\n  _ctx_out: unknown;\n  _input_in: unknown;\n}\n"
    base = commit(r, "2024-05-01T00:00:00+00:00", {"src/types.ts": types})
    head = commit(
        r, "2024-05-02T00:00:00+00:00", {"src/types.ts": types.replace("  _ctx_out: unknown;\n", "")}
    )
    files = parse_diff(git(r, "diff", "--no-color", "-M", base, head))
    out = LeftBehind()
    async with infra.pool.connection() as conn:  # nothing indexed: the chunker's symbols are empty
        definitions, _ = await taken_away(
            conn, uuid4(), r / ".git", await _tree(r / ".git", base), head, files, out
        )
    # only what the removed lines define is asked about: Builder and _input_in are not even looked up
    assert [t.name for t in definitions] == ["_ctx_out"] and out.still_in_code == 0
