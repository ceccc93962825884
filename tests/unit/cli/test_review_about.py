"""What a stored review was of, as ``palimpsest review show`` (and the web view) words it."""

from __future__ import annotations

from typing import Any

from palimpsest.cli.commands_review import review_text
from palimpsest.index.stored import NOT_RECORDED, review_about

BASE, HEAD = "91da0c8a3eca8c3fed9d6cdab16b7f7a692f7c10", "7a24b6fb90f485ed5fb44ac8fe19513ba69a3d5a"


def _review(**kw: Any) -> dict[str, Any]:
    """A review's JSON as the API and ``ReviewView.to_json`` give it."""
    return {
        "review_id": "0190a1b2-0000-7000-8000-000000000001",
        "state": "completed",
        "provider": "gitlab",
        "number": 57,
        "base_sha": BASE,
        "head_sha": HEAD,
        "summary": "s",
        "sources": {"snapshot_commit": BASE, "snapshot_on_base": True},
        **kw,
    }


def _about(text: str) -> list[str]:
    return text.splitlines()[1:5]


def test_a_review_stored_before_titles_were_recorded_says_not_recorded() -> None:
    old = _review(title=None, author=None, requested_by=None, base_ref=None, head_ref=None)
    about = review_about(old)
    assert (about.title, about.author) == (NOT_RECORDED, NOT_RECORDED)
    lines = _about(review_text(old))
    assert lines[:3] == ["Pull request: gitlab #57", f"Title: {NOT_RECORDED}", f"Author: {NOT_RECORDED}"]
    assert not any(line.startswith("Branches:") for line in lines)  # none recorded, none made up


def test_an_author_the_delivery_did_not_name_is_said_so_with_who_asked() -> None:
    said = review_about(_review(title="Dunning levels", author=None, requested_by="jlindqvist"))
    assert said.author == "not named by the provider's delivery; review asked by jlindqvist"
    same = review_about(_review(title="Dunning levels", author="anwosu", requested_by="anwosu"))
    assert same.author == "anwosu"  # the author asked: said once


def test_a_local_review_has_no_pull_request_and_no_author() -> None:
    local = _review(provider="local", number=None, title="", author=None, base_ref="main", head_ref="HEAD")
    assert review_about(local).author == "none: not a pull request"
    lines = review_text(local).splitlines()
    assert lines[1] == "Pull request: none (a review of commits through the CLI or the API)"
    assert lines[2] == "Branches: base main, head HEAD"
    assert not any(line.startswith(("Title:", "Author:")) for line in lines)
    titled = review_text({**local, "title": "<b>rates</b>"}).splitlines()
    assert titled[2] == "Title: <b>rates</b>"  # plain text in a terminal
