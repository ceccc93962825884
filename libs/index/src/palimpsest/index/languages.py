"""The languages parsed into definitions and facts: one table for the chunker that writes them
and the graph that reads them (a file in any other language is a graph blind spot, reported)."""

from __future__ import annotations

__all__ = ["PARSED_LANGUAGES"]

PARSED_LANGUAGES = frozenset(
    {
        "python",
        "typescript",
        "tsx",
        "javascript",
        "go",
        "rust",
        "java",
        "kotlin",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "swift",
        "scala",
    }
)
