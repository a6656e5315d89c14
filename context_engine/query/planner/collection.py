"""Step 1: which collection a question is about (its words, the record keys it names, or a guess from
the stored values it names)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Any

from context_engine.kinds import BUILTIN, CollectionSpec
from context_engine.query.fields import person_field_for, person_field_words
from context_engine.query.planner.draft import Draft
from context_engine.query.planner.own_fields import field_words, names
from context_engine.query.planner.spans import STOP
from context_engine.query.schema import CollectionSchema

# Mentioning someone, said as a verb: what only records that store mentions can answer.
_MENTION_VERB = r"\b(?:@-?)?mention(?:s|ed|ing)?\b|\bping(?:s|ed|ing)?\b|@-?(?:ed|['’]d)\b|提到|提及|@了"

# A record named by its key: "acme/infra#812" (a repository the schema knows), "ENG-231" (a known project).
_REF = re.compile(r"(?<![\w/])([\w.-]+/[\w.-]+)#(\d+)\b|\b([A-Z][A-Z0-9]{1,9})-(\d+)\b")


def kinds_of(schemas: dict[str, Any]) -> list[CollectionSpec]:
    """The kinds a question may name: the built-in ones (always: a word naming a kind the tenant lacks
    is still not a topic), then the tenant's own among these schemas, by name."""
    own = [s.own_kind for s in schemas.values() if isinstance(s, CollectionSchema) and s.own_kind is not None]
    return [*BUILTIN.values(), *sorted(own, key=lambda k: k.name)]


def detect_collection(
    question: str, schemas: dict[str, Any], kinds: Iterable[CollectionSpec] | None = None
) -> tuple[str | None, list[tuple[int, int]]]:
    """The collection the question is about, and the spans of the words that said so. `kinds`: the
    kinds whose words count (default: `kinds_of(schemas)`)."""
    found: list[tuple[int, bool, str, str]] = []
    spans: list[tuple[int, int]] = []
    for kind in kinds_of(schemas) if kinds is None else kinds:
        # ASCII word boundaries: "的bug" has one, though CJK characters count as word characters.
        for m in re.finditer(kind.pattern(), question, re.I | re.ASCII):
            spans.append(m.span())
            found.append((m.start(), kind.builtin, kind.name, m.group(0)))
    # "PRs that fix bugs" is about PRs: the first collection word wins, of the collections there are
    # (at one place, a tenant's own kind before a built-in one that shares the word: its "tasks" are
    # what it called them); a bare 提交 (submitted) before another record noun is the verb ("提交了哪些 issue").
    candidates = [f for f in found if f[2] in schemas] or found
    candidates = [f for f in candidates if f[3] != "提交"] or candidates
    if not candidates:
        return None, spans
    name = min(candidates)[2]
    if (
        name in ("issues", "commits")
        and re.search(BUILTIN["pull_requests"].pattern(), question, re.I | re.ASCII)
        and not re.search(r"\bissues?\b|\btickets?\b|\bcommits?\b", question, re.I | re.ASCII)
    ):
        name = "pull_requests"  # "bug PRs", "提交了多少个PR": the other word describes the PRs
    if name not in schemas:
        return None, spans
    return name, spans


