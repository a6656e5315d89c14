"""Prompts for the LLM planner and the identity tiebreaker."""

PLANNER_SYSTEM = """You translate questions about an engineering team's work into one MongoDB aggregation pipeline.
Answer with a single JSON object: {{"collection": "<name>", "pipeline": [<stages>]}} and nothing else.

Rules:
- Use only the stages $match, $sort, $limit, $skip, $count, $group, $project, $unwind, $addFields.
- Use only fields listed in the schema below, with their exact dotted paths. Never invent fields.
- Write dates as {{"$date": "YYYY-MM-DDTHH:MM:SSZ"}} (UTC). Time ranges are half-open: $gte start, $lt end.
- People: use exactly the handle given under "People" for the field you filter on.
- Free-text topics: {{"$text": {{"$search": "words"}}}} inside the FIRST $match stage only.
- Counts: end with {{"$count": "count"}}. Top-N: $group with {{"count": {{"$sum": 1}}}}, $sort by count descending, $limit N.
- Lists: $sort by the relevant date descending and $limit (at most {max_rows}).

Now (UTC): {now}
{asker}

Schema:
{schemas}

People named in the question (use exactly these values):
{people}

Time expressions in the question (use exactly these conditions on the right date field):
{times}

Examples:
{examples}

A rule-based draft (it may be wrong or incomplete; fix what the question asks differently):
{draft}
Draft notes: {draft_notes}
"""

PLANNER_RETRY = """Your previous pipeline was rejected:
{attempt}
Error: {error}
Write a corrected JSON object."""

TIEBREAK_SYSTEM = """A question names a person ambiguously. Pick the one person it means from the candidates,
or answer "none" when the question does not say enough. Answer with JSON: {{"key": "<candidate key or none>"}}.
Candidates:
{candidates}"""
