"""Where Palimpsest may fetch repositories from: one policy, checked at registration and at clone time.

Tenants register repositories by URL and the indexers later clone them from inside the cluster,
so without a rule a tenant could make Palimpsest fetch an arbitrary internal address. Ingest
checks a URL when it is registered (:func:`check_source`); every service that clones checks the
stored URL again just before git runs (:func:`check_clone_url`), because the policy may have
changed since, and a DNS name may now resolve somewhere else (DNS rebinding).

Registration (:func:`check_source`):

- https only; no credentials, query or fragment in the URL; port 443 or none; a path of at least
  two plain segments (``owner/name``, GitLab subgroups allowed);
- the host is the installation's host when the repository belongs to an installation, otherwise
  one of the configured provider hosts (``PALIMPSEST_PROVIDER_HOSTS``);
- ``file://`` URLs and absolute local paths only when local sources are allowed (the embedded
  default), and only for an existing directory.

Both checks:

- IP literals and host names resolving to loopback, link-local (cloud metadata), unspecified or
  multicast addresses are refused, and so are private or reserved ones unless the host is listed
  in ``PALIMPSEST_PRIVATE_PROVIDER_HOSTS`` (a self-hosted GitLab inside the network). Loopback is
  allowed only for a loopback IP literal listed there explicitly (``127.0.0.1``: a git server on
  the same machine, as in tests); a *name* resolving to loopback is always refused. IPv4-mapped
  IPv6 addresses count as their IPv4 address; numeric host forms other than the canonical
  dotted quad (``2130706433``, ``0x7f.1``, ``0177.0.0.1``) are refused outright. The public SaaS
  hosts (github.com, gitlab.com, bitbucket.org) are not resolved: their DNS is not something a
  tenant or an operator controls.

At clone time (:func:`check_clone_url`) the scheme must be https — or plain http for a host in
the private allowance — never ``ssh``, ``git``, ``ext::``, ``fd::`` or another transport; local
paths need the local-sources mode. The addresses that were checked are returned as pins (git's
``http.curloptResolve``), so git connects to exactly those and a second DNS answer cannot differ.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import SplitResult, unquote, urlsplit

from palimpsest.core.errors import PalimpsestError

__all__ = [
    "SAAS_HOSTS",
    "CloneTarget",
    "Resolver",
    "Source",
    "SourcePolicy",
    "SourceRefused",
    "address_problem",
    "check_clone_url",
    "check_source",
    "normalize_host",
    "normalize_hosts",
    "system_resolver",
]

Resolver = Callable[[str], Awaitable[list[str]]]

SAAS_HOSTS: Final[dict[str, str]] = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
}
_MAX_URL = 2048
_SEGMENT = re.compile(r"[A-Za-z0-9_.~-]+")
_HOST = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_TRANSPORT_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")  # git's <transport>::<address>
_SCP_STYLE = re.compile(r"^[^/:]+:")  # host:path or user@host:path (ssh)
_RESOLVE_TIMEOUT_S = 3.0
_DEFAULT_PORTS: Final[dict[str, int]] = {"https": 443, "http": 80}


class SourceRefused(PalimpsestError):
    """A repository URL is not one Palimpsest may fetch (host, scheme or address not allowed)."""


async def system_resolver(host: str) -> list[str]:
    """The addresses `host` resolves to (the operating system's resolver, bounded in time)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, 443, type=socket.SOCK_STREAM), _RESOLVE_TIMEOUT_S
        )
    except (OSError, TimeoutError) as exc:
        raise SourceRefused(f"cannot resolve host '{host}'") from exc
    return sorted({str(info[4][0]) for info in infos})


@dataclass(frozen=True, slots=True)
class SourcePolicy:
    """What this deployment may fetch from."""

    provider_hosts: frozenset[str] = frozenset()
    private_hosts: frozenset[str] = frozenset()
    allow_local: bool = False
    resolver: Resolver = system_resolver


