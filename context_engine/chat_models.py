"""The one configurable chat model, specialised per node with structured output; model failures reported.

A run may give a model per role (`config.CHAT_ROLES`) as a LangChain chat model instance or an
`init_chat_model` string ("openai:gpt-4.1-mini", "anthropic:...", any provider LangChain knows);
otherwise the environment's OpenAI-compatible endpoint serves every role. Offline: no model.

Every model call goes through `structured_output` or `guarded`, so a failing model is never hidden:
- a call made while a `ModelWatch` is active (each graph node opens one, `watching`) records the
  first failure as one sentence (the run's `model_error`); a model that cannot be reached
  (connection refused or timed out, key refused, model unknown) is not called again for the rest of
  the run — each later call fails at once with `ModelUnavailable` and its caller's offline rule answers;
- the caller's own `with_retry` retries only a malformed answer, at once: a failed call is not
  repeated (the client already retried the HTTP request once, `max_retries`);
- a model without native structured output, or whose structured answer does not parse, is asked
  for JSON in the prompt and the first JSON object of its text is validated against the schema.
"""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from langchain_core.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelNotFoundError,
    ModelPermissionDeniedError,
    ModelTimeoutError,
)
from langchain_core.messages import BaseMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel

from context_engine.config import CHAT_ROLES, Settings

__all__ = [
    "CONNECT_TIMEOUT",
    "ModelCall",
    "ModelUnavailable",
    "ModelWatch",
    "StructuredOutputError",
    "chat_model",
    "counting_calls",
    "guarded",
    "is_down",
    "model_key",
    "model_label",
    "openai_timeout",
    "probe_endpoints",
    "record_call",
    "structured_output",
    "watched",
    "watching",
]

# Opening a connection to a live endpoint takes milliseconds; a dead or unroutable one should cost a
# run seconds, not the two minutes an answer may take once connected.
CONNECT_TIMEOUT = 3.0
REQUEST_TIMEOUT = 120.0

# Failures that mean the model will not answer this run, whatever is asked: it cannot be reached,
# its key is refused, it does not exist there. LangChain's provider-neutral classes (which the
# integrations raise), and by name the same errors of provider SDKs an integration does not map yet
# (openai, anthropic ... share the names) and of httpx itself, without importing any of them.
_UNREACHABLE = (
    ModelConnectionError,
    ModelTimeoutError,
    ModelAuthenticationError,
    ModelPermissionDeniedError,
    ModelNotFoundError,
    ConnectionError,
    TimeoutError,
)
_UNREACHABLE_NAMES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "ConnectError",
        "ConnectTimeout",
    }
)


class ModelUnavailable(RuntimeError):
    """The model could not be reached earlier in this run, so it is not called again."""


class StructuredOutputError(ValueError):
    """The model answered, but neither natively nor as JSON in text in the schema asked for."""


def chat_model(settings: Settings, role: str = "", **kwargs: Any):
    """The chat model for `role` (router, planner, generator, judge), or None in offline mode."""
    if not settings.llm_configured:
        return None
    spec = settings.chat_model_spec(role)
    if spec and not isinstance(spec, str):
        return spec  # a chat model instance given by the run
    if isinstance(spec, str) and ":" in spec:
        from langchain.chat_models import init_chat_model  # lazy: provider packages are heavy

        endpoint = (
            {
                "base_url": settings.openai_base_url,
                "api_key": settings.openai_api_key or "not-needed",
                "timeout": openai_timeout(),
                "max_retries": 1,
            }
            if spec.startswith("openai:") and settings.openai_base_url
            else {}
        )
        return init_chat_model(spec, temperature=0, **endpoint, **kwargs)
    if not (settings.openai_base_url or settings.openai_api_key):
        return None
    from langchain_openai import ChatOpenAI  # lazy: importing it costs ~0.5 s

    return ChatOpenAI(
        model=spec or settings.model,
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key or "not-needed",
        temperature=0,
        timeout=openai_timeout(),
        max_retries=1,
        **kwargs,
    )


def openai_timeout(total: float = REQUEST_TIMEOUT) -> Any:
    """The OpenAI client's timeout: `total` for an answer, `CONNECT_TIMEOUT` to open the connection."""
    from openai import Timeout  # lazy: installed with langchain-openai; its own httpx's Timeout

    return Timeout(total, connect=CONNECT_TIMEOUT)


def _endpoint(model: Any) -> str:
    """The URL the model is served at, when it names one."""
    model = getattr(model, "bound", model)  # a model with bound arguments
    for attribute in ("openai_api_base", "base_url", "anthropic_api_url"):
        url = getattr(model, attribute, None)
        if isinstance(url, str) and url:
            return url
    return ""


