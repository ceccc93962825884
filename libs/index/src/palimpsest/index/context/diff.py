"""Reading a unified diff: which files changed, which new-side lines, which names it touches.

The diff comes from the provider or from the local repository (``git diff base head``); the
reviewer never trusts the index for it. The new-side line ranges decide whether a finding points
at a changed line; the identifiers seed the context sources (definitions the diff changes and
calls, usages of changed definitions, related code).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from palimpsest.core.wire import parse_hunk_header

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_CALL = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|interface|struct|enum|trait|type|impl|module)\s+([A-Za-z_$][\w$]*)"
    r"|^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*="
    r"|^\s*(?:public|private|protected|static|async|\s)*([A-Za-z_$][\w$]*)\s*\([^;]*\)\s*(?::[^{]*)?\{\s*$"
)
_KEYWORDS = frozenset(
    [
        "if",
        "for",
        "while",
        "switch",
        "catch",
        "return",
        "function",
        "def",
        "class",
        "new",
        "await",
        "async",
        "else",
        "elif",
        "try",
        "except",
        "with",
        "import",
        "from",
        "export",
        "const",
        "let",
        "var",
        "public",
        "private",
        "protected",
        "static",
        "self",
        "this",
        "super",
        "print",
        "len",
        "str",
        "int",
        "float",
        "bool",
        "dict",
        "list",
        "set",
        "tuple",
        "true",
        "false",
        "none",
        "null",
        "undefined",
        "typeof",
        "sizeof",
    ]
)


@dataclass(slots=True)
class ChangedFile:
    """One file of the diff: its new path (``None`` content at head means deleted)."""

    path: str
    old_path: str | None = None
    status: str = "modified"  # added | modified | deleted | renamed
    added_ranges: list[tuple[int, int]] = field(default_factory=list)  # new-side line spans
    removed_ranges: list[tuple[int, int]] = field(default_factory=list)  # old-side spans of removed lines
    hunk_ranges: list[tuple[int, int]] = field(default_factory=list)  # new-side spans of whole hunks
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)  # hunk header context (the enclosing definition)
    enclosing: list[str] = field(default_factory=list)  # definitions whose body has a changed line
    old_touched: list[int] = field(default_factory=list)  # old-side lines removed or inserted after
    _last_definition: str | None = None
    _old_line: int = 0

    def touches(self, start: int, end: int) -> bool:
        """Whether ``start..end`` (new side) overlaps a changed line of this file."""
        return any(lo <= end and start <= hi for lo, hi in self.added_ranges)

    def touches_old(self, start: int, end: int) -> bool:
        """Whether ``start..end`` (old side) overlaps a removed line of this file."""
        return any(lo <= end and start <= hi for lo, hi in self.removed_ranges)


@dataclass(frozen=True, slots=True)
class DiffNames:
    defined: list[str]  # definitions the diff adds, changes or removes
    called: list[str]  # names the changed lines call
    mentioned: list[str]  # every identifier of the changed lines, most frequent first


def parse_diff(text: str) -> list[ChangedFile]:
    """The files of a ``git diff`` (unified, any context size), in diff order."""
    files: list[ChangedFile] = []
    current: ChangedFile | None = None
    new_line = 0
    for raw in text.splitlines():
        if raw.startswith("diff --git "):
            current = _start(raw)
            files.append(current)
            continue
        if current is None:
            continue
        if _header_line(current, raw):
            continue
        hunk = parse_hunk_header(raw)
        if hunk is not None:
            current._old_line = hunk.old_line
            new_line = hunk.new_start
            current.hunk_ranges.append((new_line, max(new_line, new_line + hunk.new_count - 1)))
            current._last_definition = _definition_name(hunk.section)
            if hunk.section.strip():
                current.headers.append(hunk.section.strip())
            continue
        new_line = _body_line(current, raw, new_line)
    return files


def _start(line: str) -> ChangedFile:
    match = re.match(r"^diff --git a/(.*) b/(.*)$", line)
    path = match.group(2) if match else line.rsplit(maxsplit=1)[-1]
    return ChangedFile(path=path)


def _header_line(current: ChangedFile, raw: str) -> bool:
    if raw.startswith("new file mode"):
        current.status = "added"
    elif raw.startswith("deleted file mode"):
        current.status = "deleted"
    elif raw.startswith("rename from "):
        current.status, current.old_path = "renamed", raw[len("rename from ") :]
    elif raw.startswith("rename to "):
        current.path = raw[len("rename to ") :]
    elif raw.startswith("+++ ") and not current.hunk_ranges:
        if raw[4:] != "/dev/null":
            current.path = raw[4:].removeprefix("b/")
    elif (raw.startswith("--- ") and not current.hunk_ranges) or raw.startswith(
        ("index ", "similarity index", "old mode", "new mode", "Binary files")
    ):
        pass
    else:
        return False
    return True


def _body_line(current: ChangedFile, raw: str, new_line: int) -> int:
    if raw[:1] in ("+", "-", " "):
        found = _definition_name(raw[1:])
        if found is not None:
            current._last_definition = found
        if raw[:1] != " " and current._last_definition and current._last_definition not in current.enclosing:
            current.enclosing.append(current._last_definition)
    if raw.startswith("+"):
        current.added.append(raw[1:])
        _extend(current.added_ranges, new_line)
        _touch(current, max(1, current._old_line - 1))
        return new_line + 1
    if raw.startswith("-"):
        current.removed.append(raw[1:])
        _extend(current.removed_ranges, current._old_line)
        _touch(current, current._old_line)
        current._old_line += 1
        return new_line
    if raw.startswith("\\"):
        return new_line
    current._old_line += 1
    return new_line + 1


def _touch(current: ChangedFile, line: int) -> None:
    if not current.old_touched or current.old_touched[-1] != line:
        current.old_touched.append(line)


def definition_name(line: str) -> str | None:
    """The name a line defines (a def, class, function, const …), or None."""
    return _definition_name(line)


def _definition_name(line: str) -> str | None:
    for groups in _DEFINITION.findall(line):
        for name in groups:
            if name and _useful(name):
                return str(name)
    return None


def _extend(ranges: list[tuple[int, int]], line: int) -> None:
    if ranges and ranges[-1][1] == line - 1:
        ranges[-1] = (ranges[-1][0], line)
    else:
        ranges.append((line, line))


def diff_names(files: Sequence[ChangedFile], *, limit: int = 40) -> DiffNames:
    """Definitions changed, names called and identifiers mentioned by the changed lines."""
    defined: dict[str, None] = {}
    called: dict[str, None] = {}
    counts: dict[str, int] = {}
    for changed in files:
        lines = [*changed.added, *changed.removed]
        for name in changed.enclosing:
            defined.setdefault(name)
        for line in lines:
            found = _definition_name(line)
            if found is not None:
                defined.setdefault(found)
        for line in lines:
            for name in _CALL.findall(line):
                if _useful(name):
                    called.setdefault(name)
            for name in _IDENT.findall(line):
                if _useful(name):
                    counts[name] = counts.get(name, 0) + 1
    mentioned = sorted(counts, key=lambda n: (-counts[n], n))
    return DiffNames(
        list(defined)[:limit], [n for n in called if n not in defined][:limit], mentioned[:limit]
    )


def _useful(name: str) -> bool:
    return len(name) >= 3 and name.lower() not in _KEYWORDS


def changed_paths(files: Iterable[ChangedFile]) -> list[str]:
    """Every path the diff touches (new and, for renames, old)."""
    out: dict[str, None] = {}
    for f in files:
        out.setdefault(f.path)
        if f.old_path:
            out.setdefault(f.old_path)
    return list(out)
