"""The LLM planner writes the plan IR; code compiles it. Offline: a scripted chat model answers."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from context_engine.query.ir import IRError
from context_engine.query.llm_planner import EXAMPLES, LLMPlanner, build_messages
from tests.chat_fakes import ScriptedChatModel, TextChatModel, openai_stream
from tests.query.conftest import context


def test_the_model_writes_ir_and_the_compiler_writes_the_pipeline(catalog):
    answer = {
        "collection": "pull_requests",
        "filters": [
            {"field": "user.login", "op": "eq", "value": "Rashid Khan"},  # a name, not the login
            {"field": "milestone.title", "op": "empty"},
        ],
        "times": [{"field": "merged", "start": {"$date": "2026-11-01T00:00:00Z"}, "end": None}],
        "shape": {"kind": "count"},
    }
    fenced = GenericFakeChatModel(messages=iter([AIMessage("Here it is:\n```json\n" + json.dumps(answer) + "\n```")]))
    plan = LLMPlanner(fenced).plan(
        context(catalog, "how many PRs did Rashid merge without a milestone since November?")
    )
    assert plan.planner == "llm" and plan.ir.shape.kind == "count"
    match = plan.pipeline[0]["$match"]
    assert match["user.login"] == "rsh-dev"  # code corrected the model's name into the handle
    assert match["merged_at"] == {"$gte": __import__("datetime").datetime(2026, 11, 1)}  # open-ended, the role's date
    assert {
        "$or": [
            {"milestone.title": {"$in": [None, ""]}},
            {"milestone.title": {"$size": 0}},
            {"milestone": {"$in": [None]}},
        ]
    } in match["$and"]
    assert plan.pipeline[-1] == {"$count": "count"}


def test_a_free_form_pipeline_stays_possible(catalog):
    raw = {"collection": "pull_requests", "pipeline": [{"$match": {"state": "open"}}, {"$count": "count"}]}
    plan = LLMPlanner(ScriptedChatModel.answering(raw)).plan(context(catalog, "open PRs"))
    assert plan.pipeline == raw["pipeline"]


@pytest.mark.parametrize(
    "answer,message",
    [
        ({"collection": "tweets", "shape": {"kind": "list"}}, "collection 'tweets' does not exist"),
        (
            {"collection": "pull_requests", "filters": [{"field": "karma", "op": "gt", "value": 3}]},
            "no field or role 'karma'",
        ),
    ],
)
def test_a_plan_naming_what_the_tenant_lacks_is_an_error_the_retry_edge_feeds_back(catalog, answer, message):
    with pytest.raises(ValueError, match=message):
        LLMPlanner(ScriptedChatModel.answering(answer)).plan(context(catalog, "open PRs"))


def test_an_unreadable_answer_is_an_error_asked_once(catalog):
    """At temperature 0 the same request gets the same answer: an unreadable one is not asked again
    unchanged; it is an error (the offline plan stays, or the retry edge shows the model its error)."""
    model = TextChatModel.saying("I think you want open PRs.", json.dumps({"collection": "pull_requests"}))
    with pytest.raises(IRError, match="no JSON object"):
        LLMPlanner(model).plan(context(catalog, "open PRs"))
    assert len(model.prompts) == 1


def test_the_model_corrects_its_plan_once_then_gives_way(catalog):
    from context_engine.query.plan import Attempt, Plan

    ctx = context(catalog, "open PRs")
    wrong = Attempt(Plan("pull_requests", [{"$match": {"karma": 3}}], planner="llm"), "unknown field karma")
    ctx.previous = [wrong]  # its first plan failed: one correction is asked for
    assert LLMPlanner(ScriptedChatModel.answering({"collection": "pull_requests"})).plan(ctx).planner == "llm"
    ctx.previous = [wrong, wrong]  # the correction failed too: no third call
    model = TextChatModel.saying(json.dumps({"collection": "pull_requests"}))
    with pytest.raises(IRError, match="corrected 1 time"):
        LLMPlanner(model).plan(ctx)
    assert model.prompts == []


def test_a_model_plan_leaving_out_a_resolved_person_or_time_is_refused(catalog):
    """The draft's reading of who and when (code resolved them) is kept: a model plan without them
    explains less of the question than the offline one, and is an error, not an answer."""
    from context_engine.query.engine import plan

    question = "PRs Rashid merged since November that have no milestone"
    no_person = {"collection": "pull_requests", "filters": [{"field": "milestone.title", "op": "empty"}],
                 "times": [{"field": "merged_at", "start": {"$date": "2026-11-01T00:00:00Z"}, "end": None}]}  # fmt: skip
    ctx = context(catalog, question)
    with pytest.raises(IRError, match="leaves out 'Rashid'"):
        LLMPlanner(ScriptedChatModel.answering(no_person)).plan(ctx)
    kept = {**no_person, "filters": [*no_person["filters"], {"field": "user.login", "op": "eq", "value": "rsh-dev"}]}
    assert LLMPlanner(ScriptedChatModel.answering(kept)).plan(context(catalog, question)).planner == "llm"
    no_time = {**kept, "times": []}
    with pytest.raises(IRError, match="leaves out 'since November'"):
        LLMPlanner(ScriptedChatModel.answering(no_time)).plan(context(catalog, question))
    # In the engine the refused model plan leaves the offline plan in place, saying so.
    unsure = context(catalog, question + " wearing a purple hat")  # words no rule reads: the model is asked
    planned = plan(unsure, LLMPlanner(ScriptedChatModel.answering(no_person)))
    assert planned.planner == "offline" and any("LLM planner failed" in n for n in planned.notes)


def asked(catalog, question):
    """The question's part of the prompt (the system part is the same for every question)."""
    messages = build_messages(context(catalog, question))
    assert [role for role, _ in messages] == ["system", "human"]
    return messages[1][1]


