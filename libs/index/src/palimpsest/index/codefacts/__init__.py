"""Code facts, one answer for every caller: what kind of file a path is (:mod:`.classify`), what
kind of page a document is by its text (:mod:`.pages`: generated reference, pointer pages),
which packages a repository declares and what the standard libraries are
(:mod:`.dependencies`), whose module a doc's example ties a name to (:mod:`.owners`) and what a
blob defines (:mod:`.definitions`, read with the tree-sitter grammars and tags queries of
:mod:`.grammars`, :mod:`.queries` and :mod:`.tags`, which need the ``treesitter`` extra and are
imported only by what uses them)."""

from __future__ import annotations

from palimpsest.index.codefacts.classify import (
    DOC_SUFFIXES,
    FileFacts,
    Kind,
    classify,
    is_benchmark,
    is_changelog,
    is_ci_config,
    is_definition_site,
    is_doc,
    is_generated,
    is_generated_source,
    is_history_doc,
    is_history_file,
    is_lockfile,
    is_output_path,
    is_primary_source,
    is_test,
    is_vendored,
    rival_version_dirs,
    superseded_version_dirs,
)

__all__ = [
    "DOC_SUFFIXES",
    "FileFacts",
    "Kind",
    "classify",
    "is_benchmark",
    "is_changelog",
    "is_ci_config",
    "is_definition_site",
    "is_doc",
    "is_generated",
    "is_generated_source",
    "is_history_doc",
    "is_history_file",
    "is_lockfile",
    "is_output_path",
    "is_primary_source",
    "is_test",
    "is_vendored",
    "rival_version_dirs",
    "superseded_version_dirs",
]
