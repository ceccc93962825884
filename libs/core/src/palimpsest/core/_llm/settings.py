"""The model settings (``PALIMPSEST_LLM_*``)."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from palimpsest.core._llm.features import CHAT_FEATURES
from palimpsest.core.settings import ENV_PREFIX, SECRETS_DIR


class LLMSettings(BaseSettings):
    """Model settings (``PALIMPSEST_LLM_*``); a service's Settings class may inherit them too."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        secrets_dir=str(SECRETS_DIR) if SECRETS_DIR.is_dir() else None,
        extra="ignore",
        case_sensitive=False,
    )

    llm_model: str | None = Field(
        default=None,
        description='Default chat model in litellm form, e.g. "openai/gpt-4o-mini"; a tenant route wins (None: no model).',
    )
    llm_analysis_model: str | None = Field(
        default=None, description="Model of the repository analysis (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_summary_model: str | None = Field(
        default=None, description="Model of the analysis summary (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_review_model: str | None = Field(
        default=None, description="Model of pull-request reviews (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_embeddings_model: str | None = Field(
        default=None,
        description="Embeddings model of hybrid repositories, litellm form (None: no embeddings).",
    )
    llm_rerank_model: str | None = Field(
        default=None, description="Rerank model of review context (None: no reranking)."
    )
    llm_api_base: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. …/v1.")
    llm_api_key: SecretStr | None = Field(
        default=None,
        description="API key of the model provider (from the env or a mounted secret).",
    )
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Seconds one model call may take.")
    llm_max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries of a model call that failed for a transient reason."
    )
    llm_retry_base_s: float = Field(
        default=2.0, ge=0, description="First retry delay of a model call (doubling each retry)."
    )
    llm_retry_max_s: float = Field(default=60.0, ge=0, description="Longest retry delay of a model call.")
    llm_monthly_budget_usd: float | None = Field(
        default=None,
        ge=0,
        description="Monthly model spend per tenant in USD; calls past it are refused (None: no limit).",
    )
    llm_input_usd_per_mtok: float | None = Field(
        default=None,
        ge=0,
        description="Input price per million tokens, overriding litellm's price table.",
    )
    llm_output_usd_per_mtok: float | None = Field(
        default=None, ge=0, description="Output price per million tokens, overriding litellm's price table."
    )

    @field_validator(
        "llm_model",
        "llm_analysis_model",
        "llm_summary_model",
        "llm_review_model",
        "llm_embeddings_model",
        "llm_rerank_model",
        "llm_api_base",
    )
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("llm_api_base")
    @classmethod
    def _no_credentials_in_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_api_base(value)
        return value

    def model_for(self, feature: str) -> str | None:
        """The model the settings name for ``feature`` (tenant routes are not considered)."""
        specific: str | None = getattr(self, f"llm_{feature}_model", None)
        if specific is not None:
            return specific
        return self.llm_model if feature in CHAT_FEATURES else None


def check_api_base(url: str) -> None:
    """An API base must be an http(s) URL without credentials in it (keys travel in headers)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("the LLM API base must be an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("the LLM API base must not contain credentials; use PALIMPSEST_LLM_API_KEY")
