"""The ingest service: Palimpsest's only door — provider webhooks and the admin/read API.

Layers, outside in: `api` (FastAPI app, uvicorn server), `intake` and `admin` (what a delivery or
an API call means), `load` → `decide` → `apply` (a verified delivery: the typed rows it needs,
the writes and events it causes as data (`intents`), and running them), `store` (SQL, one
module per table), `webhooks` (pure verification and parsing). It does no slow work itself: it
validates, records and emits events through the outbox.
"""
