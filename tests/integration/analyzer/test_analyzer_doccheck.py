"""The mechanical documentation check on planted drift, proved from the history the test builds.

The repository's history plants four lies: the README names a function that was renamed, a
design doc points at a directory that was deleted and names (in plain prose) a file that moved,
and a ``Governs:`` line names a directory that moved. Every finding must carry its evidence —
the commit at which the subject last existed in the code, the commit that removed it, what it
became — and both commits must check out with plain git. Around them, things that are not drift
must stay quiet: an accurate doc, a changelog naming the old function on purpose, names that
never existed in the code (a MIME type, a standard-library function), a path written relative to
the example folder a tutorial is about, a Sphinx document reference, a path through a symbolic
link, and files that only carry a doc extension (requirements, a test template).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import DocFinding, Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    check_doc_claims,
    index,
    indexer_definitions,
    new_repository,
    running,
)
from tests.support.gitrepo import commit, git, init_repo, move

INVOICE = '''"""Invoices."""


def compute_total(lines):
    return sum(line.amount for line in lines)
'''
RENAMED = INVOICE.replace("compute_total", "compute_invoice_total")
LEDGER = '''"""The ledger."""


def post_entry(ledger, entry):
    ledger.append(entry)
    return ledger
'''
QUEUE = "def enqueue_job(job):\n    return [job]\n"
REPORT = "def monthly_report(entries):\n    return len(entries)\n"
README = (
    "# Billing service\n\nCall `compute_total()` to sum an invoice.\n"
    # the folder's name is a history word: the line's claims hold all the same
    "Imports go through `legacy/importer.py`: call `import_records()` there.\n"
    # a link to a file that was deleted, and an image that was never in the tree
    '<p>See [the example](examples/babel/index.js). <img src="./coverage.svg" alt="coverage"></p>\n'
)
# a manual kept for the old major release beside the new one: reported once, as a whole
MANUAL_V1 = "# Guide (1.x)\n\nCall `compute_total()`.\n\nQueue jobs with src/workers/queue.py.\n"
MANUAL_V2 = "# Guide\n\nCall `compute_invoice_total()`.\n"
IMPORTER = "def import_records(rows):\n    return list(rows)\n"
DESIGN = (
    "# Design\n\n## Workers\n\nJobs run in `src/workers/` (see [the queue](../src/workers/queue.py)).\n\n"
    "Monthly totals come from src/report.py, every night.\n"
)
BILLING = "# Billing\n\nGoverns: src/billing\n\nInvoices are summed per line.\n"
ACCURATE = (
    "# Ledger\n\nGoverns: src/ledger.py\n\n"
    "Use `post_entry()` from `src/ledger.py` ([source](../src/ledger.py)) to record an entry.\n"
)
CHANGES = (
    "# Changes\n\n## 2.0\n\n- `compute_total()` is now `compute_invoice_total()`; see src/workers/queue.py.\n"
)
NEVER = (
    "# Uploads\n\nPost `multipart/form-data` to `auth/register`; temporary files go to\n"
    "`tempfile.gettempdir()`. Configure `yourapp.default_settings` in `conf/uploads.py`.\n"
)
CLIENT_METHOD = "    def mount_adapter(self, adapter):\n        return adapter\n"
CLIENT = "import requests\n\n\nclass Client(requests.Session):\n" + CLIENT_METHOD
PLUGIN = (
    "# Widgets\n\nThis page is about the otherpkg plugin:\n\n```python\nfrom otherpkg import Widget\n```\n\n"
    "Call `render_widget()` on each `Widget`, and `Client.mount_adapter()` to add an adapter.\n"
)
# the code's own type, whose fields the doc's example type (Booking) shares
BOOKING_GO = (
    'package booking\n\nimport "time"\n\ntype Stay struct {\n\tCheckIn  time.Time\n\tCheckOut time.Time\n}\n'
)
# one long section, stored as overlapping 60-line chunks: a fence closing inside the overlap
# (line 55) must not turn the doc's own Go example (lines 70-75) inside out
BOOKING = (
    "# Booking\n\n"
    + "".join(f"Prose line {n}.\n" for n in range(3, 45))
    + "```sh\n"
    + "".join(f"echo {n}\n" for n in range(46, 55))
    + "```\n"
    + "".join(f"More prose {n}.\n" for n in range(56, 70))
    + "```go\ntype Booking struct {\n\tCheckIn  time.Time\n\tCheckOut time.Time\n}\n```\n"
    + "Bind `CheckIn` before `CheckOut`.\n"
)
TUTORIAL = "# Views\n\nOpen `flaskr/blog.py` and add the view (see flaskr/blog.py).\n"
INDEX_RST = "Index\n=====\n\nStart with :doc:`guide/index` and :ref:`install`.\n"
GUIDE_RST = ".. _install:\n\nGuide\n=====\n\nRead on.\n"  # the label :ref:`install` names
# an API reference page made only of autodoc directives: generated from the code, never stale
API_RST = "API\n===\n\n.. automodule:: billing.invoice\n   :members:\n\n.. autoclass:: billing.Ledger\n"


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("drift") / "repo")
    shas: dict[str, str] = {}
    shas["first"] = commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "src/billing/invoice.py": INVOICE,
            "src/workers/queue.py": QUEUE,
            "src/ledger.py": LEDGER,
            "src/report.py": REPORT,
            "legacy/importer.py": IMPORTER,
            "config/settings.py": "DEBUG = False\n",
            "src/client.py": CLIENT,
            "src/booking/booking.go": BOOKING_GO,
            "docs/booking.md": BOOKING,
            "src/widgets.py": "def render_widget(widget):\n    return widget\n",
            "docs/plugin.md": PLUGIN,
            "README.md": README,
            "docs/design.md": DESIGN,
            "docs/billing.md": BILLING,
            "docs/api.rst": API_RST,
            "docs/v1/guide.md": MANUAL_V1,
            "examples/babel/index.js": "module.exports = {};\n",
        },
    )
    # the code moves on; the prose does not
    shas["rename"] = commit(
        repo,
        "2024-06-01T00:00:00+00:00",
        {
            "src/billing/invoice.py": RENAMED,
            "src/workers/queue.py": None,
            "src/client.py": CLIENT.replace(CLIENT_METHOD, "    pass\n"),
            "src/widgets.py": None,
            "src/booking/booking.go": BOOKING_GO.replace("CheckIn ", "Start   ").replace(
                "CheckOut", "End     "
            ),
            "legacy/importer.py": None,
            "examples/babel/index.js": None,
        },
    )
    shas["move_billing"] = move(repo, "2024-06-02T00:00:00+00:00", "src/billing", "src/payments/billing")
    shas["move_report"] = move(repo, "2024-06-02T00:00:00+00:00", "src/report.py", "src/reports/monthly.py")
    # config/ becomes a symbolic link to etc/conf_v2: config/settings.py still resolves through it
    move(repo, "2024-06-02T00:00:00+00:00", "config", "etc/conf_v2")
    (repo / "config").symlink_to("etc/conf_v2")
    (repo / "conf").symlink_to("etc/conf_v2")  # a second link with the same target: the same blob
    commit(
        repo,
        "2024-06-02T00:00:00+00:00",
        {
            "docs/ledger.md": ACCURATE,
            "CHANGES.md": CHANGES,
            "docs/uploads.md": NEVER,
            "docs/settings.md": (
                "# Settings\n\nEdit config/settings.py to switch DEBUG on.\n\nOr [the same](../conf/settings.py).\n"
            ),
            "docs/tutorial/views.md": TUTORIAL,
            "docs/booking.md": BOOKING + "\nRead on in the guide.\n",  # touched since: not old
            "examples/tutorial/flaskr/blog.py": "def index():\n    return 'blog'\n",
            "docs/index.rst": INDEX_RST,
            "docs/guide/index.rst": GUIDE_RST,
            "docs/v2/guide.md": MANUAL_V2,
            "requirements.txt": "flask>=3\n",
            "tests/templates/mail.txt": "Hello {{ name }}, see src/old/thing.py\n",
        },
    )
    return repo, shas


@pytest.fixture(scope="module")
async def judged(infra: Infra, drifted: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = drifted
    tenant, repo_id = await new_repository(infra, repo, "doccheck")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return await check_doc_claims(infra, tenant, repo_id, repo)


@pytest.fixture(scope="module")
def findings(judged: Judged) -> list[DocFinding]:
    return judged.findings


def _of(findings: list[DocFinding], doc: str, kind: str) -> list[DocFinding]:
    return [f for f in findings if f.doc == doc and f.kind == kind]


def _exists_at(repo: Path, commit: str, path: str) -> bool:
    listed = git(repo, "ls-tree", "-r", "--name-only", commit, "--", path).split()
    return bool(listed)


def _defined_at(repo: Path, commit: str, name: str) -> list[str]:
    """Code files (not docs) defining ``name`` at ``commit`` — plain ``git grep``."""
    out = git(repo, "grep", "-l", "-E", rf"def {name}\b", commit, "--", "*.py", ok=(0, 1))
    return [line.split(":", 1)[1] for line in out.splitlines()]


async def test_renamed_function_named_in_readme(
    findings: list[DocFinding], drifted: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = drifted
    [found] = [f for f in _of(findings, "README.md", "missing_identifier") if f.line == 3]
    assert (found.claim, found.line, found.nearest) == ("`compute_total`", 3, "compute_invoice_total")
    e = found.evidence
    assert e is not None
    assert (e.last_seen_commit, e.removed_in_commit) == (shas["first"], shas["rename"])
    assert (
        e.removed_at.date().isoformat() == "2024-06-01" and e.last_seen_at.date().isoformat() == "2023-01-01"
    )
    assert e.renamed_to == "compute_invoice_total" and e.seen_in == "src/billing/invoice.py"
    # both commits check out with plain git: defined at last_seen, gone at the removal and the head
    assert _defined_at(repo, e.last_seen_commit, "compute_total") == ["src/billing/invoice.py"]
    assert _defined_at(repo, e.removed_in_commit, "compute_total") == []
    assert _defined_at(repo, "HEAD", "compute_total") == []
    assert e.written_while_existed is True and e.line_commit == shas["first"]


async def test_a_line_citing_a_legacy_folder_keeps_its_claims(
    findings: list[DocFinding], drifted: tuple[Path, dict[str, str]]
) -> None:
    """``legacy/`` is a path, not prose that tells history: the deleted file and the function it
    defined are both drift, removed in the same commit."""
    _, shas = drifted
    line = {(f.kind, f.claim): f for f in findings if f.doc == "README.md" and f.line == 4}
    assert set(line) == {("missing_path", "`legacy/importer.py`"), ("missing_identifier", "`import_records`")}
    for found in line.values():
        assert found.evidence is not None
        assert (found.evidence.last_seen_commit, found.evidence.removed_in_commit) == (
            shas["first"],
            shas["rename"],
        )


async def test_links_to_deleted_and_never_existing_files(
    judged: Judged, drifted: tuple[Path, dict[str, str]]
) -> None:
    """A relative link whose target history shows was deleted is drift, with its evidence; one
    whose target never was in the history is an ``unresolved_link``: listed apart, off the
    findings, and its doc not drift for it."""
    _, shas = drifted
    line = {(f.kind, f.claim): f for f in judged.findings if f.doc == "README.md" and f.line == 5}
    assert set(line) == {("missing_path", "`examples/babel/index.js`")}
    deleted = line[("missing_path", "`examples/babel/index.js`")].evidence
    assert deleted is not None and deleted.removed_in_commit == shas["rename"]
    assert all(f.kind != "unresolved_link" for f in judged.findings)
    [unresolved] = judged.unresolved_links
    assert (unresolved.doc, unresolved.line, unresolved.kind, unresolved.claim) == (
        "README.md",
        5,
        "unresolved_link",
        "`coverage.svg`",
    )
    assert unresolved.evidence is None and judged.unresolved_count == 1
    assert unresolved.detail == "coverage.svg is not in the tree (never in the repository's history)"


async def test_a_manual_for_an_older_release_is_reported_once(findings: list[DocFinding]) -> None:
    assert [f for f in findings if f.doc.startswith("docs/v1/")] == []
    [manual] = [f for f in findings if f.kind == "versioned_manual"]
    assert (manual.doc, manual.claim) == (
        "docs/v1",
        "manual for an older release (docs/v1/, newer: docs/v2/)",
    )
    assert manual.detail == "2 claim(s) no longer hold at head"
    assert [f for f in findings if f.doc.startswith("docs/v2")] == []


async def test_design_doc_pointing_at_a_deleted_directory(
    findings: list[DocFinding], drifted: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = drifted
    missing = {f.claim: f for f in _of(findings, "docs/design.md", "missing_path")}
    assert {"`src/workers`", "`../src/workers/queue.py`"} <= set(missing)
    for claim in ("`src/workers`", "`../src/workers/queue.py`"):
        e = missing[claim].evidence
        assert e is not None and missing[claim].line == 5
        assert (e.last_seen_commit, e.removed_in_commit, e.renamed_to) == (
            shas["first"],
            shas["rename"],
            None,
        )
        assert _exists_at(repo, e.last_seen_commit, "src/workers/queue.py")
        assert not _exists_at(repo, e.removed_in_commit, "src/workers")
    assert "src/workers/queue.py existed until" in (missing["`../src/workers/queue.py`"].detail or "")


async def test_moved_file_named_in_prose(
    findings: list[DocFinding], drifted: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = drifted
    [found] = [f for f in _of(findings, "docs/design.md", "missing_path") if f.claim == "`src/report.py`"]
    e = found.evidence
    assert e is not None and found.line == 7
    assert (e.removed_in_commit, e.renamed_to, found.nearest) == (
        shas["move_report"],
        "src/reports/monthly.py",
        "src/reports/monthly.py",
    )
    assert e.last_seen_commit == shas["move_billing"]  # the removal's first parent
    assert _exists_at(repo, e.last_seen_commit, "src/report.py")
    assert not _exists_at(repo, "HEAD", "src/report.py")


async def test_governs_line_to_a_moved_path(
    findings: list[DocFinding], drifted: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = drifted
    [found] = _of(findings, "docs/billing.md", "unmatched_governs")
    assert (found.claim, found.line, found.nearest) == ("Governs: src/billing", 3, "src/payments/billing")
    e = found.evidence
    assert e is not None
    assert (e.last_seen_commit, e.removed_in_commit) == (shas["rename"], shas["move_billing"])
    assert _exists_at(repo, e.last_seen_commit, "src/billing/invoice.py")
    assert not _exists_at(repo, e.removed_in_commit, "src/billing")


async def test_a_page_about_another_package_and_inherited_members_stay_quiet(
    findings: list[DocFinding],
) -> None:
    assert [f for f in findings if f.doc == "docs/plugin.md" and f.kind != "stale_doc"] == []


async def test_what_is_not_drift_stays_quiet(findings: list[DocFinding]) -> None:
    quiet = {
        "docs/ledger.md",  # accurate
        "CHANGES.md",  # a changelog names removed things on purpose
        "docs/uploads.md",  # MIME type, route, stdlib, placeholder, a path that never existed
        "docs/tutorial/views.md",  # relative to the example the tutorial is about
        "docs/index.rst",  # a Sphinx document reference and a label
        "docs/guide/index.rst",
        "docs/settings.md",  # a path through a symbolic link
        "docs/booking.md",  # fields of the doc's own Go example, in a section cut into chunks
        # a page whose examples import only another package, and a method the class may inherit
        # from a base outside the repository (both were in the code once)
        "requirements.txt",  # not documentation
        "tests/templates/mail.txt",
    }
    assert [f for f in findings if f.doc in quiet] == []


async def test_never_existing_names_are_unverified_not_findings(judged: Judged) -> None:
    listed = {(u["doc"], u["claim"]) for u in judged.unverified}
    assert ("docs/uploads.md", "`conf/uploads.py`") in listed
    assert ("docs/uploads.md", "`auth/register`") in listed  # a route: never a path of the code
    # a qualified name rooted in nothing of this repository (the standard library) is no claim at all
    assert ("docs/uploads.md", "`tempfile.gettempdir`") not in listed
    assert judged.unverified_count == len(judged.unverified)


async def test_stale_docs_by_the_shared_rule(findings: list[DocFinding]) -> None:
    stale = {f.doc: f for f in findings if f.kind == "stale_doc"}
    # code dates: ledger.py 2023-01-01; everything else (moved, added, and requirements.txt and
    # the test template, which are not docs) 2024-06-02 → median 2024-06-02
    # old by age: README, billing, design, plugin, api; only the page none of whose claims holds and
    # that is not generated reference is reported (the drifted ones are reported by their drift)
    assert set(stale) == {"docs/plugin.md"}
    assert stale["docs/plugin.md"].claim == "last modified 2023-01-01"
    assert (
        stale["docs/plugin.md"].detail == "unverified and old: 17 months older than typical code in this repo"
    )
    assert stale["docs/plugin.md"].evidence is None


async def test_every_doc_has_one_state(judged: Judged) -> None:
    states = judged.doc_states
    assert {d for d, s in states.items() if s == "drift"} == {
        "README.md",
        "docs/billing.md",
        "docs/design.md",
        "docs/v1/guide.md",  # its findings are reported in one, for the manual
    }
    assert states["docs/api.rst"] == "reference"  # old, and only autodoc directives
    assert states["docs/plugin.md"] == "unverified_old"
    assert states["docs/ledger.md"] == "verified"  # its function, path and Governs: hold
    assert states["docs/settings.md"] == "verified"  # a path through a symbolic link holds
    assert states["docs/uploads.md"] == "unverified"  # names only what never was in the code; not old
    assert "CHANGES.md" not in states and "requirements.txt" not in states
    assert judged.state_counts()["drift"] == 4
    # the rules that decided the mentions are counted (facts.doc_check.rules)
    assert judged.rules["path.through_link"] == 2  # docs/settings.md, through either link
    folded = judged.rules["manual.older_release"]
    assert folded == 2 and judged.rules["link.unresolved"] == 1
    assert judged.rules["finding"] == sum(1 for f in judged.findings if f.evidence is not None) + folded
    assert judged.rules["history.never"] >= 1 and judged.rules["identifier.defined"] >= 1


async def test_findings_are_ordered_and_only_these(findings: list[DocFinding]) -> None:
    assert findings == sorted(findings, key=lambda f: (f.doc, f.line, f.kind, f.claim))
    assert {(f.doc, f.kind) for f in findings} == {
        ("README.md", "missing_identifier"),
        ("README.md", "missing_path"),
        ("docs/billing.md", "unmatched_governs"),
        ("docs/design.md", "missing_path"),
        ("docs/plugin.md", "stale_doc"),
        ("docs/v1", "versioned_manual"),
    }
    without = ("stale_doc", "versioned_manual")  # dated by the tree or a count, not history
    assert all(f.evidence is not None for f in findings if f.kind not in without)
