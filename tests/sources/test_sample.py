"""Invariants of the bundled sample corpus (context_engine.sources.sample)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from context_engine.sources.sample import SAMPLE_NOW, STORIES, TENANTS, generate

COLLECTIONS = ("pull_requests", "issues", "messages", "documents", "commits", "people")
CUTOFF = datetime(2026, 11, 27, 23, 59, tzinfo=UTC)
MINIMUM = {
    "acme": {"pull_requests": 520, "issues": 320, "messages": 1100, "documents": 45, "people": 30},
    "globex": {"pull_requests": 60, "issues": 35, "messages": 140, "documents": 6, "people": 8},
}
CJK = re.compile(r"[\u4e00-\u9fff]")
GH_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
JIRA_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000\+0000$")


@pytest.fixture(scope="module")
def corpus():
    return generate()


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00").replace("+0000", "+00:00"))


def strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, str):
        yield value


def by_url(records):
    return {pr["html_url"]: pr for pr in records}


def test_deterministic():
    # Speed is measured by `make bench`, not asserted here.
    first = generate()
    assert first == generate()
    assert first == generate(7)
    assert first != generate(8)


def test_shape_and_counts(corpus):
    assert tuple(corpus) == TENANTS
    for tenant, minimum in MINIMUM.items():
        assert set(corpus[tenant]) == set(COLLECTIONS)
        for name, count in minimum.items():
            assert len(corpus[tenant][name]) >= count, (tenant, name)
        merged = [p for p in corpus[tenant]["pull_requests"] if p["merged"]]
        assert len(corpus[tenant]["commits"]) == len(merged)
        for name in COLLECTIONS:
            for record in corpus[tenant][name]:
                assert isinstance(record["acl"], list) and record["acl"], (tenant, name)


def test_time_span_and_cutoff(corpus):
    for tenant in TENANTS:
        created = [parse(p["created_at"]) for p in corpus[tenant]["pull_requests"]]
        if tenant == "acme":
            assert max(created) - min(created) >= timedelta(days=540)  # 18 months
        for name in COLLECTIONS:
            for text in strings(corpus[tenant][name]):
                if GH_DATE.match(text) or JIRA_DATE.match(text):
                    assert parse(text) <= CUTOFF, (tenant, name, text)
        for msg in corpus[tenant]["messages"]:
            assert datetime.fromtimestamp(float(msg["ts"]), UTC) <= CUTOFF
    assert SAMPLE_NOW > CUTOFF


def test_people(corpus):
    for tenant in TENANTS:
        people = corpus[tenant]["people"]
        for key in ("login", "name", "email", "slack_id", "slack_handle", "jira"):
            assert len({p[key] for p in people}) == len(people), (tenant, key)
        for p in people:
            assert p["login"] != p["name"] and p["slack_handle"] != p["name"]
            assert re.fullmatch(r"U0[0-9A-Z]{7,9}", p["slack_id"])
    acme = corpus["acme"]["people"]
    assert {p["team"] for p in acme} == {"payments", "web", "infra", "mobile", "data"}
    firsts = Counter(p["name"].split()[0] for p in acme if " " in p["name"])
    assert firsts["Alex"] == 2
    chinese = [p for p in acme if CJK.search(p["name"])]
    assert len(chinese) >= 5 and all(p["aliases"] for p in chinese)
    rashids = {t: [p["login"] for p in corpus[t]["people"] if p["name"] == "Rashid Khan"] for t in TENANTS}
    assert rashids == {"acme": ["rsh-dev"], "globex": ["rashidk"]}


def test_pull_requests(corpus):
    for tenant in TENANTS:
        prs = corpus[tenant]["pull_requests"]
        logins = {p["login"] for p in corpus[tenant]["people"]}
        per_repo = defaultdict(list)
        for pr in prs:
            repo = pr["base"]["repo"]["full_name"]
            per_repo[repo].append(pr)
            assert pr["html_url"] == f"https://github.com/{repo}/pull/{pr['number']}"
            assert pr["user"]["login"] in logins
            if pr["merged"]:
                assert pr["state"] == "closed" and pr["merged_at"] and pr["merged_by"]
                assert pr["merged_at"] == pr["closed_at"]
            else:
                assert pr["merged_at"] is None and pr["merged_by"] is None
            if pr["state"] == "open":
                assert pr["closed_at"] is None and 1 <= len(pr["requested_reviewers"]) <= 3
            else:
                assert not pr["draft"]
            assert len(pr["labels"]) <= 3 and len(pr["reviews"]) <= 3
            for review in pr["reviews"]:
                assert review["user"]["login"] != pr["user"]["login"]
                assert pr["created_at"] <= review["submitted_at"] <= (pr["closed_at"] or "9999")
        for repo, items in per_repo.items():
            numbers = [p["number"] for p in sorted(items, key=lambda p: (p["created_at"], p["id"]))]
            assert len(set(numbers)) == len(numbers), repo
            assert numbers == sorted(numbers), repo
    acme = corpus["acme"]["pull_requests"]
    assert {p["base"]["repo"]["full_name"] for p in acme} >= {"acme/payments", "acme/web", "acme/infra", "acme/mobile"}
    states = Counter("merged" if p["merged"] else p["state"] for p in acme)
    assert 0.6 < states["merged"] / len(acme) < 0.8 and states["closed"] > 20 and states["open"] > 60
    assert any(p["draft"] for p in acme)
    assert 0.3 < sum(p["milestone"] is not None for p in acme) / len(acme) < 0.7
    linked = sum(bool(re.search(r"\b(ENG|PAY|WEB|OPS)-\d+", p["title"] + p["body"])) for p in acme)
    assert linked / len(acme) > 0.6


def test_recent_weeks_have_merges(corpus):
    weeks = Counter(parse(p["merged_at"]).isocalendar()[:2] for p in corpus["acme"]["pull_requests"] if p["merged"])
    for back in range(1, 9):
        year, week, _ = (SAMPLE_NOW - timedelta(weeks=back)).isocalendar()
        assert weeks[(year, week)] >= 5, (year, week)


def test_activity_is_uneven_without_ties_at_the_top(corpus):
    prs = corpus["acme"]["pull_requests"]

    def top_two(counter):
        (_, a), (_, b) = counter.most_common(2)
        return a, b

    overall = Counter(r["user"]["login"] for p in prs for r in p["reviews"])
    first, second = top_two(overall)
    assert first > second and first >= 2 * sorted(overall.values())[len(overall) // 2]
    for repo in ("acme/payments", "acme/web", "acme/infra", "acme/mobile"):
        mine = [p for p in prs if p["base"]["repo"]["full_name"] == repo]
        reviewers = Counter(r["user"]["login"] for p in mine for r in p["reviews"])
        authors = Counter(p["user"]["login"] for p in mine)
        assert top_two(reviewers)[0] > top_two(reviewers)[1], repo
        assert top_two(authors)[0] > top_two(authors)[1], repo
    authors = Counter(p["user"]["login"] for p in prs)
    assert authors.most_common(1)[0][0] == "rsh-dev"


def test_issues(corpus):
    for tenant in TENANTS:
        issues = corpus[tenant]["issues"]
        assert len({i["key"] for i in issues}) == len(issues)
        assert len({i["id"] for i in issues}) == len(issues)
        for issue in issues:
            f = issue["fields"]
            assert issue["url"].endswith("/browse/" + issue["key"])
            assert issue["key"].startswith(f["project"]["key"] + "-")
            assert JIRA_DATE.match(f["created"]) and JIRA_DATE.match(f["updated"])
            assert (f["resolutiondate"] is not None) == (f["status"]["name"] in ("Done", "Won't Do"))
            assert f["created"] <= f["updated"]
    acme = corpus["acme"]["issues"]
    assert {i["fields"]["project"]["key"] for i in acme} == {"ENG", "PAY", "WEB", "OPS"}
    open_assigned = [i for i in acme if i["fields"]["assignee"] and i["fields"]["status"]["name"] != "Done"]
    assert len(open_assigned) > 40


def test_threads(corpus):
    for tenant in TENANTS:
        messages = corpus[tenant]["messages"]
        ts_seen = Counter((m["channel"], m["ts"]) for m in messages)
        assert max(ts_seen.values()) == 1, "ts must be unique per channel"
        parents = {(m["channel"], m["ts"]): m for m in messages if m.get("thread_ts") == m["ts"]}
        replies = defaultdict(list)
        for m in messages:
            assert m["permalink"].endswith(m["channel_id"] + "/p" + m["ts"].replace(".", ""))
            if "thread_ts" in m and m["thread_ts"] != m["ts"]:
                parent = parents[(m["channel"], m["thread_ts"])]
                assert m["parent_user_id"] == parent["user"] and float(m["ts"]) > float(m["thread_ts"])
                replies[(m["channel"], m["thread_ts"])].append(m)
        for key, parent in parents.items():
            mine = replies[key]
            assert parent["reply_count"] == len(mine)
            assert parent["reply_users"] == list(dict.fromkeys(m["user"] for m in mine))
            assert parent["reply_users_count"] == len(parent["reply_users"])
            assert parent["latest_reply"] == max(mine, key=lambda m: float(m["ts"]))["ts"]
    acme = corpus["acme"]["messages"]
    assert {m["channel"] for m in acme} == {
        "general",
        "infra",
        "payments",
        "web",
        "mobile",
        "incidents",
        "security-private",
    }
    linked = re.compile(r"github\.com/acme/|\b(ENG|PAY|WEB|OPS)-\d+")
    threads = defaultdict(list)
    for m in acme:
        threads[(m["channel"], m.get("thread_ts", m["ts"]))].append(m["text"])
    assert sum(any(linked.search(t) for t in texts) for texts in threads.values()) > 0.4 * len(threads)


def test_private_channel_acl(corpus):
    members = STORIES["leaked_stripe_key"]["members"]
    private = [m for m in corpus["acme"]["messages"] if m["channel"] == "security-private"]
    ids = {p["slack_id"] for p in corpus["acme"]["people"] if p["login"] in members}
    # The channel's members, by their Slack ids: logins, handles and names never grant access.
    assert private and all(m["acl"] == sorted(f"slack:{i}" for i in ids) for m in private)
    assert {m["user"] for m in private} <= ids
    for tenant in TENANTS:
        for name in COLLECTIONS:
            for record in corpus[tenant][name]:
                if record.get("channel") != "security-private":
                    assert record["acl"] == ["*"]


def test_chinese_content(corpus):
    acme = corpus["acme"]
    assert sum(bool(CJK.search(p["title"])) for p in acme["pull_requests"]) >= 20
    assert sum(bool(CJK.search(m["text"])) for m in acme["messages"]) >= 30
    assert sum(bool(CJK.search(d["title"] + d["body"])) for d in acme["documents"]) >= 2
    assert sum(bool(CJK.search(i["fields"]["summary"])) for i in acme["issues"]) >= 5


def test_documents_cite_their_links(corpus):
    for tenant in TENANTS:
        docs = corpus[tenant]["documents"]
        assert len({d["doc_id"] for d in docs}) == len(docs)
        for doc in docs:
            assert doc["links"] and all(link in doc["body"] for link in doc["links"])
    prs = {p["html_url"] for p in corpus["acme"]["pull_requests"]}
    cited = [link for d in corpus["acme"]["documents"] for link in d["links"] if "/pull/" in link]
    assert cited and set(cited) <= prs


def _thread(corpus, tenant, story):
    t = STORIES[story]["thread"]
    msgs = [m for m in corpus[tenant]["messages"] if m["channel"] == t["channel"] and m.get("thread_ts") == t["ts"]]
    return msgs[0], msgs[1:]


@pytest.mark.parametrize("seed", [7, 1])
def test_stories_exist_for_any_seed(seed):
    corpus = generate(seed)
    for name, story in STORIES.items():
        data = corpus[story["tenant"]]
        prs, issues = by_url(data["pull_requests"]), {i["key"]: i for i in data["issues"]}
        docs = {d["doc_id"]: d for d in data["documents"]}
        if "pr_url" in story:
            pr = prs[story["pr_url"]]
            assert pr["title"] == story["pr_title"] and pr["user"]["login"] == story["author"]
            assert pr["merged_at"] == story["merged_at"]
        if "issue" in story:
            assert story["issue"] in issues
        if "doc" in story:
            assert docs[story["doc"]]["title"] == story["doc_title"]
        if "thread" in story:
            parent, replies = _thread(corpus, story["tenant"], name)
            assert parent["ts"] == story["thread"]["ts"] and len(replies) >= 5
            assert parent["permalink"] == story["thread"]["permalink"]
            if "doc" in story:
                assert story["thread"]["permalink"] in docs[story["doc"]]["links"]
    for spec in STORIES["last_week_merges"]["prs"]:
        [pr] = [p for p in corpus["acme"]["pull_requests"] if p["title"] == spec["title"]]
        assert pr["merged_at"] == spec["merged_at"] and pr["user"]["login"] == spec["author"]


def test_redis_story_is_cross_linked(corpus):
    story = STORIES["redis_session_cache"]
    acme = corpus["acme"]
    pr = by_url(acme["pull_requests"])[story["pr_url"]]
    assert "Fixes ENG-231" in pr["body"] and "evict" in pr["body"].lower() and "replica" in pr["body"].lower()
    issue = next(i for i in acme["issues"] if i["key"] == "ENG-231")
    assert issue["fields"]["summary"] == "Memcached evictions log users out"
    assert issue["fields"]["status"]["name"] == "Done"
    parent, replies = _thread(corpus, "acme", "redis_session_cache")
    assert len(replies) >= 6 and story["pr_url"] in parent["text"]
    doc = next(d for d in acme["documents"] if d["doc_id"] == story["doc"])
    assert story["pr_url"] in doc["links"] and "https://acme.atlassian.net/browse/ENG-231" in doc["links"]
    assert any(
        c["message"].endswith("(#812)") or "#812 from" in c["message"]
        for c in acme["commits"]
        if c["repo"] == "acme/infra"
    )


def test_other_stories_details(corpus):
    acme = corpus["acme"]
    prs = by_url(acme["pull_requests"])
    pay = prs[STORIES["payments_double_charge"]["pr_url"]]
    assert "PAY-88" in pay["body"] and CJK.search(pay["title"])
    key = prs[STORIES["leaked_stripe_key"]["pr_url"]]
    assert [label["name"] for label in key["labels"]] == ["security"]
    parent, _ = _thread(corpus, "acme", "leaked_stripe_key")
    assert parent["acl"] != ["*"]
    parent, _ = _thread(corpus, "acme", "ci_self_hosted_runners")
    assert CJK.search(parent["text"]) and "OPS-142" in parent["text"]
    assert (
        next(i for i in acme["issues"] if i["key"] == "OPS-142")["fields"]["summary"]
        == STORIES["ci_self_hosted_runners"]["issue_summary"]
    )


def test_tenants_are_isolated(corpus):
    for name in COLLECTIONS:
        assert not any("DynamoDB" in s for s in strings(corpus["acme"][name])), name
        assert not any("github.com/acme/" in s or "acme.atlassian" in s for s in strings(corpus["globex"][name])), name
    assert any("DynamoDB" in s for s in strings(corpus["globex"]["documents"]))
    assert {p["base"]["repo"]["full_name"] for p in corpus["globex"]["pull_requests"]} == {
        "globex/api",
        "globex/portal",
    }
    assert {i["fields"]["project"]["key"] for i in corpus["globex"]["issues"]} == {"GLX"}
