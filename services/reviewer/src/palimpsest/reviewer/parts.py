"""Huge diffs reviewed in parts: split at file boundaries, one model call per part, one review.

A diff longer than ``max_chars`` is split into parts that each fit the limit, files kept whole
and in diff order; a single file whose diff alone is longer is cut to the limit (and reported as
cut). At most ``max_parts`` parts are sent to the model, one call each, with the same context;
files past the last part are left out (and reported). The parts' findings are merged — the same
finding reported twice is kept once — under the review's findings cap, their usage and cost are
summed, and the summary says how many parts were reviewed and what was cut or left out. A part
whose model call fails is reported; the review fails over to the brief only when every part failed.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from palimpsest.core.errors import LLMError
from palimpsest.core.llm import ChatResult
from palimpsest.index.context.diff import ChangedFile, parse_diff
from palimpsest.index.context.finding import Finding
from palimpsest.reviewer.review import Outcome, read_reply

CUT_NOTE = "\n… (this file's diff was cut here to fit the limit)\n"

# (diff text of the part, (part number, parts)) → the model's reply
ChatPart = Callable[[str, tuple[int, int]], Awaitable[ChatResult]]


@dataclass(slots=True)
class DiffPart:
    text: str
    paths: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DiffPlan:
    parts: list[DiffPart]
    cut: list[str] = field(default_factory=list)  # files shown only up to the limit
    left_out: list[str] = field(default_factory=list)  # files in no part (past the part cap)


@dataclass(slots=True)
class PartsReview:
    outcome: Outcome
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    reviewed: int = 0  # parts the model answered
    failures: list[str] = field(default_factory=list)  # "part i: error"

    @property
    def reason(self) -> str | None:
        notes = []
        if self.failures:
            notes.append(f"model_failed_in_part: {self.failures[0]}")
        if self.outcome.partial_diff:
            notes.append("diff_reviewed_in_part")
        elif self.reviewed > 1:
            notes.append("diff_reviewed_in_parts")
        return "; ".join(notes) or None


def plan_parts(text: str, max_chars: int, max_parts: int) -> DiffPlan:
    """Split ``text`` into at most ``max_parts`` parts of at most ``max_chars`` each (see above)."""
    if len(text) <= max_chars:
        return DiffPlan([DiffPart(text, [f.path for f in parse_diff(text)])])
    sections = [s for s in re.split(r"(?m)^(?=diff --git )", text) if s.startswith("diff --git ")] or [text]
    plan = DiffPlan([])
    current = DiffPart("")
    for whole in sections:
        files = parse_diff(whole)
        path = files[0].path if files else whole.split("\n", 1)[0]
        section = whole
        if len(whole) > max_chars:
            keep = max(0, max_chars - len(CUT_NOTE))
            section = whole[: whole.rfind("\n", 0, keep) + 1 or keep] + CUT_NOTE
            plan.cut.append(path)
        if current.paths and len(current.text) + len(section) > max_chars:
            plan.parts.append(current)
            current = DiffPart("")
        current.text += section
        current.paths.append(path)
    if current.paths:
        plan.parts.append(current)
    for part in plan.parts[max_parts:]:
        plan.left_out += part.paths
    del plan.parts[max_parts:]
    plan.cut = [p for p in plan.cut if p not in plan.left_out]
    return plan


async def review_in_parts(
    plan: DiffPlan, chat: ChatPart, files: Sequence[ChangedFile], *, max_findings: int
) -> PartsReview:
    """One model call per part, merged; ``reviewed == 0`` when every call failed (the caller
    falls back to the brief)."""
    done = PartsReview(Outcome(""))
    answered: list[tuple[int, Outcome]] = []
    n = len(plan.parts)
    for i, part in enumerate(plan.parts, start=1):
        try:
            result = await chat(part.text, (i, n))
        except LLMError as exc:
            done.failures.append(f"part {i}: {exc}")
            continue
        answered.append((i, read_reply(result.text, files, max_findings=max_findings, left_out=0)))
        done.model = result.model
        done.prompt_tokens += result.usage.prompt_tokens
        done.completion_tokens += result.usage.completion_tokens
        if result.usage.cost_usd is not None:
            done.cost_usd = (done.cost_usd or 0.0) + result.usage.cost_usd
    if not answered:
        return done
    done.reviewed = len(answered)
    done.outcome = merge(plan, answered, done.failures, max_findings=max_findings)
    return done


def merge(
    plan: DiffPlan, answered: Sequence[tuple[int, Outcome]], failures: Sequence[str], *, max_findings: int
) -> Outcome:
    """The parts' outcomes as one: findings deduplicated and capped, a summary that says how."""
    findings: list[Finding] = []
    seen: set[tuple[str, int, int, str]] = set()
    dropped = sum(o.findings_dropped for _, o in answered)
    for _, outcome in answered:
        for f in outcome.findings:
            key = (f.path, f.start_line, f.end_line, " ".join(f.message.lower().split()))
            if key in seen:
                continue
            seen.add(key)
            if len(findings) >= max_findings:
                dropped += 1
                continue
            findings.append(f)
    partial = bool(plan.cut or plan.left_out)
    return Outcome(_summary(plan, answered, failures), findings, dropped, partial_diff=partial)


def _summary(plan: DiffPlan, answered: Sequence[tuple[int, Outcome]], failures: Sequence[str]) -> str:
    n = len(plan.parts)
    if n == 1 and not plan.cut and not plan.left_out and not failures:
        return answered[0][1].summary
    lines: list[str] = []
    if n > 1:
        lines.append(
            f"The diff was too large to review whole: it was reviewed in {n} parts"
            f" ({len(answered)} answered by the model), split at file boundaries."
        )
        for i, outcome in answered:
            shown = ", ".join(plan.parts[i - 1].paths[:5])
            more = len(plan.parts[i - 1].paths) - 5
            lines.append(f"Part {i} ({shown}{f' and {more} more' if more > 0 else ''}): {outcome.summary}")
    else:
        lines.append(answered[0][1].summary)
    lines += [f"Not reviewed: {f} (the model call failed)." for f in failures]
    if plan.cut:
        lines.append(
            f"Cut to fit the limit (only the first part of their diff was reviewed): {', '.join(plan.cut)}."
        )
    if plan.left_out:
        names = ", ".join(plan.left_out[:20]) + (" …" if len(plan.left_out) > 20 else "")
        lines.append(
            f"Left out: {len(plan.left_out)} changed file(s) were not shown to the model"
            f" (more than {n} part(s)): {names}."
        )
    return "\n\n".join(line.strip() for line in lines if line.strip())
