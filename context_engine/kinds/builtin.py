"""The engine's own kinds, as specs: what its connectors (GitHub, Jira, Linear, Slack, documents, git)
write. Source field names are kept (GitHub's `user.login`, Jira's `fields.assignee.name`, Slack's
`user`), so a role lists every source's path in preference order."""

from __future__ import annotations

from context_engine.kinds.spec import CollectionSpec, PersonField

_GITHUB_TEXT = ("title", "body", "reviews.body", "review_comments.body", "comments.body")


def _github(path: str) -> PersonField:
    return PersonField(path, "github")


PULL_REQUESTS = CollectionSpec(
    name="pull_requests",
    noun="pull request",
    builtin=True,
    words=(
        r"\bprs?\b",
        r"\bpull[- ]?(?:requests?|reqs?)\b",
        r"\bpulls\b",
        r"\bmerge requests?\b",
        r"\bpatch(?:es)?\b",
        r"\bpatchsets?\b",
        r"\bprs?(?![a-z])",
    ),
    words_zh=("合并请求", "拉取请求", "代码审查", "评审"),
    people={
        "author": (_github("user.login"),),
        "reviewer": (_github("reviews.user.login"),),
        "requested_reviewer": (_github("requested_reviewers.login"),),
        "assignee": (_github("assignees.login"), _github("assignee.login")),
        "merger": (_github("merged_by.login"),),
        "commenter": (_github("review_comments.user.login"),),
    },
    times={
        "created": ("created_at",),
        "updated": ("updated_at",),
        "merged": ("merged_at",),
        "closed": ("closed_at",),
        "reviewed": ("reviews.submitted_at",),
    },
    values={
        "state": ("state",),
        "label": ("labels.name",),
        "milestone": ("milestone.title",),
        "repo": ("repo",),
        "title": ("title",),
        "url": ("html_url",),
        "state_reason": ("state_reason",),
    },
    text=("title", "body", "reviews.body", "review_comments.body"),
    link_text=_GITHUB_TEXT,
)

ISSUES = CollectionSpec(
    name="issues",
    noun="issue",
    builtin=True,
    words=(
        r"\bissues?\b",
        r"\btickets?\b",
        r"\b(?:feature|enhancement) requests?\b",
        r"\bbug reports?\b",
        r"\bbugs?\b",
        r"\bjira\b",
        r"\bstor(?:y|ies)\b",
        r"\btasks?\b",
        r"\bepics?\b",
        r"\btix\b",
    ),
    words_zh=("工单", "问题", "缺陷", "任务", "需求", "单子"),
    people={
        "author": (PersonField("fields.reporter.name", "jira"), _github("user.login")),
        "assignee": (
            PersonField("fields.assignee.name", "jira"),
            _github("assignees.login"),
            _github("assignee.login"),
        ),
        "commenter": (PersonField("fields.comment.comments.author.name", "jira"),),
        "closer": (_github("closed_by.login"),),
    },
    times={
        "created": ("fields.created", "created_at"),
        "updated": ("fields.updated", "updated_at"),
        "closed": ("fields.resolutiondate", "closed_at"),
        "resolved": ("fields.resolutiondate", "closed_at"),
    },
    values={
        "status": ("fields.status.name",),
        "state": ("state",),
        "priority": ("fields.priority.name",),
        "type": ("fields.issuetype.name",),
        "label": ("fields.labels", "labels.name"),
        "milestone": ("milestone.title",),
        "repo": ("repo",),
        "project": ("fields.project.key",),
        "sprint": ("fields.sprint.name",),
        "component": ("fields.components.name",),
        "title": ("fields.summary", "title"),
        "url": ("url", "html_url"),
        "state_reason": ("state_reason",),
    },
    text=("title", "body", "fields.summary", "fields.description", "fields.comment.comments.body"),
    link_text=(
        "title",
        "body",
        "comments.body",
        "fields.summary",
        "fields.description",
        "fields.comment.comments.body",
    ),
)

# Slack: `mentions` lists the users a message @-mentions; a reply's `parent_user_id` is whoever started
# its thread, so "who replied to X" reads replies whose parent author is X. A thread (parent and replies)
# is one unit of search.
MESSAGES = CollectionSpec(
    name="messages",
    noun="message",
    builtin=True,
    words=(
        r"\bmessages?\b",
        r"\bthreads?\b",
        r"\bslacks?\b",
        r"\bworkspaces?\b",
        r"\bchannels?\b",
        r"\bposts?\b",
        r"\bposted\b",
        r"\bsaid\b",
        r"\breplies\b",
        r"(?<!\w)#[\w\-]+",
    ),
    words_zh=("工作区", "消息", "讯息", "讨论", "频道", "帖子"),
    people={
        "author": (PersonField("user", "slack_id"),),
        "reply_user": (PersonField("reply_users", "slack_id"),),
        "mentioned": (PersonField("mentions", "slack_id"),),
        "replied_to": (PersonField("parent_user_id", "slack_id"),),
    },
    times={"created": ("date",)},
    values={
        "channel": ("channel",),
        "title": ("text",),
        "url": ("permalink",),
        "replies": ("reply_count",),
        "reaction": ("reactions.name",),
        "workspace": ("workspace",),
        "thread": ("thread_ts",),
    },
    text=("text",),
    chunk_group="thread_ts",
)

DOCUMENTS = CollectionSpec(
    name="documents",
    noun="document",
    builtin=True,
    words=(
        r"\bdocs?\b",
        r"\bdocuments?\b",
        r"\badrs?\b",
        r"\bdecision records?\b",
        r"\bguides?\b",
        r"\brfcs?\b",
        r"\bpostmortems?\b",
        r"\brunbooks?\b",
        r"\bpages?\b",
        r"\bwiki\b",
    ),
    words_zh=("设计文档", "文档", "复盘"),
    people={"author": (_github("author.login"), PersonField("author.name", "name"))},
    times={"created": ("created_at",), "updated": ("updated_at",)},
    values={"label": ("tags",), "space": ("space",), "title": ("title",), "url": ("url",)},
    text=("title", "body"),
    link_text=("title", "body", "content", "text", "links"),
)

COMMITS = CollectionSpec(
    name="commits",
    noun="commit",
    builtin=True,
    words=(r"\bcommits?\b", r"\bcommitted\b", r"\bcommitters?\b"),
    words_zh=("提交记录", "提交"),
    people={"author": (PersonField("author.email", "email"), PersonField("author.name", "name"))},
    times={"created": ("author.date",)},
    values={"repo": ("repo",), "title": ("message",), "url": ("html_url",)},
    text=("message",),
    link_text=("message", "commit.message"),
)

PEOPLE = CollectionSpec(
    name="people",
    noun="person",
    plural="people",
    builtin=True,
    searchable=False,
    words=(
        r"\bpeople (?:are )?(?:on|in|per) (?:\w+ ){0,2}(?:teams?|eng)\b",
        r"\bheadcount\b",
        r"\bteam members?\b",
        r"\bmembers of\b",
        r"\bwho(?:'s| is| are) (?:on|in) the\b",
        r"\bteam\b(?= members| roster)",
    ),
    words_zh=("组都有谁", "组的人", "团队成员", "成员", "团队都有谁"),
    values={"team": ("team",), "title": ("name",)},
    text=("name", "aliases"),
    link_text=(),
)

BUILTIN: dict[str, CollectionSpec] = {
    spec.name: spec for spec in (PULL_REQUESTS, ISSUES, MESSAGES, DOCUMENTS, COMMITS, PEOPLE)
}
