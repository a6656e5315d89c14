"""Prompts for grounded answer generation (answering.generate.generate_answer)."""

NO_ANSWER = "NO_ANSWER"
"""What the model writes, alone, when the numbered sources do not answer the question."""

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
