"""Feedback: stored per tenant with the caller's identity, validated before it teaches, replayed as gold;
the CLI, the server endpoint and the MCP tool over the same store."""

from __future__ import annotations

import json
import shutil
import threading

import httpx
import pytest

from context_engine.config import Settings
from context_engine.query import context_sets as cs
from context_engine.query.feedback import MAX_NOTE, FeedbackError, FeedbackStore, regression_items, submit
from context_engine.resources import catalog_for
from context_engine.server import ApiKey, Limits, create_app
from tests.serving import Server

NOW = "2026-11-30T12:00:00Z"
PLAN = {
    "collection": "pull_requests",
    "pipeline": [
        {
            "$match": {
                "user.login": "rsh-dev",
                "merged": True,
                "merged_at": {"$gte": {"$date": "2026-11-23T00:00:00Z"}, "$lt": {"$date": "2026-11-30T00:00:00Z"}},
            }
        }
    ],
}


@pytest.fixture
def data(sample_dir, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(sample_dir, data_dir)
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)


def test_a_thumbs_up_becomes_a_parameterised_template_that_answers_new_values(data):
    store = FeedbackStore(data.data_dir)
    store.record_ask("acme", "priyar", "PRs Rashid merged last week", PLAN, "Found 3 pull requests", NOW)
    out = submit(data.data_dir, catalog_for(data), asker="priyar", rating="up")
    assert out["template"] == "feedback-1" and out["asker"] == "priyar"
    template = cs.load(data.data_dir, "acme", catalog_for(data).schemas).template("feedback-1")
    assert template.question == "PRs {p1} merged {t2}" and template.params == {"p1": "person", "t2": "time"}
    assert template.source == "feedback #1 (up) by priyar"
    loaded = cs.load(data.data_dir, "acme", catalog_for(data).schemas)
    from datetime import datetime

    from context_engine.query.engine import resolve

    question = "PRs Priya merged last month"
    ctx, _ = resolve(question, datetime(2026, 11, 30, 12), catalog_for(data), None)
    found = loaded.match_template(question, cs.slots_for(question, ctx.mentions, ctx.times))
    assert found is not None and found[0].name in ("feedback-1", "prs-merged-by-person")
    match = found[0].instantiate(found[1])[0]["$match"]
    assert match["user.login"] == "priyar" and match["merged_at"]["$gte"] == datetime(2026, 10, 1)


def test_identity_is_the_callers_and_an_ask_of_someone_else_is_not_yours(data):
    store = FeedbackStore(data.data_dir)
    store.record_ask("acme", "rsh-dev", "PRs Rashid merged last week", PLAN, "Found 3", NOW)
    # Another asker has no last question of their own: it is not rsh-dev's to rate.
    with pytest.raises(FeedbackError, match="no question asked yet"):
        submit(data.data_dir, catalog_for(data), asker="priyar", rating="up")
    # Another tenant's feedback never sees acme's asks.
    assert store.last_ask("globex") is None


def test_bad_feedback_is_refused_in_one_line(data):
    store = FeedbackStore(data.data_dir)
    store.record_ask("acme", "", "open PRs", None, "", NOW)
    catalog = catalog_for(data)
    cases = [
        ({"rating": "sideways"}, "rating must be one of"),
        ({"rating": "up", "note": "x" * (MAX_NOTE + 1)}, "at most 2,000"),
        (
            {"rating": "down", "corrected": {"collection": "pull_requests", "pipeline": [{"$out": "x"}]}},
            r"\$out is not allowed",
        ),
        (
            {
                "rating": "down",
                "corrected": {"collection": "pull_requests", "pipeline": [{"$match": {"tenant_id": "globex"}}]},
            },
            "refused",
        ),
        (
            {"rating": "down", "corrected": {"collection": "people_secrets", "pipeline": [{"$match": {}}]}},
            "has no records here",
        ),
        ({"rating": "down", "corrected": "[" * 5000}, "not valid JSON|cannot be read"),
        (
            {"rating": "down", "corrected": {"collection": "pull_requests", "pipeline": [], "tenant": "globex"}},
            "a plan is",
        ),
    ]
    for kwargs, words in cases:
        with pytest.raises(FeedbackError, match=words) as err:
            submit(data.data_dir, catalog, asker="", **kwargs)
        assert "\n" not in str(err.value)
    assert store.all("acme") == []  # nothing refused was stored


