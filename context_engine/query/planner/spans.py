"""Step 5: what is left of the question: topic words for full-text search, and the spans the plan
understood and did not."""

from __future__ import annotations

import re

from context_engine.query.fields import field_for
from context_engine.query.identity import COMMON_WORDS
from context_engine.query.planner.draft import Draft

# Words that carry no topic: never sent to full-text search.
STOP = COMMON_WORDS | frozenset("""
all any are ask asked been being both but could does doing find from get give got had has having
her him his how its just know let like list lot made make many more much need not now only other
our out over own same she should show some such tell than them then there they thing things those
through too very want was way we were what when where which while who why will would you your yet
did do does please recently recent new newest latest oldest first most top week month year
recent currently still yet also ones one two three four five six seven eight nine ten quarter
days weeks months years q1 q2 q3 q4 everyone everybody anyone someone us
""".split())
CJK_STOP = re.compile(r"[的了吗呢吧啊哪些哪个什么谁有是在和与及并把被给对从到关于里中上下个条次位请帮我们你他她它列出显示找查看所有一下多少几]+")


class SpanStep(Draft):
    """Full-text words, understood and not understood spans."""

    def _leftover_text(self, structured: bool) -> str:
        """Topic words for `$text`: what follows a topic cue ("about", "mentioning", 关于); in a
        question with no structure at all, every content word (a keyword search, the best the
        structured half can do for "why did we ...")."""
        cue = re.search(r"\b(?:about|regarding|mentioning|that mention|which mention|related to|concerning|"
                        r"involving|on the topic of|titled|containing)\s+|关于|有关|提到|涉及", self.q, re.I)
        if not cue and structured:
            return ""
        chars = list(self.q)
        if cue:
            self.use((cue.start(), cue.start() + len(cue.group(0).rstrip())), "topic")
            for i in range(cue.start()):
                chars[i] = " "
        for a, b in self.used + self.collection_spans:
            for i in range(a, min(b, len(chars))):
                chars[i] = " "
        rest = "".join(chars)
        words = []
        for token in re.findall(r"[A-Za-z][A-Za-z0-9_\-]+|[\u4e00-\u9fff]+|\d{3,}", rest):
            if CJK_STOP.fullmatch(token):
                continue
            if re.match(r"[\u4e00-\u9fff]", token):
                token = CJK_STOP.sub(" ", token).strip()
                words.extend(t for t in token.split() if len(t) >= 2)
                continue
            if token.lower() in STOP or len(token) < 3:
                continue
            words.append(token.lower())
        return " ".join(dict.fromkeys(words))

    def _spans(self, text: str, *, structured: bool, grouped: str | None) -> tuple[list[dict], list[dict]]:
        """Every content word of the question is consumed by the plan (a collection, person, time, value,
        shape), sent to full-text search (topic), or not understood; function words are neither."""
        understood: dict[tuple[int, int], str] = {}
        for span, how in [*zip(self.used, self.how), *((s, "collection") for s in self.collection_spans)]:
            understood.setdefault(span, how)
        topic = set(text.split())
        missed: list[tuple[int, int]] = []
        for m in re.finditer(r"[A-Za-z][A-Za-z0-9_'’\-]*|\d+|[\u4e00-\u9fff]+", self.q):
            for start, end in _content_pieces(m):
                if self._is_used((start, end)) or any(a <= start and end <= b for a, b in self.collection_spans):
                    continue
                word = self.q[start:end].lower()
                if word in topic:
                    understood[(start, end)] = "topic"
                elif structured and IMPLIED.fullmatch(word):
                    understood[(start, end)] = "implied"
                elif self._field_used(word, grouped):
                    understood[(start, end)] = "field"
                else:
                    missed.append((start, end))
        return ([{"text": self.q[a:b], "start": a, "end": b, "how": how} for (a, b), how in sorted(understood.items())],
                [{"text": self.q[a:b], "start": a, "end": b, "how": "unknown"} for a, b in _joined(self.q, missed)])

    def _field_used(self, word: str, grouped: str | None) -> bool:
        paths = {f.field for f in self.filters} | {grouped}
        return any(pattern.fullmatch(word) and field_for(self.schema, role) in paths for pattern, role in FIELD_WORDS)


# Function words: neither understood nor not. Deliberately small: "without", "never", "milestone"
# carry meaning, and a plan that ignores them must say so.
FILLER = frozenset("""
a an the of in on at to for from by with and or is are was were be been being do does did done have has had
i me my mine we our us you your it its this that these those there here what which when where how
show list give find tell get see let know please can could would will should shall may might must just also
than then as into over any all some each every one ones thing things kind sort lot lots so such very
want need like ok okay hi hello hey thanks thank much many both
still yet currently right now got get gets getting anything everything he she him her his they them their
""".split())

# Words a structured plan has read without consuming them: the verbs whose dates or people the
# conditions use ("opened", "merged by"), the nouns naming the field of a stored value ("the bug
# label", "milestone v2.3"), who is asked for, and words of the shape ("busiest", "break down").
IMPLIED = re.compile(
    r"review\w*|approv\w*|assign\w*|merg\w*|clos\w*|resolv\w*|open\w*|creat\w*|fil(?:e|ed|es)|wr[io]te|written|"
    r"author\w*|report\w*|post\w*|repl\w*|start\w*|commit\w*|submit\w*|land\w*|went|ship\w*|updat\w*|"
    r"waiting|pending|awaiting|asked|requested|"
    r"people|persons?|users?|engineers?|developers?|devs|folks|contributors?|committers?|posters?|members?|whom?|"
    r"active|busiest|biggest|largest|most|top|counts?|volume|break|down|breakdown|split|across|vs|total|number|"
    r"two|three|four|five|six|seven|eight|nine|ten|"
    r"谁|哪些人|哪位|发过?|发了|提交|创建|合并|评审|审查")
# Nouns naming a field: understood only when the plan conditions or groups on that field ("the bug
# label"); "without a milestone" in a plan with no milestone condition is not.
FIELD_WORDS = [(re.compile(pattern), role) for pattern, role in (
    (r"labels?|tags?|标签", "label"), (r"milestones?", "milestone"), (r"projects?|项目", "project"),
    (r"spaces?|空间", "space"), (r"repos?|repositor(?:y|ies)|仓库", "repo"), (r"channels?|频道", "channel"),
    (r"priorit(?:y|ies)|优先级", "priority"), (r"status(?:es)?|状态", "status"), (r"sprints?", "sprint"),
    (r"components?", "component"), (r"teams?", "team"), (r"types?", "type"))]


def _content_pieces(m: re.Match) -> list[tuple[int, int]]:
    """The content-bearing pieces of one token: none for a function word, a number or a single letter;
    a CJK run split at its function characters (pieces of two characters or more)."""
    token = m.group(0)
    if re.match(r"[\u4e00-\u9fff]", token):
        return [(m.start() + p.start(), m.start() + p.end())
                for p in re.finditer(r"[^的了吗呢吧啊哪些哪个什么谁有是在和与及并把被给对从到关于里中上下个条次位请帮我们你他她它列出显示找查看所有一下多少几]{2,}", token)]
    word = token.lower().rstrip("'’").removesuffix("'s").removesuffix("’s")
    if word.isdigit() or len(word) < 2 or word in FILLER:
        return []
    return [(m.start(), m.start() + len(word))]


def _joined(question: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans separated only by spaces and function words as one: "Nobody Atall", "without a milestone"."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and all(w.lower() in FILLER for w in question[out[-1][1]:start].split()):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
