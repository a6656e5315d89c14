"""Offline answers composed from structured results: counts, ranked lists, titled links, citations.

Numbers are stated exactly as the query returned them; every listed record is cited by its
source key, title and URL.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from context_engine.kinds import BUILTIN, CollectionSpec
from context_engine.query.engine import MaxAttempts, NoResults, ResolutionFailed, RunResult, Success
from context_engine.query.fields import record_ref, role_paths
from context_engine.query.planner.shape import DEFAULT_LIMIT
from context_engine.query.schema import values_at

LISTED = 10
_GROUPS_LISTED = 25  # a ranking or a count per group lists more: its lines are short
# Where the built-in kinds keep who a listed record is by (Jira's display name, a Slack profile's name).
_WHO = ("user.login", "fields.assignee.displayName", "user_profile.real_name", "author.name")


def _get(doc: dict[str, Any], path: str) -> Any:
    """The value at a dotted path (the answer shows scalar fields: titles, URLs, dates, logins)."""
    return next(iter(values_at(doc, path)), None)


def _kind(collection: str | None, kind: CollectionSpec | None) -> CollectionSpec | None:
    return kind or BUILTIN.get(collection or "")


def _first(doc: dict[str, Any], kind: CollectionSpec | None, role: str) -> Any:
    for path in role_paths(kind, role) if kind is not None else ():
        value = _get(doc, path)
        if value not in (None, ""):
            return value
    return None


def citation(doc: dict[str, Any], collection: str, kind: CollectionSpec | None = None) -> dict[str, Any]:
    """A record as an answer cites it. `kind`: the collection's spec (default: the built-in one)."""
    kind = _kind(collection, kind)
    ref = record_ref(doc, kind)
    title = " ".join(str(_first(doc, kind, "title") or ref).split())
    return {"id": ref, "collection": collection, "title": title[:120], "url": _first(doc, kind, "url")}


def _day(value: Any) -> str:
    """A date as its day: rows reach the answer as JSON, dates as ISO strings."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d")
    text = str(value or "")
    return text[:10] if re.match(r"\d{4}-\d\d-\d\dT", text) else text


# A week bucket's key: an ISO week ("2019-W14", `compile.BUCKET_FORMATS`), Monday to Sunday.
_ISO_WEEK = re.compile(r"(\d{4})-W(\d{2})")
WEEKS_SAID = "weeks are ISO weeks, Monday to Sunday, each named by its Monday; the first and last may be partial"


def _label(row: dict[str, Any]) -> str:
    key = row.get("_id")
    if isinstance(key, dict):
        key = ", ".join(f"{k}={v}" for k, v in key.items())
    week = _ISO_WEEK.fullmatch(key) if isinstance(key, str) else None
    if week:  # "2019-W14" alone does not say which days: its Monday does
        key = f"{key} (from {date.fromisocalendar(int(week[1]), int(week[2]), 1).isoformat()})"
    name = row.get("name")
    return f"{name} ({key})" if name and name != key else str(key)


def ignored(result: RunResult) -> str:
    """One line naming the words of the question the plan could not read: every surface shows it, so
    an answer to a narrower question than the one asked never passes for the answer to it; and, when
    misspelt words were read as the words meant, the question as it was read."""
    plan = getattr(result, "plan", None)
    if plan is None:
        return ""
    read_as = f"\nRead as: '{plan.read_as}'." if plan.read_as else ""
    ignored_spans = [s for s in plan.not_understood if s.get("how") not in ("model", "negation")]
    modelled = [s for s in plan.not_understood if s.get("how") == "model"]
    turned = [s for s in plan.not_understood if s.get("how") == "negation"]
    lines = read_as
    if turned:
        words = ", ".join(f"'{s['text']}'" for s in turned)
        lines += (
            f"\nI may have read {words} the wrong way round: the query shown asks for what the words say is not there."
        )
    if modelled:
        words = ", ".join(f"'{s['text']}'" for s in modelled)
        lines += f"\nThe rules could not read {words}; the chat model's reading of it is in the query shown."
    if ignored_spans:
        words = ", ".join(f"'{s['text']}'" for s in ignored_spans)
        lines += f"\nI did not understand: {words} — the answer ignores {'it' if len(ignored_spans) == 1 else 'them'}."
    return lines


def compose(
    result: RunResult, collection: str | None, kind: CollectionSpec | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The answer text and its citations. `kind`: the collection's spec (`schema.kind`; default: the
    built-in kind of that name)."""
    text, citations = _compose(result, collection, _kind(collection, kind))
    return first_step(result) + text + ignored(result), citations


