"""A small repository with a known answer for ``palimpsest bench replay``.

The one eligible change (3 files, all modified code) edits ``pkg/billing.py`` most (the seed),
``pkg/ledger.py`` (a target with a co-change history with the seed) and ``tools/unrelated.py`` (a
target nothing points at: no shared commit, no shared name, no import) and ``pkg/tables.py`` (a
target over the chunker's 256 KiB file limit: never indexed). ``pkg/report.py`` calls ``compute_total``, which the change modifies
(a usage). After the change, two-file commits pair the seed with ``pkg/late.py`` over and over:
history the product must not see when it replays the change (they are not eligible themselves).
The co-change warning should name ``pkg/ledger.py`` alone (5 of the seed's 6 commits, lift 2).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.gitrepo import commit, init_repo

BILLING = '''"""Billing."""


def compute_total(items):
    total = 0
    for item in items:
        total += item
    return total


def format_invoice(items):
    return f"total: {compute_total(items)}"
'''

BILLING_CHANGED = '''"""Billing."""


def compute_total(items, discount=0):
    total = 0
    for item in items:
        total += item
    total -= discount
    if total < 0:
        total = 0
    return total


def format_invoice(items, discount=0):
    return f"total: {compute_total(items, discount)}"
'''


def ledger(n: int) -> str:
    return f'"""Ledger."""\n\n\ndef post_entry(amount):\n    return amount * {n}\n'


def unrelated(n: int) -> str:
    return f'"""Something else."""\n\n\ndef weather_forecast():\n    return {n}\n'


REPORT = '''"""Reports."""

from pkg.billing import compute_total


def monthly_report(rows):
    return compute_total(rows)
'''


def tables(n: int) -> str:
    rows = "".join(f"    ({i}, {i * 7 % 1000}, {i * 13 % 997}, 'row-{i:06d}'),\n" for i in range(9000))
    return f'"""Generated rates (revision {n})."""\n\nRATES = [\n{rows}]\n'


LATE = (
    '"""Created early, paired with the seed only after the change."""\n\n\ndef late_value():\n    return 0\n'
)


def replay_repository(path: Path) -> dict[str, str]:
    """Build the history; returns the shas by name (``change``, ``base``, ``head``)."""
    init_repo(path)
    commit(
        path,
        "2024-01-01T10:00:00",
        {
            "pkg/__init__.py": "",
            "pkg/billing.py": BILLING,
            "pkg/ledger.py": ledger(1),
            "pkg/report.py": REPORT,
            "pkg/tables.py": tables(1),
            "pkg/late.py": LATE,
            "README.md": "# Shop\n\nBilling and ledger.\n",
        },
        message="start",
    )
    commit(path, "2024-01-15T10:00:00", {"tools/unrelated.py": unrelated(1)}, message="tools")
    for i in range(1, 6):  # notes alone: the seed and its partner are a habit, not the whole history
        commit(
            path,
            f"2024-01-2{i}T10:00:00",
            {"docs/notes.md": f"# Notes\n\nRound {i}.\n"},
            message=f"notes {i}",
        )
    for i in range(2, 6):  # the seed and its partner change together (2 files: not eligible)
        commit(
            path,
            f"2024-02-0{i}T10:00:00",
            {"pkg/billing.py": BILLING + f"\n# revision {i}\n", "pkg/ledger.py": ledger(i)},
            message=f"billing and ledger {i}",
        )
    base = commit(path, "2024-03-01T10:00:00", {"pkg/billing.py": BILLING}, message="tidy")
    change = commit(
        path,
        "2024-03-02T10:00:00",
        {
            "pkg/billing.py": BILLING_CHANGED,
            "pkg/ledger.py": ledger(9),
            "tools/unrelated.py": unrelated(9),
            "pkg/tables.py": tables(2),
        },
        message="discounts",
    )
    head = change
    for i in range(1, 6):  # later history: seed + late.py, again and again
        head = commit(
            path,
            f"2024-04-0{i}T10:00:00",
            {"pkg/billing.py": BILLING_CHANGED + f"\n# later {i}\n", "pkg/late.py": LATE + f"\n# {i}\n"},
            message=f"later {i}",
        )
    return {"base": base, "change": change, "head": head}
