"""Every ``PALIMPSEST_*`` setting, derived from the Settings classes: name, type, default, the
services that read it, whether it is secret, and its meaning (the field's ``description``).

This is the one source of ``palimpsest settings``, of ``docs/settings.md`` and of the names file
that every process checks its environment against (:func:`palimpsest.core.settings.check_environment`).
``python -m palimpsest.cli.settings_registry docs/settings.md`` (``make settings-doc``) rewrites
both files; ``--check`` fails when either drifted from the classes.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

import annotated_types
import click
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from palimpsest.core.settings import (
    ENV_PREFIX,
    NAMES_FILE,
    NOT_SETTINGS,
    UNKNOWN_NAME,
    env_name,
    given_values_problems,
    undeclared_names,
    with_closest,
)
from palimpsest.core.topology import SERVICES

__all__ = ["Setting", "bad_values", "markdown", "registry", "service_classes", "settings_cmd"]

# a field's name ending in one of these makes its value secret even when its type is not SecretStr
_SECRET_WORDS = frozenset({"secret", "password", "token", "key"})


def service_classes() -> dict[str, tuple[type[BaseSettings], ...]]:
    """The Settings classes each service loads (its own, and the LLM settings where it loads those)."""
    from palimpsest.analyzer.service import Settings as AnalyzerSettings
    from palimpsest.chunker.service import Settings as ChunkerSettings
    from palimpsest.core.llm import LLMSettings
    from palimpsest.embedder.service import Settings as EmbedderSettings
    from palimpsest.ingest.settings import Settings as IngestSettings
    from palimpsest.recency_scanner.service import Settings as RecencySettings
    from palimpsest.reviewer.service import Settings as ReviewerSettings

    classes: dict[str, tuple[type[BaseSettings], ...]] = {
        # ingest embeds hybrid-search queries with load(LLMSettings) (admin/index.py, mcp/http.py)
        "ingest": (IngestSettings, LLMSettings),
        "recency-scanner": (RecencySettings,),
        "chunker": (ChunkerSettings,),
        "embedder": (EmbedderSettings,),
        "analyzer": (AnalyzerSettings,),
        "reviewer": (ReviewerSettings,),
    }
    assert tuple(classes) == SERVICES, "every service of the topology, in its order"
    return classes


def bad_values(service: str | None = None) -> dict[str, str]:
    """The values of this environment that some service's settings refuse (of the settings
    ``service`` reads), by variable (:func:`palimpsest.core.settings.given_values_problems`)."""
    found = given_values_problems()
    if service is None:
        return found
    read = {s.name for s in registry(service)}
    return {name: line for name, line in found.items() if name in read}


@dataclass(frozen=True, slots=True)
class Setting:
    name: str  # the environment name, PALIMPSEST_…
    type: str
    default: Any  # JSON-able; None for none
    constraints: str  # e.g. ">= 1, <= 100"
    services: tuple[str, ...]
    secret: bool
    description: str | None
    declared_in: str  # the class that declares it (module:Class)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["services"] = list(self.services)
        return out


def registry(service: str | None = None) -> list[Setting]:
    """Every setting any service reads (or those ``service`` reads), sorted by name."""
    readers: dict[str, list[str]] = {}
    fields: dict[str, tuple[type[BaseSettings], str, FieldInfo]] = {}
    for svc, classes in service_classes().items():
        for cls in classes:
            prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
            for field_name, info in cls.model_fields.items():
                name = env_name(field_name, prefix)
                if svc not in readers.setdefault(name, []):
                    readers[name].append(svc)
                fields.setdefault(name, (_declaring(cls, field_name), field_name, info))
    out = []
    for name, (owner, field_name, info) in sorted(fields.items()):
        if service is not None and service not in readers[name]:
            continue
        out.append(
            Setting(
                name=name,
                type=_type_name(info.annotation),
                default=_default(info),
                constraints=_constraints(info),
                services=tuple(readers[name]),
                secret=_secret(field_name, info),
                description=info.description,
                declared_in=f"{owner.__module__}:{owner.__qualname__}",
            )
        )
    return out


def _declaring(cls: type[BaseSettings], field_name: str) -> type[BaseSettings]:
    """The first class in ``cls``'s MRO that declares the field itself."""
    for base in cls.__mro__:
        if field_name in getattr(base, "__annotations__", {}):
            return typing.cast(type[BaseSettings], base)
    return cls


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "|".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is tuple:
        inner = ", ".join("..." if a is Ellipsis else _type_name(a) for a in args)
        return f"tuple[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        factory = info.default_factory
        doc = (factory.__doc__ or "").strip().splitlines()
        return f"(computed: {doc[0] if doc else getattr(factory, '__name__', 'a factory')})"
    return _jsonable(info.default)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, tuple | list | frozenset | set):
        return [_jsonable(v) for v in value]
    return str(value)


_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.MinLen, "min_length", "length >="),
    (annotated_types.MaxLen, "max_length", "length <="),
)


def _constraints(info: FieldInfo) -> str:
    parts = []
    for item in info.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attr)}")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            parts.append(f"matches {pattern}")
    return ", ".join(parts)


def _secret(field_name: str, info: FieldInfo) -> bool:
    annotation = info.annotation
    args = typing.get_args(annotation) or (annotation,)
    words = field_name.split("_")  # "admin_token" is a secret, "chars_per_token" is not
    return SecretStr in args or (words[-1] in _SECRET_WORDS and words[-2:-1] != ["per"])


# ----------------------------------------------------------------------------- renderings


