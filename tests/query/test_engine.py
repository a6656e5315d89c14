from datetime import datetime

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.query.engine import MaxAttempts, NoResults, ResolutionFailed, Success
from context_engine.query.plan import Plan
from context_engine.resources import catalog_for
from context_engine.sources.sample import STORIES

NOW = datetime(2026, 11, 30, 12, 0)


class ScriptedPlanner:
    """Stands in for a model: returns the given plans in order, as an LLM would write them."""

    def __init__(self, *plans):
        self.plans = list(plans)
        self.seen_errors = []

    def plan(self, ctx):
        self.seen_errors.append([a.error for a in ctx.previous])
        collection, pipeline = self.plans.pop(0)
        return Plan(collection, pipeline, confidence=0.8, planner="llm")


def _run(settings, question, asker=None, planner=None, tenant="acme"):
    """The production structured loop (the subgraph), with `planner` standing in for the model."""
    return run_structured(question, settings.with_overrides(tenant=tenant, asker=asker), now=NOW, planner=planner)


def test_offline_answer_to_a_structured_question(settings):
    result = _run(settings, "PRs Rashid merged last week")
    assert isinstance(result, Success)
    expected = {pr["title"] for pr in STORIES["last_week_merges"]["prs"] if pr["author"] == "rsh-dev"}
    assert {r["title"] for r in result.rows} >= expected
    assert all(r["user"]["login"] == "rsh-dev" and r["merged"] for r in result.rows)
    assert all("2026-11-23" <= r["merged_at"] < "2026-11-30" for r in result.rows)  # rows are JSON: ISO dates
    assert not any(k in r for r in result.rows for k in ("tenant_id", "acl", "_id"))


def test_model_naming_the_other_tenant_still_sees_only_its_own(settings):
    planner = ScriptedPlanner(
        ("pull_requests", [{"$match": {"tenant_id": "globex"}}]),  # rejected by validation
        ("pull_requests", [{"$match": {"repo": "globex/api", "title": {"$exists": True}}}]),
    )  # valid, but scoped
    result = _run(settings, "zzzz qqqq", planner=planner)  # unplannable offline -> the model is asked
    assert [a.error is not None for a in result.attempts] == [True, False]
    assert "tenant_id" in result.attempts[0].error
    assert planner.seen_errors[1] and "tenant_id" in planner.seen_errors[1][0]  # the error was fed back
    assert isinstance(result, NoResults)  # globex's PRs exist, but not for acme


def test_globex_sees_its_own_story_and_acme_does_not(settings):
    story = STORIES["globex_dynamodb_sessions"]
    pipeline = [{"$match": {"title": story["pr_title"]}}]
    assert isinstance(
        _run(settings, "x", planner=ScriptedPlanner(("pull_requests", pipeline)), tenant="acme"), NoResults
    )
    result = _run(settings, "x", planner=ScriptedPlanner(("pull_requests", pipeline)), tenant="globex")
    assert isinstance(result, Success) and result.rows[0]["ref"] == story["pr"]


def test_private_channel_needs_membership(settings):
    story = STORIES["leaked_stripe_key"]
    pipeline = [{"$match": {"channel": "security-private"}}]
    outsider = _run(settings, "x", asker="tbecker", planner=ScriptedPlanner(("messages", pipeline)))
    member = _run(settings, "x", asker="rsh-dev", planner=ScriptedPlanner(("messages", pipeline)))
    assert isinstance(outsider, NoResults)
    assert isinstance(member, Success) and any(r["ts"] == story["thread"]["ts"] for r in member.rows)


def test_attempts_stop_at_the_limit(settings):
    bad = ("pull_requests", [{"$where": "sleep(1000)"}])
    # Words the offline planner cannot plan at all ("zzzz qqqq" would be its full-text search to fall back to).
    result = _run(settings, "what is it", planner=ScriptedPlanner(bad, bad, bad, bad))
    assert isinstance(result, MaxAttempts) and len(result.attempts) == settings.max_attempts
    assert all("$where" in a.error for a in result.attempts)


def test_ambiguous_person_is_reported_not_guessed(settings):
    result = _run(settings, "PRs Alex merged last month")
    assert isinstance(result, ResolutionFailed)
    assert "Alex Chen" in result.message and "Alex Morgan" in result.message


def test_text_search_is_served_by_bm25_in_english_and_chinese(settings):
    english = _run(
        settings,
        "x",
        planner=ScriptedPlanner(("pull_requests", [{"$match": {"$text": {"$search": "memcached redis"}}}])),
    )
    assert STORIES["redis_session_cache"]["pr"] in {r["ref"] for r in english.rows}
    chinese = _run(
        settings, "x", planner=ScriptedPlanner(("pull_requests", [{"$match": {"$text": {"$search": "重复扣款"}}}]))
    )
    assert STORIES["payments_double_charge"]["pr"] in {r["ref"] for r in chinese.rows}


