"""The selection rule (``choose``) on synthetic chunk metadata: every branch, no database."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from palimpsest.analyzer.selection import choose
from palimpsest.analyzer.snapshot import ChunkRef
from palimpsest.index.staleness import file_kind


def refs(path: str, count: int, date: str | None) -> list[ChunkRef]:
    when = datetime.fromisoformat(date).replace(tzinfo=UTC) if date else None
    return [
        ChunkRef(path, f"sha-{path}", i, i * 10 + 1, i * 10 + 9, "window", None, file_kind(path), when)
        for i in range(count)
    ]


def paths(chosen: list[ChunkRef]) -> list[str]:
    return [r.path for r in chosen]


def test_limit_zero_and_empty() -> None:
    assert choose(refs("a.py", 3, "2024-01-01"), 0) == []
    assert choose([], 80) == []


def test_tiny_input_is_returned_whole_code_first() -> None:
    chunks = refs("README.md", 5, "2020-01-01") + refs("src/a.py", 6, "2024-01-01")
    chosen = choose(chunks, 11)
    assert Counter(paths(chosen)) == {"README.md": 5, "src/a.py": 6}
    assert [r.kind for r in chosen] == ["code"] * 6 + ["doc"] * 5


def test_doc_cap_is_twenty_percent_and_seeds_lead() -> None:
    chunks = (
        refs("docs/new.md", 3, "2025-01-01")
        + refs("README.rst", 2, "2019-01-01")
        + refs("README.md", 2, "2019-01-01")
        + [r for i in range(10) for r in refs(f"src/m{i}.py", 2, f"2024-0{1 + i % 9}-01")]
    )
    chosen = choose(chunks, 10)
    docs = [r.path for r in chosen if r.kind == "doc"]
    assert docs == ["README.md", "README.md"]  # budget 2: README.md first, then nothing else fits


def test_manifests_are_seeded_in_order_and_count_as_code() -> None:
    chunks = refs("package.json", 1, None) + refs("go.mod", 1, None) + refs("pyproject.toml", 1, None)
    chunks += [r for i in range(20) for r in refs(f"src/f{i}.py", 1, "2024-01-01")]
    chosen = choose(chunks, 5)
    assert paths(chosen)[:3] == ["package.json", "pyproject.toml", "go.mod"]
    assert all(r.kind == "code" for r in chosen)


def test_round_robin_orders_directories_by_their_newest_file() -> None:
    chunks = (
        refs("old/a.py", 3, "2020-01-01") + refs("new/b.py", 3, "2024-01-01") + refs("undated/c.py", 3, None)
    )
    chunks += refs("root.py", 3, "2022-01-01")
    chunks += refs("pad/x.py", 0, None)
    chosen = choose(chunks, 8)
    assert paths(chosen) == [
        "new/b.py", "root.py", "old/a.py", "undated/c.py",
        "new/b.py", "root.py", "old/a.py", "undated/c.py",
    ]  # fmt: skip


def test_per_file_cap_and_newest_file_first_within_a_directory() -> None:
    chunks = (
        refs("src/big.py", 9, "2023-01-01")
        + refs("src/newer.py", 2, "2024-01-01")
        + refs("src/nodate.py", 2, None)
    )
    chunks += refs("other/pad.py", 20, "2021-01-01")
    chosen = [r for r in choose(chunks, 20) if r.path.startswith("src/")]
    assert paths(chosen) == ["src/newer.py"] * 2 + ["src/big.py"] * 3 + ["src/nodate.py"] * 2
    assert [r.ordinal for r in chosen if r.path == "src/big.py"] == [0, 1, 2]


def test_spare_doc_budget_spills_to_code_but_docs_never_exceed_the_cap() -> None:
    code_only = [r for i in range(30) for r in refs(f"d{i}/f.py", 1, "2024-01-01")]
    assert Counter(r.kind for r in choose(code_only, 20)) == {"code": 20}
    docs_heavy = refs("src/one.py", 2, "2024-01-01") + [
        r for i in range(40) for r in refs(f"docs/{i}.md", 1, "2024-01-01")
    ]
    assert Counter(r.kind for r in choose(docs_heavy, 20)) == {"doc": 4, "code": 2}