def model_label(model: Any) -> str:
    """How an answer names a model: its model name and class ("gpt-4o-mini (ChatOpenAI)"), never its
    endpoint — an answer goes to the asker, and the URL of the operator's model server is not theirs."""
    model = getattr(model, "bound", model)
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"{name} ({type(model).__name__})" if isinstance(name, str) and name else type(model).__name__


def model_key(model: Any) -> str:
    """What fails together: the endpoint a model is served at (every role on a dead OPENAI_BASE_URL
    is down at once), else its class and model name."""
    return _endpoint(model) or model_label(model)


def _unreachable(error: BaseException) -> bool:
    return isinstance(error, _UNREACHABLE) or any(cls.__name__ in _UNREACHABLE_NAMES for cls in type(error).__mro__)


@dataclass
class ModelWatch:
    """One run's view of its models: the first failure (`error`) and the models found unreachable (`down`)."""

    error: str = ""
    down: list[str] = field(default_factory=list)

    # The sentences name the error's class only: a provider's message may quote the request, the
    # endpoint or the end of the key, and these sentences reach the asker.
    def check(self, model: Any) -> None:
        if model_key(model) in self.down:
            raise ModelUnavailable(f"chat model {model_label(model)} was unreachable earlier in this run")

    def failed(self, model: Any, error: BaseException) -> None:
        if isinstance(error, ModelUnavailable):
            return
        if _unreachable(error):
            if model_key(model) not in self.down:
                self.down.append(model_key(model))
            self._first(f"chat model {model_label(model)} could not be reached ({type(error).__name__})")
        else:
            self._first(f"chat model {model_label(model)} failed ({type(error).__name__})")

    def malformed(self, model: Any, schema: type[BaseModel], error: BaseException) -> None:
        self._first(
            f"chat model {model_label(model)} did not answer in the {schema.__name__} JSON asked for "
            f"({type(error).__name__})"
        )

    def _first(self, sentence: str) -> None:
        if not self.error:
            self.error = sentence

    def report(self, before: dict[str, Any]) -> dict[str, Any]:
        """The state update for what changed since `before` (a graph state): nothing when nothing did."""
        changed = self.error != (before.get("model_error") or "") or self.down != list(before.get("models_down") or [])
        return {"model_error": self.error, "models_down": list(self.down)} if changed else {}


_WATCH: ContextVar[ModelWatch | None] = ContextVar("context_engine_model_watch", default=None)


@contextmanager
def watching(state: dict[str, Any] | None = None) -> Iterator[ModelWatch]:
    """Watch the model calls made inside the block (batch threads included: LangChain copies the
    context into them), continuing from what `state` (a graph state) already knows; None = a fresh run."""
    state = state or {}
    watch = ModelWatch(state.get("model_error") or "", list(state.get("models_down") or []))
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def is_down(model: Any) -> bool:
    """Whether the run being watched found `model` unreachable (False outside a watch or for no model)."""
    watch = _WATCH.get()
    return watch is not None and model is not None and model_key(model) in watch.down


def watched(node: Callable[..., dict[str, Any]] | None = None, *, fresh: bool = False):
    """A graph node whose model calls are watched (`watching`), its update carrying what changed:
    `model_error` and `models_down`. `fresh`: the node that starts a run, where earlier runs' failures
    on the same thread are forgotten (a model down then may be up now)."""

    def wrap(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @functools.wraps(fn)  # the node's own signature: LangGraph passes `runtime` by it
        def run(state: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
            before = {} if fresh else state
            with watching(before) as watch:
                update = fn(state, *args, **kwargs)
            return {**update, **watch.report(before)}

        return run

    return wrap(node) if node is not None else wrap


def _call(runnable: Any, model: Any, messages: Any, config: Any, *, parses: bool = False) -> Any:
    """`runnable.invoke`, refused at once if the model is down this run, its failure recorded. A
    runnable that `parses` its answer fails with a ValueError on a malformed answer (LangChain's
    OutputParserException, pydantic's ValidationError, JSONDecodeError): that is its caller's to handle."""
    watch = _WATCH.get()
    if watch is not None:
        watch.check(model)
    try:
        return runnable.invoke(messages, config)
    except Exception as exc:
        if watch is not None and not (parses and isinstance(exc, ValueError)):
            watch.failed(model, exc)
        raise


class _ModelCall(RunnableLambda):
    """A model call whose callers' `with_retry` repeats only a malformed answer, and at once: a failed
    call is the client's to retry (it did, once), and an unreachable model is not called again."""

    def with_retry(self, *, stop_after_attempt: int = 3, **_caller_policy: Any):
        return super().with_retry(
            retry_if_exception_type=(StructuredOutputError,),
            wait_exponential_jitter=False,
            stop_after_attempt=stop_after_attempt,
        )


def guarded(model: Any, runnable: Any = None):
    """`runnable` (default: `model` itself) called as `model`'s call: refused when the model is down
    this run, its failure reported to the run's `ModelWatch`."""
    target = model if runnable is None else runnable
    # The model's own run keeps the node's name (a trace shows which node asked); this one says what it is.
    return _ModelCall(lambda messages, config: _call(target, model, messages, config), name="guarded_model_call")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])


