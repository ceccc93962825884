"""Cross-repository context: what other repositories of the tenant say about the changed code.

A repository declares its links in ``.palimpsest/config.yml``, read from the pull request's
**base** commit — never from its head, so a pull request cannot widen its own context (an
operator with the ``manage`` scope may add more through the API's ``repository_links``: links
of one repository, and organisation-wide pattern repositories; they come after the file's and
follow the same rules and limits)::

    review:
      # full names of repositories of the same tenant (as the provider spells them)
      linked_repositories: [acme/shared-protos, acme/payments-sdk]   # at most 5
      pattern_repositories: [acme/service-template]                  # at most 3

* ``linked`` repositories are searched (their newest ready snapshot) for the definitions of the
  symbols the diff changes or calls, and for code that mentions the changed definitions;
* ``pattern`` repositories are exemplars of "how we usually do it": lexical search for code
  related to the changed files.

Rules, each refusal reported in the review's ``dropped`` list with a reason (never in the summary
that is posted to the provider, so a public pull request never names a private repository):

* names resolve to repositories of the **same tenant** only (the query runs under the tenant's
  row-level security; another tenant's name resolves to nothing → ``not_found``);
* ``other_installation`` — the file names a repository of another installation than the reviewed
  one's (ADR D8: a repository's own config reaches only its installation's repositories;
  repositories registered without an installation reach only each other). An admin link
  (``palimpsest link add``, the ``manage`` scope) lets such a target through;
* ``limit`` — entries past the 5th linked / 3rd pattern one; ``duplicate``; ``self``;
* ``visibility`` — a ``public`` repository never receives context from ``private`` or
  ``internal`` ones; ``internal`` receives from internal and public; ``private`` from all;
* ``not_indexed`` — the repository has no ready snapshot;
* ``suspended`` — the repository's installation is suspended (its index is not used);
* ``config_invalid`` — the file is not YAML or the section has the wrong types: no cross-repository
  context, and the review goes on;
* the chunks use at most 25 % of the review's context budget (the rest stays with the PR's own
  repository); chunks that do not fit are dropped as ``cross_repo_budget`` (see the context core).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, cast
from uuid import UUID

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not in the lock

from palimpsest.core.db import Conn
from palimpsest.core.git_errors import GitError
from palimpsest.core.repositories import LinkTarget, link_targets
from palimpsest.core.repositories import admin_links as stored_admin_links
from palimpsest.index.context import candidates as sources
from palimpsest.index.context.candidates import Candidate
from palimpsest.index.context.diff import DiffNames
from palimpsest.index.context.source import files_at
from palimpsest.index.recency import last_modified_at
from palimpsest.index.snapshots import newest_ready

log = logging.getLogger(__name__)

CONFIG_PATHS = (".palimpsest/config.yml", ".palimpsest/config.yaml")
MAX_CONFIG_BYTES = 64 * 1024
MAX_LINKED = 5
MAX_PATTERN = 3
Role = Literal["linked", "pattern"]
_KEYS: dict[Role, str] = {"linked": "linked_repositories", "pattern": "pattern_repositories"}
_LIMITS: dict[Role, int] = {"linked": MAX_LINKED, "pattern": MAX_PATTERN}
# which visibilities a repository of the key's visibility may receive context from
MAY_RECEIVE: dict[str, frozenset[str]] = {
    "public": frozenset({"public"}),
    "internal": frozenset({"internal", "public"}),
    "private": frozenset({"private", "internal", "public"}),
}


class ConfigSummary(TypedDict):
    """What a review records of the config it read (``sources.cross_repo.config``)."""

    path: str | None
    state: Literal["absent", "ok", "invalid"]
    detail: str | None


@dataclass(slots=True)
class LinkConfig:
    """The ``review`` section of the base commit's config: names per role, or why there are none."""

    path: str | None = None  # the file read (None: absent)
    state: Literal["absent", "ok", "invalid"] = "absent"
    detail: str | None = None
    linked: list[str] = field(default_factory=list)
    pattern: list[str] = field(default_factory=list)

    def names(self, role: Role) -> list[str]:
        return self.linked if role == "linked" else self.pattern

    def summary(self) -> ConfigSummary:
        return {"path": self.path, "state": self.state, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Link:
    """A resolved, allowed link: a repository of the tenant and the snapshot to read."""

    role: Role
    repository_id: UUID
    full_name: str
    visibility: str
    snapshot_id: UUID


def may_receive(receiver: str, giver: str) -> bool:
    """Whether a repository of visibility ``receiver`` may be shown context of one of ``giver``."""
    return giver in MAY_RECEIVE.get(receiver, frozenset())


def parse_config(text: str | None, path: str = CONFIG_PATHS[0]) -> LinkConfig:
    """The links a config file declares; malformed YAML or wrong types → ``state="invalid"``."""
    if text is None:
        return LinkConfig()
    if len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
        return _invalid(path, f"the file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return _invalid(path, f"not valid YAML{where}")
    if data is None:
        return LinkConfig(path, "ok")
    if not isinstance(data, dict):
        return _invalid(path, "the top level must be a mapping")
    review = data.get("review")
    if review is None:
        return LinkConfig(path, "ok")
    if not isinstance(review, dict):
        return _invalid(path, "'review' must be a mapping")
    config = LinkConfig(path, "ok")
    for role, key in _KEYS.items():
        value = review.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            return _invalid(path, f"'review.{key}' must be a list of repository full names (strings)")
        config.names(role).extend(v.strip() for v in value)
    return config


def _invalid(path: str, detail: str) -> LinkConfig:
    return LinkConfig(path, "invalid", f"{path}: {detail}")


async def read_config(git_dir: Path, base_sha: str) -> LinkConfig:
    """The config of the pull request's base commit (the head's is never read)."""
    try:
        found = await files_at(git_dir, base_sha, list(CONFIG_PATHS))
    except GitError as exc:
        log.warning("reading %s at %s failed: %s", CONFIG_PATHS[0], base_sha[:12], exc)
        return _invalid(CONFIG_PATHS[0], "the file could not be read from the base commit")
    for path in CONFIG_PATHS:
        if found.get(path) is not None:
            return parse_config(found[path], path)
    return LinkConfig()


async def resolve_links(
    conn: Conn, repository_id: UUID, config: LinkConfig, dropped: list[dict[str, Any]]
) -> list[Link]:
    """The config's names → allowed links of the tenant of ``conn``; refusals go to ``dropped``."""
    names = {role: [] if config.state == "invalid" else list(config.names(role)) for role in _KEYS}
    if config.state == "invalid":
        dropped.append({"path": config.path, "repository": None, "source": None, "reason": "config_invalid"})
    admitted: dict[Role, set[str]] = {role: set() for role in _KEYS}  # by an admin: any installation
    for role, target in await admin_links(conn, repository_id):  # after the file's, same rules
        admitted[role].add(target.lower())
        if target.lower() not in {n.lower() for n in names[role]}:
            names[role].append(target)
    wanted = [n for role in _KEYS for n in names[role]]
    if not wanted:
        return []
    rows = await link_targets(conn, repository_id, [n.lower() for n in wanted])
    own = next((r for r in rows if r.repository_id == repository_id), None)
    receiver = own.visibility if own else "public"  # unknown: the strictest rule
    installation = own.installation_id if own else None
    by_name: dict[str, LinkTarget] = {}
    for found in rows:
        by_name.setdefault(found.key, found)
    links: list[Link] = []
    for role in _KEYS:
        seen: set[str] = set()
        for name in names[role]:
            row = by_name.get(name.lower())
            crossing = row is not None and row.installation_id != installation
            reason = _refusal(
                name,
                seen,
                role,
                row,
                repository_id,
                receiver,
                crossing and name.lower() not in admitted[role],
            )
            seen.add(name.lower())
            if reason is None and row is not None:
                snap = await newest_ready(conn, row.repository_id)
                if snap is None:
                    reason = "not_indexed"
                else:
                    links.append(
                        Link(role, row.repository_id, row.full_name, row.visibility, snap.snapshot_id)
                    )
                    continue
            dropped.append({"path": None, "repository": name, "source": role, "reason": reason})
    return links


async def admin_links(conn: Conn, repository_id: UUID) -> list[tuple[Role, str]]:
    """The admin links (``repository_links``) that apply to the repository: its own, then the
    organisation-wide pattern repositories (other than itself), as (role, target full name)."""
    return [(cast(Role, link.role), link.full_name) for link in await stored_admin_links(conn, repository_id)]


def _refusal(
    name: str,
    seen: set[str],
    role: Role,
    row: LinkTarget | None,
    repository_id: UUID,
    receiver: str,
    other_installation: bool,
) -> str | None:
    if name.lower() in seen:
        return "duplicate"
    if len(seen) >= _LIMITS[role]:
        return "limit"
    if row is None:
        return "not_found"
    if row.repository_id == repository_id:
        return "self"
    if other_installation:
        return "other_installation"
    if not may_receive(receiver, row.visibility):
        return "visibility"
    if row.suspended:
        return "suspended"
    return None


async def gather(
    conn: Conn, links: Sequence[Link], names: DiffNames, changed: Sequence[str], per_source: int
) -> list[Candidate]:
    """Candidates of every link, labelled with role and repository, in priority order.

    Linked repositories come first (in config order), then pattern repositories; each
    repository's list is interleaved with the others' so one repository cannot take the whole
    cross-repository share.
    """
    lists: list[list[Candidate]] = []
    for role in _KEYS:
        for link in (lk for lk in links if lk.role == role):
            if role == "linked":
                found = await _linked(conn, link, names, per_source)
            else:
                found = await _pattern(conn, link, names, changed, per_source)
            dates = await last_modified_at(conn, link.repository_id, [c.path for c in found])
            for cand in found:
                cand.source, cand.repository = role, link.full_name
                cand.last_modified_at = dates.get(cand.path)
            lists.append(found)
    out: list[Candidate] = []
    seen: set[tuple[str, str, int]] = set()
    for rank in range(max((len(found) for found in lists), default=0)):
        for found in lists:
            if rank < len(found) and found[rank].key not in seen:
                seen.add(found[rank].key)
                out.append(found[rank])
    return out


async def _linked(conn: Conn, link: Link, names: DiffNames, n: int) -> list[Candidate]:
    """Definitions of what the diff changes or calls, then code that mentions a changed definition."""
    rid, sid = link.repository_id, link.snapshot_id
    found = await sources.definitions(conn, rid, sid, [*names.defined, *names.called], n)
    if names.defined:
        users = await sources.related(conn, rid, sid, names.defined[:6], frozenset(), n)
        for cand in users:
            cand.reason = "mentions a changed definition"
        found += users
    return found


async def _pattern(
    conn: Conn, link: Link, names: DiffNames, changed: Sequence[str], n: int
) -> list[Candidate]:
    """Code related to the changed files (lexical): their file names and the diff's main names."""
    stems = [Path(p).stem for p in changed if Path(p).stem][:4]
    words = list(dict.fromkeys([*stems, *names.defined[:2], *names.mentioned[:2]]))
    found = await sources.related(conn, link.repository_id, link.snapshot_id, words, frozenset(), n)
    for cand in found:
        cand.reason = "how related code is written there"
    return found
