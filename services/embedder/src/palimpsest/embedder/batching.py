"""Turning chunks into provider requests: token estimates, truncation, batches by tokens AND count.

Providers limit a request both by the number of inputs and by its total tokens, and each input by
its own token limit (a peer broke on large repositories by batching on count alone). We estimate
tokens from characters, conservatively for code (``chars_per_token`` ≈ 3, where English prose is
nearer 4), so a batch planned here stays under the provider's limit without a tokenizer download.
An input over the per-input limit is truncated and counted, never dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BatchLimits:
    max_inputs: int = 64
    max_tokens: int = 50_000
    max_input_tokens: int = 8_000
    chars_per_token: float = 3.0


@dataclass(frozen=True, slots=True)
class Item:
    """One chunk to embed: its key, the text sent, and whether that text was truncated."""

    blob_sha: str
    ordinal: int
    text: str
    tokens: int
    truncated: bool = False


def estimate_tokens(text: str, chars_per_token: float) -> int:
    return max(1, math.ceil(len(text) / chars_per_token))


def truncate(text: str, max_tokens: int, chars_per_token: float) -> tuple[str, bool]:
    """``text`` cut to fit ``max_tokens`` (by the same estimate); True when it was cut."""
    limit = int(max_tokens * chars_per_token)
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def embedding_text(name: str | None, kind: str, content: str) -> str:
    """What is embedded for a chunk: its definition name (if any) and content, never its path.

    Chunks are content addressed by blob, and one blob can sit at several paths, so the vector
    must depend on the blob alone.
    """
    text = content if content.strip() else (name or "")
    if name and kind not in ("window", "section"):
        return f"{kind} {name}\n{text}"
    return text


def make_item(blob_sha: str, ordinal: int, text: str, limits: BatchLimits) -> Item:
    cut, truncated = truncate(text or " ", limits.max_input_tokens, limits.chars_per_token)
    return Item(blob_sha, ordinal, cut, estimate_tokens(cut, limits.chars_per_token), truncated)


def plan_batches(items: Iterable[Item], limits: BatchLimits) -> Iterator[list[Item]]:
    """Group items in order into batches under both the count and the token limit."""
    batch: list[Item] = []
    tokens = 0
    for item in items:
        if batch and (len(batch) >= limits.max_inputs or tokens + item.tokens > limits.max_tokens):
            yield batch
            batch, tokens = [], 0
        batch.append(item)
        tokens += item.tokens
    if batch:
        yield batch


def halve(item: Item, limits: BatchLimits) -> Item:
    """A single input the provider still finds too long: keep the first half of it."""
    text = item.text[: max(1, len(item.text) // 2)]
    return Item(item.blob_sha, item.ordinal, text, estimate_tokens(text, limits.chars_per_token), True)
