"""Which language a path is, decided from its file name alone: one table for the chunker that
parses files, the code-facts definitions of old blobs, and the graph that reads what the chunker
wrote (a file in any language outside ``PARSED_LANGUAGES`` is a graph blind spot, reported).

Three groups of names come out of ``detect_language``:

* grammar languages, spelled as tree-sitter-language-pack 0.13.0 spells them, parsed into
  definitions (``PARSED_LANGUAGES``);
* documentation kinds ``markdown``, ``rst`` and ``text``, chunked by section;
* known text kinds without definition queries (``json``, ``yaml``, ``shell``, ...), windowed.

Anything else is ``None`` (the chunker still windows it if the screen accepts it as text).
"""

from __future__ import annotations

from palimpsest.index.codefacts.classify import DOC_SUFFIXES, is_doc

__all__ = [
    "DOC_EXTENSIONS",
    "DOC_LANGUAGES",
    "KNOWN_EXTENSIONS",
    "LANGUAGE_NAMES",
    "PARSED_LANGUAGES",
    "TEXT_LANGUAGES",
    "detect_language",
    "example_path",
    "fence_language",
    "file_name",
    "file_suffix",
    "is_doc",
]

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

DOC_EXTENSIONS = frozenset(DOC_SUFFIXES)
"""The suffixes a document has (docs/architecture.md, "The staleness rule"); which files with
them are documents is the shared classifier's answer (:func:`is_doc`, from
:mod:`palimpsest.index.codefacts`)."""

DOC_LANGUAGES = frozenset({"markdown", "rst", "text"})

_EXTENSIONS: dict[str, str] = {
    # grammar languages
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".c": "c",
    # C++ headers are common and the C++ grammar also reads C declarations; the reverse fails.
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    # documentation
    ".md": "markdown",
    ".mdx": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    # windowed text kinds
    ".json": "json",
    ".jsonc": "json",
    ".json5": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".properties": "properties",
    ".env": "dotenv",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".ksh": "shell",
    ".fish": "fish",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".bat": "batch",
    ".cmd": "batch",
    ".sql": "sql",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".vue": "vue",
    ".svelte": "svelte",
    ".css": "css",
    ".scss": "scss",
    ".sass": "sass",
    ".less": "less",
    ".xml": "xml",
    ".xsd": "xml",
    ".plist": "xml",
    ".csproj": "xml",
    ".gradle": "groovy",
    ".groovy": "groovy",
    ".proto": "proto",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".tf": "terraform",
    ".tfvars": "terraform",
    ".hcl": "hcl",
    ".mk": "makefile",
    ".cmake": "cmake",
    ".dockerfile": "dockerfile",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".clj": "clojure",
    ".elm": "elm",
    ".zig": "zig",
    ".nix": "nix",
    ".jl": "julia",
    ".m": "objc",
    ".mm": "objc",
    ".vim": "vim",
    ".tex": "latex",
    ".adoc": "asciidoc",
    ".csv": "csv",
    ".tsv": "tsv",
    ".j2": "jinja",
    ".jinja": "jinja",
    ".tmpl": "template",
    ".tpl": "template",
}

_FILENAMES: dict[str, str] = {
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "cmakelists.txt": "cmake",
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "jenkinsfile": "groovy",
    "justfile": "just",
    "procfile": "procfile",
    ".bashrc": "shell",
    ".profile": "shell",
    ".zshrc": "shell",
    ".gitignore": "gitignore",
    ".dockerignore": "gitignore",
    ".gitattributes": "gitattributes",
    ".editorconfig": "ini",
    "license": "text",
    "licence": "text",
    "copying": "text",
    "authors": "text",
    "notice": "text",
    "readme": "text",
    "changelog": "text",
    "codeowners": "text",
}

_PREFIXED_FILENAMES: tuple[tuple[str, str], ...] = (
    ("dockerfile.", "dockerfile"),
    ("makefile.", "makefile"),
    (".env.", "dotenv"),
)

KNOWN_EXTENSIONS = frozenset(_EXTENSIONS) | {".lock", ".sum", ".mod", ".env", ".example", ".sample"}
"""Extensions this module recognises; a dotted word ending in one reads as a file name."""

LANGUAGE_NAMES = frozenset(_EXTENSIONS.values())
"""The languages extensions map to (``python``, ``go``, …): a fence tag spelled as one is one."""

TEXT_LANGUAGES = frozenset(
    (set(_EXTENSIONS.values()) | set(_FILENAMES.values()) | {k for _, k in _PREFIXED_FILENAMES})
    - PARSED_LANGUAGES
    - DOC_LANGUAGES
)
"""Known text kinds that are windowed rather than parsed."""


_FENCE_ALIASES = {
    "golang": "go",
    "pycon": "python",
    "python3": "python",
    "py3": "python",
    "node": "javascript",
}
_SUFFIX_OF = {language: suffix for suffix, language in reversed(list(_EXTENSIONS.items()))}


def fence_language(tag: str) -> str | None:
    """The language a code fence's tag names (``py``, ``golang``, ``typescript``), or None."""
    lowered = tag.lower()
    lowered = _FENCE_ALIASES.get(lowered, lowered)
    if not lowered:
        return None
    return lowered if lowered in LANGUAGE_NAMES else detect_language(f"x.{lowered}")


def example_path(language: str) -> str | None:
    """A file name in ``language`` (``example.py``), for reading a doc's code example as that language."""
    suffix = _SUFFIX_OF.get(language)
    return f"example{suffix}" if suffix else None


def detect_language(path: str) -> str | None:
    """The language or kind of ``path`` by file name and extension, or ``None`` if unknown."""
    name = file_name(path).lower()
    by_name = _FILENAMES.get(name)
    if by_name is not None:
        return by_name
    for prefix, kind in _PREFIXED_FILENAMES:
        if name.startswith(prefix):
            return kind
    suffix = file_suffix(name)
    return _EXTENSIONS.get(suffix) if suffix else None


# ``PurePosixPath(p).name`` and ``.suffix`` for the normalised paths git lists, as plain string
# operations: a build classifies every path of the tree, and constructing the path objects cost
# ~0.7 s for 50 000 paths.
def file_name(path: str) -> str:
    """``PurePosixPath(path).name`` (``\\`` read as ``/``)."""
    return path.replace("\\", "/").rstrip("/").rpartition("/")[2]


def file_suffix(name: str) -> str:
    """``PurePosixPath(name).suffix``."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""
