"""Running git safely: header auth through the environment, deadlines, scrubbed failures.

Both the recency scanner (history) and the chunker (trees and blobs) shell out to git. This
module is the one place that knows how: credentials travel as an ``http.extraHeader`` set
through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` in the child's
environment — never in a URL, an argument list, a directory name, a log line or an exception
message. Redirects are never followed (``http.followRedirects=false``) and the transports git may
use are always restricted (``GIT_ALLOW_PROTOCOL``; never ``ext::`` or ``fd::``). A remote URL is
checked against the deployment's source policy by :func:`check_remote` *before* git runs, and
the addresses that passed are pinned (``http.curloptResolve``) so git connects to exactly those.
Every git process runs in its own process group with a deadline, and the whole group
is killed when the deadline passes or the caller is cancelled, so a hung remote (or a helper
such as ``git-remote-https`` that git started) cannot outlive the call. Failures become one
:class:`~palimpsest.core.git_errors.GitError` with a short ``reason`` code.

Paths come out of git as bytes; :func:`decode_path` is the single bytes→str rule (UTF-8 with
``surrogateescape``) so that every service derives the same string for the same path and
recency joins file rows by path without surprises.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import logging
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.sources import CloneTarget, SourcePolicy, SourceRefused, check_clone_url

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "NO_LAZY_FETCH",
    "GitAuth",
    "TreeEntry",
    "backfill",
    "check_remote",
    "classify_git_failure",
    "decode_path",
    "git_env",
    "is_object_id",
    "is_partial_clone",
    "ls_tree",
    "object_sizes",
    "promisor_remote",
    "read_blobs",
    "resolve_ref",
    "run_git",
    "scrub",
    "shallow_commits",
    "stream_git",
    "temporary_clone_dir",
    "validate_remote_url",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
_CHUNK = 64 * 1024
_STDERR_TAIL = 16 * 1024
_DRAIN_GRACE_S = 5.0
_REDACTED = "***"

# Inherited from the service's environment; everything else (notably every GIT_* variable,
# which could redirect the repository, enable tracing or inject config) is dropped.
_INHERITED_ENV = (
    "PATH",
    "HOME",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
)

# Makes git fail instead of fetching an absent object from a partial clone's promisor remote
# (honoured by git >= 2.39.4 / 2.45.1 and the security releases between).
NO_LAZY_FETCH: Mapping[str, str] = {"GIT_NO_LAZY_FETCH": "1"}

# Transports git may use when the caller names none (operations without a checked remote).
DEFAULT_PROTOCOLS = ("https",)

_HEX_OID = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")
_AUTH_HEADER = re.compile(r"(?i)(authorization:\s*\S+\s+)\S+")


# ---------------------------------------------------------------------------------- auth


@dataclass(frozen=True, repr=False)
class GitAuth:
    """An HTTP ``Authorization`` header for git; never shows its secret when printed.

    Use the constructors: :meth:`bearer`, :meth:`basic`, :meth:`github_app`, :meth:`gitlab`,
    :meth:`bitbucket`.
    """

    scheme: str
    header: str = field(compare=True)
    secrets: tuple[str, ...] = field(compare=False)

    def __repr__(self) -> str:
        return f"GitAuth(scheme={self.scheme!r}, header=<redacted>)"

    __str__ = __repr__

    @classmethod
    def bearer(cls, token: str) -> GitAuth:
        """``Authorization: Bearer <token>`` (GitHub PATs/App tokens, Bitbucket access tokens)."""
        _check_secret(token)
        return cls("Bearer", f"Authorization: Bearer {token}", (token,))

    @classmethod
    def basic(cls, user: str, password: str) -> GitAuth:
        """``Authorization: Basic base64(user:password)``."""
        _check_secret(password)
        if ":" in user or not user or _has_line_break(user):
            raise GitError(GitFailure.INVALID_ARGUMENT, "basic-auth user name is invalid")
        pair = f"{user}:{password}"
        encoded = base64.b64encode(pair.encode()).decode("ascii")
        return cls("Basic", f"Authorization: Basic {encoded}", (encoded, pair, password))

    @classmethod
    def github_app(cls, installation_token: str) -> GitAuth:
        """GitHub App installation token: GitHub wants Basic ``x-access-token:<token>``."""
        return cls.basic("x-access-token", installation_token)

    @classmethod
    def gitlab(cls, token: str) -> GitAuth:
        """GitLab OAuth/project/personal token: Basic ``oauth2:<token>``."""
        return cls.basic("oauth2", token)

    @classmethod
    def bitbucket(cls, token: str) -> GitAuth:
        """Bitbucket Cloud repository/workspace access token: Basic ``x-token-auth:<token>``."""
        return cls.basic("x-token-auth", token)


def _has_line_break(value: str) -> bool:
    return any(ch in value for ch in "\r\n\0")


def _check_secret(secret: str) -> None:
    if not secret or _has_line_break(secret) or secret != secret.strip():
        raise GitError(GitFailure.INVALID_ARGUMENT, "credential is empty or malformed")


def scrub(text: str, auth: GitAuth | None) -> str:
    """``text`` with the credential, any URL user-info and any Authorization value masked."""
    if auth is not None:
        for secret in sorted(auth.secrets, key=len, reverse=True):
            text = text.replace(secret, _REDACTED)
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{_REDACTED}@", text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{_REDACTED}", text)


def git_env(
    auth: GitAuth | None,
    *,
    allowed_protocols: Collection[str] | None = None,
    pins: Sequence[str] = (),
) -> dict[str, str]:
    """The complete environment for a git child process.

    No system or global config, no terminal prompt, no askpass program, no credential helper,
    no HTTP redirects; ``auth`` (when given) becomes the only ``http.extraHeader``.
    ``allowed_protocols`` (e.g. ``("https",)``; :data:`DEFAULT_PROTOCOLS` when None) restricts
    the transports git may use via ``GIT_ALLOW_PROTOCOL``. ``pins`` are ``host:port:address``
    entries for ``http.curloptResolve`` (see :func:`check_remote`).
    """
    env = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    env.update(
        {
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "GCM_INTERACTIVE": "never",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_PROTOCOL_FROM_USER": "0",
        }
    )
    protocols = DEFAULT_PROTOCOLS if allowed_protocols is None else tuple(allowed_protocols)
    if any(p in ("ext", "fd") or not p.isalnum() for p in protocols):
        raise GitError(GitFailure.INVALID_ARGUMENT, "the ext and fd transports are never allowed")
    env["GIT_ALLOW_PROTOCOL"] = ":".join(protocols)
    config: list[tuple[str, str]] = [
        ("credential.helper", ""),  # an empty value clears any configured helper list
        ("core.askPass", ""),
        ("http.extraHeader", ""),  # likewise clears headers a repository config may set
        ("http.followRedirects", "false"),  # a redirect could lead past the source policy
        ("protocol.allow", "never"),  # GIT_ALLOW_PROTOCOL wins; this is the belt to its braces
        ("http.curloptResolve", ""),  # clears pins a repository config may set
    ]
    config.extend(("http.curloptResolve", pin) for pin in pins)
    if auth is not None:
        config.append(("http.extraHeader", auth.header))
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def validate_remote_url(url: str) -> None:
    """Refuse URLs that would put a secret in argv or be read as an option."""
    if not url or url.startswith("-") or _has_line_break(url):
        raise GitError(GitFailure.INVALID_ARGUMENT, "remote URL is empty or malformed")
    match = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://(?P<userinfo>[^/@]*)@", url)
    if match and ":" in match.group("userinfo"):
        raise GitError(
            GitFailure.INVALID_ARGUMENT,
            "remote URL carries a password; pass credentials as GitAuth instead",
        )


async def check_remote(url: str, policy: SourcePolicy) -> CloneTarget:
    """The clone-time source check of ``url``: GitError ``source_refused`` before git ever runs.

    Pass the result's ``protocols`` and ``pins`` to :func:`run_git` (``allowed_protocols=``,
    ``pins=``) for every command that talks to the remote.
    """
    try:
        return await check_clone_url(url, policy)
    except SourceRefused as exc:
        raise GitError(GitFailure.SOURCE_REFUSED, str(exc)) from exc


# ---------------------------------------------------------------------------------- paths


def is_object_id(text: str) -> bool:
    """A full object name: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits."""
    return _HEX_OID.fullmatch(text.encode("ascii", "replace")) is not None


def decode_path(raw: bytes) -> str:
    """git path bytes → str; lossless for non-UTF-8 names (``surrogateescape``)."""
    return raw.decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------- failures

_FAILURE_PATTERNS: tuple[tuple[GitFailure, tuple[str, ...]], ...] = (
    (GitFailure.DISK_FULL, ("no space left on device", "disk quota exceeded")),
    (
        GitFailure.EMPTY_WINDOW,
        ("no commits selected for shallow requests", "error processing shallow info"),
    ),
    (
        GitFailure.AUTH,
        (
            "authentication failed",
            "could not read username",
            "could not read password",
            "terminal prompts disabled",
            "returned error: 401",
            "returned error: 403",
            "http basic: access denied",
            "remote error: access denied",  # git daemon: "access denied or repository not exported"
            "invalid username or password",
            "permission denied (publickey",
        ),
    ),
    (
        GitFailure.REF_NOT_FOUND,
        (
            "remote branch",
            "couldn't find remote ref",
            "unknown revision",
            "bad revision",
            "not a valid object name",
            "needed a single revision",
            "invalid object name",
            "does not have any commits yet",
            "not our ref",  # "remote error: upload-pack: not our ref <sha>": gone from the server
        ),
    ),
    (
        GitFailure.NOT_FOUND,
        (
            "repository not found",
            "returned error: 404",
            "does not appear to be a git repository",
            "not a git repository",
            "can only be used inside a git repository",
            "project not found",
            "not found",  # "repository '<url>' not found" (ref failures are matched above)
        ),
    ),
    (
        GitFailure.NETWORK,
        (
            "could not resolve host",
            "could not resolve proxy",
            "failed to connect",
            "couldn't connect",
            "connection refused",
            "connection reset",
            "connection timed out",
            "network is unreachable",
            "ssl certificate problem",
            "transport '",  # "transport 'ext' not allowed"
        ),
    ),
    (GitFailure.REDIRECT, ("returned error: 30",)),
    (
        GitFailure.REFUSED,
        (
            "the remote end hung up",
            "early eof",
            "rpc failed",
            "returned error: 5",
            "protocol error",
            "unable to access",
            "remote error:",  # any other refusal the server put into words (was "failed", retried)
        ),
    ),
)


def classify_git_failure(stderr: str) -> GitFailure:
    """Map git's (``LC_ALL=C``) error text to a :class:`GitFailure` reason."""
    lowered = stderr.lower()
    for failure, needles in _FAILURE_PATTERNS:
        if any(needle in lowered for needle in needles):
            return failure
    return GitFailure.FAILED


