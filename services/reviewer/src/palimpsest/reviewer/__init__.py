"""The reviewer: recency-aware, doc-skeptical pull-request reviews (docs/architecture.md, "Reviewer").

:func:`palimpsest.index.context.assemble.assemble_context` is the one core both callers share; the
service (:mod:`palimpsest.reviewer.service`) runs it for every ``review.requested``.
"""
