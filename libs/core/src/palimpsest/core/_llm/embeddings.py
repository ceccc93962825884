"""The embedder's part of the gateway (issue 7): the result type, the readers of an embeddings
reply, and the direct client of OpenAI-compatible APIs (the entry points, ``embeddings_route``
and ``embed``, are :class:`~palimpsest.core._llm.client.Gateway`'s)."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import struct
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from palimpsest.core._llm.routes import Route
from palimpsest.core._llm.usage import Usage, priced
from palimpsest.core.errors import ModelCallFailed


@dataclass(frozen=True, slots=True)
class EmbedResult:
    """One vector per input, in input order (embedder, issue 7)."""

    vectors: list[list[float]]
    model: str
    usage: Usage
    attempts: int


@dataclass(frozen=True, slots=True)
class Tokens:
    prompt_tokens: int


@dataclass(frozen=True, slots=True)
class Embeddings:
    """An embeddings reply read straight from an OpenAI-compatible API (see :func:`openai_embed`)."""

    data: list[Any]
    usage: Tokens


def openai_compatible(route: Route, key: str | None) -> bool:
    """Whether embeddings of ``route`` go straight to its OpenAI-compatible API base: an ``openai/``
    model with an API base and a key to send (without a key litellm reads the provider's variable;
    without a base it picks the provider's default: both stay with litellm)."""
    return route.model.startswith("openai/") and bool(route.api_base) and key is not None


# AsyncOpenAI clients (their connection pools) per (API base, key, timeout), kept per process as
# litellm keeps its own, for the event loop that made them; Gateway.aclose closes them
_OPENAI_CLIENTS: dict[tuple[str, str, float], tuple[asyncio.AbstractEventLoop, Any]] = {}


def _openai_client(api_base: str, key: str, timeout_s: float) -> Any:
    loop = asyncio.get_running_loop()
    found = _OPENAI_CLIENTS.get((api_base, key, timeout_s))
    if found is not None and found[0] is loop:
        return found[1]
    openai = importlib.import_module("openai")  # loaded with litellm already
    client = openai.AsyncOpenAI(api_key=key, base_url=api_base, max_retries=0, timeout=timeout_s)
    _OPENAI_CLIENTS[(api_base, key, timeout_s)] = (loop, client)
    return client


async def close_openai_clients() -> None:
    """Close the cached OpenAI clients and forget them (the next call opens a new one)."""
    clients = list(_OPENAI_CLIENTS.values())
    _OPENAI_CLIENTS.clear()
    for _, client in clients:
        await client.close()


async def openai_embed(
    api_base: str, key: str, timeout_s: float, model: str, inputs: list[str], *, packed: bool
) -> Embeddings:
    """One embeddings request to an OpenAI-compatible API base, through the OpenAI SDK that
    litellm itself would use for it, without litellm's per-call wrapper: its logging, response
    metadata and the SDK's typed response models cost ~3 ms per chunk on a 2-core machine,
    more than the rest of the embedder (``palimpsest bench embed``). The reply is read as
    JSON; errors are the SDK's (what the retry classifier reads: status, ``Retry-After``, timeouts)."""
    client = _openai_client(api_base, key, timeout_s)
    raw = await client.embeddings.with_raw_response.create(
        model=model.split("/", 1)[1], input=inputs, encoding_format="base64" if packed else "float"
    )
    body = json.loads(raw.content)  # ValueError: a malformed response, retried
    if not isinstance(body, dict):
        raise ValueError("an embeddings reply that is not a JSON object")
    usage = body.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return Embeddings(body.get("data") or [], Tokens(int(tokens or 0)))


_UNPRICED: set[str] = set()  # models litellm's local price map does not know (it never changes)


def embedding_cost(litellm: ModuleType, route: Route, prompt_tokens: int) -> float | None:
    """The cost of ``prompt_tokens`` embedded by ``route``: its own price, else litellm's price map
    (as completion_cost prices an embeddings response: per prompt token), else unknown."""
    cost = priced(route, prompt_tokens, 0)
    if cost is not None or route.model in _UNPRICED:
        return cost
    try:
        prompt_cost, _ = litellm.cost_per_token(
            model=route.model, prompt_tokens=prompt_tokens, completion_tokens=0, call_type="aembedding"
        )
    except Exception:  # the model is not in litellm's (local) price map
        _UNPRICED.add(route.model)
        return None
    return float(prompt_cost)


def vectors_of(response: Any, expected: int, attempts: int) -> list[list[float]]:
    """The vectors of an embeddings response, ordered by their ``index`` (embedder, issue 7)."""
    try:
        items = list(getattr(response, "data", None) or [])
        pairs = [
            (int(_field(item, "index", position)), [float(x) for x in _field(item, "embedding", [])])
            for position, item in enumerate(items)
        ]
    except (TypeError, ValueError) as exc:
        raise ModelCallFailed(
            "malformed_response", attempts=attempts, detail="unreadable embeddings"
        ) from exc
    if len(pairs) != expected:
        raise ModelCallFailed(
            "malformed_response", attempts=attempts, detail=f"{len(pairs)} embeddings for {expected} inputs"
        )
    pairs.sort(key=lambda pair: pair[0])
    return [vector for _, vector in pairs]


def _field(item: Any, name: str, default: Any) -> Any:
    value = item.get(name, default) if isinstance(item, dict) else getattr(item, name, default)
    if name == "embedding" and isinstance(value, str):  # encoding_format=base64: little-endian float32
        raw = base64.b64decode(value)
        return struct.unpack(f"<{len(raw) // 4}f", raw)
    return value


def quiet_base64() -> None:
    """litellm's response model declares ``list[float]``; a base64 string makes pydantic warn."""
    warnings.filterwarnings("ignore", message=r"(?s).*Expected `list\[float\]`", category=UserWarning)


def no_sdk_retries(litellm: ModuleType) -> None:
    """Keep retries ours for embeddings too (embedder, issue 7).

    litellm's OpenAI embedding path reads ``max_retries or litellm.DEFAULT_MAX_RETRIES``, so an
    explicit 0 becomes 2 and the OpenAI SDK retries 429s, 5xx and timeouts on its own, unseen by
    our backoff, usage records and heartbeats (litellm issue #7003). Every gateway call passes
    ``max_retries`` explicitly, so a default of 0 changes nothing else.
    """
    if getattr(litellm, "DEFAULT_MAX_RETRIES", 0) != 0:
        setattr(litellm, "DEFAULT_MAX_RETRIES", 0)  # noqa: B010 - an untyped module attribute
