"""Repository rules for reviews, from ``.palimpsest/config.yml`` of the pull request's **base**.

::

    review:
      ignore: ["vendor/**", "*.lock", "docs/generated/"]   # gitignore-style globs: not reviewed
      instructions: "We return errors, never raise."       # text for the model, or a list:
      # instructions:
      #   - "Applies everywhere."
      #   - {path: "migrations/**", text: "Migrations must be reversible."}
      max_findings: 10                                     # at most this many (and the deployment's cap)
      auto: ready_only                                     # on | off | ready_only (drafts wait)
      min_severity: minor                                  # info | minor | major | critical
      cochange_max: 5                                      # files "usually changes with these" lists (0: none)
      cochange_include: [ci]                               # kinds warned about all the same: lockfile,
                                                           # generated, vendored, ci, changelog, other

The head's config is never read, so a pull request cannot change the rules it is reviewed by.
A key with a wrong value falls back to its default and the review says why (``config_invalid:
…`` in its reason); a file that is not YAML leaves every key at its default. ``auto`` governs the
automatic triggers (opened, pushed, reopened, ready for review); a comment asking the bot for a
review is always answered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pathspec
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs

from palimpsest.core.git_errors import GitError
from palimpsest.index.cochange import DEFAULT_LIMIT, EXCLUDABLE_KINDS
from palimpsest.index.context.crossrepo import CONFIG_PATHS, MAX_CONFIG_BYTES
from palimpsest.index.context.source import files_at

log = logging.getLogger(__name__)

SEVERITIES = ("info", "minor", "major", "critical")  # a finding's severity, least first
Auto = Literal["on", "off", "ready_only"]
AUTOMATIC_TRIGGERS = frozenset({"opened", "reopened", "synchronize", "ready_for_review", "updated"})
MAX_INSTRUCTIONS_CHARS = 8000
MAX_IGNORE = 200
MAX_COCHANGE = 50


@dataclass(slots=True)
class Instruction:
    text: str
    path: str | None = None  # a gitignore-style glob; None: every file

    def applies(self, paths: list[str]) -> bool:
        if self.path is None:
            return True
        spec = pathspec.GitIgnoreSpec.from_lines([self.path])
        return any(spec.match_file(p) for p in paths)


@dataclass(slots=True)
class RepoRules:
    path: str | None = None  # the file read (None: absent)
    ignore: list[str] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    max_findings: int | None = None
    auto: Auto = "on"
    min_severity: str | None = None
    cochange_max: int = DEFAULT_LIMIT
    cochange_include: frozenset[str] = frozenset()
    problems: list[str] = field(default_factory=list)  # why keys fell back to their defaults

    def ignored(self, path: str) -> bool:
        if not self.ignore:
            return False
        return pathspec.GitIgnoreSpec.from_lines(self.ignore).match_file(path)

    def skip_reason(self, trigger: str, draft: bool) -> str | None:
        """Why an automatic review is not made (None: make it)."""
        if trigger not in AUTOMATIC_TRIGGERS:
            return None
        if self.auto == "off":
            return f"review.auto is off in {self.path}: reviews only on request (@bot review)"
        if self.auto == "ready_only" and draft:
            return f"review.auto is ready_only in {self.path}: drafts are reviewed when marked ready"
        return None

    def instructions_for(self, paths: list[str]) -> str:
        """The instructions that apply to the changed ``paths``, as prompt text ('' when none)."""
        texts = [
            (f"For {i.path}: " if i.path else "") + i.text for i in self.instructions if i.applies(paths)
        ]
        return "\n".join(f"- {t}" for t in texts)[:MAX_INSTRUCTIONS_CHARS]

    def note(self) -> str | None:
        return f"config_invalid: {'; '.join(self.problems)}" if self.problems else None

    def summary(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ignore": self.ignore,
            "instructions": len(self.instructions),
            "max_findings": self.max_findings,
            "auto": self.auto,
            "min_severity": self.min_severity,
            "cochange_max": self.cochange_max,
            "cochange_include": sorted(self.cochange_include),
            "problems": self.problems,
        }


def parse_rules(text: str | None, path: str = CONFIG_PATHS[0]) -> RepoRules:
    """The rules a config file declares; each bad key → its default and a problem saying why."""
    rules = RepoRules(path if text is not None else None)
    if text is None:
        return rules
    if len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
        rules.problems.append(f"{path}: the file is larger than {MAX_CONFIG_BYTES} bytes; defaults used")
        return rules
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        rules.problems.append(f"{path}: not valid YAML{where}; defaults used")
        return rules
    review = data.get("review") if isinstance(data, dict) else None
    if data is not None and not isinstance(data, dict):
        rules.problems.append(f"{path}: the top level must be a mapping; defaults used")
    if review is None:
        return rules
    if not isinstance(review, dict):
        rules.problems.append(f"{path}: 'review' must be a mapping; defaults used")
        return rules
    _ignore(rules, review.get("ignore"), path)
    _instructions(rules, review.get("instructions"), path)
    _max_findings(rules, review.get("max_findings"), path)
    _auto(rules, review.get("auto"), path)
    _min_severity(rules, review.get("min_severity"), path)
    _cochange(rules, review.get("cochange_max"), review.get("cochange_include"), path)
    return rules


def _ignore(rules: RepoRules, value: Any, path: str) -> None:
    if value is None:
        return
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        rules.problems.append(f"{path}: 'review.ignore' must be a list of globs (strings); nothing ignored")
        return
    if len(value) > MAX_IGNORE:
        rules.problems.append(f"{path}: 'review.ignore' has more than {MAX_IGNORE} globs; the first kept")
    try:
        pathspec.GitIgnoreSpec.from_lines(value[:MAX_IGNORE])
    except (ValueError, TypeError) as exc:
        rules.problems.append(
            f"{path}: 'review.ignore' has a glob that does not parse ({exc}); nothing ignored"
        )
        return
    rules.ignore = [v.strip() for v in value[:MAX_IGNORE]]


def _instructions(rules: RepoRules, value: Any, path: str) -> None:
    if value is None:
        return
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list):
        rules.problems.append(f"{path}: 'review.instructions' must be text or a list; none used")
        return
    out: list[Instruction] = []
    for entry in entries:
        if isinstance(entry, str) and entry.strip():
            out.append(Instruction(entry.strip()))
        elif (
            isinstance(entry, dict)
            and isinstance(entry.get("text"), str)
            and entry["text"].strip()
            and isinstance(entry.get("path", ""), str)
        ):
            glob = str(entry.get("path") or "").strip() or None
            out.append(Instruction(entry["text"].strip(), glob))
        else:
            rules.problems.append(
                f"{path}: each 'review.instructions' entry must be text or {{path, text}}; none used"
            )
            return
    rules.instructions = out


def _max_findings(rules: RepoRules, value: Any, path: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 500:
        rules.problems.append(
            f"{path}: 'review.max_findings' must be a whole number from 0 to 500; default used"
        )
        return
    rules.max_findings = value


def _auto(rules: RepoRules, value: Any, path: str) -> None:
    if value is None:
        return
    # YAML reads a bare on/off as a boolean
    value = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
    if value not in ("on", "off", "ready_only"):
        rules.problems.append(f"{path}: 'review.auto' must be on, off or ready_only; 'on' used")
        return
    rules.auto = value


def _min_severity(rules: RepoRules, value: Any, path: str) -> None:
    if value is None:
        return
    if not isinstance(value, str) or value.lower() not in SEVERITIES:
        rules.problems.append(
            f"{path}: 'review.min_severity' must be one of {', '.join(SEVERITIES)}; none used"
        )
        return
    rules.min_severity = value.lower()


def _cochange(rules: RepoRules, most: Any, include: Any, path: str) -> None:
    if most is not None:
        if isinstance(most, bool) or not isinstance(most, int) or not 0 <= most <= MAX_COCHANGE:
            rules.problems.append(
                f"{path}: 'review.cochange_max' must be a whole number from 0 to {MAX_COCHANGE}; default used"
            )
        else:
            rules.cochange_max = most
    if include is None:
        return
    kinds = [include] if isinstance(include, str) else include
    if not isinstance(kinds, list) or not all(isinstance(k, str) and k in EXCLUDABLE_KINDS for k in kinds):
        rules.problems.append(
            f"{path}: 'review.cochange_include' must list kinds among {', '.join(EXCLUDABLE_KINDS)}; none used"
        )
        return
    rules.cochange_include = frozenset(kinds)


def severe_enough(severity: str, minimum: str | None) -> bool:
    if minimum is None:
        return True
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return order.get(severity, 0) >= order[minimum]


async def read_rules(git_dir: Path, base_sha: str) -> RepoRules:
    """The rules of the pull request's base commit (the head's are never read)."""
    try:
        found = await files_at(git_dir, base_sha, list(CONFIG_PATHS))
    except GitError as exc:
        log.warning("reading %s at %s failed: %s", CONFIG_PATHS[0], base_sha[:12], exc)
        rules = RepoRules(CONFIG_PATHS[0])
        rules.problems.append(
            f"{CONFIG_PATHS[0]}: the file could not be read from the base commit; defaults used"
        )
        return rules
    for path in CONFIG_PATHS:
        if found.get(path) is not None:
            return parse_rules(found[path], path)
    return RepoRules()