@dataclass(frozen=True, slots=True)
class Source:
    """A validated repository location."""

    clone_url: str
    provider: str | None  # "local", the SaaS provider of the host, or None (unknown host kind)
    host: str | None
    full_name: str


@dataclass(frozen=True, slots=True)
class CloneTarget:
    """A URL that passed the clone-time check, with what git needs to reach exactly it.

    ``local`` is the directory for a local source (read in place, no transport). For a remote,
    ``protocols`` is the one transport git may use and ``pins`` are ``http.curloptResolve``
    entries (``host:port:address``) fixing the addresses that were checked.
    """

    url: str
    local: Path | None
    protocols: tuple[str, ...]
    pins: tuple[str, ...] = ()


def normalize_host(host: str) -> str:
    """Lower-case, without a trailing dot; SourceRefused unless it is a plain DNS name or IP."""
    name = host.strip().lower().rstrip(".")
    if _is_ip(name):
        return name
    if _is_numeric_host(name):
        raise SourceRefused(f"'{_clip(host)}' is a non-canonical IP address form; refused")
    if not name or len(name) > 253 or _HOST.fullmatch(name) is None:
        raise SourceRefused(f"'{_clip(host)}' is not a host name (use the ASCII/punycode form)")
    return name


def normalize_hosts(items: Iterable[str]) -> tuple[str, ...]:
    """Each host normalized, duplicates dropped, order kept (settings lists)."""
    return tuple(dict.fromkeys(normalize_host(i) for i in items))


# ---------------------------------------------------------------------------------- registration


async def check_source(url: str, policy: SourcePolicy, *, installation_host: str | None = None) -> Source:
    """Validate a repository URL (or local path) against `policy`; SourceRefused says why not."""
    text = _one_line(url)
    if text.startswith(("file:", "/")):
        if installation_host is not None:
            raise SourceRefused("a repository of an installation must be an https URL on its host")
        path = _check_local(text, policy)
        name = path.name.removesuffix(".git") or "repository"
        return Source(clone_url=str(path), provider="local", host=None, full_name=name)
    parts = _split(text)
    if parts.scheme != "https":
        raise SourceRefused(f"only https repository URLs are accepted (got '{_clip(parts.scheme)}:')")
    if parts.port not in (None, 443):
        raise SourceRefused("the repository URL must use the default https port")
    host = normalize_host(parts.hostname or "")
    allowed = {installation_host} if installation_host is not None else set(policy.provider_hosts)
    if host not in allowed:
        where = (
            f"the installation's host '{installation_host}'"
            if installation_host
            else "a configured provider host"
        )
        raise SourceRefused(f"host '{host}' is not {where} (PALIMPSEST_PROVIDER_HOSTS)")
    await _checked_addresses(host, policy)
    full_name = _full_name(parts.path)
    clone_url = (
        f"https://{host}/{full_name}.git" if parts.path.endswith(".git") else f"https://{host}/{full_name}"
    )
    return Source(clone_url=clone_url, provider=SAAS_HOSTS.get(host), host=host, full_name=full_name)


# ---------------------------------------------------------------------------------- clone time


async def check_clone_url(url: str, policy: SourcePolicy) -> CloneTarget:
    """The clone-time check of a stored URL (see the module docstring); SourceRefused says why not."""
    text = _one_line(url)
    if _TRANSPORT_PREFIX.match(text):
        raise SourceRefused("git transport prefixes (ext::, fd::, …) are never allowed")
    if text.startswith("file:") or "://" not in text:
        if _SCP_STYLE.match(text) and not text.startswith("file:"):
            raise SourceRefused("only https repository URLs are accepted (not scp-style ssh)")
        path = _check_local(text, policy)
        return CloneTarget(url=str(path), local=path, protocols=("file",))
    parts = _split(text)
    host = normalize_host(parts.hostname or "")
    if parts.scheme == "http" and host not in policy.private_hosts:
        raise SourceRefused(f"plain http only to hosts in PALIMPSEST_PRIVATE_PROVIDER_HOSTS; '{host}' is not")
    if parts.scheme not in ("https", "http"):
        raise SourceRefused(f"only https repository URLs are accepted (got '{_clip(parts.scheme)}:')")
    addresses = await _checked_addresses(host, policy)
    pins: tuple[str, ...] = ()
    if addresses and not _is_ip(host):
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
        pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
        pins = (f"{host}:{port}:{pinned}",)
    return CloneTarget(url=text, local=None, protocols=(parts.scheme,), pins=pins)


