"""Engine configuration: one dataclass, filled from explicit values, then the environment.

LangGraph nodes read it from the run context (`Runtime.context`); the CLI and the library build
it with `Settings.from_env(...)`. Nothing reads the environment anywhere else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

HIDDEN_FIELDS: frozenset[str] = frozenset({"_id", "tenant_id", "acl"})
"""Fields that never leave the store: not in a schema, a prompt, a model-written query or a result."""

COLLECTIONS: tuple[str, ...] = ("pull_requests", "issues", "messages", "documents", "commits", "people")

PUBLIC = "*"
"""The access-list entry that lets every member of the tenant read a record."""


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(os.environ.get("CONTEXT_ENGINE_HOME") or ".context-engine"))
    mongodb_uri: str | None = field(default_factory=lambda: os.environ.get("MONGODB_URI") or None)
    mongodb_db: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_DB", "context_engine"))
    tenant: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_TENANT", "acme"))
    asker: str | None = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_USER") or None)
    # The chat model: any OpenAI-compatible endpoint. Unset base URL and key => offline mode.
    model: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_MODEL")
                       or os.environ.get("LOCAL_LLM_MODEL") or "gpt-4o-mini")
    openai_base_url: str | None = field(default_factory=lambda: os.environ.get("OPENAI_BASE_URL") or None)
    openai_api_key: str | None = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY") or None)
    use_llm: bool = field(default_factory=lambda: _env_bool("CONTEXT_ENGINE_USE_LLM", True))
    max_attempts: int = 3
    max_rows: int = 200
    max_time_ms: int = 5000
    allow_regex: bool = field(default_factory=lambda: _env_bool("CONTEXT_ENGINE_ALLOW_REGEX", False))

    @property
    def llm_configured(self) -> bool:
        return self.use_llm and bool(self.openai_base_url or self.openai_api_key)

    def with_overrides(self, **values: Any) -> "Settings":
        """Return a copy with the non-None values applied (CLI flags, run context)."""
        known = {f.name for f in fields(self)}
        updates = {k: v for k, v in values.items() if v is not None and k in known}
        if "data_dir" in updates:
            updates["data_dir"] = Path(updates["data_dir"])
        return replace(self, **updates)
