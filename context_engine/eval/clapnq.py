"""CLAP NQ (Apache-2.0) dev: 300 answerable and 300 unanswerable natural questions, each with the
Wikipedia passage it was annotated against; an unanswerable question's passage is on its topic but
does not contain the answer. It checks that the engine declines what its sources cannot answer.

`load_clapnq` reads the questions and the passages (one corpus); `half_of` splits the questions in
two by a hash of their id: the `tune` half is where the answerability judge was tuned, the `report`
half is only ever measured. The whole graph is run over them by `context-engine eval rag --dataset
clapnq --clapnq DIR [--half tune|report]` (`eval/rag.py`).

The data is not part of the package: its folder is always given (`--clapnq DIR`, or
$CONTEXT_ENGINE_CLAPNQ), and `check_clapnq_dir` says what is missing from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from langchain_core.documents import Document

__all__ = ["CLAPNQ_ENV", "CLAPNQ_FILES", "ClapQuestion", "check_clapnq_dir", "half_of", "load_clapnq"]

CLAPNQ_ENV = "CONTEXT_ENGINE_CLAPNQ"  # the data folder when --clapnq is not given
# The two files of the dev set, and whether their questions are answerable.
CLAPNQ_FILES = (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False))


@dataclass
class ClapQuestion:
    id: str
    question: str
    answerable: bool
    passage_id: str
    answers: list[str]  # reference answers (empty when unanswerable)
    reference_contexts: list[str]  # the annotators' selected sentences


def half_of(question_id: str) -> str:
    """ "tune" or "report", fixed by the SHA-1 of the id (so never by the data's order)."""
    return "tune" if int(hashlib.sha1(question_id.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "report"


def check_clapnq_dir(root: Path) -> None:
    """Raise ValueError (one line) unless `root` is a folder holding both files of the dev set."""
    if not root.is_dir():
        raise ValueError(
            f"{root} is not a folder (expected the CLAP NQ dev set: {', '.join(name for name, _ in CLAPNQ_FILES)})"
        )
    missing = [name for name, _ in CLAPNQ_FILES if not (root / name).is_file()]
    if missing:
        raise ValueError(f"{root} has no {' and no '.join(missing)} (is it the CLAP NQ dev set folder?)")


def load_clapnq(root: Path) -> tuple[list[ClapQuestion], dict[str, Document]]:
    """(questions, passages by id): answerable questions first; identical passages are one entry.
    Raises ValueError naming the file and line of a malformed record."""
    root = Path(root)
    check_clapnq_dir(root)
    questions: list[ClapQuestion] = []
    passages: dict[str, Document] = {}
    by_text: dict[str, str] = {}
    for name, answerable in CLAPNQ_FILES:
        with open(root / name, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    passage = row["passages"][0]
                    qid, question, text, title = str(row["id"]), str(row["input"]), passage["text"], passage["title"]
                    outputs = row.get("output") or []
                    answers = [o["answer"] for o in outputs if o.get("answer")]
                    selected = list(dict.fromkeys(s for o in outputs for s in o.get("selected_sentences") or []))
                except (json.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
                    raise ValueError(
                        f"{root / name}:{number}: not a CLAP NQ record "
                        f"(id, input, passages[{{title, text}}], output?): {exc!r}"
                    ) from None
                pid = by_text.setdefault(text, f"p{len(by_text)}")
                passages.setdefault(
                    pid,
                    Document(
                        page_content=text.strip(),
                        id=pid,
                        metadata={
                            "chunk_id": pid,
                            "doc_ref": pid,
                            "collection": "clapnq",
                            "title": title,
                            "url": None,
                            "author": None,
                            "date": None,
                            "position": 0,
                        },
                    ),
                )
                questions.append(ClapQuestion(qid, question, answerable, pid, answers, selected))
    return questions, passages
