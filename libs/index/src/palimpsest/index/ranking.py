"""The static prior of lexical search: how much a chunk's text score counts, by its file's kind.

Code search engines rank product code above tests, vendored and generated files at the same term
statistics (issue 55). The chunker stores :func:`file_prior` of the path a blob is analysed at in
every chunk row (``code_chunks.prior``, migration 0056), and the candidate functions rank by
``ts_rank_cd * prior``, plus the definition bonuses (the chunk named as the identifier searched,
then any definition chunk), so the identifier's definition still comes first.

The kind is the shared classifier's (:func:`palimpsest.index.codefacts.classify`); this module
only weights it. The weights are stated, not fitted: product code counts fully; documentation,
configuration and the repository's own tooling a little less (they are often what is wanted,
but the code is the answer more often); examples and tests less; generated and vendored files,
which are rarely what anyone searching a repository means, least.
"""

from __future__ import annotations

from palimpsest.index.codefacts.classify import Kind, classify

__all__ = ["KIND_PRIORS", "TIER_BOUNDS", "TOOLING_PRIOR", "file_prior"]

KIND_PRIORS: dict[Kind, float] = {
    Kind.CODE: 1.0,
    Kind.DOC: 0.9,
    Kind.CONFIG: 0.8,
    Kind.OTHER: 0.7,
    Kind.EXAMPLE: 0.7,
    Kind.TEST: 0.6,
    Kind.CHANGELOG: 0.5,
    Kind.ASSET: 0.5,
    Kind.GENERATED: 0.4,
    Kind.VENDORED: 0.4,
}
"""A chunk's prior by its file's kind (0 < prior <= 1; migration 0056 checks the range)."""

TOOLING_PRIOR = 0.8
"""Code that serves the repository rather than being its product (scripts, benchmarks, tools)."""


TIER_BOUNDS = (0.95, 0.65)
"""Where the tiers of the prior meet: the partial GIN indexes of ``code_chunks.lexical`` (migration
0057) hold product code (prior >= 0.95), then docs, configuration, tooling, examples and other files,
then tests, changelogs, assets, generated and vendored files (prior < 0.65); lexical search draws its
candidate pool in that order. No prior sits at a bound (a test checks it, and that the migration's
predicates are these)."""


def file_prior(path: str) -> float:
    """The static prior of the chunks of the file at ``path`` (see the module docstring)."""
    facts = classify(path)
    if facts.kind is Kind.CODE and facts.tooling:
        return TOOLING_PRIOR
    return KIND_PRIORS[facts.kind]