# ---------------------------------------------------------------------------------- addresses


async def _checked_addresses(host: str, policy: SourcePolicy) -> list[str]:
    """The addresses `host` stands for, each one allowed; [] for the (unresolved) SaaS hosts."""
    if host in SAAS_HOSTS:
        return []
    listed = host in policy.private_hosts
    literal = _is_ip(host)
    addresses = [host.strip("[]")] if literal else await policy.resolver(host)
    if not addresses:
        raise SourceRefused(f"host '{host}' resolves to no address")
    for address in addresses:
        problem = address_problem(address, private_ok=listed, loopback_ok=listed and literal)
        if problem is not None:
            raise SourceRefused(f"host '{host}' resolves to a {problem} address; refused")
    return addresses


def address_problem(address: str, *, private_ok: bool = False, loopback_ok: bool = False) -> str | None:
    """Why Palimpsest must not connect to `address` (None when it may)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0].strip("[]"))
    except ValueError:
        return "malformed"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if loopback_ok else "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if not private_ok and (ip.is_private or ip.is_reserved or not ip.is_global):
        return "private"
    return None


# ---------------------------------------------------------------------------------- parsing


def _one_line(url: str) -> str:
    text = url.strip()
    if not text or len(text) > _MAX_URL or any(not ch.isprintable() or ch.isspace() for ch in text):
        raise SourceRefused("the repository URL must be one line without spaces or control characters")
    return text


def _split(text: str) -> SplitResult:
    if re.match(r"^[\w.-]+@[\w.-]+:", text):
        raise SourceRefused("only https repository URLs are accepted (not scp-style ssh)")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        raise SourceRefused("the repository URL cannot be parsed") from exc
    if "@" in parts.netloc:
        raise SourceRefused("credentials in repository URLs are refused; store a token on the installation")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise SourceRefused("the repository URL must not have a query or fragment")
    return parts


def _full_name(path: str) -> str:
    trimmed = path.strip("/")
    trimmed = trimmed.removesuffix(".git")
    segments = trimmed.split("/") if trimmed else []
    if len(segments) < 2:
        raise SourceRefused("the repository URL must name owner/repository")
    for segment in segments:
        if segment in (".", "..") or _SEGMENT.fullmatch(segment) is None:
            raise SourceRefused(f"'{_clip(segment)}' is not a valid repository path segment")
    return "/".join(segments)


def _check_local(text: str, policy: SourcePolicy) -> Path:
    if not policy.allow_local:
        raise SourceRefused("local repository paths are not allowed here (PALIMPSEST_ALLOW_LOCAL_SOURCES)")
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            raise SourceRefused("a file:// URL must name a local path")
        path = unquote(parts.path)
    else:
        path = text
    if not path.startswith("/") or "\x00" in path:
        raise SourceRefused("a local repository must be an absolute path")
    normalized = os.path.normpath(path)
    if not os.path.isdir(normalized):
        raise SourceRefused(f"no directory at '{_clip(normalized)}'")
    return Path(normalized)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def _is_numeric_host(name: str) -> bool:
    """Every label numeric (decimal, octal or 0x-hex): an IP address in a form git/libc accepts."""
    labels = name.split(".")
    return bool(name) and all(_NUMERIC_LABEL.fullmatch(label) for label in labels)


def _clip(text: str, limit: int = 80) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