def test_the_prompt_is_sized_to_the_question(catalog):
    prompt = asked(catalog, "Which PRs did Rashid merge last week?")
    assert "pull_requests:" in prompt and "\nissues:" not in prompt  # one collection's slice, the others by name
    fields = prompt.split("pull_requests: ")[1].splitlines()[0]
    assert "fields.status.name" not in prompt and "body" not in fields  # fields no role or word touches
    assert "'rsh-dev' in user.login" in prompt and '"start":{"$date":"2026-11-23T00:00:00Z"}' in prompt
    draft = prompt.split("Draft: ")[1].splitlines()[0]
    assert json.loads(draft)["filters"][0] == {
        "field": "merged",
        "op": "eq",
        "value": True,
    }  # no span, no negate: false
    assert len(prompt) < 1500  # ~400 tokens: with the cached system part, a few seconds of prompt on 2 cores


def test_the_system_prompt_is_one_fixed_prefix_for_every_question(catalog):
    """llama.cpp reuses the evaluated prefix of the previous request: whatever a question brings comes
    after the system prompt, so the rules are evaluated once, not per question."""
    first = build_messages(context(catalog, "Which PRs did Rashid merge last week?"))
    second = build_messages(context(catalog, "上个月有多少个打开的 issue 没有负责人？"))
    assert first[0] == second[0] and "Rashid" not in first[0][1] and "2026" not in first[0][1]
    assert first[1][1].endswith("Question: Which PRs did Rashid merge last week?")


def test_a_field_is_listed_when_its_own_name_is_said_not_an_ancestors():
    """ "closed" names closed_at, and closed_by.login through its label leaf; not closed_by.events_url."""
    from context_engine.query.llm_planner import schema_slice
    from context_engine.query.schema import CollectionSchema, FieldInfo

    fields = {
        path: FieldInfo(path=path, types=types, enum=enum)
        for path, types, enum in [
            ("closed_at", {"date"}, None),
            ("closed_by.login", {"string"}, ["ana", "bo"]),
            ("closed_by.events_url", {"string"}, None),
            ("closed_by.site_admin", {"bool"}, None),
            ("priority", {"string"}, ["p0", "p1", "p2", "p3", "p4", "p5"]),
            ("color", {"string"}, ["red", "blue"]),
        ]
    }
    listed = schema_slice(CollectionSchema(name="tickets", fields=fields), "tickets closed by ana with priority p4")
    assert "closed_at" in listed.split("dates: ")[1] and "closed_by.login" in listed
    assert "events_url" not in listed and "site_admin" not in listed and "color" not in listed
    assert "closed_by.login," in listed + ","  # a login's values are people: given under People, not listed
    assert "priority=p4|p0|p1" in listed  # the value the question says comes first


def test_examples_are_only_the_close_context_set_templates(catalog):
    close = asked(catalog, "how many open PRs are labelled performance")
    assert close.count("\nQ: ") == 1 and "Q: how many open PRs are labelled security ->" in close
    example = json.loads(close.split("Q: how many open PRs are labelled security -> ")[1].splitlines()[0])
    assert example["pipeline"][0]["$match"] == {"state": "open", "labels.name": "security"}  # bound, no {{label}}
    assert "Examples" not in asked(catalog, "which PRs touched the billing service and were reverted")
    assert all(
        asked(catalog, q).count("\nQ: ") <= EXAMPLES for q in ("PRs Rashid merged last week", "open PRs by repo")
    )