def test_a_down_without_a_plan_teaches_nothing_and_replay_uses_only_gold(data):
    store = FeedbackStore(data.data_dir)
    catalog = catalog_for(data)
    store.record_ask("acme", "", "why did we move to Redis?", None, "Because ...", NOW)
    assert submit(data.data_dir, catalog, asker="", rating="down", note="missed the ADR")["template"] == ""
    store.record_ask("acme", "", "PRs Rashid merged last week", PLAN, "Found 3", NOW)
    fixed = {"collection": "pull_requests", "pipeline": [{"$match": {"user.login": "rsh-dev"}}, {"$count": "n"}]}
    out = submit(data.data_dir, catalog, asker="", rating="down", corrected=fixed)
    assert out["corrected"] and out["template"]
    items = regression_items(store, "acme")
    assert [(i["question"], i["compare"]) for i in items] == [("PRs Rashid merged last week", "count")]
    assert items[0]["gold"] == fixed["pipeline"]


def test_concurrent_feedback_is_all_kept(data):
    store = FeedbackStore(data.data_dir)

    def give(n):
        store.record_ask("acme", f"a{n}", f"open PRs {n}", None, "", NOW)
        submit(data.data_dir, catalog_for(data), asker=f"a{n}", rating="down", note=str(n))

    threads = [threading.Thread(target=give, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = store.all("acme")
    assert sorted(int(r.note) for r in rows) == list(range(10))
    assert all(r.asker == f"a{r.note}" and r.question == f"open PRs {r.note}" for r in rows)


# -- the server endpoint ----------------------------------------------------------------------------

KEYS = {"rashid-key": ApiKey(tenant="acme", user="rsh-dev"), "globex-key": ApiKey(tenant="globex")}


@pytest.fixture
def server(data):
    with Server(create_app(data, KEYS, Limits(requests_per_minute=500))) as running:
        yield running


def _post(server, key, body):
    return httpx.post(
        f"{server.url}/feedback",
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
        content=body if isinstance(body, (bytes, str)) else json.dumps(body),
    )


def test_server_feedback_takes_the_asker_and_tenant_from_the_key(server, data):
    FeedbackStore(data.data_dir).record_ask("acme", "rsh-dev", "PRs Rashid merged last week", PLAN, "Found 3", NOW)
    for claim in ({"rating": "up", "asker": "priyar"}, {"rating": "up", "tenant": "globex"}):
        response = _post(server, "rashid-key", claim)
        assert response.status_code == 400 and "come from the API key" in response.json()["error"]
    response = _post(server, "rashid-key", {"rating": "up", "note": "right"})
    assert response.status_code == 200, response.text
    assert response.json()["asker"] == "rsh-dev" and response.json()["template"] == "feedback-1"
    rows = FeedbackStore(data.data_dir).all("acme")
    assert [(r.asker, r.tenant, r.rating) for r in rows] == [("rsh-dev", "acme", "up")]
    assert FeedbackStore(data.data_dir).all("globex") == []
    # globex's key: its own tenant, no question asked there, nothing of acme's to rate.
    assert _post(server, "globex-key", {"rating": "up"}).status_code == 400
    assert _post(server, "no-such-key", {"rating": "up"}).status_code == 401
    huge = _post(server, "rashid-key", {"rating": "down", "note": "x" * 70_000})
    assert huge.status_code == 413  # the run body cap, before any parsing
    long = _post(server, "rashid-key", {"rating": "down", "note": "x" * 5_000})
    assert long.status_code == 400 and "at most 2,000" in long.json()["error"]
    assert _post(server, "rashid-key", b"not json").status_code == 400
    bad_plan = _post(
        server,
        "rashid-key",
        {"rating": "down", "plan": {"collection": "pull_requests", "pipeline": [{"$lookup": {"from": "people"}}]}},
    )
    assert bad_plan.status_code == 400 and "$lookup is not allowed" in bad_plan.json()["error"]
