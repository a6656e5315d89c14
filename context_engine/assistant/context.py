"""The run context: who asks, for which tenant, against which data, with which chat models.

Passed per run (`graph.invoke(..., context={...})`, Studio's assistant config), never global. Every
field has a plain default ("" = the environment's value) so that forms drawn from its schema
(Studio, LangServe) never meet a nullable type.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from context_engine.config import CHAT_ROLES, Settings


@dataclass(kw_only=True)
class Context:
    tenant: str = ""          # "" = $CONTEXT_ENGINE_TENANT, else "acme"
    user: str = ""            # the asker: one account, exactly (PeopleDirectory.asker); "" = $CONTEXT_ENGINE_USER
    data_dir: str = ""        # "" = $CONTEXT_ENGINE_HOME, else ./.context-engine
    anonymous: bool = False   # nobody asks: public records only, whatever the environment names
    use_llm: bool = True      # False: offline even when a chat model is configured
    # Chat models: an init_chat_model string ("openai:gpt-4.1-mini"), a model name served at
    # $OPENAI_BASE_URL, or a LangChain chat model instance; "" = the environment's. `model` is every
    # node's default; the others override it for one role.
    model: Any = ""
    router_model: Any = ""
    planner_model: Any = ""
    generator_model: Any = ""
    judge_model: Any = ""
    # An object with `.plan(ctx) -> Plan` standing in for the LLM planner (tests, evaluation).
    planner: Any = ""
    always_llm: bool = False  # send every structured question to the LLM planner (to measure it alone)
    # A whole `config.Settings` for library callers (tests, evaluation); the fields above override it.
    base_settings: Any = ""

    def settings(self) -> Settings:
        base = self.base_settings if isinstance(self.base_settings, Settings) else Settings()
        if self.anonymous:
            base = replace(base, asker=None)
        # A bare name ("gpt-4.1-mini") is the endpoint's model, Settings.model; anything else is a spec.
        bare = isinstance(self.model, str) and ":" not in self.model
        models = tuple((role, spec) for role, spec in
                       [("", None if bare else self.model), *((r, getattr(self, f"{r}_model")) for r in CHAT_ROLES)]
                       if spec)
        return base.with_overrides(
            tenant=self.tenant or None, asker=None if self.anonymous else (self.user or None),
            data_dir=self.data_dir or None, use_llm=None if self.use_llm else False,
            model=(self.model or None) if bare else None, chat_models=models or None)


def context_of(runtime: Any) -> Context:
    """The run's Context, whether given as the dataclass or as a dict (Studio, JSON clients)."""
    context = getattr(runtime, "context", None)
    if isinstance(context, Context):
        return context
    if isinstance(context, dict):
        known = {f.name for f in fields(Context)}
        return Context(**{k: v for k, v in context.items() if k in known and v is not None})
    return Context()


def settings_of(runtime: Any) -> Settings:
    """Settings for a node: the run's context over the environment's defaults."""
    return context_of(runtime).settings()
