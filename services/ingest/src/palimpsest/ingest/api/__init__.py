"""The HTTP face of the ingest service: webhook endpoints and the /v1 admin and read API (FastAPI)."""
