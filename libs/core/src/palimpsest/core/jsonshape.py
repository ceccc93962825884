"""The one name for JSON of a shape we do not own.

``JsonObject`` is a decoded JSON object whose keys and value types someone else decides: a
provider's webhook or REST response body, a request body in a provider's API, a model's answer,
a configuration file a repository wrote (``pyproject.toml``, ``package.json``, ``.palimpsest.yml``),
a JSON column of free shape. Everything of a shape we own (rows of our tables, our report
payloads, view models, CLI output records) has a real type with named fields instead; the alias
marks, and counts, the places where no such type can exist.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JsonObject"]

JsonObject: TypeAlias = dict[str, Any]
