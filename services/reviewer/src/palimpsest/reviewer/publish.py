"""Posting a completed review of a provider pull request, in four separate parts:

* **where** — the provider REST APIs the settings name (:func:`api_urls`) and the installation's
  target (:func:`palimpsest.reviewer.posting.installation_target`);
* **with what** — the installation's token, opened with the deployment's key or minted for a
  GitHub App (:class:`Publisher` ``._token``; :func:`secret_box`);
* **post and remember** — in one transaction holding the pull request's advisory lock: a request
  older than the one whose review is already posted posts nothing (a late or redelivered request
  for an earlier head never overwrites a newer head's summary); otherwise the post (new findings
  inline, earlier ones whose anchor is gone resolved, the summary edited in place), then what it
  posted, its threads and the code-changed feedback are written;
* **counting** — the metrics of a post (:func:`count_posted`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from palimpsest.core import metrics
from palimpsest.core.credentials import Credential, credential_token
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.events import ReviewRequested
from palimpsest.core.git_errors import GitError
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.secretbox import KEY_FILE, SecretBox, load_box
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.reviewer.decide import should_post
from palimpsest.reviewer.posting import PostResult, Shown, Target, installation_target, post_review
from palimpsest.reviewer.store import (
    RepositoryRow,
    ReviewRecord,
    newer_posted,
    record_code_changed,
    remember_posted,
    remember_threads,
    with_outcome,
)

log = logging.getLogger("palimpsest.reviewer.service")


class ProviderApis(Protocol):
    """The settings naming the providers' REST APIs (the reviewer's Settings class has them)."""

    review_github_api_url: str | None
    review_gitlab_api_url: str | None
    review_bitbucket_api_url: str | None
    github_api_url: str | None
    gitlab_api_url: str | None
    bitbucket_api_url: str | None


def api_urls(s: ProviderApis) -> dict[str, str | None]:
    """The REST API of each provider for posting (None: the provider's default for the host)."""
    return {
        "github": s.review_github_api_url or s.github_api_url,
        "gitlab": s.review_gitlab_api_url or s.gitlab_api_url,
        "bitbucket": s.review_bitbucket_api_url or s.bitbucket_api_url,
    }


@dataclass(frozen=True, slots=True)
class Posted:
    """A post that went through: what it did, and the categories of the findings it resolved."""

    result: PostResult
    code_changed: list[str]


@dataclass(frozen=True, slots=True)
class Superseded:
    """Not posted: the review of a head requested later is posted already."""

    newer_head: str


def secret_box(encryption_key: str | None, home: Path) -> SecretBox | None:
    """The box that opens installations' sealed credentials: the configured key, or in an
    embedded deployment the key ingest generated under ``home`` (None: no key at all)."""
    if encryption_key is not None:
        return load_box(encryption_key, home=home, generate=False)
    if (home / KEY_FILE).exists():  # embedded: the key ingest generated
        return load_box(None, home=home, generate=True)
    return None


class Publisher:
    def __init__(
        self,
        pool: Pool,
        urls: Mapping[str, str | None],
        tokens: InstallationTokens,
        box: Callable[[], SecretBox | None],
        *,
        post: bool = True,
    ) -> None:
        self.pool = pool
        self.urls = urls
        self.tokens = tokens
        self.box = box
        self.post_enabled = post

    async def post(self, event: ReviewRequested, repo: RepositoryRow, record: ReviewRecord) -> None:
        """Post a completed review of a provider pull request (see the module); the record says
        whether it was posted, and why not when a post was tried and failed or was superseded."""
        if not should_post(self.post_enabled, event, record):
            return
        number = event.number or 0
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await installation_target(conn, repo, number, record.head_sha, self.urls)
        box = self.box()
        if found is None or box is None:
            metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
            return
        place, credential = found
        target = replace(place, base_sha=record.base_sha, merge_base=record.merge_base)
        try:
            token = await self._token(credential, box)
            if token is None:  # App credentials of a provider other than GitHub
                metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
                return
            done = await self._post_and_remember(event, record, target, token, number, event.occurred_at)
        except ReviewFailed as exc:
            metrics.REVIEWS_POSTED.labels(event.provider, "failed").inc()
            record.reason = str(exc)
            log.warning("review %s not posted: %s", record.review_id, exc)
            return
        if isinstance(done, Superseded):
            record.reason = f"not posted: superseded by the review of {done.newer_head[:12]}, requested later"
            metrics.REVIEWS_POSTED.labels(event.provider, "superseded").inc()
            return
        record.posted = True
        result = done.result
        if result.fresh:
            record.findings = with_outcome(
                record.findings, set(result.inline), set(result.existing), set(result.in_summary)
            )
        count_posted(event.provider, target.full_name, record, done)

    async def _post_and_remember(
        self,
        event: ReviewRequested,
        record: ReviewRecord,
        target: Target,
        token: str,
        number: int,
        requested_at: datetime,
    ) -> Posted | Superseded:
        """One transaction holding the pull request's lock: the post, then its three writes."""
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            newer = await newer_posted(conn, record, number, requested_at)  # takes the lock
            if newer is not None:
                return Superseded(newer)
            result = await post_review(
                target,
                token,
                record.summary,
                record.findings,
                resolve=record.resolved,
                again=event.full,
                shown=Shown(record.context, record.dropped, record.cochange_missing),
            )
            await remember_posted(conn, event.tenant_id, record, number, requested_at, result.summary_ref)
            await remember_threads(conn, event.tenant_id, record, number, result.threads)
            changed = await record_code_changed(conn, event.tenant_id, record, number)
        return Posted(result, changed)

    async def _token(self, credential: Credential, box: SecretBox) -> str | None:
        """The installation's token (opened, or minted for a GitHub App); None: none for posting."""
        try:
            return await credential_token(credential, box, self.tokens)
        except GitError as exc:
            raise ReviewFailed(f"credentials_{exc.reason.value}", str(exc)) from exc
        except PalimpsestError as exc:  # the sealed value does not open with the configured keys
            raise ReviewFailed("credentials_unreadable", str(exc)) from exc


def count_posted(provider: str, full_name: str, record: ReviewRecord, done: Posted) -> None:
    """The metrics of a post: findings by where they went, the post's outcome, and feedback."""
    result = done.result
    for outcome, fps in (
        ("inline", result.inline),
        ("existing", result.existing),
        ("summary", result.in_summary),
        ("resolved", result.resolved),
    ):
        if fps:
            metrics.REVIEW_FINDINGS_POSTED.labels(provider, outcome).inc(len(fps))
    metrics.REVIEWS_POSTED.labels(provider, "posted" if result.fresh else "already_posted").inc()
    categories = {f.fingerprint: f.category for f in record.findings}
    for outcome, labels in (
        ("posted", [categories[fp] for fp in result.inline]),
        ("code_changed", done.code_changed),
    ):
        for category in labels:
            label = metrics.feedback_category(category)
            metrics.REVIEW_FEEDBACK.labels(provider, full_name, label, outcome).inc()
