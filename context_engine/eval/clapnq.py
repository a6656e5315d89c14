"""CLAP NQ (Apache-2.0) dev: 300 answerable and 300 unanswerable natural questions, each with the
Wikipedia passage it was annotated against; an unanswerable question's passage is on its topic but
does not contain the answer. It checks that the engine declines what its sources cannot answer.

`load_clapnq` reads the questions and the passages (one corpus); `half_of` splits the questions in
two by a hash of their id: the `tune` half is where the answerability judge was tuned, the `report`
half is only ever measured. The whole graph is run over them by `context-engine eval rag --dataset
clapnq [--half tune|report]` (`eval/rag.py`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from langchain_core.documents import Document

__all__ = ["ClapQuestion", "load_clapnq", "half_of", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "clapnq"


@dataclass
class ClapQuestion:
    id: str
    question: str
    answerable: bool
    passage_id: str
    answers: list[str]             # reference answers (empty when unanswerable)
    reference_contexts: list[str]  # the annotators' selected sentences


def half_of(question_id: str) -> str:
    """"tune" or "report", fixed by the SHA-1 of the id (so never by the data's order)."""
    return "tune" if int(hashlib.sha1(question_id.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "report"


def load_clapnq(root: Path = DATA_DIR) -> tuple[list[ClapQuestion], dict[str, Document]]:
    """(questions, passages by id): answerable questions first; identical passages are one entry."""
    questions: list[ClapQuestion] = []
    passages: dict[str, Document] = {}
    by_text: dict[str, str] = {}
    for name, answerable in (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False)):
        with open(root / name, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                passage = row["passages"][0]
                pid = by_text.setdefault(passage["text"], f"p{len(by_text)}")
                passages.setdefault(pid, Document(page_content=passage["text"].strip(), id=pid,
                                                  metadata={"chunk_id": pid, "doc_ref": pid, "collection": "clapnq",
                                                            "title": passage["title"], "url": None, "author": None,
                                                            "date": None, "position": 0}))
                outputs = row.get("output") or []
                answers = [o["answer"] for o in outputs if o.get("answer")]
                selected = list(dict.fromkeys(s for o in outputs for s in o.get("selected_sentences") or []))
                questions.append(ClapQuestion(str(row["id"]), row["input"], answerable, pid, answers, selected))
    return questions, passages
