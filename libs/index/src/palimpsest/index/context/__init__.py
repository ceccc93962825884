"""The review context as a library: what a pull request is reviewed with, for every caller.

The reviewer service (``palimpsest.reviewer``) reviews with it, and the ingest service's MCP
server (``review_context``) previews it in-process; neither imports the other. It holds:

* :mod:`~palimpsest.index.context.candidates` -- the five context sources (definitions, usage,
  related code, the graph's neighbourhood, co-change partners);
* :mod:`~palimpsest.index.context.assemble` -- assembly: freshness against head, ranking by the
  calibrated per-source model (or a rerank model), doc demotion by the analyzer's doc states
  (:func:`palimpsest.index.docstates.doc_states`), the token budget;
* :mod:`~palimpsest.index.context.preview` -- the context of a change without reviewing it;
* what they need to open a change: :mod:`~palimpsest.index.context.change`,
  :mod:`~palimpsest.index.context.source`, :mod:`~palimpsest.index.context.overlay`,
  :mod:`~palimpsest.index.context.diff`, the base's config (:mod:`~palimpsest.index.context.crossrepo`,
  :mod:`~palimpsest.index.context.rules`) and :class:`~palimpsest.index.context.errors.ReviewFailed`.

Like the rest of ``palimpsest.index`` it imports only ``palimpsest.core`` (and ``palimpsest.index``).
"""
