"""The sample organisation grown to a given size, deterministically, for `eval.scale_bench`.

    from context_engine.eval.scale_corpus import generate_scaled
    data = generate_scaled(100_000, messages=1_000_000, seed=7)   # tenant -> collection -> records

`size` is the number of pull requests plus issues over both tenants (half each, rounded down for
PRs); `messages` the number of Slack messages over both tenants (default: the sample's). The
result is `sources.sample.generate(seed)` unchanged (the stories, documents, people and the whole
"globex" tenant, so the demo questions keep their answers) plus, in "acme", the records needed to
reach the sizes, made by the sample's own builder (same people, areas, templates, weights and date
window): issues, then PRs that fix them (and the issues' status follows their PRs), the commits of
the merged PRs, and Slack threads about those PRs and issues. The added records continue each
repository's PR numbers and each Jira project's issue keys after the sample's highest one.

Deterministic: one `random.Random` per call, seeded from `seed`; nothing reads the clock. Linear in
the size: the sample builder's per-record scans of every issue / PR (fine for ~1k records, quadratic
at 100k) are replaced by a bisected per-repository window (PRs pick among the 40 most recent
eligible issues, as the sample does) and a rotating random pool of PRs and issues for Slack threads.
"""

from __future__ import annotations

import bisect
import random

from context_engine.sources.sample import SPECS, TENANTS, _Builder, _Issue, _number, generate

__all__ = ["counts", "generate_scaled"]

SCALED_TENANT = "acme"
_THREAD_POOL = 400  # PRs and issues a batch of Slack threads may talk about
_POOL_EVERY = 256  # threads per pool


def counts(data: dict[str, dict[str, list[dict]]]) -> dict[str, int]:
    """Records per collection, summed over tenants."""
    out: dict[str, int] = {}
    for collections in data.values():
        for name, records in collections.items():
            out[name] = out.get(name, 0) + len(records)
    return out


