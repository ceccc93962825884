"""The review of one request, without writes: the change from git, the repository rules at its
base, the context from the index (:func:`palimpsest.index.context.assemble.assemble_context`),
the scope (whole pull request or the increment since the last reviewed head), the model's
findings or the brief, the doc lines the change leaves behind, each finding's identity and
position, and the earlier findings it resolves. The decisions in it are :mod:`.decide`'s."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from palimpsest.core.consumer import Heartbeat
from palimpsest.core.credentials import git_auth_for
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.events import ReviewRequested
from palimpsest.core.git import GitAuth
from palimpsest.core.git_errors import GitError, source_reason
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import ChatResult, Gateway
from palimpsest.core.secretbox import SecretBox
from palimpsest.index.context.assemble import ContextOptions, Reranker, ReviewContext, assemble_context
from palimpsest.index.context.candidates import QueryEmbedder
from palimpsest.index.context.change import opened_change
from palimpsest.index.context.crossrepo import LinkConfig
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.leftbehind import LeftBehind, earlier_fingerprints, left_behind
from palimpsest.index.context.preview import query_embedder, reranker
from palimpsest.index.context.rules import RepoRules, read_rules
from palimpsest.index.context.source import GitHead, PullRequestDiff, files_at
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.stored import submission
from palimpsest.reviewer.decide import (
    ModelUsage,
    checked,
    cut,
    decide_findings,
    kept_drift,
    pull_ref,
    review_reason,
    sections,
    summary_with_drift,
    without_ignored,
)
from palimpsest.reviewer.identity import anchor_present, identify
from palimpsest.reviewer.incremental import Increment, increment
from palimpsest.reviewer.load import on_provider
from palimpsest.reviewer.parts import plan_parts, review_in_parts
from palimpsest.reviewer.positions import diff_map, locate
from palimpsest.reviewer.review import Framing, Outcome, brief, messages
from palimpsest.reviewer.store import RepositoryRow, ReviewRecord, last_reviewed_head, prior_findings

if TYPE_CHECKING:
    from palimpsest.reviewer.service import Settings

log = logging.getLogger("palimpsest.reviewer.service")


class Assembler:
    def __init__(
        self,
        pool: Pool,
        gateway: Gateway,
        settings: Settings,
        tokens: InstallationTokens,
        box: Callable[[], SecretBox | None],
    ) -> None:
        self.pool = pool
        self.gateway = gateway
        self.settings = settings
        self.tokens = tokens
        self._box = box

    async def review(
        self, event: ReviewRequested, repo: RepositoryRow, *, heartbeat: Heartbeat | None = None
    ) -> ReviewRecord:
        """The whole review of one request (no writes): git, the index, the model."""
        record = ReviewRecord(
            uuid7(),
            event.repository_id,
            event.request_id,
            event.provider,
            event.head_sha or "",
            event.base_sha,
            event.number,
            replaces=event.full,
            title=event.title,
            author=event.author,
            requested_by=event.requested_by,
            base_ref=event.base_ref or (None if event.base_sha else repo.default_branch),
            head_ref=event.head_ref,
        )
        try:
            base = event.base_sha or event.base_ref or repo.default_branch
            head = event.head_sha or event.head_ref or pull_ref(event)
            diff = await self._submitted_diff(event)

            def resolved(base_sha: str, head_sha: str) -> None:  # a later failure is stored with them
                record.base_sha, record.head_sha = base_sha, head_sha

            async with opened_change(
                repo.clone_url,
                base,
                head,
                diff,
                auth=await self._auth(event, repo),
                policy=self.settings.source_policy(),
                resolved=resolved,
            ) as change:
                work_dir = change.head.git_dir
                rules = await read_rules(work_dir, change.base_sha)  # the base's, never the head's
                skip = rules.skip_reason(event.trigger, event.draft) if on_provider(event) else None
                if skip is not None:
                    record.state, record.reason = "skipped", skip
                    record.sources = {"rules": rules.summary()}
                    return checked(record)
                whole = change.pr
                record.merge_base = whole.start
                pr = without_ignored(whole, rules)
                if heartbeat is not None:
                    await heartbeat()
                context = await self._context(
                    event, repo, pr, change.head, change.base_sha, change.links, rules
                )
                _fill_context(record, context)
                step = await self._scope(event, work_dir, record, pr)
                outcome, usage = await self._findings(event, context, pr, rules, step)
                kept = decide_findings(outcome, rules)
                record.findings_dropped = kept.dropped
                behind = await self._left_behind(event, change.head, change.base_sha, pr)
                drift = kept_drift(behind.findings, rules)
                record.findings = await _identified(work_dir, whole, kept.found) + await _identified(
                    work_dir, whole, drift, behind.head_texts
                )
                record.sources["left_behind"] = {
                    **behind.summary(),
                    "fingerprints": [f.fingerprint for f in record.findings[len(kept.found) :]],
                }
                record.resolved = await self._resolved(event, work_dir, record, whole, behind.ran)
            record.summary = summary_with_drift(outcome.summary, drift)
            record.sources["rules"] = rules.summary()
            record.mode, record.model = usage.mode, usage.model
            record.reason = review_reason(usage, context, rules)
            record.prompt_tokens = usage.prompt_tokens
            record.completion_tokens = usage.completion_tokens
            record.cost_usd = usage.cost_usd
        except ReviewFailed as exc:
            record.state, record.reason = "failed", str(exc)
        except IndexNotReady as exc:
            record.state, record.reason = "failed", f"index_not_ready: {exc}"
        return checked(record)

    async def _scope(
        self, event: ReviewRequested, git_dir: Path, record: ReviewRecord, pr: PullRequestDiff
    ) -> Increment | None:
        """The change to review incrementally, or None (full); the record says which and why."""
        record.sources["scope"] = {"scope": "full", "why": "first review of this pull request"}
        if not on_provider(event) or self.settings.review_incremental_max_lines <= 0:
            record.sources["scope"]["why"] = "not a pull request of a provider"
            return None
        if event.full:
            record.sources["scope"]["why"] = "a full review was asked for"
            return None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            since = await last_reviewed_head(
                conn, event.repository_id, event.provider, event.number or 0, record.head_sha
            )
        if since is None:
            return None
        found = await increment(git_dir, since, record.head_sha)
        if isinstance(found, str):
            record.sources["scope"]["why"] = found
            return None
        limit = self.settings.review_incremental_max_lines
        if found.changed_lines > limit:
            record.sources["scope"]["why"] = (
                f"{found.changed_lines} lines changed since the last reviewed head {since[:12]} (more than {limit})"
            )
            return None
        paths = {g.path for g in pr.files}  # ignored files (review.ignore) stay out of the increment too
        files = [f for f in found.files if f.path in paths]
        text = found.text if len(files) == len(found.files) else sections(found.text, paths)
        record.scope, record.commits, record.since_sha = "incremental", found.commits, since
        record.sources["scope"] = {
            "scope": "incremental",
            "since": since,
            "commits": len(found.commits),
            "changed_lines": found.changed_lines,
        }
        return Increment(since, found.commits, text, files)

    async def _resolved(
        self,
        event: ReviewRequested,
        git_dir: Path,
        record: ReviewRecord,
        pr: PullRequestDiff,
        left_behind_ran: bool = False,
    ) -> list[str]:
        """Fingerprints of this pull request's earlier findings whose anchor changed or vanished,
        and of earlier left-behind doc lines this head no longer leaves behind (the line was fixed
        or the name restored: :mod:`palimpsest.index.context.leftbehind`)."""
        if not on_provider(event):
            return []
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            prior = await prior_findings(
                conn, event.repository_id, event.provider, event.number or 0, record.head_sha
            )
            mechanical = (
                await earlier_fingerprints(
                    conn, event.repository_id, event.provider, event.number or 0, record.head_sha
                )
                if left_behind_ran
                else set()
            )
        current = {f.fingerprint for f in record.findings}
        gone = [
            str(p.fingerprint) for p in prior if p.fingerprint not in current and p.fingerprint in mechanical
        ]
        todo = [p for p in prior if p.fingerprint not in current and p.fingerprint not in mechanical]
        if not todo:
            return gone
        renamed = {f.old_path: f.path for f in pr.files if f.old_path}
        texts = dict(pr.at_head)
        missing = list({renamed.get(p.path, p.path) for p in todo} - set(texts))
        try:
            texts.update(await files_at(git_dir, record.head_sha, missing))
        except GitError as exc:
            log.warning("review %s: reading earlier findings' files failed: %s", record.review_id, exc)
            return gone
        out: list[str] = gone
        for p in todo:
            text = texts.get(renamed.get(p.path, p.path))
            present = anchor_present(text, p.anchor_hash, p.anchor_lines)
            # a new-side anchor that is gone was changed; a removed-lines anchor back at head was restored
            if present == (p.side == "old"):
                out.append(str(p.fingerprint))
        return out

    async def _submitted_diff(self, event: ReviewRequested) -> str | None:
        """The diff of an API submission of ``{base, diff}`` (None: the request names a head)."""
        if event.submission_id is None:
            return None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await submission(conn, event.submission_id)
        if found is None:
            raise ReviewFailed("submission_missing", "the submitted review request is gone")
        return found.diff

    async def _auth(self, event: ReviewRequested, repo: RepositoryRow) -> GitAuth | None:
        """The installation's token for fetching the PR's head (decrypted, or minted for a GitHub
        App, in core); a refused mint fails the review as a refused fetch would."""
        try:
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                return await git_auth_for(conn, repo.repository_id, self._box(), tokens=self.tokens)
        except GitError as exc:
            raise ReviewFailed(source_reason(exc.reason), str(exc)) from exc

    async def _context(
        self,
        event: ReviewRequested,
        repo: RepositoryRow,
        pr: PullRequestDiff,
        head: GitHead,
        base: str,
        links: LinkConfig | None = None,
        rules: RepoRules | None = None,
    ) -> ReviewContext:
        s = self.settings
        rules = rules or RepoRules()
        rerank = await self._reranker(event.tenant_id)
        embed = await self._query_embedder(event.tenant_id) if repo.index_mode == "hybrid" else None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            return await assemble_context(
                conn,
                event.repository_id,
                pr.files,
                pr.at_head,
                s.review_budget_tokens,
                base_sha=base,
                head=head,
                rerank=rerank,
                embed_query=embed,
                options=ContextOptions(
                    per_source=s.review_per_source,
                    cochange_max=rules.cochange_max,
                    cochange_include=rules.cochange_include,
                ),
                links=links,
            )

    async def _left_behind(
        self,
        event: ReviewRequested,
        head: GitHead,
        base_sha: str,
        pr: PullRequestDiff,
    ) -> LeftBehind:
        """The doc lines this change leaves behind (no model); a failure leaves the review without them."""
        try:
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                return await left_behind(
                    conn,
                    event.repository_id,
                    head.git_dir,
                    pr.start or base_sha,
                    head.head,
                    pr.files,
                    pr.text,
                )
        except (GitError, PalimpsestError) as exc:
            log.warning("review of %s: the left-behind docs check failed: %s", event.repository_id, exc)
            return LeftBehind()

    async def _reranker(self, tenant_id: UUID) -> Reranker | None:
        return await reranker(self.gateway, tenant_id, reference="review")

    async def _query_embedder(self, tenant_id: UUID) -> QueryEmbedder | None:
        return query_embedder(self.gateway, tenant_id, accounted_as="review")

    async def _findings(
        self,
        event: ReviewRequested,
        context: ReviewContext,
        pr: PullRequestDiff,
        rules: RepoRules | None = None,
        step: Increment | None = None,
    ) -> tuple[Outcome, ModelUsage]:
        s = self.settings
        rules = rules or RepoRules()
        route = await self.gateway.route(event.tenant_id, "review")
        if route is None:
            return Outcome(brief(context, pr.files)), ModelUsage()
        shown, files = (step.text, step.files) if step is not None else (pr.text, pr.files)
        plan = plan_parts(shown, s.review_max_diff_chars, s.review_max_diff_parts)
        framing = Framing(
            whole=cut(pr.text, s.review_max_diff_chars) if step is not None else None,
            since=step.since_sha if step is not None else None,
            commits=len(step.commits) if step is not None else 0,
            instructions=rules.instructions_for([f.path for f in pr.files]),
        )

        async def chat(diff: str, part: tuple[int, int]) -> ChatResult:
            return await self.gateway.chat(
                event.tenant_id,
                "review",
                messages(context, diff, event.title, event.body, part=part, framing=framing),
                max_tokens=s.review_max_tokens,
                route=route,
                reference=str(event.request_id),
            )

        if step is not None:  # removed lines of an increment are not on the PR diff's old side
            files = [replace(f, removed_ranges=[]) for f in files]
        done = await review_in_parts(plan, chat, files, max_findings=s.review_max_findings)
        if not done.reviewed:  # every call failed
            error = done.failures[0].split(": ", 1)[-1]
            summary = brief(context, pr.files, f"The model call failed ({error}); no findings.")
            return Outcome(summary), ModelUsage(reason=f"model_failed: {error}")
        return done.outcome, ModelUsage(
            mode="model",
            model=done.model,
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            cost_usd=done.cost_usd,
            reason=done.reason,
            parts=len(plan.parts),
        )


async def _identified(
    git_dir: Path,
    pr: PullRequestDiff,
    findings: list[Finding],
    texts: Mapping[str, str | None] | None = None,
) -> list[Finding]:
    """Each finding with its fingerprint (anchored on its side's text) and its position on the
    diff; ``texts``: head texts of files outside the diff that findings point at."""
    files = diff_map(pr.text)
    olds = {
        f.path: (files[f.path].old_path if f.path in files else f.path) for f in findings if f.side == "old"
    }
    base_texts: dict[str, str | None] = {}
    if olds and pr.start:
        try:
            base_texts = await files_at(git_dir, pr.start, sorted(set(olds.values())))
        except GitError as exc:
            log.warning("reading removed lines' files at %s failed: %s", pr.start[:12], exc)
    out = []
    for f in findings:
        head_text = pr.at_head[f.path] if f.path in pr.at_head else (texts or {}).get(f.path)
        text = base_texts.get(olds[f.path]) if f.side == "old" else head_text
        known = identify(f, text)
        out.append(replace(known, position=locate(files, known)))
    return out


def _fill_context(record: ReviewRecord, context: ReviewContext) -> None:
    record.snapshot_id = context.snapshot_id
    record.context = context.context_dicts()
    record.dropped = context.dropped
    record.cochange_missing = context.cochange_missing
    record.sources = {
        **context.sources(),
        "ranking": context.ranking,
        "budget": context.budget,
        "snapshot_on_base": context.on_base,
        "snapshot_commit": context.snapshot_commit,
        "timings": context.timings,
        **({"cross_repo": context.cross} if context.cross else {}),
    }
