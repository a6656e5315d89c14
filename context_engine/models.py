"""The one configurable chat model, specialised per use with structured output and retries."""

from __future__ import annotations

from typing import Any

from context_engine.config import Settings


def chat_model(settings: Settings, **kwargs: Any):
    """A LangChain chat model for any OpenAI-compatible endpoint, or None in offline mode."""
    if not settings.llm_configured:
        return None
    from langchain_openai import ChatOpenAI  # lazy: importing it costs ~0.5 s

    return ChatOpenAI(model=settings.model, base_url=settings.openai_base_url,
                      api_key=settings.openai_api_key or "not-needed", temperature=0, timeout=120,
                      max_retries=1, **kwargs)