def _subcommand(args: Sequence[str]) -> str:
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg in ("-c", "-C"):
            skip_next = True
        elif not arg.startswith("-"):
            return arg
    return "git"


def _failure_message(args: Sequence[str], stderr: bytes, auth: GitAuth | None) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    tail = "; ".join(lines[-3:]) or "no error output"
    text = scrub(f"git {_subcommand(args)} failed: {tail}", auth)
    return text if len(text) <= 400 else text[:397] + "..."


def _git_failed(args: Sequence[str], returncode: int, stderr: bytes, auth: GitAuth | None) -> GitError:
    text = stderr.decode("utf-8", "replace")
    reason = classify_git_failure(text)
    message = _failure_message(args, stderr, auth)
    logger.debug("git exited %s (%s): %s", returncode, reason.value, message)
    return GitError(reason, message)


# ---------------------------------------------------------------------------------- processes


class _GitProcess:
    """One running git child: its own process group, a stderr tail reader and an optional
    stdin feeder. ``close()`` kills the group if it still runs and releases every pipe."""

    def __init__(self, proc: asyncio.subprocess.Process, stdin_data: bytes | None) -> None:
        self.proc = proc
        self.stderr_task = asyncio.create_task(self._read_stderr_tail())
        self.stdin_task = asyncio.create_task(self._feed_stdin(stdin_data))

    async def _read_stderr_tail(self) -> bytes:
        assert self.proc.stderr is not None
        tail = b""
        while chunk := await self.proc.stderr.read(_CHUNK):
            tail = (tail + chunk)[-_STDERR_TAIL:]
        return tail

    async def _feed_stdin(self, data: bytes | None) -> None:
        stdin = self.proc.stdin
        if stdin is None:
            return
        try:
            if data:
                stdin.write(data)
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # git exited early; its exit status says why
        finally:
            stdin.close()

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    async def close(self) -> None:
        self.kill()
        with contextlib.suppress(TimeoutError, ProcessLookupError):
            async with asyncio.timeout(_DRAIN_GRACE_S):
                stdout = self.proc.stdout
                if stdout is not None:
                    while await stdout.read(_CHUNK):
                        pass
                await self.proc.wait()
        for task in (self.stdin_task, self.stderr_task):
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task


