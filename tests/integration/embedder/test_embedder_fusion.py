"""Reciprocal rank fusion (k = 60) and the gateway-error translation: pure functions, no servers."""

from __future__ import annotations

import pytest

from palimpsest.core.errors import ModelCallFailed
from palimpsest.embedder.errors import BatchTooLarge, ProviderError, ProviderUnavailable, RateLimited
from palimpsest.embedder.gateway import translate
from palimpsest.index.hybrid import RRF_K, reciprocal_rank_fusion
from palimpsest.index.search import SearchHit


def hit(key: str, score: float = 1.0) -> SearchHit:
    return SearchHit(f"src/{key}.py", 1, 2, "function", key, "python", score, key * 4, 0, "")


def test_rrf_rewards_agreement_and_keeps_lexical_order_on_ties() -> None:
    lexical = [hit("a"), hit("b"), hit("c")]
    semantic = [hit("c"), hit("d"), hit("a")]
    fused = reciprocal_rank_fusion([lexical, semantic], k=RRF_K)
    assert [h.name for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63, abs=1e-6)
    assert fused[2].score == pytest.approx(1 / 62, abs=1e-6)
    # b (lexical #2) and d (semantic #2) tie; the lexical list breaks the tie
    assert fused[2].score == fused[3].score


def test_rrf_with_one_list_is_that_list() -> None:
    only = [hit("x"), hit("y")]
    assert [h.name for h in reciprocal_rank_fusion([only, []], limit=1)] == ["x"]
    assert reciprocal_rank_fusion([[], []]) == []


@pytest.mark.parametrize(
    ("reason", "status", "detail", "expected"),
    [
        ("rate_limited", 429, "", RateLimited),
        ("timeout", None, "", ProviderUnavailable),
        ("server_error", 503, "", ProviderUnavailable),
        ("malformed_response", 200, "", ProviderUnavailable),
        ("context_window_exceeded", 400, "maximum context length", BatchTooLarge),
        ("bad_request", 413, "", BatchTooLarge),
        ("bad_request", 400, "Requested 310000 tokens, max 300000 tokens per request", BatchTooLarge),
        ("bad_request", 400, "'$.input' is invalid", ProviderError),
        ("authentication", 401, "invalid api key", ProviderError),
    ],
)
def test_gateway_failures_are_translated(
    reason: str, status: int | None, detail: str, expected: type
) -> None:
    error = translate(ModelCallFailed(reason, attempts=1, status=status, detail=detail))
    assert type(error) is expected
