"""Trace context crosses the bus: the consumer's span is a child of the span that wrote the event."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import Probe
from palimpsest.core.outbox import emit
from palimpsest.core.service import Infra
from tests.support.bus import Recorder, consuming
from tests.support.tenants import create_tenant


async def test_consumer_span_is_child_of_producer_span(infra: Infra) -> None:
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    tenant = await create_tenant(infra.pool, "trace")
    rec = Recorder(tenant)
    async with consuming(infra, "t-trace", rec):
        with tracer.start_as_current_span("producer") as producer:
            ev = Probe(tenant_id=tenant)
            async with tenant_tx(infra.pool, tenant) as conn:
                await emit(conn, ev)
        await rec.wait_for(1)
    producer_ctx = producer.get_span_context()
    consumer_spans = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "t-trace probe"
        and s.attributes
        and s.attributes.get("messaging.message.id") == str(ev.id)
    ]
    assert len(consumer_spans) == 1
    span = consumer_spans[0]
    assert span.parent is not None
    assert span.parent.span_id == producer_ctx.span_id
    assert span.context.trace_id == producer_ctx.trace_id