async def _spawn(
    args: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    git_bin: str,
    with_stdin: bool,
) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            git_bin,
            *args,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if with_stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # own process group: killpg reaches git's helpers too
        )
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        if cwd is not None and not await asyncio.to_thread(cwd.is_dir):
            raise GitError(GitFailure.INVALID_ARGUMENT, "git working directory does not exist") from exc
        raise GitError(GitFailure.GIT_MISSING, "git executable not found or not runnable") from exc
    except OSError as exc:
        raise GitError(GitFailure.FAILED, f"could not start git: {exc.strerror}") from exc


async def stream_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    auth: GitAuth | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
    allowed_protocols: Collection[str] | None = None,
    pins: Sequence[str] = (),
    git_bin: str = "git",
) -> AsyncGenerator[bytes, None]:
    """Run ``git *args`` and yield its stdout in chunks as they arrive.

    ``timeout_s`` bounds the whole run (time spent by the consumer between chunks counts).
    On the deadline, on cancellation or when the consumer stops early, the process group is
    killed. A non-zero exit raises :class:`GitError` *after* the last chunk. Consume it with
    ``contextlib.aclosing`` so an early ``break`` releases the process at once.
    """
    env = git_env(auth, allowed_protocols=allowed_protocols, pins=pins)
    if extra_env:
        env.update(extra_env)
    logger.debug("running git %s", scrub(" ".join(args), auth))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    proc = await _spawn(args, cwd=cwd, env=env, git_bin=git_bin, with_stdin=stdin is not None)
    running = _GitProcess(proc, stdin)
    assert proc.stdout is not None
    try:
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    chunk = await proc.stdout.read(_CHUNK)
            except TimeoutError:
                raise _timed_out(args, timeout_s) from None
            if not chunk:
                break
            yield chunk
        try:
            async with asyncio.timeout_at(deadline):
                returncode = await proc.wait()
                stderr = await running.stderr_task
        except TimeoutError:
            raise _timed_out(args, timeout_s) from None
        if returncode != 0:
            raise _git_failed(args, returncode, stderr, auth)
    finally:
        await running.close()


