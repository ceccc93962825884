"""The features a model serves (routing) and the features usage is recorded under (accounting)."""

from __future__ import annotations

from typing import Literal, get_args

Feature = Literal["analysis", "summary", "review", "embeddings", "rerank"]
FEATURES: tuple[Feature, ...] = get_args(Feature)
# The feature a call's usage is recorded under (llm_usage.feature; migration 0012 adds `index` and
# `search`): routing says which model embeds, accounting says what the tokens were spent on.
UsageFeature = Literal["analysis", "summary", "review", "index", "search", "rerank"]
CHAT_FEATURES: frozenset[str] = frozenset({"analysis", "summary", "review"})
Message = dict[str, str]