def test_aggregate_over_people_carries_display_names(settings):
    result = _run(settings, "who reviewed the most PRs in the payments repo")
    assert isinstance(result, Success)
    assert all("name" in row and row["name"] != row["_id"] for row in result.rows)
    counts = [row["count"] for row in result.rows]
    assert counts == sorted(counts, reverse=True)


@pytest.mark.parametrize(
    "question,expected",
    [
        ("how many open PRs are there?", [{"$match": {"state": "open"}}, {"$count": "count"}]),
        (
            "open PRs grouped by repo",
            [
                {"$match": {"state": "open", "repo": {"$exists": True, "$ne": None}}},
                {"$group": {"_id": "$repo", "count": {"$sum": 1}}},
                {"$sort": {"count": -1, "_id": 1}},
            ],
        ),
    ],
)
def test_offline_pipelines_for_counts_and_groups(settings, question, expected):
    """The pipelines the planner composes; with the context set on, a shipped template that says the
    same question answers it with the same groups."""
    composed = _run(settings.with_overrides(use_context_set=False), question)
    assert isinstance(composed, Success) and composed.plan.pipeline == expected
    with_templates = _run(settings, question)
    assert isinstance(with_templates, Success) and with_templates.rows == composed.rows


def test_model_written_names_are_linked_to_handles_by_code(settings):
    from context_engine.query.engine import resolve
    from context_engine.query.llm_planner import link_people

    ctx, _ = resolve("x", NOW, catalog_for(settings), None)
    pipeline = [
        {
            "$match": {
                "user.login": "Alex Chen",
                "$or": [{"reviews.user.login": {"$in": ["Priya", "rsh-dev"]}}],
                "title": "Alex Chen",
            }
        }
    ]
    assert link_people(pipeline, "pull_requests", ctx) == [
        {
            "$match": {
                "user.login": "achen42",
                "$or": [{"reviews.user.login": {"$in": ["priyar", "rsh-dev"]}}],
                "title": "Alex Chen",
            }
        }
    ]  # only people fields change
    assert link_people([{"$match": {"fields.assignee.name": "Rashid Khan"}}], "issues", ctx) == [
        {"$match": {"fields.assignee.name": "rkhan"}}
    ]


def test_a_topic_question_is_a_ranked_keyword_search(settings):
    result = _run(settings, "why did we switch the session cache to Redis?")
    assert isinstance(result, Success)
    story = STORIES["redis_session_cache"]
    assert result.rows[0]["ref"] in {story["pr"], story["doc"], story["issue"]}  # BM25 rank, not recency
    assert result.plan.confidence < 0.7  # the LLM (or, later, semantic retrieval) is preferred


def test_a_question_with_nothing_to_query_says_so(settings):
    result = _run(settings, "???")
    assert isinstance(result, ResolutionFailed) and "could not find anything to query" in result.message


def test_a_ranking_by_a_field_the_collection_lacks_is_not_planned(settings):
    # Grouping commits by some other field (each record its own group) would answer another question.
    result = _run(settings, "which commits have the most reviewers?")
    assert isinstance(result, ResolutionFailed)


def test_words_the_rules_could_not_read_are_said_to_be_the_model_s_reading(settings):
    """An unsure offline plan goes to the model; the words the rules could not read are then the model's
    reading, and the answer says so (a small model's plan carries no spans of its own)."""
    from context_engine.query.answer import ignored

    planner = ScriptedPlanner(("pull_requests", [{"$match": {"state": "open"}}]))
    result = _run(settings, "open PRs zorbly frobnicated", planner=planner)
    assert isinstance(result, Success) and result.plan.planner == "llm"
    assert {s["how"] for s in result.plan.not_understood} == {"model"}
    assert "zorbly" in " ".join(s["text"] for s in result.plan.not_understood)
    line = ignored(result)
    assert "the chat model's reading" in line and "the answer ignores" not in line


def test_a_plan_whose_conditions_cannot_hold_together_is_declined_not_answered_zero(settings):
    """Run, `state = open` and `state != open` would answer "0 pull requests" as if that were so."""
    from context_engine.query.compile import compile_plan
    from context_engine.query.ir import Filter, PlanIR, Shape

    question = "open PRs that are not open"

    class Contradicting:
        def plan(self, ctx):
            ir = PlanIR(
                "pull_requests",
                filters=[Filter("state", "eq", "open", span=(0, 4)), Filter("state", "ne", "open", span=(18, 26))],
                shape=Shape("count"),
            )
            return Plan(
                "pull_requests", compile_plan(ir, ctx.schemas["pull_requests"]), confidence=0.9, planner="llm", ir=ir
            )

    result = run_structured(
        question, settings.with_overrides(tenant="acme"), now=NOW, planner=Contradicting(), always_llm=True
    )
    assert isinstance(result, ResolutionFailed) and not result.rows
    assert "'open' and 'not open'" in result.message and "misread" in result.message


