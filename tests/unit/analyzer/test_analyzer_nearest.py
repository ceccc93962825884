"""Nearest current matches of the documentation check: renamed definitions, moved paths."""

from __future__ import annotations

from palimpsest.analyzer.doccheck import _resolutions, _Symbols, _Tree

SYMBOLS = _Symbols(
    ["compute_invoice_total", "PalimpsestError", "generate", "fetchUser", "render", "LedgerEntry"]
)


def test_a_rename_is_found_for_strong_and_weak_claims() -> None:
    assert SYMBOLS.nearest("compute_total", strict=False) == "compute_invoice_total"
    assert SYMBOLS.nearest("compute_total", strict=True) == "compute_invoice_total"
    assert SYMBOLS.nearest("billing.compute_total", strict=False) == "compute_invoice_total"


def test_weak_claims_need_a_probable_rename() -> None:
    assert SYMBOLS.nearest("palimpsest_owner", strict=True) is None  # shares only the project name
    assert SYMBOLS.nearest("generate_key", strict=True) is None  # a word dropped: another thing
    assert SYMBOLS.nearest("ContainerCreating", strict=True) is None  # nothing alike
    assert SYMBOLS.nearest("unrelated_name", strict=False) is None


def test_defined_names_are_recognised_by_their_last_segment() -> None:
    assert SYMBOLS.defines("app.render")
    assert SYMBOLS.defines("ledgerentry")
    assert not SYMBOLS.defines("compute_total")


def test_moved_paths_are_matched_by_their_last_segment() -> None:
    tree = _Tree.of(["src/payments/billing/invoice.py", "src/ledger.py", "docs/guide.md"])
    assert tree.exists("src/payments") and tree.exists("src/ledger.py") and not tree.exists("src/billing")
    assert tree.nearest("src/billing") == "src/payments/billing"
    assert tree.nearest("lib/invoice.py") == "src/payments/billing/invoice.py"
    assert tree.nearest("nothing/like/it") is None


def test_links_resolve_against_the_document_first() -> None:
    assert _resolutions("docs/design.md", "../src/x.py", "link") == ["src/x.py"]
    assert _resolutions("docs/design.md", "guide.md", "link") == ["docs/guide.md", "guide.md"]
    assert _resolutions("docs/design.md", "src/x", "code") == ["src/x", "docs/src/x"]
    assert _resolutions("README.md", "/src/x", "code") == ["src/x"]
    assert _resolutions("README.md", "../../outside", "link") == []
