"""Code facts: what kind of file a path is (:mod:`.classify`), one answer for every caller."""

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
    is_history_doc,
    is_history_file,
    is_lockfile,
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
    "is_history_doc",
    "is_history_file",
    "is_lockfile",
    "is_primary_source",
    "is_test",
    "is_vendored",
    "rival_version_dirs",
    "superseded_version_dirs",
]