def test_a_named_filter_is_offered_for_words_the_draft_did_not_understand(catalog):
    from context_engine.query.plan import Plan

    ctx = context(catalog, "issues nobody assigned that are not done")
    ctx.draft = Plan(
        collection="issues", pipeline=[], not_understood=[{"text": "nobody assigned", "start": 7, "end": 22, "how": ""}]
    )
    offered = build_messages(ctx)[1][1].split("Named filters")[1].splitlines()[0]
    assert """'unassigned (Jira)': {"fields.assignee":null}""" in offered
    assert "not done" not in offered  # understood by the draft: already in it
    assert "assignees" not in offered  # the GitHub-shaped facet does not fit these Jira issues
    assert "Named filters" not in asked(catalog, "how many PRs did Rashid open last week")  # "open" the verb


def test_the_prompt_tells_the_model_what_the_draft_did_not_understand(catalog):
    assert "did not understand: 'purple hat'" in asked(catalog, "open PRs with a purple hat")


def test_a_plan_that_does_not_explain_the_whole_question_goes_to_the_model(catalog):
    from context_engine.query.engine import plan

    answer = {
        "collection": "pull_requests",
        "filters": [{"field": "state", "op": "eq", "value": "open"}],
        "times": [],
        "text": [],
        "shape": {"kind": "count"},
    }
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
            return httpx.Response(
                400, json={"error": {"message": "unsupported response_format", "type": "invalid_request_error"}}
            )
        return openai_stream('{"collection": "issues"}')

    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://endpoint.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(endpoint)),
    )
    assert parse_plan(_json_mode(model).invoke("open issues").content).collection == "issues"
    assert asked_with_schema == [True, False]


def test_the_model_is_asked_for_a_short_answer_without_spans():
    """Every generated token costs ~45 ms on 2 cores: the answer is capped, and its schema leaves out
    the spans (code sets them), so the grammar does not invite the model to write them."""
    import httpx
    from langchain_openai import ChatOpenAI

    from context_engine.query.llm_planner import MAX_ANSWER_TOKENS, _json_mode

    bodies = []

    def endpoint(request):
        bodies.append(json.loads(request.content))
        return openai_stream('{"collection": "issues"}')

    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://endpoint.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(endpoint)),
    )
    _json_mode(model).invoke("open issues")
    (body,) = bodies
    assert body["max_tokens"] == MAX_ANSWER_TOKENS <= 200
    schema = json.dumps(body["response_format"]["schema"])
    assert '"filters"' in schema and '"span"' not in schema


def test_a_model_that_times_out_is_reported_beside_the_offline_plan(catalog):
    """Never silently wrong, never a silent wait: the request carries the planner's timeout, and a
    timeout keeps the offline plan with a note saying the model failed."""
    import httpx
    from langchain_openai import ChatOpenAI

    from context_engine.query.engine import plan
    from context_engine.query.llm_planner import PLANNER_TIMEOUT

    waited = []

    def endpoint(request):
        waited.append(request.extensions["timeout"]["read"])
        raise httpx.ReadTimeout("no answer", request=request)

    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://endpoint.invalid/v1",
        max_retries=0,
        timeout=600,
        http_client=httpx.Client(transport=httpx.MockTransport(endpoint)),
    )
    kept = plan(context(catalog, "how many open PRs with a purple hat"), LLMPlanner(model))
    assert waited == [PLANNER_TIMEOUT] and PLANNER_TIMEOUT <= 120
    assert kept.planner == "offline" and kept.pipeline[-1] == {"$count": "count"}
    assert any(
        n.startswith("LLM planner failed (") and "Timeout" in n and n.endswith("kept the offline plan")
        for n in kept.notes
    )


def _own_catalog():
    from context_engine.kinds import CollectionSpec
    from context_engine.query.catalog import Catalog
    from context_engine.query.schema import schema_from_documents

    students = [
        {
            "StuID": 1,
            "Fname": "Ann",
            "Lname": "Lee",
            "Major": "Physics",
            "Tags": ["a"],
            "Sports": [{"SportName": "Chess", "Hours": 2}],
        },
        {"StuID": 2, "Fname": "Bo", "Lname": "Kim", "Major": "History", "Tags": [], "Sports": []},
    ]
    clubs = [{"ClubID": 1, "ClubName": "Sailing", "LName": "x", "Members": [{"StuID": 1}]}]
    schemas = {"Student": schema_from_documents("Student", students), "Club": schema_from_documents("Club", clubs)}
    schemas["Student"].fields["Major"].enum = ["History", "Physics"]  # as discovery finds it in a larger table
    schemas["Student"].own_kind = CollectionSpec("Student", noun="student", words=(r"\bstudents?\b", r"\bpupils?\b"))
    schemas["Club"].own_kind = CollectionSpec("Club", noun="club", words=(r"\bclubs?\b",))
    return Catalog("t", schemas, [])


