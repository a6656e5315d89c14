"""Every prompt the engine sends to a chat model, in one place: planner, router, answer, grounding."""

# --- planner ---

# The system prompt is the same for every question (only `max_rows` is set, once per server), so an
# OpenAI-compatible llama.cpp server reuses its evaluated prefix from one question to the next; everything
# the question brings (schema slice, people, times, draft) is in PLANNER_QUESTION, after it.
PLANNER_SYSTEM = """Turn a question about a team's records (its work, or any collection it keeps) into a query plan: one JSON object, nothing else.
{{"collection":C,"unwind":A,"filters":[{{"field":F,"op":OP,"value":V}}],"times":[{{"field":F,"start":D,"end":D}}],"text":[],
"shape":{{"kind":K,"field":F,"bucket":B,"over":"records|groups","limit":N,"sort":[{{"field":F,"direction":-1}}],"fields":[F]}}}}
F: a field listed under the question. D: {{"$date":"YYYY-MM-DDTHH:MM:SSZ"}} or null (open: "since 2021", "before May").
OP: eq ne in nin gt gte lt lte exists empty not_empty words exact_words. empty: missing/null/[]/"" ("without a milestone",
"unassigned"); words: a list of words, any of them in a text field ("CI in the title": title words ["ci"]);
exact_words: the same, each exactly as written ("port or ports": ["port", "ports"]);
"negate":true inverts a filter ("not labelled bug", "never merged").
text: topic words for full-text search, [] when no topic.
K: list (records sorted by a date, limit at most {max_rows}) | count | distinct_count (of field) |
group (counts per field, or per bucket day|week|month|year of a date field; limit N = top N) |
top (the N records with the highest field) | min | max | argmin | argmax (by field over records, or over
groups: "busiest month" = argmax, field the date, bucket month, over groups).
fields: what a list, top, argmin or argmax answer shows ("the name and age of ...": ["name","age"]); none: whole records.
A: an array of objects inside the records (a field listed with []) whose elements the question is about: each element
becomes a row, and filters and shape read its fields (A.x). Leave it out otherwise.
For what this cannot say, write {{"collection":C,"pipeline":[stages]}}: a MongoDB aggregation pipeline on the listed fields.
Leave out keys that say nothing. People and times: write exactly the values given.
The draft is a rule-based plan of the question: keep what it got right, fix what the question says differently."""

# Everything this question brings, after the fixed system prompt (see above).
PLANNER_QUESTION = """Now: {now}. {asker}
{schemas}
People: {people}
Times: {times}{facets}{examples}
Draft: {draft}
Draft did not understand: {not_understood}
Question: {question}"""

# A tenant's own collections (a team's tables): the model writes the MongoDB pipeline itself, since the
# plan IR cannot say most of what is asked of them (nested fields, joins, computed columns). Short on
# purpose: on 2 CPU cores every token of prompt costs the 1.5B model time, and solved examples teach it
# more than rules do. Fixed, so the server reuses its evaluated prefix.
PIPELINE_SYSTEM = """Answer with one MongoDB aggregation pipeline as JSON: {"collection":C,"pipeline":[stages]}.
Fields are listed per collection; A[{x,y}] is an array of objects: {"$unwind":"$A"} makes one row per element, read as A.x.
Join another collection with {"$lookup":{"from":C2,"localField":F,"foreignField":F2,"as":"Docs1"}},{"$unwind":"$Docs1"}, read as Docs1.x.
Return only what is asked: $project those fields with "_id":0; a count is {"$count":"count"}. Write the JSON only."""

PIPELINE_QUESTION = """{schemas}{people}{times}{examples}{draft}
Question: {question}"""

PLANNER_RETRY = """Your previous plan was rejected:
{attempt}
Error: {error}
Write a corrected JSON object."""

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