def _timed_out(args: Sequence[str], timeout_s: float) -> GitError:
    message = f"git {_subcommand(args)} did not finish within {timeout_s:g}s; killed"
    logger.debug(message)
    return GitError(GitFailure.TIMEOUT, message)


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    auth: GitAuth | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
    allowed_protocols: Collection[str] | None = None,
    pins: Sequence[str] = (),
    git_bin: str = "git",
) -> bytes:
    """Run ``git *args`` and return all of stdout (for small outputs; see :func:`stream_git`)."""
    parts: list[bytes] = []
    stream = stream_git(
        args,
        cwd=cwd,
        auth=auth,
        timeout_s=timeout_s,
        stdin=stdin,
        extra_env=extra_env,
        allowed_protocols=allowed_protocols,
        pins=pins,
        git_bin=git_bin,
    )
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            parts.append(chunk)
    return b"".join(parts)


async def clone_bare(
    target: CloneTarget,
    dest: Path,
    branch: str,
    *,
    auth: GitAuth | None,
    timeout_s: float,
    options: Sequence[str] = (),
) -> None:
    """``git clone --bare --single-branch --no-tags`` of ``branch`` from a checked remote into
    ``dest``, reaching exactly the checked transport and addresses; ``options`` narrow it (for
    example ``--depth 1``)."""
    await run_git(
        [
            "clone",
            "--bare",
            "--single-branch",
            "--no-tags",
            *options,
            "--branch",
            branch,
            "--",
            target.url,
            str(dest),
        ],
        auth=auth,
        timeout_s=timeout_s,
        allowed_protocols=target.protocols,
        pins=target.pins,
    )


