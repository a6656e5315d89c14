"""Where a question names a stored value by its kind: "labelled security", "the needs-triage label",
"milestone 2.0", "#random", "the haskell workspace", "priority P1", "标签 X". The word after (or before) the kind's
name is the value asked for, so a value no record holds is an unknown value to decline with the
closest ones, not a word to drop or search the text for (`engine.unknown_value`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A value as people write one: a word with dots, hyphens, colons or slashes inside ("needs-triage", "2.0").
_VALUE = r"([A-Za-z0-9][\w.:/-]*[A-Za-z0-9]|[A-Za-z0-9])"

# Words in a value's place that name no value: "a label", "which channel", "the busiest workspace", "tagged
# him" (the one list of pronouns that name no value, a follow-up's "her" included; a value is written in Latin
# letters, so 他/她 never stand in its place).
_NOT_VALUES = frozenset(
    """
a an the any some no not none this that these those which what whose each every all both either neither
one same other others another own main whole entire different new old more most less least many few
several two three four five first second third last next previous current given
private public slack workspace workspaces channel channels label labels milestone milestones tag tags
it its he she him her his hers they them their our your my
as with by for from in into of on to at about and or but nor
is are was were be been has have had
somebody someone anyone anybody everyone everybody nobody people person user users members
per active busy quiet big small large top popular
issue issues pr prs pull pulls request requests ticket tickets message messages thread threads record records ones
""".split()
)

_CUES: dict[str, tuple[re.Pattern, ...]] = {
    "label": (
        re.compile(rf"\b(?:label(?:l)?ed|tagged)\s+(?:as\s+|with\s+(?:the\s+|a\s+)?)?['\"“]?{_VALUE}", re.I),
        re.compile(
            rf"\b(?:with|has|have|having|had|carry|carries|carrying|bear|bears|under|for|to)\s+(?:the|a)\s+['\"“]?{_VALUE}['\"”]?\s+(?:label|tag)\b",
            re.I,
        ),
        re.compile(rf"(?<![\w-]){_VALUE}-label(?:l)?ed\b", re.I),
        re.compile(rf"(?:标签|标记为|标为|打了|打上了?|貼了|標籤)\s*['\"“]?{_VALUE}", re.I),
        re.compile(rf"{_VALUE}['\"”]?\s*(?:标签|標籤)", re.I),
        # A word shaped as trackers name labels, right before the records ("needs-info issues", "kind/bug
        # PRs", "area:docs tickets", "P0-critical bugs"): a triage prefix, a priority or severity code and a
        # hyphen, or a scope and a slash or colon, never a topic's word.
        re.compile(
            r"(?<![\w/:-])((?:needs|status|triage|[Pp][0-4]|[Ss]ev[0-4])-[A-Za-z][\w.-]*|[A-Za-z]+[/:][A-Za-z][\w.-]*)"
            r"\s+(?:issues?|prs?|pull requests?|tickets?|bugs?)\b",
            re.I,
        ),
    ),
    "milestone": (
        re.compile(rf"\bmilestones?\s+['\"“]?(?:v(?=\d))?{_VALUE}", re.I),
        re.compile(rf"(?<![\w-]){_VALUE}['\"”]?\s+milestone\b", re.I),
        re.compile(rf"里程碑\s*['\"“]?{_VALUE}|{_VALUE}['\"”]?\s*里程碑", re.I),
    ),
    "channel": (
        re.compile(r"(?<![\w&])#([A-Za-z][\w-]*)"),
        re.compile(rf"(?<![\w-]){_VALUE}\s+channel\b", re.I),
        re.compile(rf"{_VALUE}\s*(?:频道|頻道)", re.I),
    ),
    "priority": (
        re.compile(rf"\bpriority\s+(?:of\s+)?['\"“]?{_VALUE}", re.I),
        re.compile(rf"(?<![\w-]){_VALUE}['\"”]?[\s-]+priority\b", re.I),
        re.compile(r"(?<![\w-])([Pp][0-4])(?![\w-])"),  # P0 … P4: a priority wherever it is written
        re.compile(rf"(?:优先级|優先級)\s*(?:为|是|為)?\s*{_VALUE}|{_VALUE}\s*(?:优先级|優先級)", re.I),
    ),
    "workspace": (
        re.compile(rf"(?<![\w-]){_VALUE}(?:'s)?\s+(?:workspace|slack)\b", re.I),
        re.compile(rf"{_VALUE}\s*(?:工作区|工作區)", re.I),
    ),
}


@dataclass(frozen=True)
class ValueCue:
    role: str  # the value role the question's words give it: label, milestone, channel, workspace
    text: str  # the value as written
    start: int
    end: int


def value_cues(question: str) -> list[ValueCue]:
    """Every value the question names by its kind, first to last, one cue per span."""
    found: list[ValueCue] = []
    for role, patterns in _CUES.items():
        for pattern in patterns:
            for m in pattern.finditer(question):
                # the value's group: a pattern's alternatives each have one ("里程碑 Q3", "Q3 里程碑")
                group = next(g for g in range(1, (m.lastindex or 0) + 1) if m.group(g) is not None)
                text, start, end = m.group(group), m.start(group), m.end(group)
                if text.lower() in _NOT_VALUES or re.fullmatch(r"[a-z]+(?:est|iest)", text.lower()):
                    continue  # "the busiest channel", "which label": no value named
                if any(c.start < end and start < c.end for c in found):
                    continue
                found.append(ValueCue(role, text, start, end))
    return sorted(found, key=lambda c: c.start)