def _first_json_object(text: str, schema: type[BaseModel]) -> BaseModel:
    """The first JSON object in `text` (prose or a code fence around it is fine), validated as `schema`."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        return schema.model_validate(value)
    raise StructuredOutputError(f"no JSON object in the answer: {text[:80]!r}")


def _asking_for_json(messages: Any, schema: type[BaseModel]) -> list[BaseMessage]:
    """The messages with the schema spelt out in the system prompt (a first one added if there is none)."""
    if hasattr(messages, "to_messages"):  # a prompt value
        messages = messages.to_messages()
    listed = convert_to_messages([("human", messages)] if isinstance(messages, str) else messages)
    ask = "Answer with one JSON object and nothing else, valid against this JSON schema:\n" + json.dumps(
        schema.model_json_schema(), ensure_ascii=False
    )
    if listed and isinstance(listed[0], SystemMessage) and isinstance(listed[0].content, str):
        return [SystemMessage(f"{listed[0].content}\n\n{ask}"), *listed[1:]]
    return [SystemMessage(ask), *listed]


def _native(model: Any, schema: type[BaseModel]) -> Any:
    """The model's own structured output: JSON mode where the model offers it (OpenAI-compatible
    servers, small local models that have no tool calling), else its default method; None when it has none."""
    try:
        return model.with_structured_output(schema, method="json_mode")
    except (TypeError, ValueError, NotImplementedError):
        pass
    try:
        return model.with_structured_output(schema)
    except (NotImplementedError, AttributeError):  # BaseChatModel without tool calling, or not a chat model
        return None


def structured_output(model: Any, schema: type[BaseModel]):
    """`model` answering in `schema` (a pydantic model), the same way for every node: natively where
    it can, else — no native structured output, or a native answer that does not parse — asked for
    JSON in the prompt and the first JSON object of its text validated. Raises `StructuredOutputError`
    (reported to the run's watch) when neither gives the schema; a failed call raises as it came."""
    native = _native(model, schema)

    def answer(messages: Any, config: Any) -> BaseModel:
        if native is not None:
            try:
                out = _call(native, model, messages, config, parses=True)
                if isinstance(out, schema):
                    return out
            except ValueError:
                pass  # answered, but not in the schema: asked again as text below
        reply = _call(model, model, _asking_for_json(messages, schema), config)
        try:
            return _first_json_object(_text(getattr(reply, "content", reply)), schema)
        except ValueError as exc:  # StructuredOutputError, ValidationError
            watch = _WATCH.get()
            if watch is not None:
                watch.malformed(model, schema, exc)
            raise StructuredOutputError(f"no {schema.__name__} in the answer: {exc}") from exc

    return _ModelCall(answer, name=f"structured_output[{schema.__name__}]")


@dataclass
class ModelCall:
    """One answer a model gave, for measuring what a question costs: its seconds, the characters of its
    prompt (a count any model has; tokens are the server's), and the tokens it wrote (the provider's
    count when it gives one, else the streamed chunks: llama.cpp's server streams one token a chunk)."""

    seconds: float
    prompt_chars: int
    completion_tokens: int


_CALLS: ContextVar[list[ModelCall] | None] = ContextVar("context_engine_model_calls", default=None)


@contextmanager
def counting_calls() -> Iterator[list[ModelCall]]:
    """The model calls made inside the block that record themselves (`record_call`), graph nodes included."""
    calls: list[ModelCall] = []
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def record_call(call: ModelCall) -> None:
    """Count a call in the `counting_calls` block around it, if any."""
    calls = _CALLS.get()
    if calls is not None:
        calls.append(call)


def probe_endpoints(settings: Settings, timeout: float = CONNECT_TIMEOUT) -> list[str]:
    """One sentence per configured model endpoint that does not accept a connection within `timeout`
    (a TCP connect: cheap, no tokens spent, no key sent). Empty offline, with no model configured, or
    for a model that names no URL (a provider's own default endpoint is reached by its first call)."""
    if not settings.llm_configured:
        return []
    urls: list[str] = []
    for role in ("", *CHAT_ROLES):
        url = _endpoint(chat_model(settings, role))
        if url and url not in urls:
            urls.append(url)
    problems = []
    for url in urls:
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:  # a port that is not a number
            problems.append(f"chat model endpoint {url} is not a valid URL ({exc})")
            continue
        try:
            socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
        except OSError as exc:
            problems.append(f"chat model endpoint {url} cannot be reached ({exc.strerror or type(exc).__name__})")
    return problems
