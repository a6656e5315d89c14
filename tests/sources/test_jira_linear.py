"""Jira (Server v2, Cloud v3 with ADF) and Linear (GraphQL, CSV) exports into issue records."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from context_engine.answering.links import references
from context_engine.kinds import BUILTIN
from context_engine.query.schema import values_at
from context_engine.sources.adf import adf_to_text
from context_engine.sources.jira import read_jira
from context_engine.sources.linear import linear_date, read_linear
from context_engine.sources.normalize import normalize
from context_engine.sources.problems import ReadProblems, SourceError
from tests.conftest import TEST_DATA_DIR

DATA = TEST_DATA_DIR / "connectors"


@pytest.fixture(scope="module")
def jira() -> tuple[dict, ReadProblems]:
    problems = ReadProblems()
    out = read_jira(sorted((DATA / "jira").iterdir()), problems)
    return out, problems


@pytest.fixture(scope="module")
def linear() -> tuple[dict, ReadProblems]:
    problems = ReadProblems()
    out = read_linear(sorted((DATA / "linear").iterdir()), problems)
    return out, problems


def by_key(out: dict) -> dict[str, dict]:
    return {issue["key"]: issue for issue in out["issues"]}


# --------------------------------------------------------------------------------------------
# Jira
# --------------------------------------------------------------------------------------------
def test_jira_server_v2_page_keeps_rest_shape(jira):
    issue = by_key(jira[0])["OPS-118"]
    fields = issue["fields"]
    assert issue["id"] == "20417" and issue["self"].endswith("/rest/api/2/issue/20417")
    assert issue["url"] == "https://jira.example.org/browse/OPS-118"
    assert issue["source"] == "jira:OPS" and "acl" not in issue
    assert fields["summary"] == "Nightly Postgres backup job exceeds its window"
    assert fields["description"].startswith("The backup job started on *Mar 3*")  # wiki text stays as is
    assert (fields["issuetype"]["name"], fields["status"]["name"], fields["priority"]["name"]) == (
        "Bug",
        "In Progress",
        "High",
    )
    assert fields["assignee"]["name"] == "lnielsen" and fields["reporter"]["name"] == "rkhan"
    assert fields["components"] == [
        {"self": "https://jira.example.org/rest/api/2/component/10300", "id": "10300", "name": "databases"}
    ]
    assert "customfield_10105" not in fields and "customfield_10104" in fields  # null custom fields dropped
    # Server sprints are greenhopper strings in a field the `names` map calls "Sprint": the active one wins
    assert fields["sprint"]["name"] == "OPS Sprint 10" and fields["sprint"]["state"] == "active"
    done = by_key(jira[0])["OPS-97"]["fields"]
    assert done["sprint"] == {**done["sprint"], "name": "OPS Sprint 9", "state": "closed", "goal": "Backups, alerts"}
    assert done["assignee"] is None


def test_jira_cloud_v3_adf_becomes_text_with_links(jira):
    issue = by_key(jira[0])["ENG-231"]
    fields = issue["fields"]
    assert issue["url"] == "https://acme.atlassian.net/browse/ENG-231"
    description = fields["description"]
    assert isinstance(description, str)
    assert "refund webhook is delivered twice" in description and "@Priya Raman can you take a look?" in description
    assert "- Sentry issue (https://acme.sentry.io/issues/4410021/)" in description
    assert "Thread: https://acme.slack.com/archives/C02PAYMT8D/p1731409200000300" in description
    assert "DuplicateDelivery: event evt_1Q2 delivered 2x" in description
    comment = fields["comment"]["comments"][0]
    assert comment["body"] == (
        "Fix is up: acme/payments#1342 (https://github.com/acme/payments/pull/1342)\nDedup by idempotency key ✅"
    )
    # Cloud users have only an accountId: it becomes `name`, the handle the role fields read
    assert fields["assignee"]["name"] == "5b10a2844c20165700ede21g"
    assert fields["reporter"]["name"] == "712020:0e3a6c1d-77b4-4c0e-9e55-12ab34cd56ef"
    assert comment["author"]["name"] == "5b10a2844c20165700ede21g"
    assert fields["sprint"]["name"] == "Sprint 48"  # active beats the closed Sprint 47
    assert by_key(jira[0])["ENG-232"]["fields"]["sprint"]["name"] == "Sprint 49"  # only a future sprint


def test_jira_references_found_in_description_and_comments(jira):
    refs = {ref.target: ref for ref in references(normalize("issues", by_key(jira[0])["ENG-231"]))}
    assert {"PAY-88", "acme/payments#1342", "C02PAYMT8D:1731409200.000300"} <= set(refs)
    assert "ENG-231" not in refs  # its own key is not a reference
    server = {ref.target for ref in references(normalize("issues", by_key(jira[0])["OPS-118"]))}
    assert {"OPS-97", "acme/infra#812", "https://grafana.example.org/d/pg-backups"} <= server


def test_jira_malformed_input_is_skipped_and_counted(jira):
    out, problems = jira
    assert sorted(by_key(out)) == ["ENG-231", "ENG-232", "OPS-118", "OPS-97", "WEB-12"]
    # broken page (1), cut-off JSON line (1), a JSON line that is a list of 3 non-issues (3), issue without key (1)
    assert problems.count == 6
    assert any("broken-page.json" in e and "malformed JSON" in e for e in problems.examples)
    with pytest.raises(SourceError):
        read_jira([DATA / "jira" / "missing.json"], ReadProblems())


def test_jira_records_normalize_with_dates_and_role_fields(jira):
    for issue in jira[0]["issues"]:
        doc = normalize("issues", issue)
        assert doc["ref"] == issue["key"]
        assert isinstance(doc["fields"]["created"], datetime)
    doc = normalize("issues", by_key(jira[0])["OPS-118"])
    assert doc["fields"]["created"] == datetime(2025, 3, 4, 8, 12, 44)  # +0100 -> UTC
    assert values_at(doc, "fields.assignee.name") == ["lnielsen"]
    assert values_at(doc, "fields.sprint.name") == ["OPS Sprint 10"]


def test_jira_people_fragments(jira):
    people = {(p["source"], p["jira"]): p for p in jira[0]["people"]}
    assert people[("jira:ENG", "5b10a2844c20165700ede21g")] == {
        "jira": "5b10a2844c20165700ede21g",
        "name": "Priya Raman",
        "email": "priya.raman@acme.io",
        "acl": ["*"],
        "source": "jira:ENG",
    }
    assert people[("jira:OPS", "lnielsen")]["email"] == "lars.nielsen@example.org"
    assert "email" not in people[("jira:ENG", "712020:0e3a6c1d-77b4-4c0e-9e55-12ab34cd56ef")]  # hidden by Cloud
    assert not any(p.get("name") == "Automation for Jira" for p in people.values())  # an app, not a person


def test_adf_lists_tables_and_cards():
    doc = {
        "type": "doc",
        "version": 1,
        "content": [
            {
                "type": "orderedList",
                "attrs": {"order": 3},
                "content": [
                    {
                        "type": "listItem",
                        "content": [
                            {"type": "paragraph", "content": [{"type": "text", "text": "first"}]},
                            {
                                "type": "bulletList",
                                "content": [
                                    {
                                        "type": "listItem",
                                        "content": [
                                            {"type": "paragraph", "content": [{"type": "text", "text": "nested"}]}
                                        ],
                                    }
                                ],
                            },
                        ],
                    },
                    {
                        "type": "listItem",
                        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "second"}]}],
                    },
                ],
            },
            {
                "type": "table",
                "content": [
                    {
                        "type": "tableRow",
                        "content": [
                            {
                                "type": "tableHeader",
                                "content": [{"type": "paragraph", "content": [{"type": "text", "text": "PR"}]}],
                            },
                            {
                                "type": "tableHeader",
                                "content": [{"type": "paragraph", "content": [{"type": "text", "text": "State"}]}],
                            },
                        ],
                    },
                    {
                        "type": "tableRow",
                        "content": [
                            {
                                "type": "tableCell",
                                "content": [
                                    {
                                        "type": "paragraph",
                                        "content": [
                                            {
                                                "type": "inlineCard",
                                                "attrs": {"url": "https://github.com/acme/web/pull/7"},
                                            }
                                        ],
                                    }
                                ],
                            },
                            {
                                "type": "tableCell",
                                "content": [{"type": "paragraph", "content": [{"type": "text", "text": "merged"}]}],
                            },
                        ],
                    },
                ],
            },
            {"type": "blockCard", "attrs": {"url": "https://acme.atlassian.net/wiki/x/AbC"}},
            {
                "type": "taskList",
                "content": [
                    {"type": "taskItem", "attrs": {"state": "DONE"}, "content": [{"type": "text", "text": "ship it"}]}
                ],
            },
        ],
    }
    assert adf_to_text(doc) == (
        "3. first\n  - nested\n4. second\nPR | State\n"
        "https://github.com/acme/web/pull/7 | merged\n"
        "https://acme.atlassian.net/wiki/x/AbC\n[x] ship it"
    )


def _generated_issue(n: int) -> dict:
    user = {"accountId": f"acc{n % 40:04d}", "displayName": f"User {n % 40}", "accountType": "atlassian"}
    return {
        "id": str(10000 + n),
        "self": f"https://acme.atlassian.net/rest/api/3/issue/{10000 + n}",
        "key": f"ENG-{n}",
        "fields": {
            "summary": f"Issue {n}",
            "issuetype": {"name": "Bug"},
            "status": {"name": "Done"},
            "priority": {"name": "High"},
            "assignee": user,
            "reporter": user,
            "labels": ["payments"],
            "components": [{"name": "checkout"}],
            "project": {"key": "ENG", "name": "Engineering"},
            "created": "2026-11-12T10:04:51.237+0000",
            "updated": "2026-11-20T08:15:02.114+0000",
            "resolutiondate": "2026-11-20T08:15:02.114+0000",
            "description": {
                "type": "doc",
                "version": 1,
                "content": [
                    {
                        "type": "paragraph",
                        "content": [
                            {"type": "text", "text": f"Blocked by ENG-{n + 1}, see "},
                            {
                                "type": "text",
                                "text": "the PR",
                                "marks": [{"type": "link", "attrs": {"href": f"https://github.com/acme/web/pull/{n}"}}],
                            },
                        ],
                    }
                ],
            },
            "customfield_10020": [{"id": 48, "name": "Sprint 48", "state": "active", "boardId": 3}],
            "customfield_10014": None,
            "comment": {
                "comments": [
                    {
                        "author": user,
                        "created": "2026-11-19T15:30:00.000+0000",
                        "body": {
                            "type": "doc",
                            "version": 1,
                            "content": [{"type": "paragraph", "content": [{"type": "text", "text": "done"}]}],
                        },
                    }
                ]
            },
        },
    }


def test_jira_throughput_on_5000_generated_issues(tmp_path):
    page = tmp_path / "page.json"
    page.write_text(
        json.dumps(
            {"startAt": 0, "maxResults": 5000, "total": 5000, "issues": [_generated_issue(n) for n in range(1, 5001)]}
        )
    )
    started = time.perf_counter()
    out = read_jira([page], ReadProblems())
    read_seconds = time.perf_counter() - started
    docs = [normalize("issues", issue) for issue in out["issues"]]
    total_seconds = time.perf_counter() - started
    assert len(docs) == 5000 and len(out["people"]) == 40
    assert docs[-1]["fields"]["sprint"]["name"] == "Sprint 48"
    print(
        f"\nJira: 5,000 issues read in {read_seconds:.2f}s ({5000 / read_seconds:,.0f} records/s); "
        f"with normalize() {total_seconds:.2f}s ({5000 / total_seconds:,.0f} records/s)"
    )


# --------------------------------------------------------------------------------------------
# Linear
# --------------------------------------------------------------------------------------------
def test_linear_graphql_response_maps_to_jira_shape(linear):
    issue = by_key(linear[0])["PLAT-142"]
    fields = issue["fields"]
    assert issue["tracker"] == "linear" and issue["source"] == "linear:PLAT" and "acl" not in issue
    assert issue["id"] == "9cfb482a-81e3-4154-b5b9-2c805e70a02d"
    assert issue["url"].startswith("https://linear.app/globex/issue/PLAT-142/")
    assert fields["summary"] == "Rate limiter drops requests during token refresh"
    assert fields["status"] == {"name": "In Progress", "type": "started"}
    assert fields["priority"] == {"name": "Urgent"}
    assert fields["assignee"] == {
        "name": "nina.petrova@globex.com",
        "displayName": "Nina Petrova",
        "emailAddress": "nina.petrova@globex.com",
    }
    assert fields["reporter"]["displayName"] == "Omar Haddad"
    assert fields["labels"] == ["Bug", "api"]
    assert fields["sprint"] == {"name": "Cycle 14", "number": 14}  # an unnamed cycle
    assert fields["project"] == {"key": "PLAT", "name": "Platform"}
    assert fields["components"] == [{"name": "API hardening"}]
    assert fields["resolutiondate"] is None
    comments = fields["comment"]["comments"]
    assert [c["created"] for c in comments] == ["2026-11-17T09:00:00.000Z", "2026-11-18T10:00:00.000Z"]
    assert comments[0]["author"] is None  # an integration's comment has no user
    done = by_key(linear[0])["PLAT-131"]["fields"]
    assert done["priority"] == {"name": "Medium"} and done["sprint"] == {"name": "Hardening week", "number": 13}
    assert done["resolutiondate"] == "2026-11-13T09:45:00.000Z" and done["components"] == []


def test_linear_json_lines_and_canceled(linear):
    fields = by_key(linear[0])["WEB-77"]["fields"]
    assert fields["priority"] == {"name": "No priority"} and fields["status"]["type"] == "canceled"
    assert fields["resolutiondate"] == "2026-10-06T07:00:00.000Z" and fields["sprint"] is None


def test_linear_csv_export(linear):
    issue = by_key(linear[0])["PLAT-150"]
    fields = issue["fields"]
    assert issue["id"] == "3a4b5c6d-7e8f-4a1b-9c2d-3e4f5a6b7c8d" and "url" not in issue
    assert fields["description"] == "Follow-up to PLAT-131.\nStreaming fix: https://github.com/globex/api/pull/201"
    assert fields["status"] == {"name": "In Review"} and fields["priority"] == {"name": "High"}
    assert fields["assignee"]["name"] == "huang.lei@globex.com"  # the same handle the API export gives
    assert fields["labels"] == ["Bug", "api"]
    assert fields["sprint"] == {"name": "Cycle 14", "number": 14}
    assert fields["project"] == {"key": "PLAT", "name": "Platform"}
    assert fields["created"] == "2026-11-18T11:21:41.000Z" and fields["updated"] == "2026-11-24T17:05:10.000Z"
    other = by_key(linear[0])["PLAT-151"]["fields"]
    assert other["summary"] == '=HYPERLINK("https://evil.example","click")'  # Linear's formula escape removed
    assert other["resolutiondate"] == "2026-11-21T10:00:00.000Z" and other["assignee"] is None


def test_linear_malformed_input_is_skipped_and_counted(linear, tmp_path):
    out, problems = linear
    assert sorted(by_key(out)) == ["PLAT-131", "PLAT-142", "PLAT-150", "PLAT-151", "WEB-77"]
    assert problems.count == 3  # node without identifier, CSV row without ID, GraphQL error response
    assert any("Rate limit exceeded" in e for e in problems.examples)
    not_linear = tmp_path / "other.csv"
    not_linear.write_text("Summary,Issue key\nx,ENG-1\n")
    with pytest.raises(SourceError):
        read_linear([not_linear], ReadProblems())


def test_linear_dates():
    assert linear_date("Wed May 13 2026 11:21:41 GMT+0200 (Central European Summer Time)") == "2026-05-13T09:21:41.000Z"
    assert linear_date("2024-05-14T08:53:33Z") == "2024-05-14T08:53:33.000Z"
    assert linear_date("") is None


def test_linear_references_and_people(linear):
    refs = {r.target for r in references(normalize("issues", by_key(linear[0])["PLAT-142"]))}
    assert {"PLAT-120", "globex/api#188", "C05GXAPI3C:1732000000.000100"} <= refs
    people = {p["jira"]: p for p in linear[0]["people"]}
    assert people["huang.lei@globex.com"] == {
        "jira": "huang.lei@globex.com",
        "name": "黄磊",
        "email": "huang.lei@globex.com",
        "acl": ["*"],
        "source": "linear:PLAT",
    }
    for person in linear[0]["people"]:
        assert normalize("people", person)["ref"] == person["email"]


def test_jira_and_linear_answer_the_same_issue_fields(jira, linear):
    """Every issue field role the structured half reads is filled the same way for both trackers."""
    roles = ("created", "updated", "status", "priority", "label", "project", "sprint", "title", "url")
    jira_doc = normalize("issues", by_key(jira[0])["ENG-231"])
    linear_doc = normalize("issues", by_key(linear[0])["PLAT-142"])
    for role in roles:
        path = BUILTIN["issues"].roles()[role][0]
        assert values_at(jira_doc, path) and values_at(linear_doc, path), role
        assert type(values_at(jira_doc, path)[0]) is type(values_at(linear_doc, path)[0]), role
    for doc in (jira_doc, linear_doc):
        assert values_at(doc, "fields.assignee.name") and values_at(doc, "fields.reporter.name")
    for issue in linear[0]["issues"]:
        assert normalize("issues", issue)["ref"] == issue["key"]
