"""Typed, path-aware access to untrusted webhook headers and JSON bodies.

Provider parsers read every field through `Node`, so a missing field or a field of the wrong
type becomes `WebhookError(400, "<one line naming the field>")` instead of a KeyError or
TypeError escaping the parser. Strings that become identifiers are checked to be printable
and storable (no control characters, no lone surrogates); free text is made storable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from palimpsest.ingest.webhooks.errors import WebhookError

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB; others send less
_MAX_ID_CHARS = 1024
_MAX_HEADER_CHARS = 255
_MAX_INT = 2**63 - 1  # ids and numbers end up in bigint columns
_SHA = re.compile(r"[0-9a-f]{7,64}")
_NULL_SHA = re.compile(r"0{40}|0{64}")


def decode_payload(body: bytes) -> dict[str, object]:
    """Decode a webhook body that must be one JSON object; anything else is a 400."""
    if len(body) > MAX_BODY_BYTES:
        raise WebhookError(413, "payload larger than 25 MiB")
    try:
        value = json.loads(body, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise WebhookError(400, "malformed JSON body: nested too deeply") from exc
    except ValueError as exc:  # includes JSONDecodeError and UnicodeDecodeError
        raise WebhookError(400, "malformed JSON body (the webhook must send application/json)") from exc
    if not isinstance(value, dict):
        raise WebhookError(400, "JSON body is not an object")
    return value


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names are case-insensitive: index them by their lower-case form."""
    return {str(name).lower(): str(value) for name, value in headers.items()}


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, stripped, validated as printable ASCII; None when absent or empty."""
    raw = lower_headers(headers).get(name.lower())
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    if len(value) > _MAX_HEADER_CHARS or not all(" " <= ch <= "~" for ch in value):
        raise WebhookError(400, f"invalid {name} header")
    return value


def required_header(headers: Mapping[str, str], name: str) -> str:
    value = header_value(headers, name)
    if value is None:
        raise WebhookError(400, f"missing {name} header")
    return value


def clip(text: str, limit: int = 100) -> str:
    """A short printable rendering of untrusted text for use inside a reason."""
    shown = "".join(ch if ch.isprintable() else "?" for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def is_null_sha(sha: str | None) -> bool:
    return sha is None or _NULL_SHA.fullmatch(sha) is not None


def parse_timestamp(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp in UTC; None when absent or unreadable (age unknown, never now)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _storable(text: str) -> str:
    """Free text as PostgreSQL can store it: no NUL, no lone surrogates."""
    clean = text.encode("utf-8", "replace").decode("utf-8")
    return clean.replace("\x00", "\ufffd")


# No C0/C1 control characters, no lone surrogates (one regex: this runs for every path of a push).
_PLAIN_TEXT = re.compile("[^\x00-\x1f\x7f-\x9f\ud800-\udfff]+")


def _is_identifier(text: str) -> bool:
    """Non-empty, bounded, and free of control characters and lone surrogates."""
    return 0 < len(text) <= _MAX_ID_CHARS and _PLAIN_TEXT.fullmatch(text) is not None


def _is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and "@" not in parts.netloc
        and not any(ch.isspace() for ch in text)
    )


class Node:
    """One JSON object of the payload plus its dotted path, for one-line error reasons."""

    __slots__ = ("_data", "_path")

    def __init__(self, data: Mapping[str, object], path: str = "") -> None:
        self._data = data
        self._path = path

    def where(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _get(self, key: str) -> object:
        return self._data.get(key)

    def _missing(self, key: str) -> WebhookError:
        return WebhookError(400, f"missing required field '{self.where(key)}'")

    def _wrong(self, key: str, expected: str) -> WebhookError:
        return WebhookError(400, f"field '{self.where(key)}' must be {expected}")

    def has(self, key: str) -> bool:
        """True when the field is present and not null."""
        return self._get(key) is not None

    # -- objects and lists ---------------------------------------------------------------

    def peek_node(self, key: str) -> Node | None:
        """The field when it is an object, else None; never raises."""
        value = self._get(key)
        return Node(value, self.where(key)) if isinstance(value, dict) else None

    def opt_node(self, key: str) -> Node | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self._wrong(key, "an object")
        return Node(value, self.where(key))

    def node(self, key: str) -> Node:
        found = self.opt_node(key)
        if found is None:
            raise self._missing(key)
        return found

    def _list(self, key: str, *, required: bool) -> list[object]:
        value = self._get(key)
        if value is None:
            if required:
                raise self._missing(key)
            return []
        if not isinstance(value, list):
            raise self._wrong(key, "a list")
        return value

    def nodes(self, key: str, *, required: bool = False) -> list[Node]:
        """A list of objects; absent or null is an empty list unless `required`."""
        found: list[Node] = []
        for index, item in enumerate(self._list(key, required=required)):
            if not isinstance(item, dict):
                raise self._wrong(f"{key}[{index}]", "an object")
            found.append(Node(item, f"{self.where(key)}[{index}]"))
        return found

    def paths(self, key: str) -> list[str]:
        """A list of repository paths; absent or null is an empty list."""
        found: list[str] = []
        for index, item in enumerate(self._list(key, required=False)):
            if not isinstance(item, str) or not _is_identifier(item):
                raise self._wrong(f"{key}[{index}]", "a repository path")
            found.append(item)
        return found

    # -- scalars -------------------------------------------------------------------------

    def peek_string(self, key: str) -> str | None:
        """The field when it is a valid identifier-like string, else None; never raises."""
        value = self._get(key)
        return value if isinstance(value, str) and _is_identifier(value) else None

    def opt_string(self, key: str) -> str | None:
        """An identifier-like string (name, ref, login); None when absent or null."""
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not _is_identifier(value):
            raise self._wrong(key, "a non-empty printable string")
        return value

    def string(self, key: str) -> str:
        found = self.opt_string(key)
        if found is None:
            raise self._missing(key)
        return found

    def text(self, key: str) -> str:
        """Free text (title, body, comment); absent or null is the empty string."""
        value = self._get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self._wrong(key, "a string")
        return _storable(value)

    def opt_integer(self, key: str) -> int | None:
        value = self._get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_INT:
            raise self._wrong(key, "a non-negative integer")
        return value

    def integer(self, key: str) -> int:
        found = self.opt_integer(key)
        if found is None:
            raise self._missing(key)
        return found

    def opt_ident(self, key: str) -> str | None:
        """An id the provider sends as a number or a string, as a string."""
        value = self._get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return self.string(key)
        return str(self.integer(key))

    def ident(self, key: str) -> str:
        found = self.opt_ident(key)
        if found is None:
            raise self._missing(key)
        return found

    def boolean(self, key: str, default: bool | None = None) -> bool:
        value = self._get(key)
        if value is None:
            if default is None:
                raise self._missing(key)
            return default
        if not isinstance(value, bool):
            raise self._wrong(key, "true or false")
        return value

    def opt_sha(self, key: str) -> str | None:
        """A hex commit SHA (7 to 64 digits, lower-cased); None when absent or null."""
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, str) or _SHA.fullmatch(value.lower()) is None:
            raise self._wrong(key, "a hex commit SHA")
        return value.lower()

    def sha(self, key: str) -> str:
        found = self.opt_sha(key)
        if found is None:
            raise self._missing(key)
        return found

    def url(self, key: str) -> str:
        """An http(s) URL without credentials in it."""
        value = self.string(key)
        if not _is_http_url(value):
            raise self._wrong(key, "an http(s) URL without credentials")
        return value