class CollectionStep(Draft):
    """Record keys named in the question, and the collection guessed when no word names one."""

    def _refs(self) -> list[str]:
        """Record keys the question names, when they can be this tenant's: the repository or the
        project key is a stored value (so "UTF-8" or "COVID-19" are not taken for issue keys)."""
        known = {
            str(v)
            for schema in self.ctx.schemas.values()
            for path in ("repo", "fields.project.key")
            if path in schema.fields
            for v in (schema.fields[path].enum or [])
        }
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
        own = self._guess_own_collection()
        if own:
            return own
        sequence = [w.lower() for w in re.findall(r"[\w\-/]+", self.q)]
        words = set(sequence) | {f"{a}_{b}" for a, b in itertools.pairwise(sequence)}  # "not planned": not_planned
        words |= {w.replace("-", "_") for w in sequence if "-" in w}  # "not-planned"
        words |= {w[:-1] for w in words if w.endswith("s")} | {w[:-3] + "y" for w in words if w.endswith("ies")}
        verbs = {
            "issues": r"\breport(?:ed|s)?\b|\bfiled?\b|\braised?\b|\bresolv\w*|\bsprints?\b|\bjira\b|\bassigned\b|\bpriority\b|\bp[0-4]\b|\bcritical\b|\bhi-?pri\b|\bblockers?\b|\bbacklog\b"
            r"|\bwon'?t[ -](?:do|fix)\b|\bwontfix\b"  # a close reason ("not planned") only issues record
            r"|\blabel(?:s|led|ed)?\b|标签"  # what a tracker's issues carry ("which label is the most common")
            r"|\bmilestones?\b|里程碑"  # what a milestone tracks: its issues ("what is still open in the 3.0 milestone")
            r"|提(?!交|到|及)|报告|反馈|认领",  # raised, reported, claimed ("2021年之前提的"; 提交: a PR's "submitted")
            "messages": r"\bsaid\b|\bposted\b|\bslack\b|\bwrote\b|\brepl(?:y|ies|ied)\b",
            "pull_requests": r"\bmerg\w*|\breview\w*|\bapprov\w*|\bchanges[- ]requested\b|\brequested changes\b|\bship(?:ped|s)?\b"
            r"|合并|合入|评审|审查",
        }
        people = [m.person for m in self.ctx.mentions if m.person is not None and not m.is_asker]

        def theirs(schema: CollectionSchema | None) -> bool:
            """Whether everyone named holds an account of the kind these records name ("what did Kim
            write": Kim has a Slack id only, so not PRs)."""
            author = person_field_for(schema, "author")
            return not (people and author and not all(p.handle(author[1]) for p in people))

        best, best_score = None, 0
        for kind in kinds_of(self.ctx.schemas):
            name, schema = kind.name, self.ctx.schemas.get(kind.name)
            if schema is None or not kind.searchable or not theirs(schema):
                continue
            values = {
                str(v).lower()
                for f in schema.fields.values()
                for v in (f.enum or [])
                if isinstance(v, str) and len(v) >= 3 and v.lower() not in STOP
            }
            score = (
                len(words & values)
                + (2 if name in verbs and re.search(verbs[name], self.q, re.I) else 0)
                + (2 if name == "issues" and re.search(r"\bsprints?\b", self.q, re.I) else 0)
                + (3 if any(re.search(word, self.q, re.I) for _, word in person_field_words(schema)) else 0)
                # "who mentions Rashid the most": the records that store who is mentioned
                + (3 if person_field_for(schema, "mentioned") and re.search(_MENTION_VERB, self.q, re.I) else 0)
            )  # "who deployed"
            if score > best_score:
                best, best_score = name, score
        if best:
            return best
        for name in ("pull_requests", "issues", "messages", "documents"):
            if name in self.ctx.schemas and theirs(self.ctx.schemas[name]):
                return name
        return next(iter(self.ctx.schemas))

    def _guess_own_collection(self) -> str | None:
        """A tenant's own kinds, none named: the one whose field names (embedded arrays' included) the
        question says the most words of ("titles of products with a price ...": the shops embedding
        products with a title and a price); None on a tie."""
        words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", self.q)} - STOP
        scores: dict[str, int] = {}
        for name, schema in self.ctx.schemas.items():
            if not isinstance(schema, CollectionSchema) or schema.own_kind is None:
                continue
            field_names = {w for path in schema.fields for part in path.split(".") for w in field_words(part)}
            scores[name] = sum(1 for w in words if any(names(w, f) for f in field_names))
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
            return None
        return ranked[0][0]

    # -- filters -----------------------------------------------------------------------------------