def test_a_topic_no_record_mentions_is_said_when_nothing_matched(settings):
    """ "0 pull requests" for a topic no record holds (an unknown name read as a topic) is not an answer."""
    result = _run(settings, "how many merged PRs about zanzibarian quokkas")
    assert isinstance(result, Success) and result.rows == [{"count": 0}]
    assert [s["text"] for s in result.plan.not_understood] == ["zanzibarian quokkas"]
    # a topic said as words of the title is the same: a condition no record meets at all
    result = _run(settings, "how many merged PRs have wombats in the title")
    assert isinstance(result, Success) and result.rows == [{"count": 0}]
    assert [s["text"] for s in result.plan.not_understood] == ["wombats"]
    result = _run(settings, "how many merged PRs about refunds")  # a topic the records hold: nothing to say
    assert isinstance(result, Success) and result.plan.not_understood == []


def test_a_lower_case_full_name_opening_the_question_that_no_record_mentions_is_declined(settings):
    """ "desmond okonkwo-raines bug issues count": nobody by that name, each of its words in no record —
    declined as a name, not answered "0". Words each some record holds ("pydantic helm": never together)
    are a topic not found, said as not understood."""
    result = _run(settings, "desmond okonkwo-raines bug issues count")
    assert isinstance(result, ResolutionFailed) and result.unresolved == "desmond okonkwo-raines", result
    result = _run(settings, "pydantic helm bug issues count")
    assert isinstance(result, Success) and [s["text"] for s in result.plan.not_understood] == ["pydantic helm"]


def test_a_name_several_people_have_is_declined_even_with_a_model_configured(settings):
    """No model guesses between people: the asker gets the candidates (issue 27)."""
    planner = ScriptedPlanner(("pull_requests", [{"$match": {"state": "open"}}]))
    result = run_structured(
        "open PRs by Alex", settings.with_overrides(tenant="acme"), now=NOW, planner=planner, always_llm=True
    )
    assert isinstance(result, ResolutionFailed) and result.unresolved == "Alex"
    assert {p.key for p in result.candidates} == {"achen42", "amorgan-dev"} and planner.plans  # the model was not asked


def test_when_the_models_plans_all_fail_the_offline_plan_answers_saying_what_it_did_not_read(settings):
    """The offline plan read part of the question (not confident: the model is asked); the model's two
    plans are rejected; the offline plan is the answer's plan, its unread words said, not a refusal."""
    bad = ("pull_requests", [{"$where": "sleep(1000)"}])
    question = "open PRs in the payments repo with a wobbly frobnication"
    result = _run(settings.with_overrides(max_attempts=2), question, planner=ScriptedPlanner(bad, bad))
    assert isinstance(result, (Success, NoResults))
    assert [a.plan.planner for a in result.attempts] == ["llm", "llm", "offline"]
    offline = result.attempts[-1].plan
    assert offline.not_understood and "kept the offline plan" in offline.notes[-1]
    assert offline.pipeline[0]["$match"]["state"] == "open"
    # A plan the offline planner could not make at all: nothing to fall back to, the question is declined.
    assert isinstance(_run(settings, "what is it", planner=ScriptedPlanner(bad, bad, bad, bad)), MaxAttempts)


def test_a_name_nobody_has_is_declined_even_with_a_model_configured(settings):
    """The offline draft reads a name no one in the data has (so it is not confident): the model is not
    asked to plan around the name, which it would only guess a value for (issue 27: no answer on an
    unknown name)."""
    planner = ScriptedPlanner(("issues", [{"$match": {"assignee.login": "司徒若溪"}}]))
    question = "司徒若溪 去年关掉了哪些 issue"
    result = run_structured(question, settings.with_overrides(tenant="acme"), now=NOW, planner=planner)
    assert isinstance(result, ResolutionFailed) and result.unresolved == "司徒若溪", result
    assert planner.plans  # the model was not asked


def test_a_list_cut_at_the_row_cap_states_the_exact_total(settings):
    from context_engine.query.answer import compose

    capped = _run(settings, "merged PRs")
    counted = _run(settings, "how many merged PRs")
    assert isinstance(capped, Success) and isinstance(counted, Success)
    assert len(capped.rows) == settings.max_rows and capped.total == counted.rows[0]["count"] > settings.max_rows
    text, _ = compose(capped, "pull_requests")
    assert text.startswith(f"Found {capped.total} pull requests; the records hold the first {settings.max_rows}:")
    whole = _run(settings, "PRs Rashid merged last week")
    assert isinstance(whole, Success) and whole.total is None  # under the cap: the rows are the total
    assert compose(whole, "pull_requests")[0].startswith(f"Found {len(whole.rows)} pull request")