class _ScaledBuilder(_Builder):
    """The sample's builder for one tenant, adding records after the sample's own (see module docstring)."""

    def __init__(self, tenant: str, rng: random.Random, base: dict[str, list[dict]]):
        super().__init__(tenant, rng)
        self.base = base
        self._next_id = max([pr["id"] for pr in base["pull_requests"]] + [self._next_id]) + 1
        for msg in base["messages"]:  # never reuse a (channel, ts): it is the message's key
            self.used_ts.setdefault(msg["channel"], set()).add(msg["ts"])

    def _draw(self, kind: str, make, n: int) -> tuple[list[str], list]:
        """The spec's names of `kind` (projects, repos) and `n` records `make(name)`, each name drawn
        by the weight the spec gives it."""
        names = list(self.spec[kind])
        weights = [self.spec[kind][name][2] for name in names]
        return names, [make(self.rng.choices(names, weights)[0]) for _ in range(n)]

    # -- issues --------------------------------------------------------------------------------
    def add_issues(self, n: int) -> None:
        projects, self.issues = self._draw("projects", self.random_issue, n)
        last = dict.fromkeys(projects, 0)
        for record in self.base["issues"]:
            project, number = record["key"].split("-")
            last[project] = max(last.get(project, 0), int(number))
        for project in projects:
            mine = [i for i in self.issues if i.project == project]
            _number(
                mine,
                lambda i: i.created,
                lambda i, k, p=project: setattr(i, "key", f"{p}-{k}"),
                last[project] + 1,
                lambda i: None,
            )
        self.issues.sort(key=lambda i: (i.created, i.key))
        # Per repository, the issues its PRs may fix, by creation time (see pick_issue).
        self._pool: dict[str, tuple[list[_Issue], list]] = {}
        for repo, (_, repo_projects, _, _) in self.spec["repos"].items():
            items = [i for i in self.issues if i.project in repo_projects and i.itype != "Epic" and i.anchor is None]
            self._pool[repo] = (items, [i.created for i in items])

    def pick_issue(self, repo, before, area, done):
        """The sample's choice (the 40 most recent eligible issues created before the PR, weighted),
        found by bisection instead of a scan of every issue."""
        items, created = self._pool[repo]
        end = bisect.bisect_left(created, before)
        pool = items[max(0, end - 40) : end]
        if not pool:
            return None
        return self.rng.choices(
            pool,
            [
                (3 if i.area == area else 1) * (6 if (i.status == "Done") == done else 1) / (1 + 3 * i.links)
                for i in pool
            ],
        )[0]

    # -- pull requests -----------------------------------------------------------------------
    def add_prs(self, n: int) -> None:
        repos, self.prs = self._draw("repos", self.random_pr, n)
        last = dict.fromkeys(repos, 0)
        for pr in self.base["pull_requests"]:
            repo = pr["base"]["repo"]["full_name"]
            last[repo] = max(last.get(repo, 0), pr["number"])
        for repo in repos:
            mine = [p for p in self.prs if p["base"]["repo"]["full_name"] == repo]

            def set_number(pr, k, repo=repo):
                pr["number"], pr["html_url"] = k, self.repo_url(repo, k)

            _number(
                mine, lambda p: (self.pr_meta[p["id"]]["created"], p["id"]), set_number, last[repo] + 1, lambda p: None
            )
        self.prs.sort(key=lambda p: (p["created_at"], p["id"]))
        self.settle_issues()

    # -- Slack ----------------------------------------------------------------------------------
    def add_messages(self, n: int) -> None:
        """Exactly `n` messages: whole threads, the last one cut to fit."""
        all_prs, all_issues = self.prs, self.issues
        threads = 0
        try:
            while len(self.messages) < n:
                if threads % _POOL_EVERY == 0:  # random_thread picks among self.prs / self.issues by scanning
                    self.prs = self.rng.sample(all_prs, min(_THREAD_POOL, len(all_prs)))
                    self.issues = self.rng.sample(all_issues, min(_THREAD_POOL, len(all_issues)))
                self.random_thread()
                threads += 1
        finally:
            self.prs, self.issues = all_prs, all_issues
        over = len(self.messages) - n
        if over > 0:  # the last thread has more than `over` messages (the one before it ended below n)
            del self.messages[-over:]
            parent = next(m for m in reversed(self.messages) if m.get("thread_ts", m["ts"]) == m["ts"])
            replies = self.messages[self.messages.index(parent) + 1 :]
            if replies:
                users = list(dict.fromkeys(r["user"] for r in replies))
                parent.update(
                    {
                        "reply_count": len(replies),
                        "reply_users_count": len(users),
                        "reply_users": users,
                        "latest_reply": replies[-1]["ts"],
                    }
                )
            else:
                for key in ("thread_ts", "reply_count", "reply_users_count", "reply_users", "latest_reply"):
                    parent.pop(key, None)
        self.messages.sort(key=lambda m: (float(m["ts"]), m["channel"]))


def generate_scaled(size: int, messages: int | None = None, seed: int = 7) -> dict[str, dict[str, list[dict]]]:
    """The sample corpus of `seed` plus generated "acme" records: `size` PRs + issues and `messages`
    Slack messages in all (both tenants). Raises ValueError below the sample's own counts."""
    data = generate(seed)
    have = counts(data)
    prs, issues = size // 2, size - size // 2
    messages = have["messages"] if messages is None else messages
    extra = {
        "pull_requests": prs - have["pull_requests"],
        "issues": issues - have["issues"],
        "messages": messages - have["messages"],
    }
    if min(extra.values()) < 0:
        raise ValueError(
            f"the sample alone has {have['pull_requests']} PRs, {have['issues']} issues and "
            f"{have['messages']} messages: asked for {prs}, {issues} and {messages}"
        )
    if extra["messages"] and not extra["pull_requests"]:
        raise ValueError("generated Slack threads talk about generated PRs: ask for more PRs than the sample's")
    assert SCALED_TENANT in TENANTS and SCALED_TENANT in SPECS
    base = data[SCALED_TENANT]
    builder = _ScaledBuilder(SCALED_TENANT, random.Random(f"scale:{seed}"), base)
    builder.add_issues(extra["issues"])
    builder.add_prs(extra["pull_requests"])
    if extra["messages"]:
        builder.add_messages(extra["messages"])
    base["pull_requests"] += builder.prs
    base["issues"] += [builder.issue_record(i) for i in builder.issues]
    base["messages"] += builder.messages
    base["commits"] += builder.commits()
    return data


if __name__ == "__main__":  # a quick look: python -m context_engine.eval.scale_corpus 20000 50000
    import sys
    import time

    started = time.perf_counter()
    out = generate_scaled(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
    print(counts(out), f"{time.perf_counter() - started:.1f} s")
