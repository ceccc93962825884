"""What the analyzer found a doc to be, as every reader of the index sees it.

The analyzer's documentation check (``palimpsest.analyzer.doccheck``) ends every doc of a
repository (changelogs aside) in one state:

* ``drift`` -- history proves at least one of its claims false;
* ``verified`` -- its checkable claims hold at the analysed commit, whatever its age;
* ``reference`` -- a page made only of generated-reference directives, never stale;
* ``unverified_old`` -- no claim of it holds and it is older than the age rule
  (:mod:`palimpsest.index.staleness`);
* ``unverified`` -- no claim of it holds and it is not old.

The analysis stores them per doc in ``analyses.facts`` (``doc_freshness[].state``).
:func:`doc_states` is the one reader of them: the review context demotes a doc by its state
(:func:`demotion`: ``drift`` and ``unverified_old`` are demoted, the others are not), and only a
repository with no analysis that stored states -- or a doc that analysis did not see (added since,
or a changelog, which the check leaves out) -- falls back to the age rule alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal, get_args
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.index.codefacts import is_doc
from palimpsest.index.staleness import is_stale
from palimpsest.index.stored import latest_doc_freshness

__all__ = ["DEMOTED", "DOC_STATES", "Demotion", "DocState", "demotion", "doc_states"]

DocState = Literal["drift", "verified", "reference", "unverified_old", "unverified"]
DOC_STATES: tuple[DocState, ...] = get_args(DocState)
# how a demoted doc is reported when it is left out (the reason of a dropped context candidate)
Demotion = Literal["stale_doc", "drift_doc"]
DEMOTED: Mapping[DocState, Demotion] = {"drift": "drift_doc", "unverified_old": "stale_doc"}


async def doc_states(conn: Conn, repository_id: UUID) -> dict[str, DocState] | None:
    """Path → state of every doc the repository's newest completed analysis judged; ``None`` when
    no completed analysis stored states (none yet, or one from before the check had states).

    Runs in the caller's tenant transaction."""
    docs = await latest_doc_freshness(conn, repository_id)
    if not isinstance(docs, list):
        return None
    states: dict[str, DocState] = {
        str(d["path"]): d["state"]
        for d in docs
        if isinstance(d, Mapping) and isinstance(d.get("path"), str) and d.get("state") in DOC_STATES
    }
    return states or None


def demotion(
    path: str,
    last_modified_at: datetime | None,
    median: datetime | None,
    states: Mapping[str, DocState] | None,
) -> Demotion | None:
    """Why a doc is demoted in a review's context, or None: by its stored state when the analysis
    judged it, else by the age rule (``stale_doc`` when stale). Code is never demoted."""
    if not is_doc(path):
        return None
    state = states.get(path) if states is not None else None
    if state is not None:
        return DEMOTED.get(state)
    return "stale_doc" if is_stale(path, last_modified_at, median) else None