def test_a_teams_own_collections_are_asked_for_a_pipeline_in_a_short_prompt():
    """Own collections: the fixed pipeline system prompt; every own collection listed (a question may
    join them), the named one first, nested as stored (`Sports[{...}]` an array of objects, `Tags[]`
    of values), a value the question says shown as stored, the engine's `ref` not; the caller's
    examples; the offline draft as a hint without the engine's `ref`, with the words it did not read;
    no IR rules."""
    from context_engine.prompts import PIPELINE_SYSTEM

    catalog = _own_catalog()
    catalog.schemas["Student"].fields["ref"] = catalog.schemas["Student"].fields["StuID"].__class__("ref", {"string"})
    messages = build_messages(
        context(catalog, "first names of the clubs' members who major in physics"),
        examples=lambda q: [f"Q: names of pupils -> {{}} ({q})"],
    )
    assert messages[0] == ("system", PIPELINE_SYSTEM)
    prompt = messages[1][1]
    lines = prompt.splitlines()
    assert lines[0] == "Club: ClubID:num,ClubName,LName,Members[{StuID:num}]"  # the one the question names
    assert lines[1] == "Student: Fname,Lname,Major=Physics,Sports[{Hours:num,SportName}],StuID:num,Tags[]"
    assert "Q: names of pupils -> {} (first names of the clubs' members who major in physics)" in prompt
    assert prompt.endswith("Question: first names of the clubs' members who major in physics")
    draft = next(line for line in lines if line.startswith("Rule-based draft"))
    assert '"collection":"Club"' in draft and draft.endswith("it did not read 'first', 'members who major in physics'")
    assert "ref" not in prompt and "Now:" not in prompt and len(prompt) < 500


def test_a_long_listing_names_the_collections_past_its_budget(monkeypatch):
    from context_engine.query import llm_planner

    monkeypatch.setattr(llm_planner, "MAX_LISTING_CHARS", 60)
    prompt = build_messages(context(_own_catalog(), "how many students"))[1][1]
    assert prompt.startswith("Student: Fname,") and "\nother collections: Club\n" in prompt and "ClubName" not in prompt


def test_the_pipeline_answer_is_asked_without_a_schema_with_a_short_cap_and_spelled_by_the_tenant():
    """No grammar to decode under (slow on a small machine): the cap only; the answer in a code fence
    is read, and its names are the tenant's."""
    import httpx
    from langchain_openai import ChatOpenAI

    from context_engine.query.llm_planner import MAX_PIPELINE_TOKENS

    bodies = []
    answer = {
        "collection": "Student",
        "pipeline": [{"$match": {"major": "Physics"}}, {"$project": {"fname": 1, "_id": 0}}],
    }

    def endpoint(request):
        bodies.append(json.loads(request.content))
        return openai_stream(f"```json\n{json.dumps(answer)}\n```")

    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://endpoint.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(endpoint)),
    )
    plan = LLMPlanner(model).plan(context(_own_catalog(), "first names of physics students"))
    (body,) = bodies
    assert body["max_tokens"] == MAX_PIPELINE_TOKENS <= 300
    assert "response_format" not in body
    # Written in another case, the fields are the tenant's own.
    assert plan.collection == "Student" and plan.pipeline == [
        {"$match": {"Major": "Physics"}},
        {"$project": {"Fname": 1, "_id": 0}},
    ]


def test_a_pipeline_joining_what_the_tenant_may_not_read_is_an_error_the_model_is_shown():
    """The model's pipeline is validated with the tenant's schemas: a join outside them is refused, and
    the refusal is in the next prompt, after the rejected pipeline."""
    from context_engine.query.engine import validate
    from context_engine.query.plan import Attempt

    catalog = _own_catalog()
    bad = {
        "collection": "Student",
        "pipeline": [{"$lookup": {"from": "people", "localField": "StuID", "foreignField": "id", "as": "p"}}],
    }
    ctx = context(catalog, "students and their people")
    plan = LLMPlanner(ScriptedChatModel.answering(bad)).plan(ctx)
    error = validate(plan, ctx, __import__("context_engine.config", fromlist=["Settings"]).Settings())
    assert error and "$lookup from 'people' is not allowed" in error
    ctx.previous = [Attempt(plan=plan, error=error)]
    messages = build_messages(ctx)
    assert messages[-2] == ("ai", json.dumps(bad, separators=(",", ":")))
    assert error in messages[-1][1]


