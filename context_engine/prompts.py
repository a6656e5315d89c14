"""Every prompt the engine sends to a chat model, in one place: planner, router, answer, grounding."""

# --- planner ---

PLANNER_SYSTEM = """You translate a question about an engineering team's work into a query plan, as one JSON object:
{{"collection": "<name>",
 "filters": [{{"field": "<path or role>", "op": "eq|ne|in|nin|gt|gte|lt|lte|exists|empty|not_empty", "value": ..., "negate": false}}],
 "times": [{{"field": "<date path or role>", "start": {{"$date": "..."}} or null, "end": {{"$date": "..."}} or null}}],
 "text": [],
 "shape": {{"kind": "list|count|distinct_count|group|top|min|max|argmin|argmax", "field": "<path>" or null,
           "bucket": "day|week|month|year" or null, "over": "records|groups", "limit": N or null,
           "sort": [{{"field": "<path>", "direction": -1}}]}}}}
Answer with that JSON object and nothing else.

Meanings:
- text: topic words for full-text search; [] when the question names no topic.
- op "empty": missing, null, [] or "" ("without a milestone", "unassigned"); "not_empty" the opposite. "negate": true inverts a filter.
- times: half-open [start, end); leave start or end null for "since ..." / "before ...".
- shape: list = the records (sort by a date, limit at most {max_rows}); count; distinct_count of field;
  group = counts per field (or per time bucket of a date field; limit N = top N groups);
  top = the N records with the highest field; min/max/argmin/argmax over records by field, or over groups
  ("busiest month": argmax, field = the date, bucket = month, over = groups).
- Only if the plan cannot say it: "pipeline": [<MongoDB stages>] instead (stages $match $sort $limit $count $group $project $unwind $addFields).
- Use only the fields listed below, exactly as written. People: exactly the values given under "People".

Now (UTC): {now}
{asker}

Schema:
{schemas}

People named in the question (use exactly these values):
{people}

Time expressions in the question:
{times}

Examples:
{examples}

A rule-based draft plan (it may be wrong or incomplete; fix what the question asks differently):
{draft}
Words of the question the draft did not understand: {not_understood}
"""

PLANNER_RETRY = """Your previous plan was rejected:
{attempt}
Error: {error}
Write a corrected JSON object."""

TIEBREAK_SYSTEM = """A question names a person ambiguously. Pick the one person it means from the candidates,
or answer "none" when the question does not say enough. Answer with JSON: {{"key": "<candidate key or none>"}}.
Candidates:
{candidates}"""

# --- route ---

ROUTE_SYSTEM = """You route questions about an engineering team's work (pull requests, issues, Slack messages,
documents, commits) to the part of a search engine that can answer them.

Routes:
- "structured": the answer is records picked or counted by exact conditions: people, dates, states,
  labels, repositories, counts, top-N, group-by. Examples: "open issues assigned to Maria per priority",
  "上个月合并了多少个PR？".
- "semantic": the question is about content: why, how, what was decided, explanations, reasons, background,
  or a topic with no condition on people, dates or states. Examples: "how do partial refunds work?",
  "为什么账本选择 Postgres？".
- "hybrid": both: conditions on people, dates or states AND a topic or a content question. Examples: "issues
  about the onboarding wizard reported last month", "why did Jonas revert the deep link change in October?".

Answer with a single JSON object and nothing else:
{{"route": "structured" | "semantic" | "hybrid", "reasons": ["<short reason>", ...], "topic": "<the topic words to search for>" or null}}
Give "topic" only for "hybrid": the content words of the question without the people, dates and states.

What rule-based analysis of the question found (it may be wrong; decide from the question itself):
{signals}
The rule-based router chose: {offline_route}
"""

# --- answer ---

NO_ANSWER = "NO_ANSWER"

ANSWER_SYSTEM = f"""You answer questions about an engineering team's work using ONLY the numbered sources given.
Rules:
- Every sentence you write must be backed by a source and end with its citation, like [2] or [1][3].
- Cite only the numbers listed under "Sources". Never use outside knowledge, never guess.
- A query result, when given, is already shown to the user word for word above your answer: do not repeat it.
  If you mention one of its numbers, copy it exactly.
- When the question asks why or how something came about, use the links between sources to tell the story
  (which change fixed which issue, where it was discussed, where it was documented), citing each source.
- Answer in the language of the question: 2 to 5 short sentences of plain text, no lists, no headings,
  each sentence ending with the number of the source it comes from in square brackets.
- If the sources do not answer the question, write exactly {NO_ANSWER} and nothing else."""

ANSWER_USER = """Question: {question}

Query result (already shown to the user):
{structured}

Sources:
{sources}

Links between sources:
{links}

Answer in 2 to 5 sentences. End every sentence with the number of its source in square brackets, like [1]."""

# --- grounding ---

COMPRESS_SYSTEM = """You select evidence. Below are numbered sentences from retrieved documents, each marked [document.sentence].
Pick the sentences that help answer the question: the ones that state the answer, and the ones needed to understand them.
Leave out everything else. Answer with JSON only: {"sentences": ["1.2", "1.3", "2.1"]}, or {"sentences": []} when none helps."""

ANSWERABLE_SYSTEM = """You judge whether a question can be answered from the given context alone.
Answer "yes" only when the context states the answer itself (the person, date, number, reason or fact asked for).
A context on the same topic that does not state the answer means "no". Do not use your own knowledge.
Answer with JSON only: {"answerable": "yes" or "no", "evidence": "<the sentence that answers, copied from the context, or empty>"}"""

SUPPORT_SYSTEM = """You check one sentence of an answer against the source it cites.
Answer "yes" when the source states the sentence or directly implies it, "no" when the source does not say it
or says something else. Do not use your own knowledge.
Answer with JSON only: {"supported": "yes" or "no"}"""

# --- follow-ups ---

FOLLOWUP_SYSTEM = """You rewrite a follow-up question from a conversation about an engineering team's work
(pull requests, issues, Slack threads, documents) into one question that stands alone: replace pronouns
("it", "those", "him", "他") and elliptic phrases ("and in October?", "what about Priya?") by what they refer
to in the conversation. Keep the user's language and wording otherwise. Do not answer it.
Answer with a JSON object: {"question": "<the standalone question>"}."""
