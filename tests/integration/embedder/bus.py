"""Running the real embedder service (with a chunker) in a test, against the fake model server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from pydantic import SecretStr

from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.embedder.gateway import embedder_gateway, gateway_providers
from palimpsest.embedder.service import Embedder, Settings
from tests.integration.embedder.support import chunker_definition
from tests.support.pipeline import services

MODEL = "openai/fake-embed"
KEY = "sk-test-embedder-0123456789"


def embedder_settings(fake: FakeLLM | None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        **Settings().model_dump(),
        "llm_embeddings_model": MODEL,
        "llm_api_base": fake.base_url if fake else None,
        "llm_api_key": SecretStr(KEY),
        "embed_retry_base_s": 0.01,
        "embed_retry_max_s": 0.05,
        "embed_max_retries": 3,
        "embed_request_timeout_s": 5.0,
    }
    values.update(overrides)
    return Settings.model_construct(**values)


def embedder_definition(infra: Infra, settings: Settings) -> tuple[ServiceDefinition, Gateway]:
    name = f"t-embedder-{uuid.uuid4().hex[:6]}"
    gateway = embedder_gateway(infra, settings, settings.embed_request_timeout_s)
    embedder = Embedder(settings, gateway_providers(gateway))
    spec = ConsumerSpec(name, CONSUMERS["embedder"].event_types, batch=2, deliver_new=True)
    return ServiceDefinition(name, {"snapshot.built": embedder.handle}, spec), gateway


@contextlib.asynccontextmanager
async def pipeline(infra: Infra, fake: FakeLLM | None, **overrides: Any) -> AsyncIterator[Gateway]:
    """A chunker and an embedder (configured by ``overrides``) consuming new events."""
    definition, gateway = embedder_definition(infra, embedder_settings(fake, **overrides))
    # no gateway.aclose() here: it closes the HTTP clients every gateway of the process shares
    # (litellm's cache), under the calls other tests' services may have in flight
    async with services(infra, [chunker_definition(f"t-echunk-{uuid.uuid4().hex[:6]}"), definition]):
        yield gateway
