"""The graph's selftest: each case plants a structure and asserts a property of the result.

A graph that ranks the wrong file returns a confident, plausible, wrong answer, so these cases
check properties, not that nothing crashed. Each docstring names the deliberately broken
implementation the case was run against (by editing the module named, running this file, and
restoring it) and how it failed — a case that stays green against its defect checks nothing.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from palimpsest.devtools.bench.cochange import BenchConfig, evaluate
from palimpsest.index.errors import UnknownSeed
from palimpsest.index.graph import resolve_seeds
from palimpsest.index.graph.history import Change
from palimpsest.index.graph.report import UnmatchedHeader
from tests.unit.graph.support import graph_of, paths, ranked

SCRIPT = "def main():\n    print({n})\n\n\nif __name__ == '__main__':\n    main()\n"


def test_names_are_not_merged_into_one_hub() -> None:
    """Six scripts each define ``main``; seeding on one must not reach the others.

    Broken implementation: ``GraphBuilder.add_symbol``/``symbol`` keyed by the bare name
    (``sym:main``) — the shared node links all six scripts, the other five come back as the
    seed's nearest neighbours and ``graph.names["main"]`` holds one node: both asserts fail.
    """
    files = {f"scripts/tool_{n}.py": SCRIPT.format(n=n) for n in range(6)}
    files["src/billing.py"] = "def charge(amount):\n    return amount\n"
    graph, _ = graph_of(files)

    assert len(graph.names["main"]) == 6
    assert len({graph.node_id(node) for node in graph.names["main"]}) == 6
    assert not [p for p in paths(ranked(graph, ["scripts/tool_0.py"], hops=None)) if p.startswith("scripts/")]


def test_a_reference_resolves_to_a_definer_that_sorts_later() -> None:
    """``a/user.py`` calls ``zeta_helper``, defined only in ``z/helpers.py`` (later in path order).

    Broken implementation: a one-pass resolver — in ``build._Resolution._candidates`` only
    definers whose path sorts before the referencing file count (``p < path``), which is what
    resolving each file while walking the sorted listing does. ``z/late.py -> a/early.py``
    still resolves, ``a/user.py -> z/helpers.py`` does not: the first assert fails.
    """
    graph, _ = graph_of(
        {
            "a/user.py": "def run(h):\n    return h.zeta_helper(2)\n",
            "z/helpers.py": "def zeta_helper(x):\n    return x * 2\n",
            "a/early.py": "def alpha_helper():\n    return 1\n",
            "z/late.py": "def go(h):\n    return h.alpha_helper()\n",
        }
    )
    later = {r.path: r for r in ranked(graph, ["a/user.py"])}
    assert "z/helpers.py" in later
    assert later["z/helpers.py"].via in {"references", "calls"}
    assert "zeta_helper" in later["z/helpers.py"].reason
    assert "a/early.py" in paths(ranked(graph, ["z/late.py"]))


def test_governs_matches_whole_path_segments() -> None:
    """``Governs: src/bill`` (no trailing slash) covers ``src/bill/...``, never ``src/billing_old/``.

    Broken implementation: ``docs.governed_paths`` matching by string prefix
    (``p.startswith(target)``). ``src/billing_old/legacy.py`` is then governed and reached from
    the doc: the last assert fails. (With a trailing slash in the fixture both versions agree —
    which is why the fixture has none.)
    """
    graph, report = graph_of(
        {
            "docs/billing.md": "# Billing\n\nGoverns: src/bill\n",
            "src/bill/invoice.py": "def total():\n    return 1\n",
            "src/bill/tax/rates.py": "RATE = 2\n",
            "src/billing_old/legacy.py": "def old_total():\n    return 0\n",
        }
    )
    reached = {r.path: r for r in ranked(graph, ["docs/billing.md"])}
    assert reached["src/bill/invoice.py"].via == "governs"
    assert reached["src/bill/tax/rates.py"].via == "governs"
    assert report.governs_unmatched == []
    assert "src/billing_old/legacy.py" not in reached


def test_an_unresolvable_governs_target_is_reported() -> None:
    """A ``Governs:`` target that matches nothing is listed in the negative-control report.

    Broken implementation: ``build._Resolution._header`` returning without recording the
    unmatched target (the stale target "vanishes silently"): ``governs_unmatched`` is empty.
    """
    _, report = graph_of(
        {
            "docs/legacy.md": "# Legacy\n\nGoverns: src/gone\nGoverns: src/here\n",
            "src/here/code.py": "X = 1\n",
        }
    )
    assert report.governs_unmatched == [UnmatchedHeader("docs/legacy.md", 4 - 1, "src/gone")]
    assert "docs/legacy.md:3  Governs: src/gone" in report.text()


def test_an_unmatched_seed_is_an_error_that_names_it() -> None:
    """A seed that matches nothing raises ``UnknownSeed`` naming it — even beside a valid seed.

    Broken implementation: ``seeds.resolve_seeds`` skipping seeds without nodes and, when none
    is left, seeding every file (the silent fall-back to the global ranking). No error is
    raised: both ``pytest.raises`` fail.
    """
    graph, _ = graph_of(
        {"src/api.py": "def handle():\n    return 1\n", "src/db.py": "def query():\n    return 2\n"}
    )
    with pytest.raises(UnknownSeed, match=re.escape("src/nothing.py")):
        resolve_seeds(graph, ["src/nothing.py"])
    with pytest.raises(UnknownSeed, match="no_such_symbol"):
        resolve_seeds(graph, ["src/api.py", "no_such_symbol"])


def test_a_bare_symbol_name_resolves_as_a_seed() -> None:
    """``--seed compute_invoice_total`` seeds the symbol node of the file that defines it.

    Broken implementation: ``seeds._nodes_for`` without the bare-name lookup (only paths and
    node ids): ``UnknownSeed`` is raised for the name and the test errors.
    """
    graph, _ = graph_of(
        {
            "src/billing/invoice.py": "def compute_invoice_total(lines):\n    return sum(lines)\n",
            "src/api.py": (
                "from src.billing.invoice import compute_invoice_total\n\n\n"
                "def handle(lines):\n    return compute_invoice_total(lines)\n"
            ),
            "src/unrelated.py": "def noop():\n    return None\n",
        }
    )
    seeds = resolve_seeds(graph, ["compute_invoice_total"])
    assert seeds.matched == {"compute_invoice_total": ["sym:src/billing/invoice.py:compute_invoice_total"]}
    results = ranked(graph, ["compute_invoice_total"])
    assert paths(results)[0] == "src/api.py"
    assert "src/unrelated.py" not in paths(results)


def test_governs_lines_count_only_within_the_first_sixty_lines() -> None:
    """Line 60 of a doc is still its head, line 61 is not (one window, the chunker's).

    Broken implementation: ``HEADER_LINES = 40`` in the chunker's ``parsing.docs`` (the seed's
    hook/build disagreement): the line-60 target makes no edge and the first assert fails.
    """
    filler = "".join(f"line {n}\n" for n in range(1, 60))
    graph, _ = graph_of(
        {
            "docs/in.md": filler + "Governs: src/kept\n",
            "docs/out.md": filler + "\nGoverns: src/kept\n",
            "src/kept/code.py": "X = 1\n",
        }
    )
    assert "src/kept/code.py" in paths(ranked(graph, ["docs/in.md"]))
    assert "src/kept/code.py" not in paths(ranked(graph, ["docs/out.md"]))


def _planted(clusters: int = 8, size: int = 6, commits: int = 300) -> tuple[dict[str, str], list[Change]]:
    """Packages whose modules import each other, and a history whose commits stay in one package."""
    files: dict[str, str] = {}
    for c in range(clusters):
        for i in range(size):
            others = [(i + step) % size for step in (1, 2, 3)]  # with the reverse edges: the whole package
            files[f"pkg{c}/mod{i}.py"] = (
                "".join(f"from pkg{c}.mod{o} import work{c}_{o}\n" for o in others)
                + f"\n\ndef work{c}_{i}():\n    return "
                + " + ".join(f"work{c}_{o}()" for o in others)
                + "\n"
            )
    rng = random.Random(5)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    changes = []
    for n in range(commits):
        c = rng.randrange(clusters)
        touched = tuple(f"pkg{c}/mod{i}.py" for i in sorted(rng.sample(range(size), rng.randint(2, 4))))
        changes.append(Change(f"{n:040x}", start + timedelta(hours=n), len(touched), touched))
    return files, changes[::-1]  # newest first, as git log


def test_the_benchmark_separates_signal_from_noise() -> None:
    """On a planted history the graph strategies beat random by a wide margin, random sits at
    its expected floor, and history-based strategies see real signal.

    Broken implementation: ``benchmark.evaluate`` ranking the graph strategies from a fixed
    node instead of the trial's seed (a ranking that ignores the seed, like a global
    PageRank): ``hops1`` and ``pagerank`` fall to the floor and the ``3 * random`` asserts fail.
    """
    files, changes = _planted()
    graph, _ = graph_of(files)
    run = evaluate(graph, changes, BenchConfig(commits=300, trials=150, k=5), seed=1)
    recall = run.recall
    floor = 5 / (run.pool - 1)
    assert recall["random"] < 2 * floor
    assert recall["hops1"] > 3 * recall["random"] + 0.2
    assert recall["pagerank"] > 3 * recall["random"] + 0.2
    assert recall["cochange"] > 3 * recall["random"] + 0.2
