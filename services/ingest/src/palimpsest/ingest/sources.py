"""Repository URL validation: Palimpsest fetches only from provider hosts it was told about.

Tenants register repositories by URL and the indexers later clone them from inside the cluster,
so without a rule a tenant could make Palimpsest fetch an arbitrary internal address. The rule:

- https only; no credentials, query or fragment in the URL; port 443 or none; a path of at least
  two plain segments (``owner/name``, GitLab subgroups allowed);
- the host is the installation's host when the repository belongs to an installation, otherwise
  one of the configured provider hosts (``PALIMPSEST_PROVIDER_HOSTS``);
- IP literals and host names resolving to loopback, link-local, unspecified or multicast
  addresses are refused, and so are private or reserved ones unless the host is listed in
  ``PALIMPSEST_PRIVATE_PROVIDER_HOSTS`` (a self-hosted GitLab inside the network). The public
  SaaS hosts (github.com, gitlab.com, bitbucket.org) are not resolved: their DNS is not
  something a tenant or an operator controls;
- ``file://`` URLs and absolute local paths only when local sources are allowed (the embedded
  default), and only for an existing directory.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

from palimpsest.ingest.errors import SourceRefused

Resolver = Callable[[str], Awaitable[list[str]]]

SAAS_HOSTS: Final[dict[str, str]] = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
}
_MAX_URL = 2048
_SEGMENT = re.compile(r"[A-Za-z0-9_.~-]+")
_HOST = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")
_RESOLVE_TIMEOUT_S = 3.0


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

    provider_hosts: frozenset[str]
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


def normalize_host(host: str) -> str:
    """Lower-case, without a trailing dot; SourceRefused unless it is a plain DNS name or IP."""
    name = host.strip().lower().rstrip(".")
    if _is_ip(name):
        return name
    if not name or len(name) > 253 or _HOST.fullmatch(name) is None:
        raise SourceRefused(f"'{_clip(host)}' is not a host name (use the ASCII/punycode form)")
    return name


async def check_source(url: str, policy: SourcePolicy, *, installation_host: str | None = None) -> Source:
    """Validate a repository URL (or local path) against `policy`; SourceRefused says why not."""
    text = url.strip()
    if not text or len(text) > _MAX_URL or any(not ch.isprintable() or ch.isspace() for ch in text):
        raise SourceRefused("the repository URL must be one line without spaces or control characters")
    if text.startswith(("file:", "/")):
        if installation_host is not None:
            raise SourceRefused("a repository of an installation must be an https URL on its host")
        return _check_local(text, policy)
    parts = _split(text)
    host = normalize_host(parts.hostname or "")
    allowed = {installation_host} if installation_host is not None else set(policy.provider_hosts)
    if host not in allowed:
        where = (
            f"the installation's host '{installation_host}'"
            if installation_host
            else "a configured provider host"
        )
        raise SourceRefused(f"host '{host}' is not {where} (PALIMPSEST_PROVIDER_HOSTS)")
    await _check_addresses(host, policy)
    full_name = _full_name(parts.path)
    clone_url = (
        f"https://{host}/{full_name}.git" if parts.path.endswith(".git") else f"https://{host}/{full_name}"
    )
    return Source(clone_url=clone_url, provider=SAAS_HOSTS.get(host), host=host, full_name=full_name)


def _split(text: str) -> _Parts:
    if re.match(r"^[\w.-]+@[\w.-]+:", text):
        raise SourceRefused("only https repository URLs are accepted (not scp-style ssh)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise SourceRefused("the repository URL cannot be parsed") from exc
    if parts.scheme != "https":
        raise SourceRefused(f"only https repository URLs are accepted (got '{_clip(parts.scheme)}:')")
    if "@" in parts.netloc:
        raise SourceRefused("credentials in repository URLs are refused; store a token on the installation")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise SourceRefused("the repository URL must not have a query or fragment")
    if port not in (None, 443):
        raise SourceRefused("the repository URL must use the default https port")
    return _Parts(parts.hostname or "", parts.path)


@dataclass(frozen=True, slots=True)
class _Parts:
    hostname: str
    path: str


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


async def _check_addresses(host: str, policy: SourcePolicy) -> None:
    if host in SAAS_HOSTS:
        return
    private_ok = host in policy.private_hosts
    addresses = [host] if _is_ip(host) else await policy.resolver(host)
    if not addresses:
        raise SourceRefused(f"host '{host}' resolves to no address")
    for address in addresses:
        problem = address_problem(address, private_ok=private_ok)
        if problem is not None:
            raise SourceRefused(f"host '{host}' resolves to a {problem} address; refused")


def address_problem(address: str, *, private_ok: bool = False) -> str | None:
    """Why Palimpsest must not connect to `address` (None when it may)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0].strip("[]"))
    except ValueError:
        return "malformed"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if not private_ok and (ip.is_private or ip.is_reserved or not ip.is_global):
        return "private"
    return None


def _check_local(text: str, policy: SourcePolicy) -> Source:
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
    name = os.path.basename(normalized).removesuffix(".git") or "repository"
    return Source(clone_url=normalized, provider="local", host=None, full_name=name)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def _clip(text: str, limit: int = 80) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
