"""A scripted chat model: a real LangChain `BaseChatModel` (callbacks, run names, events) whose answers
are given in advance, for testing the model paths offline."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the given JSON objects in order; structured output parses them into the schema."""

    @classmethod
    def answering(cls, *answers: dict[str, Any]) -> ScriptedChatModel:
        return cls(messages=iter([AIMessage(json.dumps(a)) for a in answers]))

    def with_structured_output(self, schema: Any, **_kwargs: Any):
        return self | RunnableLambda(lambda message: schema.model_validate_json(message.content))
