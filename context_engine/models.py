"""The one configurable chat model, specialised per node with structured output and retries.

A run may give a model per role (`config.CHAT_ROLES`) as a LangChain chat model instance or an
`init_chat_model` string ("openai:gpt-4.1-mini", "anthropic:...", any provider LangChain knows);
otherwise the environment's OpenAI-compatible endpoint serves every role. Offline: no model.
"""

from __future__ import annotations

from typing import Any

from context_engine.config import Settings


def chat_model(settings: Settings, role: str = "", **kwargs: Any):
    """The chat model for `role` (router, planner, generator, judge), or None in offline mode."""
    if not settings.llm_configured:
        return None
    spec = settings.chat_model_spec(role)
    if spec and not isinstance(spec, str):
        return spec  # a chat model instance given by the run
    if isinstance(spec, str) and ":" in spec:
        from langchain.chat_models import init_chat_model  # lazy: provider packages are heavy

        endpoint = ({"base_url": settings.openai_base_url, "api_key": settings.openai_api_key or "not-needed"}
                    if spec.startswith("openai:") and settings.openai_base_url else {})
        return init_chat_model(spec, temperature=0, **endpoint, **kwargs)
    if not (settings.openai_base_url or settings.openai_api_key):
        return None
    from langchain_openai import ChatOpenAI  # lazy: importing it costs ~0.5 s

    return ChatOpenAI(model=spec or settings.model, base_url=settings.openai_base_url,
                      api_key=settings.openai_api_key or "not-needed", temperature=0, timeout=120,
                      max_retries=1, **kwargs)


def structured_output(model: Any, schema: Any):
    """`model` answering in `schema`: JSON mode where the model offers it (OpenAI-compatible servers,
    small local models that have no tool calling), else the model's own default method."""
    try:
        return model.with_structured_output(schema, method="json_mode")
    except (TypeError, ValueError, NotImplementedError):
        return model.with_structured_output(schema)
