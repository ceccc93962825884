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
    SOURCE_REFUSED = "source_refused"  # the source policy refuses the URL; git never ran
    REDIRECT = "redirect"  # the remote answered with an HTTP redirect, which git does not follow
    MISSING_OBJECT = "missing_object"  # cat-file could not find a requested object
    FAILED = "failed"  # anything else git reported


def source_reason(reason: GitFailure) -> str:
    """The reason a service records when it could not get a repository's source.

    ``source_<reason>`` (``source_auth``, ``source_redirect``, …); ``source_refused`` means the
    source policy said no before git ran, so a remote that refused or broke off the transfer is
    ``source_remote_refused``.
    """
    if reason is GitFailure.SOURCE_REFUSED:
        return reason.value
    if reason is GitFailure.REFUSED:
        return "source_remote_refused"
    return f"source_{reason.value}"


class GitError(PalimpsestError):
    """A git operation failed; ``reason`` says why, the message is free of secrets."""

    def __init__(self, reason: GitFailure, message: str, *, status: int | None = None) -> None:
        super().__init__(f"{message} [{reason.value}]")
        self.reason = reason
        self.detail = message
        self.status = status  # the HTTP status a provider API answered, when one did