def text(settings: Iterable[Setting], bad: dict[str, str] | None = None) -> str:
    """One block per setting, for people; a value of ``bad`` (by name) is flagged in its block."""
    blocks = []
    for s in settings:
        default = "(secret)" if s.secret and s.default is not None else _shown(s.default)
        head = f"{s.name}  {s.type} = {default}" + (f"  [{s.constraints}]" if s.constraints else "")
        tags = ("secret, " if s.secret else "") + "read by " + ", ".join(s.services)
        block = f"{head}\n    {s.description or '(no description)'}\n    ({tags})"
        if bad and s.name in bad:
            block += f"\n    !! invalid in this environment: {bad[s.name]}"
        blocks.append(block)
    return "\n".join(blocks)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(map(str, value)) if value else "(empty)"
    return str(value)


def markdown(settings: Iterable[Setting]) -> str:
    """``docs/settings.md``: every setting in one table per area, and the names that are not settings."""
    settings = list(settings)
    lines = [
        "# Settings",
        "",
        "<!-- Generated from the Settings classes by `make settings-doc`"
        " (python -m palimpsest.cli.settings_registry docs/settings.md); do not edit. -->",
        "",
        "Every process reads its settings from `PALIMPSEST_*` environment variables, or from files",
        "under `/var/run/secrets/palimpsest` named like the variable in lower case (the chart mounts",
        "Secrets there). A `PALIMPSEST_*` name that no setting declares makes every process refuse to",
        "start, naming the closest real setting. The CLI checks every value against every service's",
        "settings before any command starts (one line per invalid value). `palimpsest settings",
        "[--service S] [--json]` prints this table from the installed code, whatever the environment",
        "holds, and flags the unknown names and invalid values in it.",
        "",
        "| Setting | Type | Default | Services | Meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    every = len(service_classes())
    for s in settings:
        default = f"`{_shown(s.default)}`" if s.default is not None else "none"
        services = "all" if len(s.services) == every else ", ".join(s.services)
        meaning = s.description or ""
        if s.constraints:
            meaning += f" ({s.constraints})"
        if s.secret:
            meaning += " **Secret.**"
        cells = [f"`{s.name}`", s.type, default, services, meaning]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "## Names that are not settings",
        "",
        "These `PALIMPSEST_*` names are read by something other than a service's settings; a name",
        "ending in `_` stands for every name it begins.",
        "",
        "| Name | Read by |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {what} |" for name, what in NOT_SETTINGS.items()]
    return "\n".join(lines) + "\n"


def _unknown_json(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": None,
        "default": None,
        "constraints": "",
        "services": [],
        "secret": False,
        "description": None,
        "declared_in": None,
        "unknown": True,
        "problem": f"{with_closest(name)}: {UNKNOWN_NAME}",
    }


@click.command("settings")
@click.option(
    "--service",
    type=click.Choice(SERVICES),
    default=None,
    help="Only the settings this service reads.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per setting, in a list.")
@click.option("--markdown", "as_markdown", is_flag=True, help="The docs/settings.md table.")
def settings_cmd(service: str | None, as_json: bool, as_markdown: bool) -> None:
    """Every PALIMPSEST_* setting: name, type, default, the services that read it, whether it is
    secret, and what it means (from the Settings classes of the installed code).

    It runs whatever the environment holds, and flags what every other command refuses: a
    PALIMPSEST_* name no setting has (with the closest real one), and a value a service's
    settings refuse ("problem" and "unknown" in --json)."""
    found = registry(service)
    if as_markdown:
        click.echo(markdown(found), nl=False)
        return
    bad, unknown = bad_values(service), undeclared_names()
    if as_json:
        listed = [{**s.as_json(), "unknown": False, "problem": bad.get(s.name)} for s in found]
        click.echo(json.dumps(listed + [_unknown_json(name) for name in unknown], indent=2))
        return
    flags = [f"!! unknown setting {with_closest(name)}: {UNKNOWN_NAME}" for name in unknown]
    flags += [f"!! invalid setting: {line}" for line in bad.values()]
    if flags:
        flags += ["!! (every other command refuses to run until these are fixed)", "", ""]
    click.echo("\n".join(flags) + text(found, bad))


def names_file() -> str:
    """:data:`~palimpsest.core.settings.NAMES_FILE`: each setting's name and the classes that
    declare it (every one where services declare it differently)."""
    declaring: dict[str, set[str]] = {}
    for classes in service_classes().values():
        for cls in classes:
            prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
            for field_name in cls.model_fields:
                owner = _declaring(cls, field_name)
                ref = f"{owner.__module__}:{owner.__qualname__}"
                declaring.setdefault(env_name(field_name, prefix), set()).add(ref)
    return "".join(f"{s.name} {' '.join(sorted(declaring[s.name]))}\n" for s in registry())


def _names_path() -> Path:
    return Path(str(resources.files("palimpsest.core").joinpath(NAMES_FILE)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palimpsest.cli.settings_registry")
    parser.add_argument("doc", type=Path, help="the Markdown file to write (docs/settings.md)")
    parser.add_argument("--check", action="store_true", help="fail when a file differs instead")
    args = parser.parse_args(argv)
    wanted = {args.doc: markdown(registry()), _names_path(): names_file()}
    drifted = [p for p, body in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != body]
    if args.check:
        for p in drifted:
            print(f"{p} is out of date: run `make settings-doc`", file=sys.stderr)
        return 1 if drifted else 0
    for p in drifted:
        p.write_text(wanted[p], encoding="utf-8")
        print(f"wrote {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
