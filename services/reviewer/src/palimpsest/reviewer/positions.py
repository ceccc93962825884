"""Where a finding shows on the pull request's diff: lines, side and the kind of the commented line.

Providers accept inline comments only on lines the diff shows: an added or context line on the
new side, a removed or context line on the old side, inside one hunk. :func:`locate` maps a
finding onto the diff as the provider shows it (from the merge base to the head, renames
followed): the comment ends on the finding's last line, or, when that line is not shown, on the
last shown line of the finding's range; a first line outside that line's hunk is pulled into it
(the comment then covers less, and a suggestion no longer replaces exactly the finding's lines,
so it is not offered inline). A finding none of whose lines is shown does not map (None): it goes
to the summary instead.

The position is a plain dict (stored with the finding, read back when a post is retried):
``path``/``old_path``, ``side`` (new|old), ``start``/``end`` (lines on that side), ``kind`` of the
end line (added|removed|context), ``old_line``/``new_line`` of the end line (both for a context
line: GitLab wants both), ``exact`` (the lines are the finding's own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from palimpsest.core.wire import parse_hunk_header
from palimpsest.index.context.finding import Finding


@dataclass(slots=True)
class _Hunk:
    # line number on one side → (kind, the other side's line or None)
    new: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    old: dict[int, tuple[str, int | None]] = field(default_factory=dict)


@dataclass(slots=True)
class FileMap:
    path: str
    old_path: str
    hunks: list[_Hunk] = field(default_factory=list)


def diff_map(text: str) -> dict[str, FileMap]:
    """The diff's files (by new path) and, per hunk, which lines each side shows."""
    files: dict[str, FileMap] = {}
    current: FileMap | None = None
    hunk: _Hunk | None = None
    old = new = 0
    for raw in text.splitlines():
        if raw.startswith("diff --git "):
            found = re.match(r"^diff --git a/(.*) b/(.*)$", raw)
            a, b = (found.group(1), found.group(2)) if found else (raw, raw)
            current, hunk = FileMap(b, a), None
            files[b] = current
            continue
        if current is None:
            continue
        if hunk is None or raw[:1] not in (" ", "+", "-", "\\"):
            if raw.startswith("rename from "):
                current.old_path = raw[len("rename from ") :]
            elif raw.startswith("rename to "):
                del files[current.path]
                current.path = raw[len("rename to ") :]
                files[current.path] = current
            header = parse_hunk_header(raw)
            if header is not None:
                old, new = header.old_start, header.new_start
                hunk = _Hunk()
                current.hunks.append(hunk)
            continue
        if raw.startswith("+"):
            hunk.new[new] = ("added", None)
            new += 1
        elif raw.startswith("-"):
            hunk.old[old] = ("removed", None)
            old += 1
        elif raw.startswith(" "):
            hunk.new[new] = ("context", old)
            hunk.old[old] = ("context", new)
            old += 1
            new += 1
    return files


def locate(files: dict[str, FileMap], finding: Finding) -> dict[str, Any] | None:
    """The finding's position on the diff (see the module text), or None when it does not map."""
    fmap = files.get(finding.path)
    if fmap is None:
        return None
    side = [h.old if finding.side == "old" else h.new for h in fmap.hunks]
    lines = next((lines for lines in side if finding.end_line in lines), None)
    end = finding.end_line
    if lines is None:  # the last line is not shown: the last shown line of the range, if any
        shown = [(n, h) for h in side for n in range(finding.start_line, finding.end_line + 1) if n in h]
        if not shown:
            return None
        end, lines = max(shown, key=lambda found: found[0])
    # one side of a hunk is a contiguous run of lines: a first line outside it is its first line
    start = finding.start_line if finding.start_line in lines else min(lines)
    kind, other = lines[end]
    old_line = end if finding.side == "old" else other
    new_line = other if finding.side == "old" else end
    return {
        "path": fmap.path,
        "old_path": fmap.old_path,
        "side": finding.side,
        "start": start,
        "end": end,
        "kind": kind,
        "old_line": old_line if kind != "added" else None,
        "new_line": new_line if kind != "removed" else None,
        "exact": start == finding.start_line and end == finding.end_line,
    }
