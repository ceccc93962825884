"""The one exception type every git helper raises, with a short machine-readable reason.

Callers (the recency scanner, the chunker) branch on ``reason`` — "auth" is reported to the
tenant differently from "timeout" — and log ``str(error)``. The message is always scrubbed
of credentials before the exception is built, so it is safe to log or to store.
"""

from __future__ import annotations

from enum import StrEnum

from palimpsest.core.errors import PalimpsestError


class GitFailure(StrEnum):
    """Why a git operation failed; the value is what logs, metrics and stored rows carry."""

    AUTH = "auth"  # credentials missing, wrong or insufficient (401/403, prompt refused)
    NOT_FOUND = "not_found"  # repository does not exist (or is hidden from these credentials)
    REF_NOT_FOUND = "ref_not_found"  # branch, tag or commit does not exist
    EMPTY_WINDOW = "empty_window"  # a --shallow-since window that selects no commit
    NETWORK = "network"  # host unresolvable, connection refused or reset
    REFUSED = "refused"  # the remote answered but refused or broke off the transfer
    TIMEOUT = "timeout"  # our own deadline expired; the process group was killed
    GIT_MISSING = "git_missing"  # no git executable
    DISK_FULL = "disk_full"  # no space left for the temporary clone
    PARSE_ERROR = "parse_error"  # git's output did not have the expected shape
    INVALID_ARGUMENT = "invalid_argument"  # a URL, ref or path we refuse to pass to git
    MISSING_OBJECT = "missing_object"  # cat-file could not find a requested object
    FAILED = "failed"  # anything else git reported


class GitError(PalimpsestError):
    """A git operation failed; ``reason`` says why, the message is free of secrets."""

    def __init__(self, reason: GitFailure, message: str) -> None:
        super().__init__(f"{message} [{reason.value}]")
        self.reason = reason
        self.detail = message
