"""Untyped dicts in source outside devtools may only become fewer (issue 53).

A shape we own (a row of our tables, a report payload, a view model, a CLI record) has a type with
named fields; ``dict[str, Any]`` is left for what has not been typed yet, and JSON of a shape we
do not own says so with the one alias :data:`palimpsest.core.jsonshape.JsonObject`. The ceiling is
lowered as dicts are typed; a change that adds untyped dicts fails here instead of adding to them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*ROOT.glob("libs/*/src/palimpsest"), *ROOT.glob("services/*/src/palimpsest")])
CEILING = 120
UNTYPED = re.compile(r"dict\[str, Any\]")
ALIAS = re.compile(r"^JsonObject\b.*=\s*dict\[str, Any\]", re.M)


def _modules() -> list[Path]:
    return [p for root in SOURCES for p in sorted(root.rglob("*.py")) if "devtools" not in p.parts]


def test_untyped_dicts_stay_under_the_ceiling() -> None:
    found = {p: len(UNTYPED.findall(p.read_text(encoding="utf-8"))) for p in _modules()}
    total = sum(found.values())
    worst = sorted(((n, str(p.relative_to(ROOT))) for p, n in found.items() if n), reverse=True)[:10]
    assert total <= CEILING, f"{total} dict[str, Any] outside devtools (ceiling {CEILING}); most in {worst}"


def test_json_of_a_foreign_shape_has_one_name() -> None:
    defining = [str(p.relative_to(ROOT)) for p in _modules() if ALIAS.search(p.read_text(encoding="utf-8"))]
    assert defining == ["libs/core/src/palimpsest/core/jsonshape.py"]
