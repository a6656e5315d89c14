"""The run context: who asks, for which tenant, against which data, with which chat models.

Passed per run (`graph.invoke(..., context={...})`, Studio's assistant form, LangServe), never global.
`Context` holds only what a user sets: its fields, typed and described, are the schema Studio and
LangServe draw (`graph.get_context_jsonschema()`). Every field has a plain default ("" = the
environment's value) so that those forms never meet a nullable type. Hooks for library callers (a
whole `Settings`, a stand-in planner, every question to the LLM planner) live on `LibraryContext`,
a subclass only Python code can build, so no form shows them and no JSON client can set them.

`run_context` turns what a run was given into one `Context` per run (a dict checked key by key,
legacy `configurable` keys folded in), and `Context.settings()` turns it into `config.Settings` once
per run: every node reads the same object.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from pydantic import WithJsonSchema

from context_engine.config import CHAT_ROLES, Settings

__all__ = [
    "Context",
    "ContextError",
    "LibraryContext",
    "check_tenant_known",
    "context_of",
    "run_context",
    "settings_of",
]

# A chat model as a form takes it, a string; Python callers may pass a LangChain chat model instance.
ChatModelSpec = Annotated[str | BaseChatModel, WithJsonSchema({"type": "string"})]

_MODEL_HELP = (
    "an init_chat_model string ('openai:gpt-4.1-mini') or a model name served at $OPENAI_BASE_URL "
    "(from Python, a LangChain chat model instance too)"
)


# What a value of each context field type must be (field types as written: annotations are strings
# here), and how a refusal names it. LibraryContext's other hooks are typed by their Python callers.
_ACCEPTS: dict[str, tuple[tuple[type, ...], str]] = {
    "str": ((str,), "a string"),
    "bool": ((bool,), "true or false"),
    "ChatModelSpec": ((str, BaseChatModel), "a string (a model spec) or a LangChain chat model"),
}


class ContextError(ValueError):
    """A run context that cannot be used as given; the message is one sentence for the caller."""


@dataclass(kw_only=True)
class Context:
    """Who asks, for which tenant, against which data, with which chat models (empty: the environment's)."""

    tenant: str = field(
        default="",
        metadata={"description": ("The tenant whose data is asked about. Empty: $CONTEXT_ENGINE_TENANT, else 'acme'.")},
    )
    user: str = field(
        default="",
        metadata={
            "description": (
                "Who asks, named exactly as one account: a GitHub login, a Slack user id, a Jira or Linear account, a "
                "verified e-mail, or system:account (github:login). Answers use only what this person may read. "
                "Empty: $CONTEXT_ENGINE_USER, else nobody (public records only)."
            )
        },
    )
    data_dir: str = field(
        default="",
        metadata={
            "description": ("The directory of the ingested data. Empty: $CONTEXT_ENGINE_HOME, else ./.context-engine.")
        },
    )
    anonymous: bool = field(
        default=False,
        metadata={"description": ("Ask as nobody: public records only, whatever `user` or the environment names.")},
    )
    use_llm: bool = field(
        default=True,
        metadata={
            "description": (
                "Use the configured chat models. Off: answer offline (rules, no model calls) even when one is configured."
            )
        },
    )
    model: ChatModelSpec = field(
        default="",
        metadata={
            "description": (
                f"The chat model of every step: {_MODEL_HELP}. Empty: the environment's ($CONTEXT_ENGINE_MODEL)."
            )
        },
    )
    router_model: ChatModelSpec = field(
        default="",
        metadata={
            "description": (
                f"The router's chat model (which half answers; follow-up rewriting): {_MODEL_HELP}. Empty: `model`."
            )
        },
    )
    planner_model: ChatModelSpec = field(
        default="",
        metadata={
            "description": (
                f"The query planner's chat model (writes and corrects the structured query): {_MODEL_HELP}. "
                "Empty: `model`."
            )
        },
    )
    generator_model: ChatModelSpec = field(
        default="",
        metadata={
            "description": (
                f"The chat model that compresses the found passages and writes the answer: {_MODEL_HELP}. Empty: `model`."
            )
        },
    )
    judge_model: ChatModelSpec = field(
        default="",
        metadata={
            "description": (
                f"The chat model that reranks passages and checks the answer is grounded: {_MODEL_HELP}. Empty: `model`."
            )
        },
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:  # JSON null and Python None: the field's default
                setattr(self, f.name, f.default)
            elif f.type in _ACCEPTS and not isinstance(value, _ACCEPTS[f.type][0]):
                raise ContextError(
                    f"context key {f.name!r} must be {_ACCEPTS[f.type][1]}, "
                    f"got {type(value).__name__} {str(value)[:60]!r}"
                )
        self._settings: Settings | None = None  # built on first use: once per run (run_context copies)

    # Library hooks, off in every Context: LibraryContext makes them fields of its own, so the schema
    # drawn from Context never shows them.
    @property
    def base_settings(self) -> Settings | None:
        return None

    @property
    def planner(self) -> Any:
        return None

    @property
    def always_llm(self) -> bool:
        return False

    def settings(self) -> Settings:
        """The engine's Settings for this context, over the environment's defaults; built once."""
        if self._settings is None:
            self._settings = self._build_settings()
        return self._settings

    def _build_settings(self) -> Settings:
        base = self.base_settings or Settings()
        if self.anonymous:
            base = replace(base, asker=None)
        # A bare name ("gpt-4.1-mini") is the endpoint's model, Settings.model; anything else is a spec.
        bare = isinstance(self.model, str) and ":" not in self.model
        models = tuple(
            (role, spec)
            for role, spec in [
                ("", None if bare else self.model),
                *((r, getattr(self, f"{r}_model")) for r in CHAT_ROLES),
            ]
            if spec
        )
        return base.with_overrides(
            tenant=self.tenant or None,
            asker=None if self.anonymous else (self.user or None),
            data_dir=self.data_dir or None,
            use_llm=None if self.use_llm else False,
            model=(self.model or None) if bare else None,
            chat_models=models or None,
        )


@dataclass(kw_only=True)
class LibraryContext(Context):
    """A Context with hooks for library callers (tests, evaluation); built from Python only."""

    base_settings: Settings | None = None  # a whole Settings under the fields above (they override it)
    planner: Any = None  # an object with `.plan(ctx) -> Plan` standing in for the LLM planner
    always_llm: bool = False  # every structured question to the LLM planner (to measure it alone)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Context))
"""The context's keys: what a dict context, Studio's form and a legacy `configurable` may set."""


def _from_dict(given: dict[str, Any]) -> Context:
    for key in given:
        if key not in FIELDS:
            raise ContextError(_unknown_key(key))
    return Context(**given)


def _unknown_key(key: Any) -> str:
    if key in {f.name for f in fields(LibraryContext)}:
        return (
            f"{key!r} is a library hook, not a context key: pass LibraryContext({key}=...) from Python "
            f"(context keys: {', '.join(FIELDS)})"
        )
    close = difflib.get_close_matches(str(key), FIELDS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown context key {str(key)[:60]!r}{hint}; the context's keys are {', '.join(FIELDS)}"


def run_context(context: Any, config: Mapping[str, Any] | None = None) -> Context:
    """The one Context of a run, from what the run was given: a Context (copied, so that its Settings
    are built for this run), a dict (Studio, JSON clients; null = the default), or nothing.

    Context keys in `config["configurable"]` (how LangGraph took them before `context=`) are honoured
    when the run gives no context; with a context they must agree with it, so a second channel can
    never change who asks (a server's context comes from the caller's key, not from its body)."""
    legacy = {k: v for k, v in ((config or {}).get("configurable") or {}).items() if k in FIELDS}
    if context is None:
        return _from_dict(legacy)
    if isinstance(context, dict):
        run = _from_dict(context)
    elif isinstance(context, Context):
        run = replace(context)
    else:
        raise ContextError(f"the run context must be a dict or a Context, got {type(context).__name__}")
    for key, value in legacy.items():
        if value is not None and value != getattr(run, key):
            raise ContextError(
                f"{key!r} is in both `context` ({getattr(run, key)!r}) and `configurable` ({value!r}); "
                f"give it in `context` only: context={{{key!r}: ...}}"
            )
    return run


def check_tenant_known(settings: Settings) -> None:
    """The run's tenant has data; else the tenants that do, by name."""
    from context_engine.resources import store_for  # the store opens on a run, not on import

    known = store_for(settings).tenants()
    if settings.tenant not in known:
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        raise ContextError(f"unknown tenant {settings.tenant!r} (known: {shown or 'none'}) in {settings.data_dir}")


def context_of(runtime: Any) -> Context:
    """The run's Context (the graph's `run_context` built it; LangGraph builds a dict's itself)."""
    context = getattr(runtime, "context", None)
    return context if isinstance(context, Context) else run_context(context)


def settings_of(runtime: Any) -> Settings:
    """Settings for a node: the run's, built once per run."""
    return context_of(runtime).settings()
