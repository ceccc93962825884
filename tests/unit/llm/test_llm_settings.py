"""LLM gateway settings: routing by feature, and no credentials in URLs or error messages."""

from __future__ import annotations

import os

import pytest

from palimpsest.core.errors import SettingsError
from palimpsest.core.llm import FEATURES, LLMSettings
from palimpsest.core.settings import load


def test_feature_models_fall_back_to_the_default_for_chat_only() -> None:
    s = LLMSettings(llm_model="openai/chat", llm_review_model="openai/review", llm_embeddings_model=None)
    assert s.model_for("analysis") == "openai/chat"
    assert s.model_for("summary") == "openai/chat"
    assert s.model_for("review") == "openai/review"
    assert s.model_for("embeddings") is None
    assert s.model_for("rerank") is None
    assert set(FEATURES) == {"analysis", "summary", "review", "embeddings", "rerank"}


def test_blank_means_unset() -> None:
    assert LLMSettings(llm_model="  ").llm_model is None


def test_api_base_with_credentials_is_refused_without_echoing_them() -> None:
    os.environ["PALIMPSEST_LLM_API_BASE"] = "https://user:hunter2secret@models.internal/v1"
    try:
        with pytest.raises(SettingsError) as refused:
            load(LLMSettings)
    finally:
        del os.environ["PALIMPSEST_LLM_API_BASE"]
    assert "PALIMPSEST_LLM_API_BASE" in str(refused.value)
    assert "hunter2secret" not in str(refused.value)


def test_api_base_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        LLMSettings(llm_api_base="ftp://models.internal")


def test_the_key_is_a_secret() -> None:
    s = LLMSettings(llm_api_key="sk-visible-nowhere")
    assert "sk-visible-nowhere" not in repr(s) and "sk-visible-nowhere" not in str(s.model_dump())
