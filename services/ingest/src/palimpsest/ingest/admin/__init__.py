"""The operations behind the /v1 API, independent of HTTP: who is asking, and what they may change."""
