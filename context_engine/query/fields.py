"""Field roles: which source field plays "author", "merged date", "status" in a collection.

Sources keep their own field names (GitHub's `user.login`, Jira's `fields.assignee.name`, Slack's
`user`), so the planners ask for a role and get the first candidate path the tenant's discovered
schema actually has. A person role also says which handle kind the field stores.
"""

from __future__ import annotations

from context_engine.query.schema import CollectionSchema

# role -> candidate paths, in preference order. For people roles: (path, handle kind).
PEOPLE_ROLES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "pull_requests": {
        "author": [("user.login", "github")],
        "reviewer": [("reviews.user.login", "github")],
        "requested_reviewer": [("requested_reviewers.login", "github")],
        "assignee": [("assignees.login", "github"), ("assignee.login", "github")],
        "merger": [("merged_by.login", "github")],
        "commenter": [("review_comments.user.login", "github")],
    },
    "issues": {
        "author": [("fields.reporter.name", "jira"), ("user.login", "github")],
        "assignee": [("fields.assignee.name", "jira"), ("assignees.login", "github"), ("assignee.login", "github")],
        "commenter": [("fields.comment.comments.author.name", "jira")],
        "closer": [("closed_by.login", "github")],
    },
    # Slack: `mentions` lists the users a message @-mentions; a reply's `parent_user_id` is whoever
    # started its thread, so "who replied to X" reads replies whose parent author is X.
    "messages": {"author": [("user", "slack_id")], "reply_user": [("reply_users", "slack_id")],
                 "mentioned": [("mentions", "slack_id")], "replied_to": [("parent_user_id", "slack_id")]},
    "documents": {"author": [("author.login", "github"), ("author.name", "name")]},
    "commits": {"author": [("author.email", "email"), ("author.name", "name")]},
    "people": {},
}

VALUE_ROLES: dict[str, dict[str, list[str]]] = {
    "pull_requests": {
        "created": ["created_at"], "updated": ["updated_at"], "merged": ["merged_at"], "closed": ["closed_at"],
        "reviewed": ["reviews.submitted_at"], "state": ["state"], "label": ["labels.name"],
        "milestone": ["milestone.title"], "repo": ["repo"], "title": ["title"], "url": ["html_url"],
        "state_reason": ["state_reason"],
    },
    "issues": {
        "created": ["fields.created", "created_at"], "updated": ["fields.updated", "updated_at"],
        "closed": ["fields.resolutiondate", "closed_at"], "resolved": ["fields.resolutiondate", "closed_at"],
        "status": ["fields.status.name"], "state": ["state"], "priority": ["fields.priority.name"],
        "type": ["fields.issuetype.name"], "label": ["fields.labels", "labels.name"],
        "milestone": ["milestone.title"], "repo": ["repo"], "project": ["fields.project.key"],
        "sprint": ["fields.sprint.name"], "component": ["fields.components.name"],
        "title": ["fields.summary", "title"], "url": ["url", "html_url"], "state_reason": ["state_reason"],
    },
    "messages": {"created": ["date"], "channel": ["channel"], "title": ["text"], "url": ["permalink"],
                 "replies": ["reply_count"], "reaction": ["reactions.name"], "workspace": ["workspace"],
                 "thread": ["thread_ts"]},
    "documents": {"created": ["created_at"], "updated": ["updated_at"], "label": ["tags"], "space": ["space"],
                  "title": ["title"], "url": ["url"]},
    "commits": {"created": ["author.date"], "repo": ["repo"], "title": ["message"], "url": ["html_url"]},
    "people": {"team": ["team"], "title": ["name"]},
}

# Jira statuses that mean the work is finished; everything else is open.
DONE_STATUSES = ("Done", "Closed", "Resolved", "Won't Do", "Won't Fix", "Cancelled", "Canceled", "Duplicate")


def field_for(schema: CollectionSchema | None, role: str) -> str | None:
    if schema is None:
        return None
    for path in VALUE_ROLES.get(schema.name, {}).get(role, []):
        if schema.has_path(path):
            return path
    return None


def person_field_for(schema: CollectionSchema | None, role: str) -> tuple[str, str] | None:
    if schema is None:
        return None
    for path, kind in PEOPLE_ROLES.get(schema.name, {}).get(role, []):
        if schema.has_path(path):
            return path, kind
    return None
