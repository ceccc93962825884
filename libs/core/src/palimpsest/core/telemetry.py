"""Traces, logs and the trace context that crosses the bus.

Every process calls :func:`setup` once at start-up. Traces go to OTLP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces-specific variable) is set, and log records are then
exported too; logs are always written to stderr as JSON lines carrying ``trace_id``/``span_id``.
The W3C ``traceparent`` of the span that writes an outbox row is stored with the row and sent as a
NATS header, so the consumer's span is a child of the producer's (:func:`extract`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

_configured = False
tracer = trace.get_tracer("palimpsest")


def current_trace_headers() -> dict[str, str]:
    """The current span's W3C trace context as headers (empty when no span is recording)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract(headers: Mapping[str, str] | None) -> otel_context.Context:
    """A context whose parent is the span described by ``traceparent`` in ``headers``."""
    return propagate.extract(dict(headers or {}))


class JsonFormatter(logging.Formatter):
    """One JSON object per line with the active trace ids, for log pipelines and humans with jq."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            out["trace_id"] = format(ctx.trace_id, "032x")
            out["span_id"] = format(ctx.span_id, "016x")
        for key in ("tenant_id", "event_id", "event_type", "repository_id", "consumer"):
            value = getattr(record, key, None)
            if value is not None:
                out[key] = str(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def setup(
    service: str,
    *,
    log_level: str = "INFO",
    log_format: str = "json",
    span_exporter: SpanExporter | None = None,
) -> None:
    """Install the tracer provider and log handlers for this process (idempotent)."""
    global _configured
    root = logging.getLogger()
    root.setLevel(log_level)
    if not any(getattr(h, "_palimpsest", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            JsonFormatter(service)
            if log_format == "json"
            else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        handler._palimpsest = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    for noisy in ("nats", "faststream", "psycopg.pool", "uvicorn.access", "httpx", "LiteLLM"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    if _configured:
        return
    _configured = True
    provider = TracerProvider(resource=Resource.create({"service.name": f"palimpsest-{service}"}))
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if span_exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(span_exporter))
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        _setup_otlp_logs(service, root)
    trace.set_tracer_provider(provider)


def _setup_otlp_logs(service: str, root: logging.Logger) -> None:
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    provider = LoggerProvider(resource=Resource.create({"service.name": f"palimpsest-{service}"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(provider)
    root.addHandler(LoggingHandler(logger_provider=provider))
