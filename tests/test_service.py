"""The engine service: each operation on the sample corpus, and access through every one of them —
a non-member of #security-private never sees its thread, whichever operation asks."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from context_engine import service
from context_engine.sources.sample import STORIES
from tests.conftest import NOW

PRIVATE_CHANNEL = "G04SECPR9Z"  # #security-private: members sokafor, rsh-dev, priyar, achen42, ingrid-h
PRIVATE_THREAD = f"{PRIVATE_CHANNEL}:{STORIES['leaked_stripe_key']['thread']['ts']}"
PRIVATE_COUNT = [{"$match": {"channel": "security-private"}}, {"$count": "n"}]


@pytest.fixture
def member(settings):
    return replace(settings, asker="sokafor")


@pytest.fixture
def outsider(settings):
    return replace(settings, asker="zwei-dev")


def _count(rows) -> int:
    return rows[0]["n"] if rows else 0


def _mentions_private(value) -> bool:
    """A ref, link or metadata of the private channel's records (its name alone is in a public PR's body)."""
    return PRIVATE_CHANNEL in json.dumps(value, default=str)


# ------------------------------------------------------------------------------------------ scope
def test_check_scope_refuses_a_tenant_without_data_and_an_inexact_asker(settings, member):
    service.check_scope(member)
    with pytest.raises(service.NoTenantData, match=r"tenant 'nobody' has no data \(tenants with data: .*acme"):
        service.check_scope(replace(settings, tenant="nobody"))
    with pytest.raises(service.UnknownPerson):
        service.check_scope(replace(settings, asker="sokafo"))  # one letter short: never a near miss
    with pytest.raises(service.UnknownPerson):
        service.check_scope(replace(settings, asker="Samuel"))  # a name is not an account


# ------------------------------------------------------------------------------------------ query
def test_query_is_scoped_to_the_askers_access(settings, member, outsider):
    assert _count(service.query(member, "messages", PRIVATE_COUNT)) > 0
    assert _count(service.query(outsider, "messages", PRIVATE_COUNT)) == 0
    assert _count(service.query(settings, "messages", PRIVATE_COUNT)) == 0  # nobody asks: public only


def test_query_cannot_reach_past_its_scope_by_naming_hidden_fields(member):
    for pipeline in ([{"$match": {"tenant_id": "globex"}}], [{"$match": {"acl": "*"}}], [{"$match": {"$where": "1"}}]):
        with pytest.raises(service.PipelineRejected) as refused:
            service.query(member, "messages", pipeline)
        assert refused.value.errors and str(refused.value).startswith("rejected: ")


def test_query_reads_extended_json_and_refuses_unknown_collections(settings):
    rows = service.query(
        settings,
        "pull_requests",
        [{"$match": {"created_at": {"$gte": {"$date": "2026-01-01T00:00:00Z"}}}}, {"$count": "n"}],
    )
    later = service.query(
        settings,
        "pull_requests",
        [{"$match": {"created_at": {"$gte": {"$date": "2099-01-01T00:00:00Z"}}}}, {"$count": "n"}],
    )
    assert _count(rows) > 0 and _count(later) == 0
    with pytest.raises(service.UnknownCollection, match=r"unknown collection 'secrets'; use one of: .*pull_requests"):
        service.query(settings, "secrets", [])


def test_query_caps_rows_at_the_settings_limit(settings):
    assert len(service.query(replace(settings, max_rows=3), "messages", [{"$match": {}}])) == 3


# ----------------------------------------------------------------------------------------- search
def test_search_finds_records_once_each_in_the_rerankers_order(settings):
    hits = service.search(settings, "why did we switch the session cache to Redis?", k=5)
    assert len(hits) == 5
    assert len({h.ref for h in hits}) == 5
    scores = [h.rerank_score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert any("redis" in (h.title or "").lower() + h.text.lower() for h in hits)


def test_search_uses_the_configured_reranker(settings):
    with pytest.raises(service.RerankerError, match="unknown reranker 'bogus'"):
        service.search(replace(settings, reranker="bogus"), "session cache")


def test_search_never_returns_a_private_thread_to_a_non_member(member, outsider, settings):
    topic = "leaked Stripe key rotate revoke"
    assert any(h.ref.startswith(PRIVATE_CHANNEL) for h in service.search(member, topic, k=10))
    for who in (outsider, settings):
        assert not any(_mentions_private(h.to_json()) for h in service.search(who, topic, k=25))


def test_search_refuses_empty_text_and_no_hits(settings):
    with pytest.raises(service.InvalidInput, match="empty"):
        service.search(settings, "   ")
    with pytest.raises(service.InvalidInput, match="k must be at least 1"):
        service.search(settings, "redis", k=0)


# ------------------------------------------------------------------------------------- get_record
def test_get_record_of_a_private_thread_only_for_members(member, outsider, settings):
    view = service.get_record(member, PRIVATE_THREAD)
    assert view.collection == "messages" and view.record["ref"] == PRIVATE_THREAD
    assert "tenant_id" not in view.record and "acl" not in view.record
    for who in (outsider, settings):
        with pytest.raises(service.RecordNotFound) as forbidden:
            service.get_record(who, PRIVATE_THREAD)
        with pytest.raises(service.RecordNotFound) as missing:
            service.get_record(who, PRIVATE_CHANNEL + ":1.0")
        assert str(forbidden.value).replace(PRIVATE_THREAD, "REF") == str(missing.value).replace(
            PRIVATE_CHANNEL + ":1.0", "REF"
        )  # forbidden and absent: the same words


def test_get_record_links_never_lead_a_non_member_into_the_private_thread(member, outsider):
    pr = STORIES["leaked_stripe_key"]["pr"]
    assert any(r["ref"].startswith(PRIVATE_CHANNEL) for r in service.get_record(member, pr).linked)
    view = service.get_record(outsider, pr)
    assert view.record["ref"] == pr and not _mentions_private([view.links, view.linked])


# ----------------------------------------------------------------------------------------- schema
def test_schema_shows_private_values_only_to_their_readers(member, outsider):
    assert "security-private" in service.schema(member, "messages")["messages"].describe()
    described = service.schema(outsider)
    assert "messages" in described and "pull_requests" in described
    assert not any("security-private" in s.describe() for s in described.values())
    with pytest.raises(service.UnknownCollection):
        service.schema(outsider, "secrets")


# ----------------------------------------------------------------------------------------- people
def test_people_and_find_people(settings):
    report = service.people(settings)
    logins = [p.get("login") for p in report.people]
    assert "rsh-dev" in logins and "sokafor" in logins
    names = [str(p.get("name") or p.get("login") or "").lower() for p in report.people]
    assert names == sorted(names)
    assert set(report.to_json()) == {"people", "conflicts"}
    found = service.find_people(settings, "Rashid Khan")
    assert [p.handle("github") for p in found] == ["rsh-dev"]
    with pytest.raises(service.UnknownPerson):
        service.find_people(settings, "Nobody Atall")


# ----------------------------------------------------------------------------------------- status
def test_status_counts_records_and_reports_the_index(settings):
    report = service.status(settings)
    assert set(report["tenants"]) >= {"acme", "globex"}
    acme = report["tenants"]["acme"]
    assert acme["records"]["pull_requests"] > 0 and acme["index"]["chunks"] > 0
    assert list(service.status(settings, ["globex"])["tenants"]) == ["globex"]


# -------------------------------------------------------------------------------- ask and feedback
@pytest.fixture
def own_data(settings, tmp_path):
    """A copy of the sample: `ask` and `feedback` write the asker's last question and the ratings."""
    data_dir = tmp_path / "data"
    shutil.copytree(settings.data_dir, data_dir)
    for old in data_dir.glob("feedback.sqlite*"):
        old.unlink()
    return replace(settings, data_dir=data_dir)