def first_step(result: RunResult) -> str:
    """What a nested plan's inner step found, said before the answer it fed: the person or period, its
    count, and any result level with it at the top (the answer is for the first of them, and says so)."""
    plan = getattr(result, "plan", None)
    nested = plan.ir.nested if plan is not None and plan.ir is not None else None
    if nested is None or not nested.bound:
        return ""
    if nested.value is None:
        return "The first step found nothing, so there was nothing to ask the rest of the question about.\n"
    what = "person" if nested.slot == "person" else (nested.inner.shape.bucket or "period")
    top = f"{nested.name} ({nested.value})" if nested.name and nested.name != nested.value else str(nested.value)
    line = f"First step: the {what} at the top is {top}" + (
        f", with {nested.count}" if nested.count is not None else ""
    )
    if nested.tie:
        level = ", ".join(str(v) for v in nested.tie)
        line += f" — tied with {level}; the answer below is for {top} only"
    return line + ".\n"


def _two_groups(rows: list[dict[str, Any]], plan: Any, one: str, noun: str) -> str | None:
    """A difference or a percent change of two groups' counts, with both counts and which was taken from which."""
    shape = plan.ir.shape if plan is not None and plan.ir is not None else None
    if shape is None or shape.kind not in ("difference", "change") or len(rows) != 1:
        return None
    counts = rows[0].get("counts") or {}
    a, b = counts.get("first", 0), counts.get("second", 0)
    first, second = (f"{side} ({counted(n, one, noun)})" for side, n in zip(shape.sides, (a, b)))
    if shape.kind == "difference":
        return f"The difference: {rows[0].get('difference')} — {first} minus {second}."
    change = rows[0].get("percent_change")
    if change is None:
        return f"No percent change can be given: {first} has none to change from ({second})."
    return f"The change from {first} to {second}: {change:+.1f}%."


def _said(metric: str | None, value: Any) -> Any:
    """A group's measure as said: a share per group as a percentage ("89.3%"), a percent with its sign."""
    if metric == "share" and isinstance(value, (int, float)):
        return f"{value:.1%}"
    if metric == "percent" and isinstance(value, (int, float)):
        return f"{value:.1f}%"
    return value


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def counted(n: int, noun: str, plural: str) -> str:
    """`n` with the noun its number takes: "1 pull request", "0 pull requests", "2 pull requests"."""
    return f"{n} {noun if n == 1 else plural}"


def _distinct_of(plan: Any, kind: CollectionSpec | None) -> tuple[str, str] | None:
    """What a distinct count counts, as its answer names it: different people when the field holds
    people, else different values of the field; None for any other shape."""
    shape = plan.ir.shape if plan is not None and plan.ir is not None else None
    if shape is None or shape.kind != "distinct_count" or not shape.field:
        return None
    people = {path for fields in (kind.people.values() if kind else ()) for path in (p.path for p in fields)}
    if shape.field in people:
        return "different person", "different people"
    role = next((r for r, paths in (kind.roles().items() if kind else ()) if shape.field in paths), None)
    if role:  # "20 different labels"
        word = role.replace("_", " ")
        return f"different {word}", f"different {word}s"
    label = (kind.labels.get(shape.field) if kind else None) or shape.field
    return f"different {label}", f"different values of {label}"


