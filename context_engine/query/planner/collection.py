"""Step 1: which collection a question is about (its words, the record keys it names, or a guess from
the stored values it names)."""

from __future__ import annotations

import re

from context_engine.query.fields import person_field_for
from context_engine.query.planner.draft import Draft
from context_engine.query.planner.spans import STOP
from context_engine.query.schema import CollectionSchema

_COLLECTION_WORDS: list[tuple[str, str]] = [
    ("pull_requests", r"\bprs?\b|\bpull[- ]?requests?\b|\bpulls\b|\bmerge requests?\b|\bpatch(?:es)?\b|\bpatchsets?\b|合并请求|拉取请求|\bprs?(?![a-z])|代码审查|评审"),
    ("issues", r"\bissues?\b|\btickets?\b|\b(?:feature|enhancement) requests?\b|\bbug reports?\b|\bbugs?\b|\bjira\b|\bstor(?:y|ies)\b|\btasks?\b|\bepics?\b|\btix\b|工单|问题|缺陷|任务|需求|单子"),
    ("messages", r"\bmessages?\b|\bthreads?\b|\bslacks?\b|\bworkspaces?\b|工作区|\bchannels?\b|\bposts?\b|\bposted\b|\bsaid\b|\breplies\b|(?<!\w)#[\w\-]+|消息|讨论|频道|帖子"),
    ("documents", r"\bdocs?\b|\bdocuments?\b|\badrs?\b|\bdecision records?\b|\bguides?\b|\brfcs?\b|\bpostmortems?\b|\brunbooks?\b|\bpages?\b|\bwiki\b|文档|设计文档|复盘"),
    ("commits", r"\bcommits?\b|\bcommitted\b|\bcommitters?\b|提交记录|提交"),
    ("people", r"\bpeople (?:are )?(?:on|in|per) (?:\w+ ){0,2}(?:teams?|eng)\b|\bheadcount\b|组都有谁|组的人|团队成员|\bteam members?\b|\bmembers of\b|\bwho(?:'s| is| are) (?:on|in) the\b|\bteam\b(?= members| roster)|成员|团队都有谁"),
]

# A record named by its key: "acme/infra#812" (a repository the schema knows), "ENG-231" (a known project).
_REF = re.compile(r"(?<![\w/])([\w.-]+/[\w.-]+)#(\d+)\b|\b([A-Z][A-Z0-9]{1,9})-(\d+)\b")


def detect_collection(question: str, schemas: dict[str, CollectionSchema]) -> tuple[str | None, list[tuple[int, int]]]:
    """The collection the question is about, and the spans of the words that said so."""
    found: list[tuple[int, str, str]] = []
    spans: list[tuple[int, int]] = []
    for name, pattern in _COLLECTION_WORDS:
        # ASCII word boundaries: "的bug" has one, though CJK characters count as word characters.
        for m in re.finditer(pattern, question, re.I | re.ASCII):
            spans.append(m.span())
            found.append((m.start(), name, m.group(0)))
    # "PRs that fix bugs" is about PRs: the first collection word wins, of the collections there are;
    # a bare 提交 (submitted) before another record noun is the verb ("提交了哪些 issue").
    candidates = [f for f in found if f[1] in schemas] or found
    candidates = [f for f in candidates if f[2] != "提交"] or candidates
    if not candidates:
        return None, spans
    name = min(candidates)[1]
    if name in ("issues", "commits") and re.search(_COLLECTION_WORDS[0][1], question, re.I | re.ASCII) \
            and not re.search(r"\bissues?\b|\btickets?\b|\bcommits?\b", question, re.I | re.ASCII):
        name = "pull_requests"  # "bug PRs", "提交了多少个PR": the other word describes the PRs
    if name not in schemas:
        return None, spans
    return name, spans


class CollectionStep(Draft):
    """Record keys named in the question, and the collection guessed when no word names one."""

    def _refs(self) -> list[str]:
        """Record keys the question names, when they can be this tenant's: the repository or the
        project key is a stored value (so "UTF-8" or "COVID-19" are not taken for issue keys)."""
        known = {str(v) for schema in self.ctx.schemas.values() for path in ("repo", "fields.project.key")
                 if path in schema.fields for v in (schema.fields[path].enum or [])}
        refs = []
        for m in _REF.finditer(self.q):
            owner_repo, number, key, key_number = m.groups()
            if (owner_repo or key) in known:
                refs.append(f"{owner_repo}#{number}" if owner_repo else f"{key}-{key_number}")
                self.use(m.span())
        return refs

    def _guess_collection(self) -> str:
        """No collection word: the collection whose stored values the question names wins
        ("regressions still open in WEB" names a Jira label and project), then the usual order."""
        sequence = [w.lower() for w in re.findall(r"[\w\-/]+", self.q)]
        words = set(sequence) | {f"{a}_{b}" for a, b in zip(sequence, sequence[1:])}  # "not planned": not_planned
        words |= {w.replace("-", "_") for w in sequence if "-" in w}  # "not-planned"
        words |= {w[:-1] for w in words if w.endswith("s")} | {w[:-3] + "y" for w in words if w.endswith("ies")}
        verbs = {"issues": r"\breport(?:ed|s)?\b|\bfiled?\b|\braised?\b|\bresolv\w*|\bsprints?\b|\bjira\b|\bassigned\b|\bpriority\b|\bp[0-4]\b|\bcritical\b|\bhi-?pri\b|\bblockers?\b|\bbacklog\b", "messages": r"\bsaid\b|\bposted\b|\bslack\b|\bwrote\b|\brepl(?:y|ies|ied)\b",
                 "pull_requests": r"\bmerg\w*|\breview\w*|\bapprov\w*|\bchanges[- ]requested\b|\brequested changes\b|\bship(?:ped|s)?\b"}
        people = [m.person for m in self.ctx.mentions if m.person is not None and not m.is_asker]

        def theirs(schema: CollectionSchema | None) -> bool:
            """Whether everyone named holds an account of the kind these records name ("what did Kim
            write": Kim has a Slack id only, so not PRs)."""
            author = person_field_for(schema, "author")
            return not (people and author and not all(p.handle(author[1]) for p in people))

        best, best_score = None, 0
        for name in ("pull_requests", "issues", "messages", "documents", "commits"):
            schema = self.ctx.schemas.get(name)
            if schema is None or not theirs(schema):
                continue
            values = {str(v).lower() for f in schema.fields.values() for v in (f.enum or [])
                      if isinstance(v, str) and len(v) >= 3 and v.lower() not in STOP}
            score = len(words & values) + (2 if name in verbs and re.search(verbs[name], self.q, re.I) else 0) \
                + (2 if name == "issues" and re.search(r"\bsprints?\b", self.q, re.I) else 0)
            if score > best_score:
                best, best_score = name, score
        if best:
            return best
        for name in ("pull_requests", "issues", "messages", "documents"):
            if name in self.ctx.schemas and theirs(self.ctx.schemas[name]):
                return name
        return next(iter(self.ctx.schemas))

    # -- filters -----------------------------------------------------------------------------------