def test_ask_answers_as_the_asker_and_feedback_rates_it(own_data):
    rashid = replace(own_data, asker="rsh-dev")
    answer = service.ask(rashid, "  PRs I merged last week ", now=NOW)
    out = answer.to_json()
    assert out["question"] == "PRs I merged last week" and answer.now == NOW
    assert out["route"] == "structured" and out["records"]
    assert any("$match" in stage for q in out["queries"] for stage in q.get("pipeline", []))
    rated = service.feedback(rashid, "up", note="right")
    assert rated["question"] == "PRs I merged last week" and rated["template"]
    with pytest.raises(service.FeedbackError):
        service.feedback(rashid, "sideways")


def test_ask_never_cites_a_private_thread_to_a_non_member(own_data):
    question = "what happened with the leaked Stripe key in #security-private?"
    member = service.ask(replace(own_data, asker="sokafor"), question, now=NOW).to_json()
    assert _mentions_private([member["citations"], member["documents"]])
    for who in (replace(own_data, asker="zwei-dev"), own_data):
        out = service.ask(who, question, now=NOW).to_json()
        assert not _mentions_private([out["citations"], out["records"], out["documents"]])


def test_ask_refuses_bad_input_before_any_work(settings):
    with pytest.raises(service.InvalidInput, match="empty"):
        service.ask(settings, " ")
    with pytest.raises(service.InvalidInput, match="malformed time"):
        service.ask(settings, "open PRs", now="yesterday-ish")


