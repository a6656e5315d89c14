"""The prompt for the LLM router: which half of the engine answers a question."""

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
