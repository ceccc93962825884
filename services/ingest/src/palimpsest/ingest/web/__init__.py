"""The read-only web view under ``/ui``: repositories, analyses, documentation findings, files,
reviews and search, rendered on the server (Jinja2, autoescaped) from the same read functions as
the /v1 API, in the caller's tenant transaction. See docs/web.md."""