# ------------------------------------------------------------------------------------ context set
TEMPLATE = {
    "name": "drafts-by",
    "question": "draft PRs by {who}",
    "params": {"who": "person"},
    "plan": {"collection": "pull_requests", "pipeline": [{"$match": {"draft": True, "user.login": "{{who.github}}"}}]},
    "example": {"question": "draft PRs by Rashid", "values": {"who": "rsh-dev"}},
}
PRIVATE_TEMPLATE = {
    "name": "security-thread",
    "question": "the security-private messages",
    "params": {},
    "plan": {"collection": "messages", "pipeline": [{"$match": {"channel": "security-private"}}]},
    "example": {"question": "the security-private messages", "values": {}},
}


def test_context_set_add_try_export_remove(own_data):
    assert service.add_template(own_data, TEMPLATE) == "drafts-by"
    with pytest.raises(service.ContextSetError, match="already exists"):
        service.add_template(own_data, TEMPLATE)
    view = service.context_set(own_data)
    assert view.source.endswith("acme.json") and view.context_set.template("drafts-by") is not None
    assert set(view.to_json()) >= {"file", "templates", "facets", "inactive"}
    report = service.try_template(own_data, "drafts-by", now=NOW)
    assert report["template_plan"]["pipeline"][0]["$match"]["user.login"] == "rsh-dev"
    assert report["engine_plan"]["planner"] and report["engine_outcome"] in {"success", "no_results"}
    assert [t["name"] for t in service.export_context_set(own_data)["templates"]][-1] == "drafts-by"
    service.remove_template(own_data, "drafts-by")
    with pytest.raises(service.UnknownTemplate, match="no template 'drafts-by' here"):
        service.try_template(own_data, "drafts-by")
    with pytest.raises(service.ContextSetError):
        service.remove_template(own_data, "drafts-by")


def test_try_template_runs_the_templates_plan_as_the_asker(own_data):
    service.add_template(own_data, PRIVATE_TEMPLATE)
    assert service.try_template(replace(own_data, asker="sokafor"), "security-thread", now=NOW)["template_rows"] > 0
    for who in (replace(own_data, asker="zwei-dev"), own_data):
        assert service.try_template(who, "security-thread", now=NOW)["template_rows"] == 0


def test_feedback_questions_replay_a_rated_plan(own_data):
    assert service.feedback_questions(own_data) == []
    rashid = replace(own_data, asker="rsh-dev")
    service.ask(rashid, "PRs I merged last week", now=NOW)
    service.feedback(rashid, "up")
    (item,) = service.feedback_questions(own_data)
    assert item["question"] == "PRs I merged last week" and item["collection"] == "pull_requests"


# ----------------------------------------------------------------------------------------- ingest
def test_ingest_an_own_collection_then_query_it_within_its_access(tmp_path):
    from context_engine.config import Settings

    rows = [
        {"id": 1, "title": "disk full on db-3", "severity": "high", "readers": "github:alice"},
        {"id": 2, "title": "cert expired", "severity": "low", "readers": "*"},
    ]
    (tmp_path / "incidents.json").write_text(json.dumps(rows), encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", mongodb_uri=None, tenant="ops", asker=None, use_llm=False)
    request = service.SourceRequest(
        "json",
        [tmp_path / "incidents.json"],
        own=service.own_options("incidents", access_field="readers", ref_prefix="INC-"),
    )
    reading = service.read_source(settings, request)
    assert reading.read.notes and reading.own
    (report,) = service.ingest(settings, reading, index=False)
    assert report["tenant"] == "ops" and report["collections"]["incidents"]["inserted"] == 2
    assert report["inferred"] == reading.read.notes
    seen = service.query(settings, "incidents", [{"$project": {"title": 1}}])
    assert [r["title"] for r in seen] == ["cert expired"]  # alice's incident: not for an anonymous asker


def test_ingest_refuses_what_it_cannot_read_in_one_sentence(tmp_path):
    from context_engine.config import Settings

    settings = Settings(data_dir=tmp_path / "data", mongodb_uri=None, tenant="ops", asker=None, use_llm=False)
    with pytest.raises(service.InvalidInput, match="taken by the engine"):
        service.own_options("pull_requests")
    with pytest.raises(service.InvalidInput):
        service.own_options("incidents", times={"created": "bad path["})
    with pytest.raises(service.InvalidInput, match="a JSON object is expected"):
        service.mongodb_filter({"$date": "2026-01-01T00:00:00Z"})
    with pytest.raises(service.InvalidInput, match=r"no such file|not found|does not exist"):
        service.read_source(settings, service.SourceRequest("github", [tmp_path / "none.jsonl"]))
