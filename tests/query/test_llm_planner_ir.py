"""The LLM planner writes the plan IR; code compiles it. Offline: a scripted chat model answers."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from context_engine.query.engine import resolve
from context_engine.query.ir import IRError
from context_engine.query.llm_planner import EXAMPLES, LLMPlanner, build_messages
from context_engine.runtime import catalog_for
from tests.chat_fakes import ScriptedChatModel
from tests.conftest import NOW


@pytest.fixture
def catalog(settings):
    return catalog_for(settings)


def context(catalog, question):
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None
    return ctx


def test_the_model_writes_ir_and_the_compiler_writes_the_pipeline(catalog):
    answer = {"collection": "pull_requests",
              "filters": [{"field": "user.login", "op": "eq", "value": "Rashid Khan"},  # a name, not the login
                          {"field": "milestone.title", "op": "empty"}],
              "times": [{"field": "merged", "start": {"$date": "2026-11-01T00:00:00Z"}, "end": None}],
              "shape": {"kind": "count"}}
    fenced = GenericFakeChatModel(messages=iter([AIMessage("Here it is:\n```json\n" + json.dumps(answer) + "\n```")]))
    plan = LLMPlanner(fenced).plan(context(catalog, "how many PRs did Rashid merge without a milestone since November?"))
    assert plan.planner == "llm" and plan.ir.shape.kind == "count"
    match = plan.pipeline[0]["$match"]
    assert match["user.login"] == "rsh-dev"  # code corrected the model's name into the handle
    assert match["merged_at"] == {"$gte": __import__("datetime").datetime(2026, 11, 1)}  # open-ended, the role's date
    assert {"$or": [{"milestone.title": {"$in": [None, ""]}}, {"milestone.title": {"$size": 0}},
                    {"milestone": {"$in": [None]}}]} in match["$and"]
    assert plan.pipeline[-1] == {"$count": "count"}


def test_a_free_form_pipeline_stays_possible(catalog):
    raw = {"collection": "pull_requests", "pipeline": [{"$match": {"state": "open"}}, {"$count": "count"}]}
    plan = LLMPlanner(ScriptedChatModel.answering(raw)).plan(context(catalog, "open PRs"))
    assert plan.pipeline == raw["pipeline"]


@pytest.mark.parametrize("answer,message", [
    ({"collection": "tweets", "shape": {"kind": "list"}}, "collection 'tweets' does not exist"),
    ({"collection": "pull_requests", "filters": [{"field": "karma", "op": "gt", "value": 3}]}, "no field or role 'karma'"),
])
def test_a_plan_naming_what_the_tenant_lacks_is_an_error_the_retry_edge_feeds_back(catalog, answer, message):
    with pytest.raises(ValueError, match=message):
        LLMPlanner(ScriptedChatModel.answering(answer)).plan(context(catalog, "open PRs"))


def test_an_unreadable_answer_is_asked_for_once_more(catalog):
    model = GenericFakeChatModel(messages=iter([AIMessage("I think you want open PRs."),
                                                AIMessage(json.dumps({"collection": "pull_requests",
                                                                      "filters": [{"field": "state", "value": "open"}]}))]))
    plan = LLMPlanner(model).plan(context(catalog, "open PRs"))
    assert plan.pipeline[0] == {"$match": {"state": "open"}}
    with pytest.raises(IRError, match="no JSON object"):
        LLMPlanner(GenericFakeChatModel(messages=iter([AIMessage("no"), AIMessage("still no")]))).plan(
            context(catalog, "open PRs"))


def test_the_prompt_is_sized_to_the_question(catalog):
    system = build_messages(context(catalog, "Which PRs did Rashid merge last week?"))[0][1]
    assert "collection pull_requests" in system and "collection issues" not in system  # one collection's slice
    assert "fields.status.name" not in system and "body:" not in system  # fields no role or word touches
    assert system.count("\nQ: ") <= EXAMPLES
    assert "'rsh-dev' in user.login" in system and "2026-11-23T00:00:00Z" in system  # linked people and times
    draft = system.split("fix what the question asks differently):\n")[1].splitlines()[0]
    assert json.loads(draft)["filters"][0] == {"field": "merged", "op": "eq", "value": True}  # no span, no negate: false
    assert len(system) < 5000


def test_the_prompt_tells_the_model_what_the_draft_did_not_understand(catalog):
    system = build_messages(context(catalog, "open PRs with a purple hat"))[0][1]
    assert "did not understand: 'purple hat'" in system


def test_a_plan_that_does_not_explain_the_whole_question_goes_to_the_model(catalog):
    from context_engine.query.engine import plan

    answer = {"collection": "pull_requests", "filters": [{"field": "state", "op": "eq", "value": "open"}],
              "times": [], "text": [], "shape": {"kind": "count"}}
    ctx = context(catalog, "how many open PRs with a purple hat")
    written = plan(ctx, LLMPlanner(ScriptedChatModel.answering(answer)))
    assert written.planner == "llm" and ctx.draft.not_understood  # the draft was built once, and handed over
    whole = plan(context(catalog, "how many open PRs"), LLMPlanner(ScriptedChatModel.answering(answer)))
    assert whole.planner == "offline"  # understood whole: no model call


def test_an_endpoint_refusing_the_schema_is_asked_again_without_it():
    """The local server takes `response_format` with a schema; an endpoint answering 400 to it gets the
    same prompt without one, and its JSON text is parsed the same way."""
    import httpx
    from langchain_openai import ChatOpenAI

    from context_engine.query.llm_planner import _json_mode, parse_plan

    asked_with_schema = []

    def endpoint(request):
        body = json.loads(request.content)
        asked_with_schema.append("schema" in body.get("response_format", {}))
        if asked_with_schema[-1]:
            return httpx.Response(400, json={"error": {"message": "unsupported response_format", "type": "invalid_request_error"}})
        return httpx.Response(200, json={"id": "1", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"collection": "issues"}'}}]})

    model = ChatOpenAI(model="m", api_key="k", base_url="http://endpoint.invalid/v1", max_retries=0,
                       http_client=httpx.Client(transport=httpx.MockTransport(endpoint)))
    assert parse_plan(_json_mode(model).invoke("open issues").content).collection == "issues"
    assert asked_with_schema == [True, False]