# ---------------------------------------------------------------------------------- temp dirs


@contextlib.asynccontextmanager
async def temporary_clone_dir(parent: Path | None = None) -> AsyncIterator[Path]:
    """A fresh, randomly named directory that is removed however the block exits."""
    try:
        path = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="palimpsest-git-", dir=parent))
    except OSError as exc:
        reason = GitFailure.DISK_FULL if exc.errno in (errno.ENOSPC, errno.EDQUOT) else GitFailure.FAILED
        raise GitError(reason, f"cannot create a temporary clone directory: {exc.strerror}") from exc
    try:
        yield path
    finally:
        # The thread finishes the removal even if this task is cancelled again meanwhile.
        await asyncio.shield(asyncio.to_thread(_remove_tree, path))


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        logger.warning("could not remove temporary clone directory %s", path)


# ---------------------------------------------------------------------------------- reading


class TreeEntry(NamedTuple):
    """One ``git ls-tree -r`` record; ``size`` only when asked for (blobs only)."""

    path: str
    mode: str
    type: str
    sha: str
    size: int | None = None


def _check_rev(rev: str) -> None:
    if not rev or rev.startswith("-") or _has_line_break(rev) or " " in rev:
        raise GitError(GitFailure.INVALID_ARGUMENT, "revision name is empty or malformed")


