"""A scripted chat model: a real LangChain `BaseChatModel` (callbacks, run names, events) whose answers
are given in advance, for testing the model paths offline."""

from __future__ import annotations

import itertools
import json
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the given JSON objects in order; structured output parses them into the schema."""

    @classmethod
    def answering(cls, *answers: dict[str, Any]) -> ScriptedChatModel:
        return cls(messages=iter([AIMessage(json.dumps(a)) for a in answers]))

    def with_structured_output(self, schema: Any, **_kwargs: Any):
        return self | RunnableLambda(lambda message: schema.model_validate_json(message.content))


class TextChatModel(GenericFakeChatModel):
    """A chat model with no structured output of its own (LangChain's default: NotImplementedError):
    answers with the given texts in order, the same text forever once they run out; keeps every prompt."""

    prompts: list[list[Any]] = Field(default_factory=list)

    @classmethod
    def saying(cls, *texts: str) -> TextChatModel:
        return cls(messages=itertools.chain(texts, itertools.repeat(texts[-1])))

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any):
        self.prompts.append(messages)
        return super()._generate(messages, *args, **kwargs)


def openai_stream(*pieces: str, sent: list[str] | None = None) -> Any:
    """An OpenAI-compatible endpoint's streamed answer (server-sent chat.completion chunks), one chunk
    per piece; `sent` records each piece as the client reads it, so a test sees where it stopped."""
    import httpx

    def events():
        for piece in pieces:
            if sent is not None:
                sent.append(piece)
            chunk = {
                "id": "1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}, "finish_reason": None}],
            }
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=events())
