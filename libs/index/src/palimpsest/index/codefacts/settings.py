"""Settings a settings library reads from the environment: names the code has without writing them.

pydantic-settings (and pydantic 1's ``BaseSettings``) reads each field ``F`` of a settings class
from the environment variable ``PREFIX`` + ``F``, case-insensitively unless the class says
``case_sensitive=True`` (so a doc writes it ``PREFIX_F`` in capitals). ``PREFIX`` is the class's
``env_prefix`` (``model_config = SettingsConfigDict(env_prefix=…)``, or ``env_prefix = …`` in a
``class Config``), inherited from its bases, or none. A field with an ``alias``,
``validation_alias`` (a string or ``AliasChoices(…)``) or pydantic 1's ``env=`` is read under
those names instead, without the prefix.

So a doc naming ``PALIMPSEST_ANALYSIS_HISTORY_TIMEOUT_S`` names the code's field
``analysis_history_timeout_s`` of a class whose prefix is ``PALIMPSEST_``, though the code never
writes that name. :func:`read_settings` reads what one Python file declares (its settings-like
classes and its module string constants); :func:`env_names` resolves the names over any number
of files, the classes' bases and prefix constants by name across them (a service's settings class
extending a base class of another module, ``env_prefix=ENV_PREFIX`` imported from a third).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "MARKERS",
    "EnvName",
    "SettingsClass",
    "SettingsModule",
    "env_names",
    "read_settings",
    "settings_classes",
]

MARKERS = re.compile(rb"BaseSettings|SettingsConfigDict|env_prefix")
"""What a Python file declaring settings (or a base class with a prefix) contains."""
_ROOTS = frozenset({"BaseSettings"})  # pydantic_settings.BaseSettings, pydantic.BaseSettings (1.x)
_NOT_FIELDS = frozenset({"model_config", "Config"})


@dataclass(frozen=True, slots=True)
class SettingsClass:
    """A class of one file, as far as settings go."""

    name: str
    line: int
    bases: tuple[str, ...]  # each base's last segment (``pydantic_settings.BaseSettings`` → BaseSettings)
    configured: bool  # sets SettingsConfigDict(…) or a ``class Config`` with env_prefix: a settings class
    prefix: ast.expr | None  # its own env_prefix, unevaluated (a literal, a constant's name, a sum)
    case_sensitive: bool | None  # its own case_sensitive, when it says
    fields: tuple[tuple[str, int, tuple[str, ...]], ...]  # (field, line, explicit env names)


@dataclass(frozen=True, slots=True)
class SettingsModule:
    """What one Python file declares: its classes and its module-level string constants."""

    classes: tuple[SettingsClass, ...] = ()
    constants: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EnvName:
    """An environment variable a settings class reads."""

    name: str
    field: str
    cls: str
    line: int


def read_settings(content: bytes) -> SettingsModule:
    """The classes and string constants of one Python file; nothing when it does not parse."""
    if MARKERS.search(content) is None and b"class " not in content:
        return SettingsModule()
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return SettingsModule()
    constants: dict[str, str] = {}
    classes: list[SettingsClass] = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                constants.update((t.id, node.value.value) for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ClassDef):
            classes.append(_class(node))
    return SettingsModule(tuple(classes), constants)


def env_names(modules: Iterable[SettingsModule]) -> list[EnvName]:
    """The environment variables the settings classes of ``modules`` read, resolved together."""
    scope = _Scope(list(modules))
    out: list[EnvName] = []
    for module in scope.modules:
        for cls in module.classes:
            if not scope.is_settings(cls, module):
                continue
            prefix = scope.prefix(cls, module)
            sensitive = scope.case_sensitive(cls, module)
            for name, line, explicit in cls.fields:
                if prefix is None and not explicit:
                    continue  # a prefix that cannot be read: the names are unknown
                for env in explicit or (f"{prefix}{name}",):
                    out.append(EnvName(env if sensitive else env.upper(), name, cls.name, line))
    return out


def settings_classes(modules: Iterable[SettingsModule]) -> set[str]:
    """The names of the settings classes of ``modules`` (those without fields too: a base class
    that only sets the prefix)."""
    scope = _Scope(list(modules))
    return {c.name for m in scope.modules for c in m.classes if scope.is_settings(c, m)}


# ----------------------------------------------------------------------------- one class


def _class(node: ast.ClassDef) -> SettingsClass:
    bases = tuple(_last(b) for b in node.bases if _last(b))
    configured = False
    prefix: ast.expr | None = None
    sensitive: bool | None = None
    fields: list[tuple[str, int, tuple[str, ...]]] = []
    for item in node.body:
        if isinstance(item, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "model_config" for t in item.targets
        ):
            configured, prefix, sensitive = _config(item.value, configured, prefix, sensitive)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            name = item.target.id
            if name == "model_config" and item.value is not None:
                configured, prefix, sensitive = _config(item.value, configured, prefix, sensitive)
            elif not name.startswith("_") and name not in _NOT_FIELDS and not _class_var(item.annotation):
                fields.append((name, item.lineno, _explicit(item.value)))
        elif isinstance(item, ast.ClassDef) and item.name == "Config":  # pydantic 1
            for option in item.body:
                if isinstance(option, ast.Assign):
                    for target in option.targets:
                        if isinstance(target, ast.Name) and target.id == "env_prefix":
                            configured, prefix = True, option.value
                        elif isinstance(target, ast.Name) and target.id == "case_sensitive":
                            sensitive = _bool(option.value)
    return SettingsClass(node.name, node.lineno, bases, configured, prefix, sensitive, tuple(fields))


def _config(
    value: ast.expr, configured: bool, prefix: ast.expr | None, sensitive: bool | None
) -> tuple[bool, ast.expr | None, bool | None]:
    """``SettingsConfigDict(env_prefix=…, case_sensitive=…)`` (or a plain dict of them)."""
    if isinstance(value, ast.Call) and _last(value.func) == "SettingsConfigDict":
        configured = True
        for keyword in value.keywords:
            if keyword.arg == "env_prefix":
                prefix = keyword.value
            elif keyword.arg == "case_sensitive":
                sensitive = _bool(keyword.value)
    elif isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "env_prefix":
                configured, prefix = True, item
            elif isinstance(key, ast.Constant) and key.value == "case_sensitive":
                sensitive = _bool(item)
    return configured, prefix, sensitive


def _explicit(value: ast.expr | None) -> tuple[str, ...]:
    """The names ``Field(validation_alias=…)`` (else ``alias=…``, else pydantic 1's ``env=…``)
    reads the field under instead of the prefixed name."""
    if not isinstance(value, ast.Call) or _last(value.func) != "Field":
        return ()
    given = {
        k.arg: _strings(k.value) for k in value.keywords if k.arg in ("validation_alias", "alias", "env")
    }
    for keyword in ("validation_alias", "alias", "env"):
        if given.get(keyword):
            return tuple(dict.fromkeys(given[keyword]))
    return ()


def _strings(value: ast.expr) -> list[str]:
    """A string, or the strings of ``AliasChoices(…)`` or a list or tuple of them."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value.value]
    items = (
        value.args
        if isinstance(value, ast.Call)
        else value.elts
        if isinstance(value, ast.List | ast.Tuple)
        else []
    )
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def _class_var(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _last(target) == "ClassVar"


def _bool(value: ast.expr) -> bool | None:
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, bool) else None


def _last(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):  # ``BaseSettings[...]``, ``Generic[T]``
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


# ----------------------------------------------------------------------------- resolution


class _Scope:
    """The files read together: a base class or prefix constant named in one file is looked up
    in that file first, else in any of them (where several files declare it, the first)."""

    def __init__(self, modules: list[SettingsModule]) -> None:
        self.modules = modules
        self.classes: dict[str, list[tuple[SettingsClass, SettingsModule]]] = {}
        self.constants: dict[str, str] = {}
        for module in modules:
            for cls in module.classes:
                self.classes.setdefault(cls.name, []).append((cls, module))
            for name, value in module.constants.items():
                self.constants.setdefault(name, value)
        self._settings: dict[int, bool] = {}

    def base(self, name: str, module: SettingsModule) -> tuple[SettingsClass, SettingsModule] | None:
        found = self.classes.get(name, [])
        return next((c for c in found if c[1] is module), found[0] if found else None)

    def bases(
        self, cls: SettingsClass, module: SettingsModule
    ) -> Iterable[tuple[SettingsClass, SettingsModule]]:
        for name in cls.bases:
            found = self.base(name, module)
            if found is not None and found[0] is not cls:
                yield found

    def is_settings(self, cls: SettingsClass, module: SettingsModule) -> bool:
        """Configured as a settings class, or extending ``BaseSettings`` or a settings class."""
        key = id(cls)
        if key not in self._settings:
            self._settings[key] = False  # a cycle of bases is no settings class
            self._settings[key] = (
                cls.configured
                or bool(_ROOTS & set(cls.bases))
                or any(self.is_settings(*b) for b in self.bases(cls, module))
            )
        return self._settings[key]

    def prefix(self, cls: SettingsClass, module: SettingsModule, depth: int = 0) -> str | None:
        """The class's own ``env_prefix``, else its bases' in order, else none (""); None when
        the prefix it has cannot be read (computed at run time)."""
        if cls.prefix is not None:
            return _evaluate(cls.prefix, module.constants, self.constants)
        if depth < 20:
            for parent in self.bases(cls, module):
                found = self.prefix(*parent, depth + 1)
                if found != "":
                    return found
        return ""

    def case_sensitive(self, cls: SettingsClass, module: SettingsModule, depth: int = 0) -> bool:
        """The class's own ``case_sensitive``, else its bases' (pydantic-settings: False)."""
        if cls.case_sensitive is not None:
            return cls.case_sensitive
        return depth < 20 and any(self.case_sensitive(*b, depth + 1) for b in self.bases(cls, module))


def _evaluate(node: ast.expr, local: dict[str, str], everywhere: dict[str, str]) -> str | None:
    """A string literal, a constant's name (this file's first, else any file's: imported) or a sum."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        name = _last(node)
        return local.get(name, everywhere.get(name))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _evaluate(node.left, local, everywhere), _evaluate(node.right, local, everywhere)
        return None if left is None or right is None else left + right
    return None
