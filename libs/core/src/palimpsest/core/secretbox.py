"""Encryption at rest of webhook secrets and provider credentials (Fernet, from `cryptography`).

The key comes from ``PALIMPSEST_ENCRYPTION_KEY`` (or the mounted secret file): one Fernet key, or
several separated by commas to rotate — the first encrypts, every one decrypts. In embedded/dev
mode, when no key is configured, one is generated once into ``$PALIMPSEST_HOME/encryption.key``
(mode 0600) so a restarted stack can still read what it stored; a production deployment must set
the variable, and the service refuses to start without it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from palimpsest.core.errors import CredentialError, SettingsError

KEY_FILE = "encryption.key"


class SecretBox:
    """Seals and opens secrets; the database only ever sees the sealed form."""

    def __init__(self, keys: list[bytes]) -> None:
        if not keys:
            raise SettingsError("PALIMPSEST_ENCRYPTION_KEY: no key given")
        try:
            self._fernet = MultiFernet([Fernet(key) for key in keys])
        except (ValueError, TypeError) as exc:
            raise SettingsError(
                "PALIMPSEST_ENCRYPTION_KEY: not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from exc

    def seal(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def open(self, sealed: bytes) -> str:
        try:
            return self._fernet.decrypt(bytes(sealed)).decode("utf-8")
        except (InvalidToken, UnicodeDecodeError) as exc:
            raise CredentialError(
                "a stored secret cannot be decrypted with the configured PALIMPSEST_ENCRYPTION_KEY"
            ) from exc


def parse_keys(value: str) -> list[bytes]:
    """The comma-separated keys of the setting, in order (the first one encrypts)."""
    return [part.strip().encode("ascii") for part in value.split(",") if part.strip()]


def load_box(configured: str | None, *, home: Path, generate: bool) -> SecretBox:
    """The box for the configured keys; or, when `generate` (embedded mode), the home key file."""
    if configured:
        try:
            return SecretBox(parse_keys(configured))
        except UnicodeEncodeError as exc:
            raise SettingsError("PALIMPSEST_ENCRYPTION_KEY: not a Fernet key") from exc
    if not generate:
        raise SettingsError(
            "PALIMPSEST_ENCRYPTION_KEY is not set (a Fernet key that encrypts stored provider secrets)"
        )
    return SecretBox([read_or_create(home / KEY_FILE, lambda: Fernet.generate_key().decode("ascii"))])


def read_or_create(path: Path, make: Callable[[], str]) -> bytes:
    """The content of `path`; when absent, create it (mode 0600) with `make()`, atomically.

    The value is written to a private temporary file first and hard-linked into place, so two
    processes starting at once agree on one value and nobody ever reads a half-written file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:  # mkstemp creates it 0600
                handle.write(make() + "\n")
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    content = path.read_text(encoding="ascii").strip()
    if not content:
        raise SettingsError(f"{path} is empty; remove it to generate a new one")
    return content.encode("ascii")