def test_an_ir_answer_about_own_collections_still_compiles():
    """A model without a JSON schema may answer in the IR: it compiles as before, its topic words dropped."""
    catalog = _own_catalog()
    answer = {
        "collection": "Student",
        "unwind": "Sports",
        "filters": [{"field": "Sports.SportName[]", "op": "eq", "value": "Chess"}],
        "shape": {"kind": "list", "fields": ["Fname"], "sort": [{"field": "relevance", "direction": -1}]},
    }
    plan = LLMPlanner(ScriptedChatModel.answering({**answer, "text": ["chess", "players"]})).plan(
        context(catalog, "first names of chess players")
    )
    assert plan.pipeline == [
        {"$unwind": "$Sports"},
        {"$match": {"Sports.SportName": "Chess"}},
        {"$project": {"Fname": 1, "ref": 1}},
    ]
    assert "topic words 'chess players' dropped: Student has no full-text index" in plan.notes


def test_a_draft_that_planned_nothing_is_not_shown():
    """The offline planner read nothing of the question: no draft line to mislead the model."""
    prompt = build_messages(context(_own_catalog(), "tally them up"))[1][1]
    assert "Rule-based draft" not in prompt and prompt.endswith("Question: tally them up")


def test_the_answer_is_read_until_its_json_object_closes():
    """A small model writes on after its plan (a closing fence, an explanation) until its cap; the
    streamed answer is cut where the first JSON object closes and the stream is closed there, so the
    server stops generating instead of spending ~0.13 s a token nobody reads."""
    import httpx
    from langchain_openai import ChatOpenAI

    from context_engine.chat_models import counting_calls
    from context_engine.query.llm_planner import _json_mode, parse_plan

    sent: list[str] = []
    pieces = [
        'Here:\n```json\n{"collection": "iss',
        'ues", "text": ["a } b"]}',
        "\n```\n",
        "This plan lists",
        " issues.",
    ]
    model = ChatOpenAI(
        model="m",
        api_key="k",
        base_url="http://endpoint.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(lambda request: openai_stream(*pieces, sent=sent))),
    )
    with counting_calls() as calls:
        answer = _json_mode(model).invoke("open issues about a")
    assert answer.content == 'Here:\n```json\n{"collection": "issues", "text": ["a } b"]}'
    # one call, its prompt's characters, the chunks read (one token a chunk on a llama.cpp server)
    assert [(c.prompt_chars, c.completion_tokens) for c in calls] == [(len("open issues about a"), 2)]
    assert parse_plan(answer.content).text == ["a } b"]
    assert "This plan lists" not in sent and " issues." not in sent


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('{"a": 1}', 8),
        ('x {"a": {"b": [1, {}]}} {"c": 2}', 23),
        ('{"a": "}\\"{"} tail', 13),
        ('{"a": {"b": 1}', None),
        ("no object", None),
    ],
)
def test_an_object_ends_where_its_outer_brace_closes_strings_aside(text, end):
    from context_engine.query.llm_planner import object_end

    assert object_end(text) == end


def test_the_join_the_prompt_teaches_is_one_the_validator_accepts():
    """The system prompt's join ($lookup, then $unwind of what it joined, read as Docs1.x) passes the
    validator with the tenant's schemas, spelled as the model writes it."""
    from context_engine.prompts import PIPELINE_SYSTEM
    from context_engine.query.model_repairs import own_spelling
    from context_engine.query.validate import validate_pipeline

    assert '{"$lookup":{"from":C2,"localField":F,"foreignField":F2,"as":"Docs1"}},{"$unwind":"$Docs1"}' in (
        PIPELINE_SYSTEM
    )
    schemas = _own_catalog().schemas
    written = [
        {"$unwind": "$Members"},
        {"$lookup": {"from": "student", "localField": "Members.StuID", "foreignField": "StuID", "as": "Docs1"}},
        {"$unwind": "$Docs1"},
        {"$match": {"Docs1.major": "Physics"}},
        {"$project": {"ClubName": 1, "Fname": "$Docs1.Fname", "_id": 0}},
    ]
    collection, pipeline = own_spelling("Club", written, schemas)
    assert pipeline[1]["$lookup"]["from"] == "Student" and pipeline[3] == {"$match": {"Docs1.Major": "Physics"}}
    assert validate_pipeline(pipeline, schemas[collection], schemas=schemas) == []
