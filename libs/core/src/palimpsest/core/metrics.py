"""Every Prometheus metric Palimpsest emits, declared in one place.

Dashboards and alerts query these names; a test reads the Grafana JSON and checks that every
metric it uses is registered here, so a rename cannot silently break a panel. Services import
the objects they update; the registry is exposed on each process's ``/metrics`` endpoint.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

# --- bus: outbox relay and consumers -------------------------------------------------------
EVENTS_PUBLISHED = Counter(
    "palimpsest_events_published",
    "Outbox events published to JetStream and acknowledged (PubAck).",
    ["type"],
    registry=REGISTRY,
)
OUTBOX_PENDING = Gauge(
    "palimpsest_outbox_pending",
    "Outbox rows not yet published, as seen by the relay's last pass.",
    registry=REGISTRY,
)
RELAY_PUBLISH_FAILURES = Counter(
    "palimpsest_relay_publish_failures",
    "Outbox publish attempts that did not get a PubAck (retried later).",
    registry=REGISTRY,
)
EVENTS_CONSUMED = Counter(
    "palimpsest_events_consumed",
    "Events handled by a consumer, by outcome (applied, duplicate, failed, unhandled, ignored).",
    ["consumer", "type", "outcome"],
    registry=REGISTRY,
)
EVENT_HANDLE_SECONDS = Histogram(
    "palimpsest_event_handle_seconds",
    "Time a consumer spent handling one event.",
    ["consumer", "type"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
EVENT_LAG_SECONDS = Histogram(
    "palimpsest_event_lag_seconds",
    "Time from an event's occurred_at to the end of its handling (end-to-end latency).",
    ["consumer", "type"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
CONSUMER_PENDING = Gauge(
    "palimpsest_consumer_pending_messages",
    "Messages in the stream not yet delivered to this durable consumer (its lag).",
    ["consumer"],
    registry=REGISTRY,
)
CONSUMER_ACK_PENDING = Gauge(
    "palimpsest_consumer_ack_pending_messages",
    "Messages delivered to this durable consumer and not yet acknowledged.",
    ["consumer"],
    registry=REGISTRY,
)
STREAM_REPLICA_LAG = Gauge(
    "palimpsest_stream_replica_lag_operations",
    "Operations a follower of the event stream is behind its leader, by replica (JetStream cluster).",
    ["replica"],
    registry=REGISTRY,
)
STREAM_REPLICA_CURRENT = Gauge(
    "palimpsest_stream_replica_current",
    "1 while a follower of the event stream is current and online, 0 while it is behind or offline.",
    ["replica"],
    registry=REGISTRY,
)
DEAD_LETTERS = Counter(
    "palimpsest_dead_letters",
    "Messages that exhausted max_deliver and were recorded as dead letters.",
    ["consumer"],
    registry=REGISTRY,
)

# --- index -------------------------------------------------------------------------------
INDEX_BUILD_SECONDS = Histogram(
    "palimpsest_index_build_seconds",
    "Duration of a snapshot build (read, parse, chunk, write), by final state.",
    ["state"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
INDEX_BUILDS = Counter(
    "palimpsest_index_builds",
    "Snapshot builds by final state and failure reason (empty when ready).",
    ["state", "reason"],
    registry=REGISTRY,
)
REPOSITORIES_FAILING = Gauge(
    "palimpsest_repositories_failing",
    "Repositories of a tenant whose last build or analysis failed, is retrying or was dead-lettered"
    " (repository_outcomes, read by ingest every 30 s), by tenant and kind (build, analysis).",
    ["tenant", "kind"],
    registry=REGISTRY,
)
INDEX_SKIPPED_FILES = Counter(
    "palimpsest_index_skipped_files",
    "Files skipped while building a snapshot, by reason.",
    ["reason"],
    registry=REGISTRY,
)
RECENCY_SCANS = Counter(
    "palimpsest_recency_scans",
    "Recency scans by status (ok, failed, disabled) and failure reason.",
    ["status", "reason"],
    registry=REGISTRY,
)
RECENCY_SCAN_SECONDS = Histogram(
    "palimpsest_recency_scan_seconds",
    "Duration of a recency scan (clone, log, parse, write).",
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
EMBEDDING_RUNS = Counter(
    "palimpsest_embedding_runs",
    "Embedding runs per snapshot by final embedding state.",
    ["state"],
    registry=REGISTRY,
)
EMBEDDED_CHUNKS = Counter(
    "palimpsest_embedded_chunks",
    "Chunks embedded.",
    registry=REGISTRY,
)

# --- LLM gateway -------------------------------------------------------------------------
LLM_TOKENS = Counter(
    "palimpsest_llm_tokens",
    "Tokens sent to and received from models, by feature, tenant and direction.",
    ["feature", "tenant", "direction"],
    registry=REGISTRY,
)
LLM_COST_USD = Counter(
    "palimpsest_llm_cost_usd",
    "Model spend in US dollars where the price is known, by feature and tenant.",
    ["feature", "tenant"],
    registry=REGISTRY,
)
LLM_BUDGET_USED_RATIO = Gauge(
    "palimpsest_llm_budget_used_ratio",
    "The share of its monthly model budget a tenant has spent (1 = exhausted), as of its last model call.",
    ["tenant"],
    registry=REGISTRY,
)
LLM_REQUESTS = Counter(
    "palimpsest_llm_requests",
    "Model requests by feature and outcome (ok, error, budget_exceeded).",
    ["feature", "outcome"],
    registry=REGISTRY,
)

# --- ingest, analysis, review --------------------------------------------------------------
BACKFILL_REQUESTS = Counter(
    "palimpsest_backfill_index_requests",
    "Index requests of the maintenance backfill by why (missing, failed, stuck, behind, local).",
    ["why"],
    registry=REGISTRY,
)
INSTALLATION_SYNCS = Counter(
    "palimpsest_installation_syncs",
    "Installation syncs (the provider asked for the installation's repositories) by provider and outcome"
    " (ok, error).",
    ["provider", "outcome"],
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "palimpsest_webhook_deliveries",
    "Webhook deliveries by provider, event and outcome (accepted, duplicate, ignored, rejected).",
    ["provider", "event", "outcome"],
    registry=REGISTRY,
)
HTTP_REQUEST_SECONDS = Histogram(
    "palimpsest_http_request_seconds",
    "HTTP request latency of the ingest API by route template and status class.",
    ["route", "status"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
ANALYSES = Counter(
    "palimpsest_analyses",
    "Repository analyses by final state (completed, failed) and mode (model, mechanical).",
    ["state", "mode"],
    registry=REGISTRY,
)
REVIEW_SECONDS = Histogram(
    "palimpsest_review_seconds",
    "Time from review.requested to a stored review, by outcome.",
    ["outcome"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
REVIEWS_POSTED = Counter(
    "palimpsest_reviews_posted",
    "Reviews posted back to a provider, by provider and outcome.",
    ["provider", "outcome"],
    registry=REGISTRY,
)
REVIEW_FEEDBACK = Counter(
    "palimpsest_review_feedback",
    "Posted review findings and what happened to them, by provider, repository (full name), category"
    " (lower case, at most 40 characters) and outcome: posted, resolved, unresolved, code_changed,"
    " reply, reaction_positive, reaction_negative, reaction_other. Accepted = resolved + code_changed +"
    " reaction_positive.",
    ["provider", "repository", "category", "outcome"],
    registry=REGISTRY,
)


def feedback_category(category: str) -> str:
    """A finding's category as a metric label (the model's words: bounded, lower case)."""
    return " ".join(category.lower().split())[:40] or "other"


REVIEW_FINDINGS_POSTED = Counter(
    "palimpsest_review_findings_posted",
    "Findings of posted reviews by where they went: inline, summary (no position on the diff),"
    " existing (posted by an earlier push, not repeated), resolved (an earlier one whose code changed).",
    ["provider", "outcome"],
    registry=REGISTRY,
)
