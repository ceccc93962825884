"""Exception types of the shared core; third-party errors are translated into these at the boundary."""

from __future__ import annotations


class PalimpsestError(Exception):
    """Base of every error Palimpsest raises on purpose."""


class SettingsError(PalimpsestError):
    """A setting is missing or invalid; the message names the environment variable."""


class DatabaseError(PalimpsestError):
    """The database could not be reached or a statement failed in a way callers must see."""


class MigrationError(DatabaseError):
    """A migration could not be applied."""


class BusError(PalimpsestError):
    """NATS JetStream could not be reached or refused a declaration or publish."""


class DuplicateEvent(PalimpsestError):
    """The consumer's inbox already holds this event: it was applied before."""


class EmbeddedStackError(PalimpsestError):
    """The embedded PostgreSQL or NATS server could not be started or stopped."""
