"""The run context: who asks, for which tenant, against which data. Passed per run, never global."""

from __future__ import annotations

from dataclasses import dataclass, replace

from context_engine.config import Settings


@dataclass
class Context:
    tenant: str | None = None
    user: str | None = None        # the asker: any alias (login, Slack handle, display name)
    data_dir: str | None = None
    model: str | None = None
    use_llm: bool | None = None
    anonymous: bool = False        # nobody asks: public records only, whatever the environment names

    def settings(self) -> Settings:
        base = Settings()
        if self.anonymous:
            base = replace(base, asker=None)
        return base.with_overrides(tenant=self.tenant, asker=None if self.anonymous else self.user,
                                   data_dir=self.data_dir, model=self.model, use_llm=self.use_llm)


def context_settings(runtime) -> Settings:
    """Settings for a node: the run's context over the environment's defaults."""
    context = getattr(runtime, "context", None)
    if isinstance(context, Context):
        return context.settings()
    if isinstance(context, dict):
        return Context(**{k: v for k, v in context.items() if k in Context.__dataclass_fields__}).settings()
    return Settings()
