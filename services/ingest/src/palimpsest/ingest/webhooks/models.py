"""The provider-neutral result of parsing one webhook delivery.

Each provider module (`github`, `gitlab`, `bitbucket`) turns its own payload shapes into these
frozen values, so the ingest service decides what to do with a delivery without knowing which
provider sent it. The values carry only what the payload says; what the payload does not say
is `None` (for example a base commit the provider did not send), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Literal
from uuid import UUID

from palimpsest.core.events import ReviewRequested

Provider = Literal["github", "gitlab", "bitbucket"]
Visibility = Literal["public", "private", "internal"]
ReviewTrigger = Literal[
    "opened",  # a pull/merge request was opened
    "reopened",  # it was reopened
    "synchronize",  # new commits were pushed to its source branch
    "ready_for_review",  # it left draft state
    "updated",  # Bitbucket: something changed; the payload does not say what
    "comment",  # a comment asked the bot for a review
]


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A repository as the provider describes it in the delivery."""

    provider: Provider
    external_id: str
    full_name: str
    clone_url: str
    default_branch: str | None
    visibility: Visibility


@dataclass(frozen=True, slots=True)
class IndexIntent:
    """A push to a branch that should be indexed.

    `changed_paths` is the de-duplicated, sorted union of added, modified and removed paths of
    the pushed commits. `paths_complete` is False when that union may miss paths: the provider
    truncated the commit list, the push was forced or created the branch, the list hit our
    bound, or the provider sends no file lists at all (Bitbucket).
    """

    repo: RepoRef
    branch: str
    head_sha: str
    head_commit_at: datetime | None
    changed_paths: tuple[str, ...]
    paths_complete: bool
    before_sha: str | None
    is_default_branch: bool | None


@dataclass(frozen=True, slots=True)
class IndexCandidates:
    """One push updated several branches and the payload does not name the default branch.

    Only Bitbucket produces this: its payloads do not carry the repository's main branch, so
    the service keeps the intent whose branch is the default branch it knows.
    """

    intents: tuple[IndexIntent, ...]


@dataclass(frozen=True, slots=True)
class ReviewIntent:
    """A pull/merge request that should be reviewed.

    Commit SHAs and refs are None when the payload does not carry them (a GitHub
    `issue_comment`, the base commit of a GitLab merge request); the service resolves them.
    Bitbucket sends abbreviated (12-hex) commit hashes for pull requests. ``author`` is the pull
    request's author (GitHub and Bitbucket name them; GitLab only when the sender is the author:
    its payloads carry the author's id, not their name), never the commenter who asked.
    """

    repo: RepoRef
    number: int
    base_sha: str | None
    head_sha: str | None
    base_ref: str | None
    head_ref: str | None
    title: str
    body: str
    draft: bool
    trigger: ReviewTrigger
    comment_id: str | None
    requested_by: str | None  # who opened, pushed or asked (the sender, the commenter)
    author: str | None = None  # the pull request's author, when the payload names them
    full: bool = False  # the comment asked for a full review ('@bot review full')

    def requested(
        self, *, tenant_id: UUID, repository_id: UUID, provider: Provider, delivery_id: str | None
    ) -> ReviewRequested:
        """The ``review.requested`` event of this intent: every field but ``repo`` carried by its
        name (the event names each the same; a test holds them together), plus what the route
        (tenant, registered repository) and the delivery add."""
        carried = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "repo"}
        return ReviewRequested(
            tenant_id=tenant_id,
            repository_id=repository_id,
            provider=provider,
            delivery_id=delivery_id,
            **carried,
        )


FeedbackKind = Literal["resolved", "unresolved", "reply", "reaction"]


@dataclass(frozen=True, slots=True)
class FeedbackIntent:
    """Something a person did to a comment that may be one of the reviewer's findings: resolved or
    reopened its thread, replied to it, reacted to it. ``refs`` are the provider's ids that may
    identify the finding's thread (comment, discussion or note ids); ``fingerprint`` is read from
    the finding's marker when the payload carries the comment's text."""

    repo: RepoRef
    number: int
    kind: FeedbackKind
    refs: tuple[str, ...]
    fingerprint: str | None
    actor: str | None
    detail: str | None = None  # a reaction's name


@dataclass(frozen=True, slots=True)
class ReposChanged:
    """Repositories were added to or removed from an installation."""

    installation_external_id: str
    added: tuple[RepoRef, ...]
    removed: tuple[RepoRef, ...]


@dataclass(frozen=True, slots=True)
class Ping:
    """The provider checked that the endpoint answers."""


@dataclass(frozen=True, slots=True)
class Ignored:
    """A well-formed delivery that asks for nothing; `reason` says why (answered with 202)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Suspension:
    """The provider suspended (or lifted the suspension of) the sending installation."""

    suspended: bool


Intent = (
    IndexIntent | IndexCandidates | ReviewIntent | FeedbackIntent | ReposChanged | Ping | Ignored | Suspension
)


@dataclass(frozen=True, slots=True)
class InstallationKey:
    """What identifies the sender, read BEFORE verifying, to look the webhook secret up.

    `kind` is provider specific:
    - github: `installation` (a GitHub App installation id from the payload), or, when the
      payload has none, the `X-GitHub-Hook-Installation-Target-Type` header — `app` (the App
      id: App-level deliveries such as `ping`), `repository`, `organization`, `business`.
    - gitlab: `project` (the project id; project and group hooks both send it) or `group`.
    - bitbucket: `workspace` (the workspace UUID, braces included).
    `path` is a human-readable hint (repository full name, namespace path, workspace slug).
    Nothing here is authenticated: use it only to find the secret to verify with.
    """

    provider: Provider
    kind: str
    external_id: str
    path: str | None


@dataclass(frozen=True, slots=True)
class ParsedDelivery:
    """One delivery, normalised: who sent it, about which repository, asking for what."""

    provider: Provider
    delivery_id: str
    event: str
    action: str | None
    installation_external_id: str | None
    repo: RepoRef | None
    intent: Intent

    @property
    def ignored(self) -> bool:
        """True when the delivery asks for nothing (the HTTP layer answers 202)."""
        return isinstance(self.intent, Ignored)
