"""Deterministic sample corpus: a small, densely cross-linked engineering organisation.

`generate()` is the demo data and the fixture most tests load. Two tenants: "acme" (the main one,
30 people, four repos, ~18 months of history) and "globex" (small; it exists so tenant-isolation
tests have something that must never leak). Each tenant has pull requests (GitHub REST `/pulls`
shape with embedded reviews), Jira issues, Slack thread messages, documents, commits and people.

Everything hangs off one `random.Random(seed)` and nothing reads the clock, so a seed always gives
the same corpus. The hand-written `STORIES` keep the same ids, numbers and dates for every seed:
tests and the evaluation set ask about them by id.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from context_engine.access import PUBLIC, slack_members

SAMPLE_NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday: "last week" is ISO 2026-W48
TENANTS = ("acme", "globex")

_START = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
_END = datetime(2026, 11, 27, 23, 59, tzinfo=UTC)  # no record is dated after this
_BUSY_FROM = datetime(2026, 9, 28, tzinfo=UTC)  # the last ~9 weeks get far more activity

# --------------------------------------------------------------------------------------------
# People. (name, GitHub login, Slack handle, Jira user, team, aliases, author weight, review weight)
# Logins/handles deliberately differ from names; "Alex Chen"/"Alex Morgan" share a first name,
# Alex Chen/Emily Chen/陈静 (Chen Jing) a surname, and Rashid Khan/Fatima Rahman look alike, so
# name resolution has to be fuzzy. The weights make a few people far busier than the rest.
# --------------------------------------------------------------------------------------------
ACME_PEOPLE = [
    ("Rashid Khan", "rsh-dev", "rashid.k", "rkhan", "infra", ["Rash"], 9, 5),
    ("Lars Nielsen", "larsn", "lars", "lnielsen", "infra", ["Lasse"], 5, 10),
    ("Ingrid Holm", "ingrid-h", "ingrid", "iholm", "infra", ["Inge"], 3, 4),
    ("刘洋", "liuyang-ops", "liuyang", "yliu", "infra", ["Liu Yang", "Yang"], 4, 3),
    ("Sam Okafor", "sokafor", "sam.o", "sokafor", "infra", ["Sammy"], 3, 3),
    ("Mehmet Yilmaz", "myilmaz", "mehmet", "myilmaz", "infra", ["Memo"], 2, 1),
    ("张伟", "zwei-dev", "zhangwei", "wzhang", "payments", ["Zhang Wei", "Wei"], 6, 3),
    ("Priya Raman", "priyar", "priya", "praman", "payments", ["Pri"], 4, 7),
    ("Tom Becker", "tbecker", "tom.b", "tbecker", "payments", ["Tommy"], 3, 2),
    ("李娜", "lina-gh", "lina", "nli", "payments", ["Li Na"], 3, 3),
    ("Sofia Alvarez", "salvarez", "sofia", "salvarez", "payments", ["Sofi"], 2, 1),
    ("Grace Park", "gpark", "grace", "gpark", "payments", [], 2, 2),
    ("Alex Chen", "achen42", "alex.chen", "achen", "web", ["AC"], 7, 4),
    ("Alex Morgan", "amorgan-dev", "alexm", "amorgan", "web", ["Lex"], 4, 2),
    ("Emily Chen", "emchen", "emily", "echen", "web", ["Em"], 3, 3),
    ("Maria Garcia", "mgarcia", "maria.g", "mgarcia", "web", ["Mari"], 4, 6),
    ("Daniel Kim", "dkim-web", "dan.kim", "dkim", "web", ["Dan", "Danny"], 3, 2),
    ("王芳", "wangfang-x", "wangfang", "fwang", "web", ["Wang Fang"], 3, 2),
    ("Jonas Weber", "jweber", "jonas", "jweber", "mobile", ["Jo"], 4, 6),
    ("Aiko Tanaka", "atanaka", "aiko", "atanaka", "mobile", [], 3, 3),
    ("Lucas Silva", "lsilva", "lucas", "lsilva", "mobile", ["Luke"], 3, 2),
    ("陈静", "chenjing-m", "chenjing", "jchen", "mobile", ["Chen Jing", "Jing"], 3, 2),
    ("Ben Carter", "bcarter", "ben", "bcarter", "mobile", ["Benny"], 2, 1),
    ("Nora Lindqvist", "noral", "nora", "nlindqvist", "mobile", [], 2, 2),
    ("赵磊", "zlei-data", "zhaolei", "lzhao", "data", ["Zhao Lei", "Lei"], 3, 2),
    ("Fatima Rahman", "frahman", "fatima", "frahman", "data", ["Fati"], 3, 2),
    ("Oliver Smith", "osmith", "oli", "osmith", "data", ["Oli", "Ollie"], 2, 2),
    ("Hannah Müller", "hmueller", "hannah", "hmuller", "data", ["Hanna"], 2, 1),
    ("Kwame Mensah", "kmensah", "kwame", "kmensah", "data", [], 2, 1),
    ("Isabel Rossi", "irossi", "isabel", "irossi", "data", ["Izzy"], 1, 1),
]

# Globex has its own "Rashid Khan" with a different login: a name is not an identity across tenants.
GLOBEX_PEOPLE = [
    ("Rashid Khan", "rashidk", "rashid", "rashid.khan", "platform", ["RK"], 5, 3),
    ("Nina Petrova", "npetrova", "nina", "npetrova", "platform", [], 4, 6),
    ("Omar Haddad", "ohaddad", "omar", "ohaddad", "platform", [], 3, 2),
    ("黄磊", "hlei-gx", "huanglei", "lhuang", "platform", ["Huang Lei"], 2, 2),
    ("Julia Novak", "jnovak", "julia", "jnovak", "portal", ["Jules"], 4, 4),
    ("Marco Bianchi", "mbianchi", "marco", "mbianchi", "portal", [], 3, 2),
    ("Tessa Jansen", "tjansen", "tessa", "tjansen", "portal", [], 2, 1),
    ("Kofi Boateng", "kboateng", "kofi", "kboateng", "portal", [], 2, 1),
]

# --------------------------------------------------------------------------------------------
# Areas: what each part of the org works on. Nouns come as (English, Chinese) pairs so an
# issue and the Chinese PR that fixes it talk about the same thing.
# --------------------------------------------------------------------------------------------
AREAS = {
    "payments": {
        "nouns": [
            ("refund flow", "退款流程"),
            ("webhook retries", "回调重试"),
            ("invoice PDF export", "发票导出"),
            ("currency rounding", "汇率取整"),
            ("idempotency keys", "幂等键"),
            ("payout reconciliation", "出款对账"),
            ("3DS challenge flow", "3DS 验证流程"),
            ("ledger snapshots", "账本快照"),
            ("dunning emails", "催缴邮件"),
            ("tax calculation", "税费计算"),
            ("checkout session API", "结账会话接口"),
            ("subscription proration", "订阅按比例计费"),
        ],
        "components": ["checkout", "billing", "ledger", "payouts"],
        "files": [
            "src/checkout/session.py",
            "src/checkout/webhooks.py",
            "src/billing/invoice.py",
            "src/billing/proration.py",
            "src/ledger/entries.py",
            "src/ledger/reconcile.py",
            "src/payouts/scheduler.py",
            "src/providers/stripe_client.py",
            "tests/test_webhooks.py",
            "tests/test_refunds.py",
            "migrations/0042_ledger_index.sql",
        ],
        "deps": ["stripe", "sqlalchemy", "pydantic", "celery"],
        "lockfile": "requirements.txt",
        "label": "payments",
        "space": "Payments",
    },
    "web": {
        "nouns": [
            ("login page", "登录页面"),
            ("search pagination", "搜索分页"),
            ("dashboard loading state", "仪表盘加载"),
            ("dark mode toggle", "深色模式开关"),
            ("account settings form", "账户设置表单"),
            ("SSO redirect", "SSO 跳转"),
            ("CSV export button", "CSV 导出按钮"),
            ("onboarding wizard", "新手引导"),
            ("notification center", "通知中心"),
            ("pricing page", "价格页面"),
        ],
        "components": ["frontend", "auth", "dashboard"],
        "files": [
            "app/routes/login.tsx",
            "app/components/SearchResults.tsx",
            "app/components/Dashboard.tsx",
            "app/hooks/useSession.ts",
            "app/lib/api.ts",
            "app/styles/theme.css",
            "server/auth/sso.ts",
            "server/middleware/session.ts",
            "tests/e2e/login.spec.ts",
        ],
        "deps": ["react", "next", "typescript", "eslint"],
        "lockfile": "package-lock.json",
        "label": "ui",
        "space": "Web",
    },
    "infra": {
        "nouns": [
            ("Terraform state locking", "Terraform 状态锁"),
            ("log shipping", "日志采集"),
            ("Postgres backups", "数据库备份"),
            ("Kubernetes autoscaling", "K8s 自动扩缩容"),
            ("alert routing", "告警路由"),
            ("CI pipeline cache", "CI 流水线缓存"),
            ("TLS certificate renewal", "证书续期"),
            ("Helm chart values", "Helm 配置"),
            ("service mesh retries", "服务网格重试"),
            ("cost dashboards", "成本看板"),
        ],
        "components": ["ci", "kubernetes", "observability", "databases"],
        "files": [
            "terraform/modules/vpc/main.tf",
            "terraform/envs/prod/main.tf",
            "k8s/charts/api/values.yaml",
            "k8s/charts/api/templates/hpa.yaml",
            ".github/workflows/ci.yml",
            "ansible/roles/postgres/tasks/backup.yml",
            "monitoring/alerts/api.rules.yml",
            "scripts/rotate_certs.sh",
        ],
        "deps": ["terraform-provider-aws", "helm", "prometheus", "actions/checkout"],
        "lockfile": ".terraform.lock.hcl",
        "label": "infra",
        "space": "Infra",
    },
    "mobile": {
        "nouns": [
            ("push notifications", "推送通知"),
            ("offline cache", "离线缓存"),
            ("app startup time", "启动速度"),
            ("biometric login", "生物识别登录"),
            ("deep links", "深度链接"),
            ("in-app receipts", "应用内收据"),
            ("crash reporting", "崩溃上报"),
            ("image upload", "图片上传"),
        ],
        "components": ["ios", "android"],
        "files": [
            "ios/App/AppDelegate.swift",
            "ios/App/Push/PushManager.swift",
            "android/app/src/main/java/com/acme/MainActivity.kt",
            "android/app/src/main/java/com/acme/cache/OfflineStore.kt",
            "shared/src/api/client.ts",
            "fastlane/Fastfile",
        ],
        "deps": ["react-native", "firebase-messaging", "kotlin", "cocoapods"],
        "lockfile": "yarn.lock",
        "label": "mobile",
        "space": "Mobile",
    },
    "data": {
        "nouns": [
            ("nightly ETL job", "夜间 ETL 任务"),
            ("revenue dashboard", "收入报表"),
            ("event schema registry", "事件 Schema 注册"),
            ("dbt models", "dbt 模型"),
            ("warehouse costs", "数仓成本"),
            ("churn model features", "流失模型特征"),
        ],
        "components": ["etl", "analytics"],
        "files": ["dbt/models/revenue.sql", "airflow/dags/nightly_etl.py"],
        "deps": ["dbt-core", "apache-airflow"],
        "lockfile": "requirements.txt",
        "label": "infra",
        "space": "Data",
    },
    "api": {
        "nouns": [
            ("rate limiter", "限流器"),
            ("OAuth token refresh", "OAuth 令牌刷新"),
            ("GraphQL schema", "GraphQL Schema"),
            ("bulk export endpoint", "批量导出接口"),
            ("audit log", "审计日志"),
            ("webhook signing", "回调签名"),
        ],
        "components": ["api", "auth"],
        "files": [
            "api/handlers/export.go",
            "api/middleware/ratelimit.go",
            "api/auth/oauth.go",
            "api/graph/schema.graphql",
            "api/audit/log.go",
            "deploy/api.yaml",
        ],
        "deps": ["golang.org/x/oauth2", "gqlgen", "aws-sdk-go-v2"],
        "lockfile": "go.sum",
        "label": "infra",
        "space": "Engineering",
    },
    "portal": {
        "nouns": [
            ("billing dashboard", "账单看板"),
            ("user invite flow", "邀请流程"),
            ("account settings page", "账户设置"),
            ("usage charts", "用量图表"),
        ],
        "components": ["portal"],
        "files": ["src/pages/Billing.vue", "src/pages/Invite.vue", "src/pages/Settings.vue", "src/charts/Usage.vue"],
        "deps": ["vue", "vite", "chart.js"],
        "lockfile": "package-lock.json",
        "label": "ui",
        "space": "Portal",
    },
}

# --------------------------------------------------------------------------------------------
# Tenants: repos (area, Jira projects whose issues its PRs fix, share of PRs, first PR number),
# Jira projects (name, areas, issue count), Slack channels (id, area or None for "all", weight).
# --------------------------------------------------------------------------------------------
SPECS = {
    "acme": {
        "people": ACME_PEOPLE,
        "domain": "acme.io",
        "repos": {
            "acme/payments": ("payments", ("PAY", "ENG"), 29, 1101),
            "acme/web": ("web", ("WEB", "ENG"), 28, 1801),
            "acme/infra": ("infra", ("OPS", "ENG"), 26, 601),
            "acme/mobile": ("mobile", ("ENG",), 17, 301),
        },
        "team_repos": {"data": ("acme/infra", "acme/payments")},  # the data team has no repo of its own
        "projects": {
            "ENG": ("Engineering", ("mobile", "data", "web", "infra", "payments"), 112, 1),
            "PAY": ("Payments", ("payments",), 70, 1),
            "WEB": ("Web Platform", ("web",), 72, 1),
            "OPS": ("Operations", ("infra",), 70, 1),
        },
        "channels": {
            "general": ("C01GENRL7Q", None, 16),
            "infra": ("C02INFRA3K", "infra", 18),
            "payments": ("C02PAYMT8D", "payments", 18),
            "web": ("C02WEBFE5N", "web", 16),
            "mobile": ("C02MOBIL6R", "mobile", 12),
            "incidents": ("C03INCDT2X", None, 8),
            "security-private": ("G04SECPR9Z", None, 2),
        },
        "private": {"security-private": ("sokafor", "rsh-dev", "priyar", "achen42", "ingrid-h")},
        "n_prs": 525,
        "n_messages": 1150,
        "busy_share": 0.36,
    },
    "globex": {
        "people": GLOBEX_PEOPLE,
        "domain": "globex.com",
        "repos": {"globex/api": ("api", ("GLX",), 60, 101), "globex/portal": ("portal", ("GLX",), 40, 41)},
        "team_repos": {},
        "projects": {"GLX": ("Globex", ("api", "portal"), 40, 1)},
        "channels": {
            "general": ("C05GXGEN1A", None, 3),
            "engineering": ("C05GXENG2B", None, 5),
            "api": ("C05GXAPI3C", "api", 4),
        },
        "private": {},
        "n_prs": 70,
        "n_messages": 150,
        "busy_share": 0.3,
    },
}
_AREA_TEAM = {
    "payments": "payments",
    "web": "web",
    "infra": "infra",
    "mobile": "mobile",
    "data": "data",
    "api": "platform",
    "portal": "portal",
}

LABEL_COLORS = {
    "bug": "d73a4a",
    "feature": "a2eeef",
    "security": "b60205",
    "performance": "fbca04",
    "refactor": "c5def5",
    "docs": "0075ca",
    "dependencies": "0366d6",
    "auth": "5319e7",
    "payments": "0e8a16",
    "infra": "1d76db",
    "ui": "f9d0c4",
    "mobile": "bfdadc",
}
MILESTONES = [f"v2.{i}" for i in range(7)]  # v2.0 .. v2.6 spread evenly over the 18 months

# --------------------------------------------------------------------------------------------
# Text templates. {n} is a noun, {N} the same capitalised.
# --------------------------------------------------------------------------------------------
PR_KINDS = {"bug": 30, "feature": 26, "refactor": 14, "performance": 10, "docs": 6, "dependencies": 8, "security": 6}
PR_TITLES = {
    "bug": [
        "Fix {n} regression",
        "Fix race condition in {n}",
        "Handle empty responses in {n}",
        "Fix flaky {n} tests",
        "Guard {n} against duplicate events",
        "Fix timezone bug in {n}",
    ],
    "feature": [
        "Add {n}",
        "Support {n} for enterprise accounts",
        "Introduce {n} behind a feature flag",
        "Add metrics for {n}",
    ],
    "refactor": ["Refactor {n}", "Extract {n} into its own module", "Clean up {n} error handling"],
    "performance": ["Speed up {n}", "Cache {n} lookups", "Reduce database round-trips in {n}"],
    "docs": ["Document {n}", "Update README section on {n}"],
    "dependencies": ["Bump {dep} from {v1} to {v2}"],
    "security": ["Harden input validation in {n}", "Stop logging secrets in {n}", "Tighten permissions on {n}"],
}
PR_TITLES_CN = {
    "bug": ["修复{n}的偶发错误", "修复{n}中的并发问题", "修复{n}的时区问题"],
    "feature": ["新增{n}功能", "为{n}增加监控指标"],
    "refactor": ["重构{n}", "清理{n}的错误处理"],
    "performance": ["优化{n}性能", "为{n}增加缓存"],
    "docs": ["补充{n}文档"],
    "security": ["加强{n}的输入校验"],
}
PR_WHAT = {
    "bug": [
        "This fixes a bug where {n} failed intermittently after an upstream timeout.",
        (
            "{N} could process the same event twice when a worker restarted mid-flight; this makes the handler "
            "idempotent."
        ),
    ],
    "feature": [
        "This adds {n}, guarded by a feature flag so we can roll it out per tenant.",
        "First cut of {n}; the API and UI changes ship together.",
    ],
    "refactor": [
        "This splits {n} into smaller functions with no behaviour change.",
        "Mechanical cleanup of {n} ahead of the next milestone.",
    ],
    "performance": [
        "Profiling showed {n} spending most of its time on repeated queries; this batches them.",
        "This caches the expensive part of {n}, cutting p95 latency roughly in half in staging.",
    ],
    "docs": ["Documents how {n} works and how to debug it locally."],
    "dependencies": ["Routine dependency bump; the changelog lists no breaking changes for how we use it."],
    "security": [
        "Tightens {n} after the last security review flagged it.",
        "{N} trusted input from the client; this validates it server-side.",
    ],
}
PR_WHY = [
    "Customers hit this in production last week.",
    "It keeps coming up in on-call handovers.",
    "We need it before the {ms} release.",
    "It unblocks the next step on the roadmap.",
    "The current behaviour is hard to reason about and easy to break.",
]
PR_TESTING = [
    "Added unit tests for the edge cases.",
    "Ran the integration suite locally.",
    "Verified manually in staging.",
    "Load-tested at 2x production traffic.",
    "Existing tests pass; no behaviour change expected.",
]
PR_WHAT_CN = {
    "bug": "修复了{n}在上游超时后偶发失败的问题。",
    "feature": "新增{n}，通过功能开关按租户逐步发布。",
    "refactor": "重构{n}，不改变行为。",
    "performance": "{n}存在重复查询，本次改为批量处理。",
    "docs": "补充{n}的说明和本地调试方法。",
    "security": "根据安全评审的意见加强{n}的校验。",
}
PR_WHY_CN = ["线上用户上周遇到了这个问题。", "值班时经常被问到。", "下个版本发布前需要完成。"]
PR_TESTING_CN = ["补充了单元测试。", "在 staging 环境手动验证通过。", "本地跑过集成测试。"]
CLOSE_WORDS = ["Fixes", "Closes", "Resolves", "Refs"]
REVIEW_BODY = {
    "APPROVED": [
        "LGTM",
        "Looks good to me, thanks!",
        "Nice cleanup 👍",
        "Ship it.",
        "Approving; one nit inline, not blocking.",
    ],
    "CHANGES_REQUESTED": [
        "Please add a test for the retry path.",
        "This needs a rollout plan before we merge.",
        "Can we put this behind a flag?",
    ],
    "COMMENTED": [
        "A couple of questions inline.",
        "Not blocking, but consider splitting this PR.",
        "How does this behave under load?",
    ],
}
REVIEW_BODY_CN = {
    "APPROVED": ["LGTM，没问题。", "看过了，可以合并。"],
    "CHANGES_REQUESTED": ["请补充重试路径的测试。"],
    "COMMENTED": ["有几个小问题，见行内评论。"],
}
INLINE_COMMENTS = [
    "nit: rename this variable",
    "Should this be configurable?",
    "This throws if the list is empty.",
    "Can we log the request id here?",
    "Missing await?",
    "Use a named constant for this timeout.",
]

ISSUE_TYPES = {"Bug": 40, "Story": 28, "Task": 27, "Epic": 5}
ISSUE_SUMMARY = {
    "Bug": [
        "{N} times out under load",
        "{N} returns 500 after the last deploy",
        "Flaky tests around {n}",
        "{N} shows stale data after refresh",
        "{N} breaks for accounts with non-ASCII names",
    ],
    "Story": [
        "Support {n} for enterprise accounts",
        "Add audit trail for {n}",
        "Expose {n} in the admin console",
        "Improve {n} for first-time users",
    ],
    "Task": [
        "Add dashboards and alerts for {n}",
        "Write a runbook for {n}",
        "Remove dead feature flags in {n}",
        "Upgrade libraries used by {n}",
    ],
    "Epic": ["{N} revamp", "{N} reliability"],
}
ISSUE_SUMMARY_CN = {
    "Bug": ["{n}在高峰期偶发超时", "{n}上线后返回 500"],
    "Story": ["{n}支持企业账户"],
    "Task": ["为{n}补充监控告警"],
    "Epic": ["{n}改造"],
}
ISSUE_DESC = {
    "Bug": "Seen in production since {date}. {N} fails for roughly {pct}% of requests; the Grafana error-rate panel "
    "shows the spike.\n\nExpected: the request succeeds.\nActual: the client gets an error and retries.",
    "Story": "As an account admin I want {n} so that I don't have to ask support.\n\nAcceptance criteria:\n"
    "- works on every plan\n- covered by end-to-end tests",
    "Task": "Housekeeping for {n}. No user-visible change expected; see the linked PRs.",
    "Epic": "Umbrella for the {n} work this half. Child issues track the individual pieces.",
}
ISSUE_DESC_CN = {
    "Bug": "{date}起线上出现，约{pct}%的请求受影响。\n\n期望：请求成功。\n实际：客户端报错并重试。",
    "Story": "希望{n}能支持更多场景，减少客服工单。\n\n验收标准：所有套餐可用，并有端到端测试。",
    "Task": "{n}的日常维护工作，不影响用户，相关 PR 见下方链接。",
    "Epic": "本季度{n}相关工作的总体跟踪。",
}
ISSUE_COMMENTS = [
    "Can reproduce on staging.",
    "I'll take this one.",
    "Lowering priority, a workaround exists.",
    "PR is up.",
    "Customer confirmed the fix.",
    "Is this the same root cause as last month?",
]
ISSUE_COMMENTS_CN = ["我来看一下。", "staging 上可以复现。", "PR 已提交。"]
ISSUE_LABELS = ["backend", "frontend", "customer-reported", "tech-debt", "regression", "security", "oncall"]

# Slack threads by kind: (parent templates, reply templates). Placeholders: {url} {num} {title}
# {key} {iurl} {summary} {n} {repo} {ms} {uid} {team} {dep}.
THREADS = {
    "pr": (
        [
            "Could someone review <{url}|#{num}>? {title}",
            "PR up for {n}: <{url}|#{num}> — small one, promise",
            "<{url}|#{num}> is ready for another look",
        ],
        [
            "On it 👀",
            "Left a few comments",
            "Approved ✅",
            "Thanks! Merging once CI is green",
            "Does this need a migration?",
            "Nice, this was bugging me too",
            "Can we get this into {ms}?",
        ],
    ),
    "issue": (
        [
            "Anyone looking at <{iurl}|{key}>? {summary}",
            "Heads up: {key} is getting more customer reports",
            "Filed <{iurl}|{key}>: {summary}",
        ],
        [
            "I can take it",
            "Looks related to last week's deploy",
            "Bumped the priority",
            "Repro steps are in the ticket now",
            "<@{uid}> this is your area I think",
            "Fix is in progress",
        ],
    ),
    "question": (
        [
            "Does anyone know how {n} handles retries?",
            "What's the right way to test {n} locally?",
            "Who owns {n} these days?",
        ],
        [
            "Check the runbook in Notion",
            "I think <@{uid}> knows best",
            "There's a make target for that",
            "It retries 3 times with backoff",
            "Ping me and I'll pair with you",
        ],
    ),
    "deploy": (
        ["Deploying {repo} {ms} to production 🚀", "Release {ms} of {repo} is out"],
        [
            "Smoke tests green",
            "Dashboards look normal",
            "🎉",
            "Small bump in 5xx, watching it",
            "Rolled back the canary, investigating",
        ],
    ),
    "social": (
        [
            "Welcome <@{uid}> to the {team} team! 👋",
            "Reminder: engineering all-hands on Thursday",
            "Lunch & learn tomorrow: how {n} works",
            "Who's coming to the offsite?",
        ],
        ["Welcome!", "👋", "Thanks for organising", "Count me in", "Will it be recorded?"],
    ),
    "incident": (
        [
            "🔥 Alert: {n} error rate above 5%",
            "SEV-2: {n} degraded, investigating",
            "Pager went off for {n} — anyone around?",
        ],
        [
            "Looking",
            "Rolled back the last deploy",
            "Root cause looks like a bad config push",
            "Error rate back to baseline",
            "Filed <{iurl}|{key}> for the follow-up",
            "I'll write the postmortem",
        ],
    ),
    "security": (
        [
            "Dependabot flagged a critical CVE in {dep}",
            "Pen test report for {n} is in, a couple of mediums",
            "Quarterly access review is due Friday",
        ],
        [
            "I'll patch it today",
            "Which services use it?",
            "Done for payments",
            "Tracking it in a private ticket",
            "Thanks, closing this out",
        ],
    ),
}
THREADS_CN = {
    "pr": (
        ["帮忙 review 一下 <{url}|#{num}>：{title}", "{n}的 PR 提好了 <{url}|#{num}>"],
        ["我来看", "留了几个评论", "已 approve ✅", "谢谢，CI 过了就合并"],
    ),
    "issue": (["有人在跟 <{iurl}|{key}> 吗？{summary}"], ["我来处理", "应该和上周的发布有关", "已经提高优先级了"]),
    "question": (["请问{n}在本地怎么测试？"], ["看 Notion 上的 runbook", "有个 make 命令可以用", "我晚点和你一起看"]),
}
CHANNEL_KINDS = {
    "general": {"social": 4, "question": 2, "deploy": 2, "pr": 1},
    "incidents": {"incident": 1},
    "security-private": {"security": 1},
    None: {"pr": 4, "issue": 3, "question": 2, "deploy": 1},
}
REACTIONS = ["+1", "eyes", "white_check_mark", "tada", "rocket", "pray"]

# Documents: (title, area or None) per kind; bodies are assembled from the paragraphs below.
DOC_TOPICS = {
    "adr": [
        ("Adopt OpenTelemetry for tracing", "infra"),
        ("Use Postgres advisory locks for payout scheduling", "payments"),
        ("Standardise on TypeScript strict mode", "web"),
        ("Adopt the React Native new architecture", "mobile"),
        ("Move feature flags to a hosted service", "web"),
        ("Use dbt for warehouse transformations", "data"),
        ("Keep the ledger append-only", "payments"),
        ("Run Kubernetes on managed node groups", "infra"),
        ("Deploy with Argo CD", "infra"),
        ("Require idempotency keys on every payment mutation", "payments"),
    ],
    "postmortem": [
        ("Checkout latency spike during load test", "payments"),
        ("Expired TLS certificate on api.acme.io", "infra"),
        ("Push notifications delivered twice", "mobile"),
        ("Search index rebuild took the dashboard down", "web"),
        ("Nightly ETL double-counted refunds", "data"),
        ("Terraform apply deleted a staging database", "infra"),
        ("Login loop for SSO customers", "web"),
        ("Payout file rejected by the bank", "payments"),
    ],
    "rfc": [
        ("Multi-region Postgres", "infra"),
        ("A unified design system", "web"),
        ("Offline-first sync for mobile", "mobile"),
        ("Event schema registry", "data"),
        ("Split the payments monolith", "payments"),
        ("Per-tenant rate limits", "infra"),
        ("Replace Celery with Temporal", "payments"),
        ("Deprecate API v1", "web"),
        ("On-call rotation changes", None),
        ("Trunk-based development", None),
    ],
    "runbook": [
        (noun, area) for area in ("payments", "infra", "web", "mobile") for noun, _ in AREAS[area]["nouns"][:3]
    ],
    "guide": [
        ("How we do code review", None),
        ("Onboarding: payments team", "payments"),
        ("Engineering release process", None),
        ("Incident response process", None),
    ],
}
DOC_PARAGRAPHS = {
    "adr": [
        (
            "## Context\n{T} came up repeatedly in planning; {issue_link} is the clearest example of what the "
            "status quo costs."
        ),
        "## Decision\nWe will {t_lower}. The change is rolled out service by service, starting with {pr_link}.",
        (
            "## Consequences\nOperational load goes down, but the team owns one more moving part. We revisit this "
            "decision in six months."
        ),
    ],
    "postmortem": [
        "## Summary\n{T}. Customer impact lasted about {mins} minutes before mitigation.",
        "## Timeline\n- Detection by alerting\n- Mitigation by rollback\n- Fix landed in {pr_link}",
        (
            "## Root cause\nA change interacted badly with traffic we did not test for. Follow-up is tracked "
            "in {issue_link}."
        ),
        ("## Action items\n- Add an alert for the failure mode\n- Extend the load test\n- Review the runbook"),
    ],
    "rfc": [
        "## Problem\n{T} is a recurring request; see {issue_link}.",
        "## Proposal\nWe propose a staged approach: prototype, measure, then migrate. A spike is in {pr_link}.",
        "## Alternatives\nDoing nothing keeps the current pain; buying a vendor product costs more than it saves.",
        "## Open questions\nOwnership after launch, and how we migrate existing data.",
    ],
    "runbook": [
        "## When to use this\nWhen alerts fire for {t_lower}, or a customer reports problems with it.",
        ("## Steps\n1. Check the dashboard.\n2. Look for recent deploys.\n3. Roll back if the error rate is above 5%."),
        "## History\nLast significant change: {pr_link}. Known issue: {issue_link}.",
    ],
    "guide": [
        "## Why\n{T} is written down so new joiners don't have to learn it by osmosis.",
        "## How it works\nSmall PRs, one approving review, and the author merges. Example: {pr_link}.",
        "## Questions\nAsk in #general or open an issue like {issue_link}.",
    ],
}
DOC_PARAGRAPHS_CN = [
    "## 背景\n{T}是值班时最常见的问题之一，相关问题见 {issue_link}。",
    "## 步骤\n1. 查看监控面板。\n2. 检查最近的发布。\n3. 错误率超过 5% 时立即回滚。",
    "## 历史\n最近一次相关修改：{pr_link}。",
]

# --------------------------------------------------------------------------------------------
# Stories: hand-written, cross-linked facts that tests and the eval set ask about. Fixed for every
# seed; the `_Builder.stories_*` methods read their ids and dates from here.
# --------------------------------------------------------------------------------------------


def _dt(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _slack_ts(when: datetime, micro: int) -> str:
    return f"{int(when.timestamp())}.{micro:06d}"


def _permalink(tenant: str, channel: str, ts: str) -> str:
    return f"https://{tenant}.slack.com/archives/{SPECS[tenant]['channels'][channel][0]}/p{ts.replace('.', '')}"


def _story_thread(channel: str, when: str, micro: int) -> dict:
    ts = _slack_ts(_dt(when), micro)
    return {"channel": channel, "ts": ts, "permalink": _permalink("acme", channel, ts)}


STORIES = {
    "redis_session_cache": {
        "tenant": "acme",
        "issue": "ENG-231",
        "pr": "acme/infra#812",
        "pr_url": "https://github.com/acme/infra/pull/812",
        "pr_title": "Switch session cache from Memcached to Redis",
        "author": "rsh-dev",
        "merged_at": "2026-06-10T14:22:00Z",
        "thread": _story_thread("infra", "2026-06-03T10:05:12", 300),
        "doc": "DOC-14",
        "doc_title": "ADR-007: Use Redis for the session cache",
    },
    "payments_double_charge": {
        "tenant": "acme",
        "issue": "PAY-88",
        "pr": "acme/payments#1377",
        "pr_url": "https://github.com/acme/payments/pull/1377",
        "pr_title": "修复支付回调的重复扣款问题 (PAY-88)",
        "author": "zwei-dev",
        "merged_at": "2026-09-16T09:05:00Z",
        "thread": _story_thread("incidents", "2026-09-14T07:12:40", 500),
        "doc": "DOC-31",
        "doc_title": "Postmortem: Duplicate charges from retried payment callbacks (2026-09-14)",
    },
    "leaked_stripe_key": {
        "tenant": "acme",
        "pr": "acme/web#2093",
        "pr_url": "https://github.com/acme/web/pull/2093",
        "pr_title": "Rotate leaked Stripe key",
        "author": "achen42",
        "merged_at": "2026-10-20T11:45:00Z",
        "thread": _story_thread("security-private", "2026-10-20T08:31:05", 700),
        "members": ["achen42", "ingrid-h", "priyar", "rsh-dev", "sokafor"],
    },
    "ci_self_hosted_runners": {
        "tenant": "acme",
        "issue": "OPS-142",
        "issue_summary": "将 CI 迁移到自托管 GitHub Actions runner",
        "thread": _story_thread("infra", "2026-10-27T03:15:30", 900),
        "doc": "DOC-36",
        "doc_title": "RFC：CI 迁移到自托管 Runner",
    },
    # Guaranteed answers for "PRs Rashid merged last week" / "上周张伟合并了哪些PR？" (ISO week 2026-W48).
    # Their numbers follow the repo sequence, so tests find them by title.
    "last_week_merges": {
        "tenant": "acme",
        "week": "2026-W48",
        "prs": [
            {
                "repo": "acme/infra",
                "title": "Add Redis memory alerts for the session cache",
                "author": "rsh-dev",
                "merged_at": "2026-11-24T10:12:00Z",
            },
            {
                "repo": "acme/infra",
                "title": "Bump terraform-provider-aws from 5.61.0 to 5.70.0",
                "author": "rsh-dev",
                "merged_at": "2026-11-26T15:30:00Z",
            },
            {
                "repo": "acme/payments",
                "title": "优化出款对账任务的批量查询",
                "author": "zwei-dev",
                "merged_at": "2026-11-25T03:20:00Z",
            },
        ],
    },
    "globex_dynamodb_sessions": {
        "tenant": "globex",
        "issue": "GLX-57",
        "pr": "globex/api#214",
        "pr_url": "https://github.com/globex/api/pull/214",
        "pr_title": "Migrate session store to DynamoDB",
        "author": "rashidk",
        "merged_at": "2026-07-22T15:40:00Z",
        "doc": "DOC-5",
        "doc_title": "Design: DynamoDB session store",
    },
}

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _gh(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _jira(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def _cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def _digest(*parts: str) -> str:
    return hashlib.sha1(":".join(parts).encode()).hexdigest()


def _clamp(dt: datetime) -> datetime:
    return min(max(dt, _START), _END)


def _sprint(dt: datetime) -> str:
    # Two-week sprints; Sprint 48 runs 2026-11-23 .. 2026-12-06, so SAMPLE_NOW is in it.
    return f"Sprint {48 + (dt - datetime(2026, 11, 23, tzinfo=UTC)).days // 14}"


def _milestone(dt: datetime) -> dict:
    i = min(6, int((dt - _START) / (_END - _START) * 7))
    return {"title": MILESTONES[i], "number": i + 1, "state": "closed" if i < 5 else "open"}


@dataclass(frozen=True)
class _Person:
    name: str
    login: str
    handle: str
    jira: str
    team: str
    aliases: tuple[str, ...]
    author_w: float
    review_w: float
    email: str
    slack_id: str
    gh_id: int

    @property
    def cn(self) -> bool:
        return _cjk(self.name)

    def gh_user(self) -> dict:
        return {"login": self.login, "id": self.gh_id, "type": "User"}

    def jira_user(self) -> dict:
        return {"name": self.jira, "displayName": self.name, "emailAddress": self.email}

    def record(self) -> dict:
        # One record states a person with all their accounts: the sample corpus is an operator-provided
        # directory, like a people.yaml, so its source "sample" vouches for every account in it
        # (`sources.people.OPERATOR_SOURCES`) and `make demo --as rsh-dev` reads what Rashid may read.
        return {
            "login": self.login,
            "name": self.name,
            "email": self.email,
            "slack_id": self.slack_id,
            "slack_handle": self.handle,
            "jira": self.jira,
            "team": self.team,
            "aliases": list(self.aliases),
            "acl": ["*"],
            "source": "sample",
        }


def _people(tenant: str) -> list[_Person]:
    out = []
    for name, login, handle, jira, team, aliases, aw, rw in SPECS[tenant]["people"]:
        latin = aliases[0] if _cjk(name) else name  # Chinese people's email uses their pinyin name
        email = latin.lower().replace("ü", "ue").replace(" ", ".") + "@" + SPECS[tenant]["domain"]
        slack_id = "U0" + _digest(tenant, login)[:8].upper()
        gh_id = 1_000_000 + int(_digest(login)[:7], 16) % 90_000_000
        out.append(_Person(name, login, handle, jira, team, tuple(aliases), aw, rw, email, slack_id, gh_id))
    return out


@dataclass
class _Issue:
    """An issue before it becomes a Jira record: PRs that fix it may still change its status."""

    project: str
    area: str
    noun: tuple[str, str]
    itype: str
    summary: str
    description: str
    status: str
    priority: str
    assignee: _Person | None
    reporter: _Person
    created: datetime
    resolved: datetime | None
    labels: list[str]
    component: str
    comments: list[tuple[_Person, str, datetime]] = field(default_factory=list)
    key: str = ""
    links: int = 0
    anchor: int | None = None  # a story issue pins its number


def _number(items: list, when, set_number, first: int, anchored) -> None:
    """Number items in creation order. A story item pins the sequence so its number never changes."""
    items.sort(key=when)
    base = first
    for i, item in enumerate(items):
        pinned = anchored(item)
        if pinned is not None:
            base = pinned - i
    assert base >= 1, "a story number is too small for the number of records before it"
    for i, item in enumerate(items):
        set_number(item, base + i)


# --------------------------------------------------------------------------------------------
# The builder: one per tenant per generate() call.
# --------------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, tenant: str, rng: random.Random):
        self.tenant, self.rng, self.spec = tenant, rng, SPECS[tenant]
        self.people = _people(tenant)
        self.by_login = {p.login: p for p in self.people}
        self.issues: list[_Issue] = []
        self.prs: list[dict] = []
        self.pr_meta: dict[int, dict] = {}  # PR id -> the issue it fixes, its files, its noun
        self.messages: list[dict] = []
        self.docs: list[dict] = []
        self.used_ts: dict[str, set[str]] = {}
        self._next_id = 1_900_000_000 + rng.randrange(10_000_000)

    # -- small utilities ---------------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += self.rng.randint(1, 5000)
        return self._next_id

    def when(self, lo: datetime | None = None, hi: datetime = _END) -> datetime:
        """A working-hours timestamp in [lo, hi]; without lo, more likely in the busy final weeks."""
        rng = self.rng
        if lo is None:
            lo = _BUSY_FROM if rng.random() < self.spec["busy_share"] else _START
        t = lo + (hi - lo) * rng.random()
        if t.weekday() >= 5 and rng.random() < 0.9:  # weekends are quiet: move to Friday
            t -= timedelta(days=t.weekday() - 4)
        t = t.replace(hour=rng.randint(6, 19), minute=rng.randrange(60), second=rng.randrange(60), microsecond=0)
        return _clamp(t)

    def pick(self, people: list[_Person], weight) -> _Person:
        return self.rng.choices(people, [weight(p) for p in people])[0]

    def team_of(self, area: str) -> list[_Person]:
        return [p for p in self.people if p.team == _AREA_TEAM[area]] or self.people

    def repo_url(self, repo: str, number: int) -> str:
        return f"https://github.com/{repo}/pull/{number}"

    def issue_url(self, key: str) -> str:
        return f"https://{self.tenant}.atlassian.net/browse/{key}"

    # -- issues --------------------------------------------------------------------------------
    def random_issue(self, project: str) -> _Issue:
        rng = self.rng
        areas = self.spec["projects"][project][1]
        area = rng.choice(areas)
        noun = rng.choice(AREAS[area]["nouns"])
        itype = rng.choices(list(ISSUE_TYPES), list(ISSUE_TYPES.values()))[0]
        reporter = rng.choice(self.people)
        created = self.when()
        cn = reporter.cn and rng.random() < 0.4
        pct = rng.choice([2, 5, 8, 12, 20])
        if cn:
            summary = rng.choice(ISSUE_SUMMARY_CN[itype]).format(n=noun[1])
            description = ISSUE_DESC_CN[itype].format(n=noun[1], date=created.strftime("%m月%d日"), pct=pct)
        else:
            summary = rng.choice(ISSUE_SUMMARY[itype]).format(n=noun[0], N=_cap(noun[0]))
            description = ISSUE_DESC[itype].format(n=noun[0], N=_cap(noun[0]), pct=pct, date=created.strftime("%b %d"))
        age = (_END - created).days
        weights = [8, 5, 2, 78, 7] if age > 45 else [30, 22, 10, 35, 3]
        status = rng.choices(["To Do", "In Progress", "In Review", "Done", "Won't Do"], weights)[0]
        resolved = None
        if status in ("Done", "Won't Do"):
            resolved = created + timedelta(hours=rng.expovariate(1 / 200) + 2)
            if resolved > _END:
                status, resolved = "In Progress", None
        assignee = self.pick(self.team_of(area), lambda p: p.author_w)
        if status == "To Do" and rng.random() < 0.35:
            assignee = None  # untriaged backlog
        issue = _Issue(
            project,
            area,
            noun,
            itype,
            summary,
            description,
            status,
            rng.choices(["Highest", "High", "Medium", "Low", "Lowest"], [4, 18, 50, 20, 8])[0],
            assignee,
            reporter,
            created,
            resolved,
            rng.sample(ISSUE_LABELS, rng.choice([0, 1, 1, 2])) + [area],
            rng.choice(AREAS[area]["components"]),
        )
        for text in rng.sample(ISSUE_COMMENTS_CN if cn else ISSUE_COMMENTS, rng.choice([0, 0, 1, 1, 2, 3])):
            who = rng.choice([assignee or reporter, reporter, rng.choice(self.team_of(area))])
            issue.comments.append((who, text, _clamp(created + timedelta(hours=rng.uniform(1, 120)))))
        return issue

    def build_issues(self) -> None:
        for project, (_, _, count, _) in self.spec["projects"].items():
            self.issues += [self.random_issue(project) for _ in range(count)]
        self.stories_issues()
        for project, (_, _, _, first) in self.spec["projects"].items():
            mine = [i for i in self.issues if i.project == project]
            _number(
                mine,
                lambda i: i.created,
                lambda i, n: setattr(i, "key", f"{project}-{n}"),  # noqa: B023 (called at once)
                first,
                lambda i: i.anchor,
            )
        self.issues.sort(key=lambda i: i.created)

    def issue_record(self, i: _Issue) -> dict:
        number = int(i.key.split("-")[1])
        offset = 10000 * (list(self.spec["projects"]).index(i.project) + 1)  # ENG-231 -> "10231"
        times = [i.created, *(c[2] for c in i.comments)] + ([i.resolved] if i.resolved else [])
        sprint = None
        if i.itype != "Epic" and i.status != "To Do":
            sprint = {"name": _sprint(i.resolved or _END)}
        elif i.itype != "Epic" and i.assignee and self.rng.random() < 0.5:
            sprint = {"name": _sprint(_END)}  # committed to the current sprint but not started
        return {
            "id": str(offset + number),
            "key": i.key,
            "url": self.issue_url(i.key),
            "fields": {
                "summary": i.summary,
                "description": i.description,
                "issuetype": {"name": i.itype},
                "status": {"name": i.status},
                "priority": {"name": i.priority},
                "assignee": i.assignee.jira_user() if i.assignee else None,
                "reporter": i.reporter.jira_user(),
                "labels": i.labels,
                "components": [{"name": i.component}],
                "sprint": sprint,
                "project": {"key": i.project, "name": self.spec["projects"][i.project][0]},
                "created": _jira(i.created),
                "updated": _jira(_clamp(max(times) + timedelta(minutes=7))),
                "resolutiondate": _jira(i.resolved) if i.resolved else None,
                "comment": {
                    "comments": [
                        {"author": {"name": p.jira, "displayName": p.name}, "body": body, "created": _jira(t)}
                        for p, body, t in sorted(i.comments, key=lambda c: c[2])
                    ]
                },
            },
            "acl": ["*"],
        }

    # -- pull requests -----------------------------------------------------------------------
    def author_weight(self, repo: str):
        home = self.spec["repos"][repo][0]
        team_repos = self.spec["team_repos"]

        def weight(p: _Person) -> float:
            if _AREA_TEAM[home] == p.team:
                return p.author_w * 4
            return p.author_w * (1.5 if repo in team_repos.get(p.team, ()) else 0.15)

        return weight

    def pick_issue(self, repo: str, before: datetime, area: str, done: bool) -> _Issue | None:
        projects = self.spec["repos"][repo][1]
        pool = [
            i
            for i in self.issues
            if i.project in projects and i.created < before and i.itype != "Epic" and i.anchor is None
        ][-40:]  # work usually follows recent tickets
        if not pool:
            return None
        # Merged PRs mostly fix issues that ended up Done, open PRs issues still open, so the issues'
        # own status mix survives settle_issues() and "open issues assigned to me" has answers.
        return self.rng.choices(
            pool,
            [
                (3 if i.area == area else 1) * (6 if (i.status == "Done") == done else 1) / (1 + 3 * i.links)
                for i in pool
            ],
        )[0]

    def random_pr(self, repo: str) -> dict:
        rng = self.rng
        area = self.spec["repos"][repo][0]
        author = self.pick(self.people, self.author_weight(repo))
        t = self.when()
        recent = t >= _END - timedelta(days=45)  # recent work is more often still open
        state = rng.choices(["merged", "closed", "open"], [56, 7, 37] if recent else [78, 11, 11])[0]
        if state == "open":
            created, closed = t, None
        else:
            closed = t
            created = max(_START + timedelta(hours=1), t - timedelta(hours=min(24 * 20, rng.lognormvariate(2.9, 1.0))))
            if created >= closed:
                closed = created + timedelta(hours=2)
        issue = self.pick_issue(repo, created, area, state == "merged") if rng.random() < 0.82 else None
        if issue:
            issue.links += 1
            noun = issue.noun
            kind = {"Bug": "bug", "Story": "feature"}.get(issue.itype) or rng.choice(
                ["refactor", "performance", "docs"]
            )
        else:
            noun = rng.choice(AREAS[area]["nouns"])
            kind = rng.choices(list(PR_KINDS), list(PR_KINDS.values()))[0]
        cn = author.cn and kind != "dependencies" and rng.random() < 0.38
        ms = _milestone(created)
        title, body = self.pr_text(kind, noun, area, issue, cn, ms["title"])
        labels = [kind] if kind in LABEL_COLORS and rng.random() < 0.85 else []
        if rng.random() < 0.6:
            labels.append(AREAS[area]["label"])
        if kind == "security" or (rng.random() < 0.5 and any(w in noun[0].lower() for w in ("login", "sso", "oauth"))):
            labels.append("auth")
        files = self.pr_files(area, kind)
        reviewers = (
            []
            if state == "open" and rng.random() < 0.3
            else self.pick_reviewers(
                repo, author, rng.choices([0, 1, 2, 3], [1, 4.5, 3.5, 1] if state == "merged" else [4, 4, 2, 0])[0], cn
            )
        )
        end = closed or _END
        reviews = []
        for k, reviewer in enumerate(reviewers):
            rstate = rng.choices(list(REVIEW_BODY), [60, 15, 25])[0]
            if state == "merged" and k == len(reviewers) - 1:
                rstate = "APPROVED"  # somebody approved whatever got merged
            at = created + (end - created) * ((k + rng.random()) / (len(reviewers) + 0.5))
            bodies = REVIEW_BODY_CN if cn and reviewer.cn else REVIEW_BODY
            reviews.append((reviewer, rstate, rng.choice(bodies[rstate]), at))
        inline = [
            (r, rng.choice(files)[0], rng.randint(5, 400), rng.choice(INLINE_COMMENTS), at)
            for r, rstate, _, at in reviews
            if rstate != "APPROVED"
            for _ in range(rng.randint(1, 2))
        ]
        requested = []
        if state == "open":
            others = [p for p in self.people if p is not author and p not in reviewers]
            requested = self.pick_reviewers(repo, author, rng.randint(1, 3), cn, pool=others)
        merged_by = None
        if state == "merged":
            approvers = [r for r, s, _, _ in reviews if s == "APPROVED"]
            merged_by = rng.choice(approvers) if approvers and rng.random() < 0.3 else author
        if issue:
            head = f"{'fix' if kind == 'bug' else 'feat' if kind == 'feature' else 'chore'}/{issue.key.lower()}-"
            head += _slug(noun[0])
        else:
            head = f"{author.login}/{_slug(title if kind == 'dependencies' else noun[0])}"
        return self.make_pr(
            repo,
            author,
            title,
            body,
            created,
            state,
            closed=closed,
            draft=state == "open" and not reviews and rng.random() < 0.35,
            merged_by=merged_by,
            labels=labels[:3],
            milestone=ms if rng.random() < 0.5 else None,
            requested=requested,
            reviews=reviews,
            inline=inline,
            files=files,
            head=head,
            comments=rng.choice([0, 0, 1, 2, 3, 5, 8]),
            issue=issue,
            noun=noun,
        )

    def pr_text(self, kind: str, noun: tuple[str, str], area: str, issue: _Issue | None, cn: bool, ms: str):
        rng = self.rng
        close = f"{rng.choices(CLOSE_WORDS, [5, 3, 2, 2])[0]} {issue.key}" if issue else ""
        if cn:
            title = rng.choice(PR_TITLES_CN[kind]).format(n=noun[1])
            body = (
                f"## 概要\n{PR_WHAT_CN[kind].format(n=noun[1])}{rng.choice(PR_WHY_CN)}\n\n## 测试\n"
                f"- {rng.choice(PR_TESTING_CN)}\n\n{close}"
            )
        else:
            dep = rng.choice(AREAS[area]["deps"])
            v = rng.randint(1, 9)
            title = rng.choice(PR_TITLES[kind]).format(
                n=noun[0], dep=dep, v1=f"{v}.{rng.randint(0, 9)}.0", v2=f"{v}.{rng.randint(10, 14)}.1"
            )
            what = rng.choice(PR_WHAT[kind]).format(n=noun[0], N=_cap(noun[0]))
            tests = rng.sample(PR_TESTING, 2)
            body = (
                f"## Summary\n{what} {rng.choice(PR_WHY).format(ms=ms)}\n\n## Testing\n- {tests[0]}\n- {tests[1]}"
                f"\n\n{close}"
            )
        if issue and rng.random() < 0.3:
            title += f" ({issue.key})"
        return title, body.strip()

    def pr_files(self, area: str, kind: str) -> list[tuple[str, int, int]]:
        rng = self.rng
        if kind == "dependencies":
            return [(AREAS[area]["lockfile"], rng.randint(10, 300), rng.randint(10, 300))]
        paths = rng.sample(AREAS[area]["files"], rng.randint(1, min(6, len(AREAS[area]["files"]))))
        return [(p, int(rng.paretovariate(1.2) * 8), int(rng.paretovariate(1.4) * 4)) for p in paths]

    def pick_reviewers(self, repo, author, k, cn, pool=None) -> list[_Person]:
        team = _AREA_TEAM[self.spec["repos"][repo][0]]
        pool = [p for p in (pool or self.people) if p is not author]
        chosen: list[_Person] = []
        for _ in range(min(k, len(pool))):
            p = self.pick(pool, lambda p: p.review_w * (10 if p.team == team else 1) * (2 if cn and p.cn else 1))
            chosen.append(p)
            pool = [q for q in pool if q is not p]
        return chosen

    def make_pr(
        self,
        repo,
        author,
        title,
        body,
        created,
        state,
        *,
        closed=None,
        draft=False,
        merged_by=None,
        labels=(),
        milestone=None,
        requested=(),
        reviews=(),
        inline=(),
        files=(),
        head="",
        comments=0,
        issue=None,
        noun=None,
        anchor=None,
    ) -> dict:
        """One PR in the `/pulls` shape; `number`/`html_url` are filled in by build_prs."""
        times = [created, *(r[3] for r in reviews)] + ([closed] if closed else [])
        merged = closed if state == "merged" else None
        pr = {
            "id": self.new_id(),
            "number": None,
            "title": title,
            "body": body,
            "state": "open" if state == "open" else "closed",
            "draft": draft,
            "merged": merged is not None,
            "user": author.gh_user(),
            "labels": [{"name": n, "color": LABEL_COLORS[n]} for n in dict.fromkeys(labels)],
            "assignees": [{"login": author.login}] if self.rng.random() < 0.8 else [],
            "requested_reviewers": [{"login": p.login} for p in requested],
            "milestone": milestone,
            "created_at": _gh(created),
            "updated_at": _gh(_clamp(max(times) + timedelta(minutes=self.rng.randint(1, 90)))),
            "closed_at": _gh(closed) if closed else None,
            "merged_at": _gh(merged) if merged else None,
            "merged_by": {"login": merged_by.login} if merged else None,
            "html_url": None,
            "base": {"ref": "main", "repo": {"full_name": repo}},
            "head": {"ref": head},
            "additions": sum(f[1] for f in files),
            "deletions": sum(f[2] for f in files),
            "changed_files": len(files),
            "comments": comments,
            "reviews": [
                {"id": self.new_id(), "user": {"login": p.login}, "state": s, "body": b, "submitted_at": _gh(t)}
                for p, s, b, t in sorted(reviews, key=lambda r: r[3])
            ],
            "review_comments": [
                {
                    "id": self.new_id(),
                    "user": {"login": p.login},
                    "path": path,
                    "line": line,
                    "body": b,
                    "created_at": _gh(t),
                }
                for p, path, line, b, t in inline
            ],
            "acl": ["*"],
        }
        self.pr_meta[pr["id"]] = {
            "issue": issue,
            "files": list(files),
            "noun": noun,
            "author": author,
            "created": created,
            "anchor": anchor,
            "repo": repo,
            "area": self.spec["repos"][repo][0],
        }
        return pr

    def build_prs(self) -> None:
        repos = list(self.spec["repos"])
        weights = [self.spec["repos"][r][2] for r in repos]
        self.prs = [self.random_pr(self.rng.choices(repos, weights)[0]) for _ in range(self.spec["n_prs"])]
        self.prs += self.stories_prs()
        for repo in repos:
            mine = [p for p in self.prs if p["base"]["repo"]["full_name"] == repo]

            def set_number(pr, n, repo=repo):
                pr["number"], pr["html_url"] = n, self.repo_url(repo, n)

            _number(
                mine,
                lambda p: (self.pr_meta[p["id"]]["created"], p["id"]),
                set_number,
                self.spec["repos"][repo][3],
                lambda p: self.pr_meta[p["id"]]["anchor"],
            )
        self.prs.sort(key=lambda p: (p["created_at"], p["id"]))
        self.settle_issues()

    def settle_issues(self) -> None:
        """An issue follows the PR that fixes it: merged -> Done, open -> In Progress / In Review."""
        for pr in self.prs:  # creation order, so the latest PR wins
            issue = self.pr_meta[pr["id"]]["issue"]
            if issue is None or issue.anchor is not None or f"Refs {issue.key}" in (pr["body"] or ""):
                continue  # "Refs" mentions an issue without closing it
            if pr["merged"]:
                merged = _dt(pr["merged_at"][:-1])
                issue.status, issue.resolved = "Done", _clamp(merged + timedelta(minutes=self.rng.randint(5, 240)))
                if issue.assignee is None:
                    issue.assignee = self.pr_meta[pr["id"]]["author"]
            elif pr["state"] == "open" and issue.status != "Done":
                issue.status, issue.resolved = ("In Progress" if pr["draft"] else "In Review"), None

    def commits(self) -> list[dict]:
        out = []
        for pr in self.prs:
            if not pr["merged"]:
                continue
            meta = self.pr_meta[pr["id"]]
            repo, author, sha = meta["repo"], meta["author"], f"{self.rng.getrandbits(160):040x}"
            if self.rng.random() < 0.5:  # repos differ in merge style: merge commits vs squash
                message = (
                    f"Merge pull request #{pr['number']} from {repo.split('/')[0]}/{pr['head']['ref']}\n\n{pr['title']}"
                )
            else:
                message = f"{pr['title']} (#{pr['number']})"
            out.append(
                {
                    "sha": sha,
                    "author": {"name": author.name, "email": author.email, "date": pr["merged_at"]},
                    "message": message,
                    "html_url": f"https://github.com/{repo}/commit/{sha}",
                    "repo": repo,
                    "files": [{"filename": f, "additions": a, "deletions": d} for f, a, d in meta["files"]],
                    "acl": ["*"],
                }
            )
        return out

    # -- Slack ----------------------------------------------------------------------------------
    def add_thread(self, channel: str, posts: list[tuple[_Person, str, datetime]], micro: int | None = None) -> str:
        """Append a parent and its replies with Slack's thread fields; returns the parent ts."""
        rng = self.rng
        cid = self.spec["channels"][channel][0]
        private = self.spec["private"]
        acl = slack_members(self.by_login[m].slack_id for m in private[channel]) if channel in private else [PUBLIC]
        used = self.used_ts.setdefault(channel, set())
        shift = max(timedelta(0), posts[-1][2] - _END)  # keep the whole thread inside the window
        records = []
        for k, (person, text, at) in enumerate(posts):
            at = at - shift
            m = micro if (micro is not None and k == 0) else rng.randint(100, 999_999)
            ts = _slack_ts(at, m)
            while ts in used:
                m += 1
                ts = _slack_ts(at, m)
            used.add(ts)
            msg = {
                "type": "message",
                "user": person.slack_id,
                "text": text,
                "ts": ts,
                "user_profile": {"real_name": person.name, "display_name": person.handle, "name": person.handle},
                "channel": channel,
                "channel_id": cid,
                "permalink": _permalink(self.tenant, channel, ts),
                "acl": list(acl),
            }
            if rng.random() < 0.22:
                users = rng.sample([p.slack_id for p in self.people], rng.randint(1, 4))
                msg["reactions"] = [{"name": rng.choice(REACTIONS), "users": users, "count": len(users)}]
            records.append(msg)
        parent, replies = records[0], records[1:]
        if replies:
            users = list(dict.fromkeys(r["user"] for r in replies))
            parent.update(
                {
                    "thread_ts": parent["ts"],
                    "reply_count": len(replies),
                    "reply_users_count": len(users),
                    "reply_users": users,
                    "latest_reply": replies[-1]["ts"],
                }
            )
            for r in replies:
                r.update({"thread_ts": parent["ts"], "parent_user_id": parent["user"]})
        self.messages += records
        return parent["ts"]

    def random_thread(self) -> None:
        rng = self.rng
        channels = self.spec["channels"]
        channel = rng.choices(list(channels), [v[2] for v in channels.values()])[0]
        area = channels[channel][1]
        kinds = CHANNEL_KINDS.get(channel, CHANNEL_KINDS[None])
        kind = rng.choices(list(kinds), list(kinds.values()))[0]
        members = (
            [self.by_login[m] for m in self.spec["private"][channel]]
            if channel in self.spec["private"]
            else self.team_of(area)
            if area
            else self.people
        )
        repos = [r for r, v in self.spec["repos"].items() if area is None or v[0] == area] or list(self.spec["repos"])
        starter = rng.choice(members)
        ctx = {
            "repo": rng.choice(repos),
            "team": starter.team,
            "uid": rng.choice(self.people).slack_id,
            "dep": rng.choice(AREAS[area or "infra"]["deps"]),
        }
        noun = rng.choice(AREAS[area or rng.choice([v[0] for v in self.spec["repos"].values()])]["nouns"])
        at = self.when()
        if kind == "pr":
            pool = [p for p in self.prs if self.pr_meta[p["id"]]["repo"] in repos]
            pr = rng.choice(pool)
            meta = self.pr_meta[pr["id"]]
            starter, noun = meta["author"], meta["noun"] or noun
            at = meta["created"] + timedelta(minutes=rng.randint(10, 300))
            ctx.update(url=pr["html_url"], num=pr["number"], title=pr["title"])
        elif kind in ("issue", "incident"):
            projects = {p for r in repos for p in self.spec["repos"][r][1]}
            issue = rng.choice([i for i in self.issues if i.project in projects])
            noun = issue.noun
            if kind == "issue":
                starter, at = issue.reporter, issue.created + timedelta(minutes=rng.randint(5, 600))
            ctx.update(key=issue.key, iurl=self.issue_url(issue.key), summary=issue.summary)
        cn = kind in THREADS_CN and starter.cn and rng.random() < 0.5
        parents, replies = (THREADS_CN if cn else THREADS)[kind]
        ctx["n"], ctx["ms"] = (noun[1] if cn else noun[0]), _milestone(at)["title"]
        posts = [(starter, rng.choice(parents).format(**ctx), at)]
        repliers = [p for p in members if p.cn] if cn else members
        for _ in range(rng.choices(range(10), [14, 16, 16, 14, 11, 9, 7, 5, 4, 4])[0]):
            at += timedelta(minutes=rng.expovariate(1 / 25) + 1)
            who = rng.choice(repliers if rng.random() < 0.85 else members)
            text = rng.choice(replies).format(**ctx)
            if rng.random() < 0.25 and who is not starter:
                text = f"<@{starter.slack_id}> {text}"
            posts.append((who, text, at))
        self.add_thread(channel, posts)

    def build_messages(self) -> None:
        self.stories_threads()
        while len(self.messages) < self.spec["n_messages"]:
            self.random_thread()
        self.messages.sort(key=lambda m: (float(m["ts"]), m["channel"]))

    # -- documents ------------------------------------------------------------------------------
    def add_doc(
        self,
        doc_id: str,
        title: str,
        body: str,
        author: _Person,
        created: datetime,
        tags: list[str],
        space: str,
        updated: datetime | None = None,
    ) -> None:
        links = list(dict.fromkeys(re.findall(r"\((https?://[^)\s]+)\)", body)))
        url = f"https://{self.tenant}.notion.site/{_slug(title) or 'doc'}-{_digest(self.tenant, doc_id)[:32]}"
        updated = _clamp(updated or created + timedelta(hours=self.rng.uniform(1, 400)))
        self.docs.append(
            {
                "doc_id": doc_id,
                "title": title,
                "body": body,
                "author": {"name": author.name, "login": author.login},
                "created_at": _gh(created),
                "updated_at": _gh(updated),
                "tags": tags,
                "space": space,
                "url": url,
                "links": links,
                "acl": ["*"],
            }
        )

    def md_pr(self, pr: dict) -> str:
        return f"[{pr['base']['repo']['full_name']}#{pr['number']}]({pr['html_url']})"

    def md_issue(self, key: str) -> str:
        return f"[{key}]({self.issue_url(key)})"

    def build_docs(self, reserved: set[int]) -> None:
        rng = self.rng
        cut = _dt("2026-06-04T00:00:00")  # ADR-007 (a story) is dated 2026-06-04
        planned = []
        for kind, topics in DOC_TOPICS.items():
            for k, (topic, area) in enumerate(topics):
                if kind != "adr":
                    created = self.when()
                elif k < 6:  # ADR numbers follow their dates, so six ADRs must predate ADR-007
                    created = self.when(_START, cut - timedelta(days=3))
                else:
                    created = self.when(cut + timedelta(days=3))
                planned.append((kind, topic, area, created))
        adrs = sorted((p for p in planned if p[0] == "adr"), key=lambda p: p[3])
        adr_no = {p[1]: (k + 1 if k < 6 else k + 2) for k, p in enumerate(adrs)}
        planned.sort(key=lambda p: p[3])
        numbers = (n for n in range(1, 10_000) if n not in reserved)
        for kind, topic, area, created in planned:
            created = _clamp(created)
            # Cite work that already existed, preferably from the doc's own area.
            prs = [p for p in self.prs if self.pr_meta[p["id"]]["created"] < created] or self.prs[:5]
            prs = [p for p in prs if area in (None, self.pr_meta[p["id"]]["area"])] or prs
            issues = [i for i in self.issues if i.created < created] or self.issues[:5]
            issues = [i for i in issues if area in (None, i.area)] or issues
            pr, issue = rng.choice(prs[-30:]), rng.choice(issues[-30:])
            team = self.team_of(area) if area else self.people
            author = self.pick(team, lambda p: p.author_w)
            cn = kind == "runbook" and author.cn
            if kind == "adr":
                title = f"ADR-{adr_no[topic]:03d}: {topic}"
            elif kind == "postmortem":
                title = f"Postmortem: {topic} ({(created - timedelta(days=2)).date()})"
            elif kind == "rfc":
                title = f"RFC: {topic}"
            elif kind == "runbook":
                title = f"运行手册：{dict(AREAS[area]['nouns'])[topic]}" if cn else f"Runbook: {_cap(topic)}"
            else:
                title = topic
            fill = {
                "T": topic,
                "t_lower": topic[:1].lower() + topic[1:],
                "pr_link": self.md_pr(pr),
                "issue_link": self.md_issue(issue.key),
                "mins": rng.randint(12, 180),
            }
            if cn:
                fill["T"] = dict(AREAS[area]["nouns"])[topic]
            paragraphs = DOC_PARAGRAPHS_CN if cn else DOC_PARAGRAPHS[kind]
            body = f"# {title}\n\n" + "\n\n".join(p.format(**fill) for p in paragraphs)
            tags = [kind] + ([area] if area else []) + (["中文"] if cn else [])
            self.add_doc(
                f"DOC-{next(numbers)}",
                title,
                body,
                author,
                created,
                tags,
                AREAS[area]["space"] if area else "Engineering",
            )

    # -- stories ---------------------------------------------------------------------------------
    def p(self, login: str) -> _Person:
        return self.by_login[login]

    def story_issue(
        self,
        key: str,
        area: str,
        noun: tuple[str, str],
        itype: str,
        summary: str,
        description: str,
        status: str,
        priority: str,
        assignee: str,
        reporter: str,
        created: str,
        resolved: str | None,
        labels: list[str],
        component: str,
        comments: list[tuple[str, str, str]],
    ) -> None:
        project, number = key.split("-")
        self.issues.append(
            _Issue(
                project,
                area,
                noun,
                itype,
                summary,
                description,
                status,
                priority,
                self.p(assignee),
                self.p(reporter),
                _dt(created),
                _dt(resolved) if resolved else None,
                labels,
                component,
                [(self.p(w), b, _dt(t)) for w, b, t in comments],
                anchor=int(number),
            )
        )

    def stories_issues(self) -> None:
        if self.tenant == "globex":
            self.story_issue(
                "GLX-57",
                "api",
                ("session store", "会话存储"),
                "Story",
                "Move the session store to a managed service",
                "The self-hosted session store needs manual failover and nobody wants the pager for it.",
                "Done",
                "High",
                "rashidk",
                "npetrova",
                "2026-07-08T09:30:00",
                "2026-07-22T16:00:00",
                ["backend", "api"],
                "api",
                [("rashidk", "PR is up, see globex/api#214.", "2026-07-14T11:00:00")],
            )
            return
        self.story_issue(
            "ENG-231",
            "infra",
            ("session cache", "会话缓存"),
            "Bug",
            "Memcached evictions log users out",
            "Users are randomly logged out during traffic peaks. Memcached is evicting session keys under memory "
            "pressure (about 4k evictions/min at peak), and because Memcached has no persistence, restarting a node "
            "logs out everyone whose session lived on it.\n\nExpected: sessions survive until they expire.",
            "Done",
            "High",
            "rsh-dev",
            "amorgan-dev",
            "2026-05-26T09:20:00",
            "2026-06-10T14:40:00",
            ["customer-reported", "infra"],
            "kubernetes",
            [
                (
                    "rsh-dev",
                    "Evictions line up exactly with the logout reports. Proposing Redis, draft ADR-007.",
                    "2026-05-27T10:02:00",
                ),
                ("larsn", "+1, we need replication anyway.", "2026-05-27T11:30:00"),
            ],
        )
        self.story_issue(
            "PAY-88",
            "payments",
            ("payment callback", "支付回调"),
            "Bug",
            "Customers double-charged when the payment provider retries a callback",
            "When the provider retries a callback after a timeout we create a second charge. About 140 customers "
            "were charged twice on 2026-09-14.\n\n支付回调重试时没有做幂等校验，导致重复扣款。",
            "Done",
            "Highest",
            "zwei-dev",
            "priyar",
            "2026-09-14T07:40:00",
            "2026-09-16T10:00:00",
            ["customer-reported", "regression", "payments"],
            "checkout",
            [
                ("zwei-dev", "根因找到了：回调处理没有检查幂等键。PR 马上提。", "2026-09-14T11:05:00"),
                ("priyar", "Refunds for the affected customers are done.", "2026-09-15T16:20:00"),
            ],
        )
        self.story_issue(
            "OPS-142",
            "infra",
            ("CI runners", "CI runner"),
            "Task",
            STORIES["ci_self_hosted_runners"]["issue_summary"],
            "GitHub 托管的 runner 排队时间太长（高峰期超过 15 分钟），费用也在上涨。计划迁移到 Kubernetes 上的自托管 "
            "runner（actions-runner-controller），先迁移 acme/infra，再迁移其他仓库。",
            "In Progress",
            "Medium",
            "liuyang-ops",
            "liuyang-ops",
            "2026-10-26T02:10:00",
            None,
            ["ci", "infra"],
            "ci",
            [("zlei-data", "数据团队的任务也需要 GPU runner 吗？先不用。", "2026-10-26T06:45:00")],
        )

    def stories_prs(self) -> list[dict]:
        p, out = self.p, []
        if self.tenant == "globex":
            s = STORIES["globex_dynamodb_sessions"]
            out.append(
                self.make_pr(
                    "globex/api",
                    p("rashidk"),
                    s["pr_title"],
                    "## Summary\nMoves the session store to DynamoDB with a TTL attribute, so we stop running our own "
                    "store.\n\n## Why\nOn-demand capacity, point-in-time recovery and no failover runbook.\n\nFixes GLX-57",
                    _dt("2026-07-14T10:20:00"),
                    "merged",
                    closed=_dt(s["merged_at"][:-1]),
                    merged_by=p("rashidk"),
                    labels=["infra", "performance"],
                    milestone=_milestone(_dt("2026-07-14T10:20:00")),
                    reviews=[
                        (p("npetrova"), "APPROVED", "Nice, the TTL handling looks right.", _dt("2026-07-21T09:00:00"))
                    ],
                    files=[("api/session/dynamo.go", 240, 12), ("deploy/api.yaml", 18, 4)],
                    head="rashidk/dynamodb-sessions",
                    comments=3,
                    issue=None,
                    noun=("session store", "会话存储"),
                    anchor=214,
                )
            )
            return out
        s = STORIES["redis_session_cache"]
        out.append(
            self.make_pr(
                "acme/infra",
                p("rsh-dev"),
                s["pr_title"],
                "## Summary\nMoves user sessions from Memcached to a Redis primary with one replica per zone.\n\n"
                "## Why\n- **Evictions:** Memcached evicts session keys under memory pressure, which logs users out "
                "(ENG-231).\n- **No persistence:** a Memcached restart drops every session on that node; Redis has AOF.\n"
                "- **Replication:** Redis replicas give us failover without losing sessions.\n\n"
                "## Rollout\nDual-write for a week, then read from Redis. See ADR-007.\n\nFixes ENG-231",
                _dt("2026-06-03T08:40:00"),
                "merged",
                closed=_dt(s["merged_at"][:-1]),
                merged_by=p("rsh-dev"),
                labels=["infra", "performance"],
                milestone=_milestone(_dt("2026-06-03T08:40:00")),
                reviews=[
                    (
                        p("ingrid-h"),
                        "CHANGES_REQUESTED",
                        "What happens if the Redis primary fails mid-request?",
                        _dt("2026-06-05T13:10:00"),
                    ),
                    (
                        p("liuyang-ops"),
                        "COMMENTED",
                        "配置看起来没问题，maxmemory-policy 建议用 volatile-lru。",
                        _dt("2026-06-08T03:30:00"),
                    ),
                    (p("larsn"), "APPROVED", "Failover test passed in staging. LGTM.", _dt("2026-06-09T16:45:00")),
                ],
                inline=[
                    (
                        p("ingrid-h"),
                        "k8s/charts/api/values.yaml",
                        88,
                        "Add a readiness probe for Redis.",
                        _dt("2026-06-05T13:10:00"),
                    )
                ],
                files=[
                    ("k8s/charts/api/values.yaml", 64, 21),
                    ("terraform/modules/redis/main.tf", 142, 0),
                    ("terraform/envs/prod/main.tf", 12, 3),
                ],
                head="rsh-dev/redis-session-cache",
                comments=6,
                issue=None,
                noun=("session cache", "会话缓存"),
                anchor=812,
            )
        )
        s = STORIES["payments_double_charge"]
        out.append(
            self.make_pr(
                "acme/payments",
                p("zwei-dev"),
                s["pr_title"],
                "## 概要\n支付服务商在超时后会重试回调，我们的回调处理没有校验幂等键，导致同一笔订单被扣款两次。\n\n"
                "## 修改\n- 回调处理前按 `idempotency_key` 加锁并检查是否已处理\n- 增加唯一索引防止重复写入账本\n\n"
                "## 测试\n- 补充了并发回调的单元测试\n- 在 staging 环境模拟重试验证通过\n\nFixes PAY-88",
                _dt("2026-09-14T13:30:00"),
                "merged",
                closed=_dt(s["merged_at"][:-1]),
                merged_by=p("zwei-dev"),
                labels=["bug", "payments"],
                milestone=_milestone(_dt("2026-09-14T13:30:00")),
                reviews=[
                    (p("lina-gh"), "COMMENTED", "索引迁移需要在低峰期执行。", _dt("2026-09-15T02:10:00")),
                    (
                        p("priyar"),
                        "APPROVED",
                        "Verified against the replayed callbacks. Ship it.",
                        _dt("2026-09-15T15:00:00"),
                    ),
                ],
                files=[
                    ("src/checkout/webhooks.py", 58, 14),
                    ("migrations/0042_ledger_index.sql", 9, 0),
                    ("tests/test_webhooks.py", 96, 2),
                ],
                head="fix/pay-88-callback-idempotency",
                comments=4,
                issue=None,
                noun=("payment callback", "支付回调"),
                anchor=1377,
            )
        )
        s = STORIES["leaked_stripe_key"]
        out.append(
            self.make_pr(
                "acme/web",
                p("achen42"),
                s["pr_title"],
                "## Summary\nRotates the Stripe secret key and reads it from Vault instead of the build environment. "
                "The old key is revoked.\n\n## Why\nThe previous key was exposed; details are in #security-private.\n\n"
                "## Testing\nCheckout tested end-to-end in staging with the new key.",
                _dt("2026-10-20T09:10:00"),
                "merged",
                closed=_dt(s["merged_at"][:-1]),
                merged_by=p("achen42"),
                labels=["security"],
                milestone=_milestone(_dt("2026-10-20T09:10:00")),
                reviews=[
                    (p("sokafor"), "APPROVED", "Old key revoked on the Stripe side too. 👍", _dt("2026-10-20T11:30:00"))
                ],
                files=[("server/auth/sso.ts", 4, 4), ("app/lib/api.ts", 22, 9)],
                head="achen42/rotate-stripe-key",
                comments=1,
                issue=None,
                noun=("Stripe key", "Stripe 密钥"),
                anchor=2093,
            )
        )
        bodies = [
            (
                "## Summary\nFollow-up to acme/infra#812 and ADR-007: alert when Redis memory use passes 80% or the "
                "eviction rate is non-zero, so we never silently lose sessions again.\n\nRefs ENG-231"
            ),
            (
                "## Summary\nRoutine provider bump; `terraform plan` shows no changes in prod.\n\n## Testing\n- Planned "
                "against staging and prod."
            ),
            (
                "## 概要\n出款对账任务逐条查询账本，月底数据量大时超过 40 分钟。本次改为批量查询，耗时降到 5 分钟以内。\n\n"
                "## 测试\n- 用上个月的数据在 staging 回放验证通过。"
            ),
        ]
        files = [
            [("monitoring/alerts/api.rules.yml", 38, 0)],
            [(".terraform.lock.hcl", 24, 24)],
            [("src/ledger/reconcile.py", 61, 33), ("src/payouts/scheduler.py", 5, 2)],
        ]
        reviewer = {"rsh-dev": ("larsn", "LGTM"), "zwei-dev": ("priyar", "Nice speed-up, approved.")}
        for spec, body, changed in zip(STORIES["last_week_merges"]["prs"], bodies, files):
            merged, author = _dt(spec["merged_at"][:-1]), p(spec["author"])
            created = merged - timedelta(hours=20)
            who, text = reviewer[spec["author"]]
            out.append(
                self.make_pr(
                    spec["repo"],
                    author,
                    spec["title"],
                    body,
                    created,
                    "merged",
                    closed=merged,
                    merged_by=author,
                    labels=["infra"] if spec["repo"] == "acme/infra" else ["performance", "payments"],
                    milestone=_milestone(created),
                    reviews=[(p(who), "APPROVED", text, merged - timedelta(hours=2))],
                    files=changed,
                    head=f"{author.login}/{_slug(body.split(chr(10))[1])[:30]}",
                    comments=1,
                    issue=None,
                    noun=None,
                )
            )
        return out

    def story_thread(self, story: str, posts: list[tuple[str, str, str]]) -> None:
        t = STORIES[story]["thread"]
        at = [(self.p(w), text, _dt(when)) for w, text, when in posts]
        ts = self.add_thread(t["channel"], at, micro=int(t["ts"].split(".")[1]))
        assert ts == t["ts"], (ts, t["ts"])

    def stories_threads(self) -> None:
        if self.tenant != "acme":
            return
        u = lambda login: f"<@{self.p(login).slack_id}>"  # noqa: E731 - a Slack mention
        pr812 = STORIES["redis_session_cache"]["pr_url"]
        self.story_thread(
            "redis_session_cache",
            [
                (
                    "rsh-dev",
                    (
                        f"Proposal: move the session cache from Memcached to Redis. Evictions are logging users out "
                        f"(<{self.issue_url('ENG-231')}|ENG-231>). Draft PR: <{pr812}|#812>"
                    ),
                    "2026-06-03T10:05:12",
                ),
                (
                    "ingrid-h",
                    "Why not just give Memcached more memory? That's a one-line change.",
                    "2026-06-03T10:21:40",
                ),
                (
                    "rsh-dev",
                    (
                        "More memory only delays evictions. Memcached also has no persistence: a restart drops every "
                        "session on that node."
                    ),
                    "2026-06-03T10:30:02",
                ),
                (
                    "larsn",
                    "And we get replication with Redis, so a failover doesn't log anyone out.",
                    "2026-06-03T10:44:19",
                ),
                (
                    "amorgan-dev",
                    "From the web side: +1, the random logouts are our #1 support ticket.",
                    "2026-06-03T11:02:55",
                ),
                ("sokafor", "Cost is fine, a cache.r6g.large per zone is within budget.", "2026-06-03T11:40:31"),
                ("liuyang-ops", "建议 maxmemory-policy 用 volatile-lru，我在 PR 里留了评论。", "2026-06-03T12:15:08"),
                ("ingrid-h", f"OK, convinced. {u('rsh-dev')} please write it up as an ADR.", "2026-06-03T13:01:47"),
            ],
        )
        self.story_thread(
            "payments_double_charge",
            [
                (
                    "priyar",
                    "🚨 SEV-1: customers are reporting double charges on checkout. Investigating.",
                    "2026-09-14T07:12:40",
                ),
                ("zwei-dev", "看起来是支付回调重试导致的，回调没有做幂等校验。", "2026-09-14T07:25:10"),
                (
                    "tbecker",
                    "Disabled provider retries for now; no new duplicates in the last 10 minutes.",
                    "2026-09-14T07:41:33",
                ),
                (
                    "priyar",
                    f"Tracking in <{self.issue_url('PAY-88')}|PAY-88>. {u('zwei-dev')} can you own the fix?",
                    "2026-09-14T07:45:02",
                ),
                ("zwei-dev", f"PR: <{STORIES['payments_double_charge']['pr_url']}|#1377>", "2026-09-14T13:35:20"),
                ("lina-gh", "Refund script is ready, 142 customers affected.", "2026-09-14T15:02:44"),
                ("priyar", "Fix deployed, retries re-enabled. Postmortem on Thursday.", "2026-09-16T10:30:00"),
            ],
        )
        self.story_thread(
            "leaked_stripe_key",
            [
                (
                    "sokafor",
                    (
                        "A Stripe secret key was committed to a public gist by a contractor. Rotating it now — please "
                        "don't discuss outside this channel."
                    ),
                    "2026-10-20T08:31:05",
                ),
                ("priyar", "Checked Stripe logs: no charges or refunds from unknown IPs.", "2026-10-20T08:52:18"),
                (
                    "achen42",
                    f"New key goes through Vault: <{STORIES['leaked_stripe_key']['pr_url']}|#2093>",
                    "2026-10-20T09:15:40",
                ),
                ("ingrid-h", "Adding a gitleaks check to CI so this can't happen again.", "2026-10-20T10:03:11"),
                ("rsh-dev", "Vault policy for the web service is updated.", "2026-10-20T10:40:27"),
                ("sokafor", "Old key revoked at 11:50 UTC. Closing this out.", "2026-10-20T11:52:09"),
            ],
        )
        ops = self.issue_url("OPS-142")
        self.story_thread(
            "ci_self_hosted_runners",
            [
                (
                    "liuyang-ops",
                    f"大家好，CI 排队太久了，我准备把 CI 迁移到自托管的 runner 上，跟踪在 <{ops}|OPS-142>。",
                    "2026-10-27T03:15:30",
                ),
                ("zlei-data", "用 actions-runner-controller 跑在现有的 K8s 集群上吗？", "2026-10-27T03:31:02"),
                ("liuyang-ops", "对，先迁 acme/infra，稳定一周后再迁 payments 和 web。", "2026-10-27T03:40:44"),
                ("zwei-dev", "payments 的集成测试需要访问 staging 数据库，网络策略要提前开好。", "2026-10-27T04:02:19"),
                ("chenjing-m", "移动端打包要 macOS，暂时还是用 GitHub 托管的 runner 吧。", "2026-10-27T05:12:37"),
                (
                    "larsn",
                    "Sounds good — can you post a short summary in English for the rest of the team?",
                    "2026-10-27T08:20:55",
                ),
                (
                    "liuyang-ops",
                    "Sure: self-hosted runners on K8s, infra first, mobile stays on hosted macOS runners.",
                    "2026-10-27T08:35:10",
                ),
            ],
        )

    def stories_docs(self) -> None:
        p = self.p
        if self.tenant == "globex":
            s = STORIES["globex_dynamodb_sessions"]
            self.add_doc(
                s["doc"],
                s["doc_title"],
                f"# {s['doc_title']}\n\n## Context\nOur self-hosted session store needs manual failover "
                f"({self.md_issue('GLX-57')}).\n\n## Design\nSessions move to a DynamoDB table keyed by "
                f"session id with a TTL attribute. Implemented in [globex/api#214]({s['pr_url']}).\n\n"
                "## Risks\n"
                "Hot partitions for very large accounts; mitigated by the random suffix on the key.",
                p("rashidk"),
                _dt("2026-07-15T10:00:00"),
                ["design", "api", "sessions"],
                "Engineering",
                _dt("2026-07-23T09:00:00"),
            )
            return
        s = STORIES["redis_session_cache"]
        self.add_doc(
            s["doc"],
            s["doc_title"],
            f"# {s['doc_title']}\n\n**Status:** Accepted · **Owner:** Rashid Khan\n\n## Context\n"
            f"Memcached evicts session keys under memory pressure, which logs users out "
            f"({self.md_issue('ENG-231')}). It has no persistence, so restarting a node drops every session "
            f"on it, and no replication, so there is no failover.\n\n## Decision\nWe use Redis (one primary, "
            f"one replica per zone, AOF persistence) for the session cache. Implemented in "
            f"[acme/infra#812]({s['pr_url']}); discussion in [#infra]({s['thread']['permalink']}).\n\n"
            "## Consequences\n"
            "Sessions survive restarts and failovers. We now operate Redis and must watch memory; "
            "maxmemory-policy is volatile-lru.",
            p("rsh-dev"),
            _dt("2026-06-04T09:00:00"),
            ["adr", "infra", "sessions", "redis"],
            "Infra",
            _dt("2026-06-11T08:30:00"),
        )
        s = STORIES["payments_double_charge"]
        self.add_doc(
            s["doc"],
            s["doc_title"],
            f"# {s['doc_title']}\n\n## Summary\nOn 2026-09-14 about 140 customers were charged twice because "
            f"retried payment-provider callbacks were not idempotent ({self.md_issue('PAY-88')}).\n\n"
            f"## Timeline\n- 07:12 UTC customers report double charges in [#incidents]"
            f"({s['thread']['permalink']})\n- 07:41 provider retries disabled\n"
            f"- 2026-09-16 09:05 fix merged: [acme/payments#1377]({s['pr_url']})\n\n"
            "## Root cause\nThe callback handler did not check the idempotency key before creating a "
            "charge.\n\n"
            "## 中文摘要\n支付回调重试时没有做幂等校验，导致重复扣款。已通过幂等键和唯一索引修复。\n\n"
            "## Action items\n- Unique index on ledger entries\n- Alert on duplicate charges per customer",
            p("priyar"),
            _dt("2026-09-18T10:00:00"),
            ["postmortem", "payments", "incident"],
            "Payments",
            _dt("2026-09-21T12:00:00"),
        )
        s = STORIES["ci_self_hosted_runners"]
        self.add_doc(
            s["doc"],
            s["doc_title"],
            f"# {s['doc_title']}\n\n## 背景\nGitHub 托管 runner 高峰期排队超过 15 分钟，费用持续上涨，详见 "
            f"{self.md_issue('OPS-142')}，讨论见 [#infra]({s['thread']['permalink']})。\n\n"
            "## 方案\n在现有 Kubernetes 集群上部署 actions-runner-controller，"
            "按仓库分批迁移：先 acme/infra，再 acme/payments 和 acme/web。移动端仍使用托管的 macOS runner。\n\n"
            "## 风险\n- 集成测试需要访问 staging 数据库，需要提前配置网络策略\n- runner 镜像需要定期更新",
            p("liuyang-ops"),
            _dt("2026-10-29T03:00:00"),
            ["rfc", "infra", "ci", "中文"],
            "Infra",
            _dt("2026-11-03T04:00:00"),
        )

    # -- globex's small document set ----------------------------------------------------------------
    def globex_docs(self, reserved: set[int]) -> None:
        numbers = (n for n in range(1, 100) if n not in reserved)
        for kind, topic, area in [
            ("rfc", "Public API versioning", "api"),
            ("runbook", "rate limiter", "api"),
            ("guide", "How we do code review", None),
            ("postmortem", "Portal login outage", "portal"),
            ("adr", "Use OpenAPI as the source of truth", "api"),
        ]:
            created = self.when()
            pr = self.rng.choice([p for p in self.prs if self.pr_meta[p["id"]]["created"] < created] or self.prs)
            issue = self.rng.choice([i for i in self.issues if i.created < created] or self.issues)
            title = {
                "rfc": f"RFC: {topic}",
                "runbook": f"Runbook: {_cap(topic)}",
                "guide": topic,
                "postmortem": f"Postmortem: {topic}",
                "adr": f"ADR-001: {topic}",
            }[kind]
            fill = {
                "T": topic,
                "t_lower": topic,
                "pr_link": self.md_pr(pr),
                "issue_link": self.md_issue(issue.key),
                "mins": self.rng.randint(10, 90),
            }
            body = f"# {title}\n\n" + "\n\n".join(p.format(**fill) for p in DOC_PARAGRAPHS[kind])
            author = self.pick(self.team_of(area) if area else self.people, lambda p: p.author_w)
            self.add_doc(
                f"DOC-{next(numbers)}",
                title,
                body,
                author,
                created,
                [kind] + ([area] if area else []),
                AREAS[area]["space"] if area else "Engineering",
            )

    def build(self) -> dict[str, list[dict]]:
        self.build_issues()
        self.build_prs()
        self.build_messages()
        self.stories_docs()
        reserved = {int(d["doc_id"].split("-")[1]) for d in self.docs}
        (self.build_docs if self.tenant == "acme" else self.globex_docs)(reserved)
        self.docs.sort(key=lambda d: int(d["doc_id"].split("-")[1]))
        return {
            "pull_requests": self.prs,
            "issues": [self.issue_record(i) for i in self.issues],
            "messages": self.messages,
            "documents": self.docs,
            "commits": self.commits(),
            "people": [p.record() for p in self.people],
        }


def generate(seed: int = 7) -> dict[str, dict[str, list[dict]]]:
    """tenant -> collection -> records. Deterministic for a seed (use random.Random(seed), never global
    random, never the clock)."""
    rng = random.Random(seed)
    return {tenant: _Builder(tenant, random.Random(rng.getrandbits(64))).build() for tenant in TENANTS}
