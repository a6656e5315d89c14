"""Prompts for compression, the answerability judge and the grounding check (JSON mode)."""

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