def _compose(
    result: RunResult, collection: str | None, kind: CollectionSpec | None
) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(result, ResolutionFailed):
        return result.message, []
    if isinstance(result, MaxAttempts):
        last = result.attempts[-1].error if result.attempts else "no plan"
        return (
            f"I could not build a valid query after {counted(len(result.attempts), 'attempt', 'attempts')}. "
            f"Last error: {last}"
        ), []
    one, noun = (kind.noun, kind.plural) if kind is not None else ("record", "records")
    if isinstance(result, NoResults):
        return f"No {noun} matched. Tried: {result.tried}", []
    assert isinstance(result, Success)
    rows = result.rows
    if len(rows) == 1 and set(rows[0]) == {"count"}:
        n = rows[0]["count"]
        distinct = _distinct_of(result.plan, kind)
        if distinct:  # "how many people posted": people, not the records they wrote
            return f"{counted(n, *distinct)} among the {noun} matched.", []
        return f"{counted(n, one, noun)} {'matches' if n == 1 else 'match'}.", []
    if len(rows) == 1 and set(rows[0]) == {"percent"} and isinstance(rows[0]["percent"], (int, float)):
        return f"The share of the {noun} matched that meet the condition: {rows[0]['percent']:.1f}%.", []
    two = _two_groups(rows, result.plan, one, noun)
    if two:
        return two, []
    periods = next(
        (k for k in ("days", "weeks", "months", "years") if len(rows) == 1 and set(rows[0]) == {"count", k}), ""
    )
    if periods:  # an empty_count: the periods of the time asked with no record, out of all of them
        n, of = rows[0]["count"], rows[0][periods]
        weeks = ", ISO weeks" if periods == "weeks" else ""
        said = f"the {periods} of the range, minus those with at least one; UTC{weeks}"
        return f"{n} of the {of} {periods} of the time asked had no {one} ({said}).", []
    per = next(
        (k for k in ("days", "weeks", "months", "years") if len(rows) == 1 and set(rows[0]) == {"average", k}), ""
    )
    if per and isinstance(rows[0]["average"], (int, float)):  # a mean per period over every period of the time
        weeks = ", ISO weeks" if per == "weeks" else ""
        return (
            f"{round(rows[0]['average'], 2)} {noun} per {per[:-1]} on average, over the {rows[0][per]} {per} "
            f"of the time asked ({per} with none counted as 0; UTC{weeks})."
        ), []
    if len(rows) == 1 and set(rows[0]) == {"share"} and isinstance(rows[0]["share"], (int, float)):
        share = rows[0]["share"]
        return f"The share of the {noun} matched that meet the condition: {share:.4f} ({share:.1%}).", []
    if len(rows) == 1 and len(rows[0]) == 1 and set(rows[0]) <= {"total", "average", "min", "max"}:
        ((kind, value),) = rows[0].items()  # a sum, a mean or an extreme of a measure: one number
        said = round(value, 2) if isinstance(value, float) else value  # a mean's 448.96666666666664
        return f"The {kind} over the {noun} matched: {said}.", []
    if rows and set().union(*rows) == {"_id"}:  # the distinct values of a field, in value order
        values = ", ".join(_label(r) for r in rows[:LISTED])
        more = _more(rows, LISTED, " ")
        return f"{counted(len(rows), 'distinct value', 'distinct values')} over the {noun} matched: {values}{more}.", []
    if rows and "_id" in rows[0] and "ref" not in rows[0]:
        metric = next((k for k in rows[0] if k not in ("_id", "name")), None)
        lines = [f"{i}. {_label(r)}: {_said(metric, r.get(metric))}" for i, r in enumerate(rows[:_GROUPS_LISTED], 1)]
        more = _more(rows, _GROUPS_LISTED, "\n")
        weeks = any(isinstance(r.get("_id"), str) and _ISO_WEEK.fullmatch(r["_id"]) for r in rows)
        said = f" ({WEEKS_SAID})" if weeks else ""
        return f"{counted(len(rows), 'group', 'groups')} of {noun} ({metric}){said}:\n" + "\n".join(lines) + more, []
    citations = [citation(r, collection or "", kind) for r in rows]
    author = [field.path for field in kind.people.get("author", ())] if kind is not None else []
    lines = []
    for i, (row, cite) in enumerate(zip(rows[:LISTED], citations), 1):
        when = _first(row, kind, "merged") or _first(row, kind, "created")
        who = next((v for path in (*_WHO, *author) if (v := _get(row, path))), "")
        state = row.get("state") or _get(row, "fields.status.name") or _first(row, kind, "status") or ""
        # a record cut to the fields asked for ("how many comments did it get?"): those fields said
        shown = [
            f"{k}: {v}"
            for k, v in row.items()
            if len(row) <= 4 and k not in ("_id", "ref") and _scalar(v) and not (when and v == when)
        ]
        meta = ", ".join(x for x in (str(who), str(state), _day(when), *shown) if x)
        said = cite["id"] if cite["title"] == cite["id"] else f"{cite['id']} {cite['title']}"  # a record with no title
        lines.append(f"[{i}] {said} ({meta}) {cite['url'] or ''}".rstrip())
    if result.total is not None and result.total > len(rows):  # the rows stop at the cap: the exact total said
        head = f"Found {counted(result.total, one, noun)}; the records hold the first {len(rows)}"
    elif _at_the_list_cap(result):
        # no total (its count ran out of time): 200 listed of perhaps thousands is no count; said so, never "Found 200"
        head = (
            f"Found {counted(len(rows), one, noun)}, the most one answer lists: more may match "
            f"(ask how many for their number)"
        )
    else:
        head = f"Found {counted(len(rows), one, noun)}"
    return head + ":\n" + "\n".join(lines) + _more(rows, LISTED, "\n", " in the records"), citations


def _more(rows: list[dict[str, Any]], shown: int, before: str, where: str = "") -> str:
    """What a list cut at `shown` lines leaves out: "… and 12 more" (`where` they are), after `before`."""
    return f"{before}… and {len(rows) - shown} more{where}" if len(rows) > shown else ""


def _at_the_list_cap(result: Success) -> bool:
    """A list the planner cut at its default size (no size was asked) that came back full."""
    plan = result.plan
    shape = plan.ir.shape if plan is not None and plan.ir is not None else None
    return shape is not None and shape.kind == "list" and shape.limit == DEFAULT_LIMIT == len(result.rows)