async def ls_tree(
    repo_dir: Path,
    commit: str,
    *,
    with_sizes: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[TreeEntry]:
    """Every entry of ``commit``'s tree, recursively (``ls-tree -r -z --full-tree``).

    ``with_sizes`` adds blob sizes (``--long``). It never fetches: in a partial clone missing a
    blob of the tree it fails (``GitError``), as :func:`object_sizes` does.
    """
    _check_rev(commit)
    args = ["ls-tree", "-r", "-z", "--full-tree"]
    if with_sizes:
        args.append("--long")
    out = await run_git(
        [*args, "--end-of-options", commit],
        cwd=repo_dir,
        timeout_s=timeout_s,
        extra_env=NO_LAZY_FETCH if with_sizes else None,
    )
    return [_tree_entry(record) for record in out.split(b"\0") if record]


def _tree_entry(record: bytes) -> TreeEntry:
    meta, sep, raw_path = record.partition(b"\t")
    fields = meta.split()
    if not sep or len(fields) not in (3, 4):
        raise GitError(GitFailure.PARSE_ERROR, "unexpected ls-tree record")
    size = int(fields[3]) if len(fields) == 4 and fields[3] != b"-" else None
    mode, kind, sha = (f.decode("ascii") for f in fields[:3])
    return TreeEntry(decode_path(raw_path), mode, kind, sha, size)


async def object_sizes(
    repo_dir: Path, shas: Iterable[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, int]:
    """Sizes of objects (``cat-file --batch-check``) without reading them; absent ones are left out.

    Much cheaper than ``ls-tree --long`` when only a few blobs of a large tree are new.
    """
    wanted = list(dict.fromkeys(shas))
    for sha in wanted:
        if not _HEX_OID.fullmatch(sha.encode()):
            raise GitError(GitFailure.INVALID_ARGUMENT, "object id is not a hex sha")
    if not wanted:
        return {}
    out = await run_git(
        ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
        cwd=repo_dir,
        timeout_s=timeout_s,
        stdin="".join(f"{sha}\n" for sha in wanted).encode("ascii"),
        extra_env=NO_LAZY_FETCH,
    )
    sizes: dict[str, int] = {}
    for line in out.decode("ascii", "replace").splitlines():
        name, _, size = line.partition(" ")
        if size.isdigit():
            sizes[name] = int(size)
    return sizes


async def read_blobs(
    repo_dir: Path,
    shas: Iterable[str],
    *,
    missing_ok: bool = False,
    auth: GitAuth | None = None,
    lazy_fetch: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> AsyncGenerator[tuple[str, bytes], None]:
    """Yield ``(sha, content)`` for each object, in order, from one ``cat-file --batch``.

    A missing object raises ``GitError(MISSING_OBJECT)`` unless ``missing_ok`` (then it is
    skipped). In a partial clone git fetches absent objects from the promisor remote (with
    ``auth``); ``lazy_fetch=False`` forbids that, so absent objects count as missing.
    """
    wanted = list(dict.fromkeys(shas))
    for sha in wanted:
        if not _HEX_OID.fullmatch(sha.encode()):
            raise GitError(GitFailure.INVALID_ARGUMENT, "object id is not a hex sha")
    if not wanted:
        return
    request = "".join(f"{sha}\n" for sha in wanted).encode("ascii")
    stream = stream_git(
        ["cat-file", "--batch"],
        cwd=repo_dir,
        auth=auth,
        timeout_s=timeout_s,
        stdin=request,
        extra_env=None if lazy_fetch else NO_LAZY_FETCH,
    )
    parser = _BatchParser()
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            for sha, content in parser.feed(chunk):
                if content is not None:
                    yield sha, content
                elif not missing_ok:
                    raise GitError(GitFailure.MISSING_OBJECT, f"object {sha} is missing")
    parser.finish()


class _BatchParser:
    """Incremental parser of ``cat-file --batch`` output: header line, content, newline."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[tuple[str, bytes | None]]:
        self._buf += chunk
        out: list[tuple[str, bytes | None]] = []
        while True:
            newline = self._buf.find(b"\n")
            if newline < 0:
                return out
            header = bytes(self._buf[:newline]).split(b" ")
            sha = header[0].decode("ascii", "replace")
            if len(header) == 2 and header[1] in (b"missing", b"ambiguous"):
                del self._buf[: newline + 1]
                out.append((sha, None))
                continue
            if len(header) != 3 or not header[2].isdigit():
                raise GitError(GitFailure.PARSE_ERROR, "unexpected cat-file header")
            size = int(header[2])
            end = newline + 1 + size
            if len(self._buf) < end + 1:
                return out
            out.append((sha, bytes(self._buf[newline + 1 : end])))
            del self._buf[: end + 1]

    def finish(self) -> None:
        if self._buf:
            raise GitError(GitFailure.PARSE_ERROR, "cat-file output ended mid-object")


async def resolve_ref(
    repo_or_url: Path | str,
    ref: str,
    *,
    auth: GitAuth | None = None,
    timeout_s: float = 60.0,
    allowed_protocols: Collection[str] | None = None,
) -> str:
    """The commit sha ``ref`` names.

    A :class:`~pathlib.Path` is a local repository (``rev-parse``); a ``str`` is a remote URL
    (``ls-remote``, preferring ``refs/heads/<ref>``, then a peeled tag, then an exact name).
    """
    _check_rev(ref)
    if isinstance(repo_or_url, Path):
        out = await run_git(
            ["rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"],
            cwd=repo_or_url,
            timeout_s=timeout_s,
        )
        sha = out.decode("ascii", "replace").strip()
        if not sha:
            raise GitError(GitFailure.REF_NOT_FOUND, f"{ref!r} does not name a commit")
        return sha
    validate_remote_url(repo_or_url)
    out = await run_git(
        ["ls-remote", "--", repo_or_url],
        auth=auth,
        timeout_s=timeout_s,
        allowed_protocols=allowed_protocols,
    )
    return _pick_remote_ref(out, ref)


def _pick_remote_ref(out: bytes, ref: str) -> str:
    refs: dict[str, str] = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    if _HEX_OID.fullmatch(ref.encode()):
        return ref
    for name in (
        f"refs/heads/{ref}",
        f"refs/tags/{ref}^{{}}",
        f"refs/tags/{ref}",
        f"{ref}^{{}}",
        ref,
    ):
        if name in refs:
            return refs[name]
    raise GitError(GitFailure.REF_NOT_FOUND, f"the remote has no ref {ref!r}")


async def is_partial_clone(repo_dir: Path, *, timeout_s: float = 60.0) -> bool:
    """Whether objects may be absent locally and fetched on demand (e.g. ``--filter``)."""
    return await promisor_remote(repo_dir, timeout_s=timeout_s) is not None


async def promisor_remote(repo_dir: Path, *, timeout_s: float = 60.0) -> str | None:
    """The name of the remote a partial clone fetches absent objects from; None if it is complete."""
    out = await run_git(["config", "--list", "--local"], cwd=repo_dir, timeout_s=timeout_s)
    promisor: str | None = None  # the first remote marked promisor, unless extensions.partialclone names one
    for line in out.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition("=")
        lowered = key.lower()
        if lowered == "extensions.partialclone" and value:
            return value
        if (
            promisor is None
            and lowered.startswith("remote.")
            and lowered.endswith(".promisor")
            and value.lower() == "true"
        ):
            promisor = key[len("remote.") : -len(".promisor")]
    return promisor


_BACKFILL_ROUNDS = 4  # a tree-less clone needs two (the trees, then their blobs)


async def backfill(
    repo_dir: Path,
    commit: str,
    policy: SourcePolicy,
    *,
    auth: GitAuth | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int:
    """Fetch every object of ``commit``'s tree that a partial clone lacks, in one batch per round.

    Reading such a clone blob by blob makes git fetch each absent one on its own (one round trip
    apiece), and readers that forbid lazy fetching fail outright. This asks the promisor remote for
    all of them at once, as git's own lazy fetch does for one object, after checking the remote's
    effective URL against ``policy`` like any other source. Returns how many objects were fetched;
    0 without a round trip for a complete repository.
    """
    _check_rev(commit)
    try:
        remote = await promisor_remote(repo_dir, timeout_s=timeout_s)
    except GitError as exc:
        if exc.reason is not GitFailure.FAILED:
            raise
        return 0  # no readable config (some mirrors ship none): git knows no promisor either
    if remote is None:
        return 0
    fetched = 0
    target: CloneTarget | None = None
    for _ in range(_BACKFILL_ROUNDS):
        missing = await _missing_objects(repo_dir, commit, timeout_s=timeout_s)
        if not missing:
            break
        if target is None:
            target = await check_remote(await _remote_url(repo_dir, remote, timeout_s), policy)
        await run_git(
            [
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "--",
                remote,
            ],
            cwd=repo_dir,
            auth=auth,
            timeout_s=timeout_s,
            stdin="".join(f"{oid}\n" for oid in missing).encode("ascii"),
            allowed_protocols=target.protocols,
            pins=target.pins,
        )
        fetched += len(missing)
    return fetched


async def _missing_objects(repo_dir: Path, commit: str, *, timeout_s: float) -> list[str]:
    """Objects of ``commit``'s tree (not its history) absent from a partial clone."""
    out = await run_git(
        ["rev-list", "--objects", "--no-walk", "--missing=print", "--end-of-options", commit],
        cwd=repo_dir,
        timeout_s=timeout_s,
        extra_env=NO_LAZY_FETCH,
    )
    return [line[1:].decode("ascii") for line in out.splitlines() if line.startswith(b"?")]


async def _remote_url(repo_dir: Path, remote: str, timeout_s: float) -> str:
    """``remote``'s URL as git will use it (``insteadOf`` rewrites applied)."""
    if not remote or remote.startswith("-") or _has_line_break(remote):
        raise GitError(GitFailure.INVALID_ARGUMENT, "the promisor remote's name is malformed")
    out = await run_git(["ls-remote", "--get-url", "--", remote], cwd=repo_dir, timeout_s=timeout_s)
    return out.decode("utf-8", "surrogateescape").strip()


async def shallow_commits(repo_dir: Path, *, timeout_s: float = 60.0) -> frozenset[str]:
    """The shallow-boundary commits of a (bare or non-bare) repository; empty if complete.

    git shows such a commit as a root whose every file is "added", so history readers must
    not take its file list at face value.
    """
    out = await run_git(["rev-parse", "--git-path", "shallow"], cwd=repo_dir, timeout_s=timeout_s)
    path = Path(os.fsdecode(out.rstrip(b"\n")))
    if not path.is_absolute():
        path = repo_dir / path
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except FileNotFoundError:
        return frozenset()
    return frozenset(line.decode("ascii") for line in data.split() if _HEX_OID.fullmatch(line))
