"""`eval rag` and the shared report writer: real RAGAS metrics on small real slices."""

import json
import re
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from context_engine.config import Settings
from context_engine.eval.rag import (
    CLAPNQ_TENANT,
    RagQuestion,
    RagRun,
    clapnq_questions,
    evaluate_rag,
    ingest_clapnq,
    load_questions,
    score,
)
from context_engine.eval.report import write_report
from tests.conftest import EVAL_DATA, needs_clapnq, run_cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_score_wires_each_metric_to_its_references():
    questions = [
        RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a"),
        RagQuestion("Who won the 1850 World Cup?", None, [], [], False, "u"),
    ]
    runs = [
        RagRun(
            "green",
            False,
            "semantic",
            [{"doc_ref": "p1", "text": "The sky is blue. Grass is green."}, {"doc_ref": "p2", "text": "Cats purr."}],
            0.2,
        ),
        RagRun("No source answers this.", True, "semantic", [{"doc_ref": "p3", "text": "Football began later."}], 0.4),
    ]
    report = score(questions, runs)
    m = report.metrics
    # RAGAS's ExactMatch and ChrfScore score a sample without a reference (a miss); the rest leave it out
    assert m["exact_match"] == 0.5 and m["non_llm_string_similarity"] == 1.0
    assert m["id_based_context_recall"] == 1.0 and m["id_based_context_precision"] == 0.5
    assert m["non_llm_context_recall"] == 1.0
    # 3 retrieved sentences, only the second matches: precision@2 weighted by relevance = (1/2) / 1
    assert m["non_llm_context_precision_with_reference"] == pytest.approx(0.5)
    assert report.info["decline_rate_unanswerable"] == 1.0 and report.info["answer_rate_answerable"] == 1.0
    # the unanswerable question has no references: no other metric scores it, none counts it as a failed verdict
    assert report.items[1]["scores"] == {"exact_match": 0.0, "chrf_score": 0.0}
    assert report.info["exact_match (scored)"] == 2 and report.info["non_llm_context_recall (scored)"] == 1
    assert not [key for key in report.info if key.endswith("(no verdict)")]
    assert report.latencies == [0.2, 0.4]


def test_nothing_retrieved_is_scored_as_ragas_scores_it():
    question = RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a")
    report = score([question], [RagRun("Nothing in the sources answers this.", True, "semantic", [], 0.1)])
    # RAGAS: none of the reference ids retrieved is recall 0; the best match over no contexts is no number.
    assert report.metrics["id_based_context_recall"] == 0.0 and report.metrics["non_llm_context_recall"] is None
    assert report.info["non_llm_context_recall (no verdict)"] == 1
    assert report.metrics["exact_match"] == 0.0 and report.info["answer_rate_answerable"] == 0.0


def test_the_sample_with_the_most_references_leads_for_ragas():
    """`ragas.evaluate` reads the columns from the first sample: a question without references asked
    first must not cost the run its context metrics; a metric no sample can lead for is unavailable."""
    questions = [
        RagQuestion("Who won the 1850 World Cup?", None, [], [], False, "u"),
        RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a"),
    ]
    runs = [
        RagRun("No source answers this.", True, "semantic", [{"doc_ref": "p3", "text": "Football."}], 0.1),
        RagRun("green", False, "semantic", [{"doc_ref": "p1", "text": "Grass is green."}], 0.1),
    ]
    report = score(questions, runs)
    assert [q.id for q in report.questions] == [item["id"] for item in report.items] == ["a", "u"]
    assert report.metrics["non_llm_context_recall"] == 1.0 and report.metrics["id_based_context_recall"] == 1.0
    assert not [key for key in report.info if key.endswith("(unavailable)")]

    # one question has the reference answer, the other the reference contexts: no sample has both
    split = [
        RagQuestion("What colour is grass?", "green", [], [], True, "answer"),
        RagQuestion("What colour is grass?", None, ["Grass is green."], ["p1"], True, "contexts"),
    ]
    report = score(split, runs[1:] * 2)
    assert report.items[0]["id"] == "contexts" and report.metrics["non_llm_context_recall"] == 1.0
    assert "reference" in report.info["ExactMatch (unavailable)"] and "exact_match" not in report.metrics


class _ConstantEmbeddings(Embeddings):
    """Two-dimensional constant vectors: AnswerRelevancy needs embeddings, this test needs no model."""

    def embed_query(self, text):
        return [1.0, 0.0]

    def embed_documents(self, texts):
        return [[1.0, 0.0] for _ in texts]


class _WordJudge(BaseChatModel):
    """A deterministic judge: it reads the RAGAS prompt it is given (the instruction says which) and
    answers from the words alone, whatever order the metrics ask in. A statement is an answer's
    sentence; it is supported (faithful, attributed) when every word of it is in the context; the
    question an answer raises is the answer itself, never noncommittal."""

    @property
    def _llm_type(self) -> str:
        return "word-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = messages[-1].content
        given = json.loads(prompt.rsplit("input: ", 1)[1].rsplit("Output: ", 1)[0])

        def supported(statement: str, context: str) -> int:
            return int(set(re.findall(r"\w+", statement.lower())) <= set(re.findall(r"\w+", context.lower())))

        if "Break down each sentence" in prompt:
            answer = {"statements": [s for s in re.split(r"(?<=\.) ", given["answer"]) if s]}
        elif "judge the faithfulness" in prompt:
            answer = {
                "statements": [
                    {"statement": s, "reason": "words", "verdict": supported(s, given["context"])}
                    for s in given["statements"]
                ]
            }
        elif "Generate a question for the given answer" in prompt:
            answer = {"question": given["response"], "noncommittal": 0}
        else:  # LLMContextRecall: each sentence of the reference, attributed to the context or not
            answer = {
                "classifications": [
                    {"statement": s, "reason": "words", "attributed": supported(s, given["context"])}
                    for s in re.split(r"(?<=\.) ", given["answer"])
                    if s
                ]
            }
        return ChatResult(generations=[ChatGeneration(message=AIMessage(json.dumps(answer)))])


def _judged_case():
    questions = [
        RagQuestion("What colour is grass?", "Grass is green.", ["Grass is green."], ["p1"], True, "a"),
        RagQuestion(
            "What colour is the sky?", "The sky is blue. It is grey in rain.", ["The sky is blue."], ["p2"], True, "b"
        ),
    ]
    runs = [
        RagRun(
            "Grass is green. Grass is purple.",
            False,
            "semantic",
            [{"doc_ref": "p1", "text": "Grass is green. The sky is blue."}],
            0.1,
        ),
        RagRun("The sky is blue.", False, "semantic", [{"doc_ref": "p2", "text": "The sky is blue."}], 0.1),
    ]
    return questions, runs


def test_judge_metrics_go_through_ragas_with_the_judge():
    questions, runs = _judged_case()
    report = score(questions, runs, judge=_WordJudge(), embeddings=_ConstantEmbeddings())
    # faithfulness: 1 of 2 statements, then 1 of 1; context recall: 1 of 1, then 1 of 2 reference sentences
    assert report.metrics["faithfulness"] == 0.75 and report.metrics["context_recall"] == 0.75
    assert report.metrics["answer_relevancy"] == pytest.approx(1.0)
    # without embeddings AnswerRelevancy is said to be unavailable (RAGAS would reach for OpenAI's)
    report = score(questions, runs, judge=_WordJudge())
    assert "answer_relevancy" not in report.metrics and report.metrics["faithfulness"] == 0.75
    assert "embeddings" in report.info["AnswerRelevancy (unavailable)"]


def test_ragas_evaluate_on_the_written_dataset_reproduces_the_run(tmp_path):
    """What `eval rag` reports is what RAGAS gives on what it wrote: the dataset read back from disk,
    the same metric classes, the same (deterministic) judge and embeddings."""
    import math
    import subprocess
    import sys
    import warnings

    from ragas import EvaluationDataset, evaluate

    from context_engine.eval.rag import rag_metrics, write_samples

    questions, runs = _judged_case()
    questions.append(RagQuestion("Who won the 1850 World Cup?", None, [], [], False, "u"))
    runs.append(
        RagRun("No source answers this.", True, "semantic", [{"doc_ref": "p3", "text": "Football began later."}], 0.1)
    )
    report = score(questions, runs, judge=_WordJudge(), embeddings=_ConstantEmbeddings())
    files = write_samples(tmp_path, report)
    written = EvaluationDataset.from_jsonl(files["dataset"])
    # the sentences scored are the ones written
    assert written[0].retrieved_contexts == ["Grass is green.", "The sky is blue."]
    metrics, _ = rag_metrics(judged=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = evaluate(
            written, metrics=metrics, llm=_WordJudge(), embeddings=_ConstantEmbeddings(), show_progress=False
        )
    rescored = {name: [row[name] for row in result.scores if not math.isnan(row[name])] for name in result.scores[0]}
    assert set(rescored) == set(report.metrics) and len(report.metrics) >= 10
    for name, values in rescored.items():
        assert report.metrics[name] == (pytest.approx(sum(values) / len(values), abs=1e-4) if values else None), name
        assert report.info[f"{name} (scored)"] == len(values)
    # rescore.py, written beside the dataset, gives the offline figures with RAGAS alone
    done = subprocess.run([sys.executable, files["rescore"]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    offline = json.loads(done.stdout)
    assert offline and not {"faithfulness", "answer_relevancy", "context_recall"} & set(offline)
    assert offline == {name: report.metrics[name] for name in offline}
    assert "JUDGE" in Path(files["rescore"]).read_text().split('"""')[1]  # the note on re-scoring the judge's metrics


def test_load_questions_names_the_bad_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "a?", "reference": "b", "answerable": true}\n\n{"reference": "x"}\n')
    with pytest.raises(ValueError, match=r"q.jsonl:3"):
        load_questions(path)
    path.write_text('{"question": "a?", "reference": "b", "reference_context_ids": [7]}\n')
    (q,) = load_questions(path)
    assert (q.question, q.reference, q.reference_context_ids, q.answerable) == ("a?", "b", ["7"], None)


def test_write_report_files(tmp_path):
    files = write_report(
        tmp_path / "out",
        title="t",
        metrics={"a": 0.5, "b": None},
        info={"questions": 2},
        latencies=[0.1, 0.3],
        items=[{"id": 1}],
    )
    data = json.loads(Path(files["json"]).read_text())
    assert data["metrics"] == {"a": 0.5, "b": None} and data["latency"]["max"] == 0.3 and data["items"] == [{"id": 1}]
    markdown = Path(files["markdown"]).read_text()
    assert "| a | 0.5000 |" in markdown and "| b | – |" in markdown and "| questions | 2 |" in markdown
    assert Path(files["chart"]).read_bytes()[:8] == PNG_MAGIC


@needs_clapnq
def test_clapnq_slice_through_the_graph(tmp_path):
    questions, documents = clapnq_questions(EVAL_DATA / "clapnq")
    questions = questions[:6]
    assert [q.answerable for q in questions] == [True, False] * 3
    # The six questions' passages and some distractors: enough for retrieval to choose, fast to embed.
    wanted = {pid for q in questions for pid in q.reference_context_ids} | {d["doc_id"] for d in documents[:8]}
    settings = Settings(data_dir=tmp_path, mongodb_uri=None, use_llm=False)
    ingest_clapnq(settings, [d for d in documents if d["doc_id"] in wanted])
    report = evaluate_rag(questions, {"tenant": CLAPNQ_TENANT, "data_dir": str(tmp_path), "use_llm": False})
    assert report.info["questions"] == 6 and report.info["answerable"] == 3
    assert report.info["id_based_context_recall (scored)"] == 3
    for q, item in zip(questions, report.items):
        assert set(item["context_ids"]) <= wanted
        if q.answerable:
            assert item["scores"]["id_based_context_recall"] == float(q.reference_context_ids[0] in item["context_ids"])
            assert item["scores"]["exact_match"] == float(item["answer"].strip() == q.reference.strip())
    for value in report.metrics.values():
        assert value is None or 0.0 <= value <= 1.0
    assert all(seconds > 0 for seconds in report.latencies)


def test_cli_eval_rag_on_a_question_file(sample_dir, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps(
            {
                "question": "Why did we move the session cache to Redis?",
                "reference": "Memcached evictions logged users out",
                "reference_context_ids": ["DOC-14"],
                "answerable": True,
            }
        )
        + "\n"
    )
    out = tmp_path / "out"
    done = run_cli(
        "eval",
        "rag",
        "--dataset",
        str(path),
        "--data-dir",
        str(sample_dir),
        "--tenant",
        "acme",
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["info"]["questions"] == 1 and result["info"]["answer_rate_answerable"] in (0.0, 1.0)
    assert {"id_based_context_recall", "non_llm_string_similarity"} <= set(result["metrics"])
    assert json.loads((out / "results.json").read_text())["metrics"] == result["metrics"]
    assert (out / "results.md").exists() and (out / "results.png").read_bytes()[:8] == PNG_MAGIC
    missing = run_cli("eval", "rag", "--dataset", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "neither" in missing.stderr


def test_cli_eval_structured_writes_report(sample_dir, tmp_path):
    out = tmp_path / "out"
    done = run_cli(
        "eval",
        "structured",
        "--questions",
        "tests/data/structured_dev.jsonl",
        "--limit",
        "3",
        "--data-dir",
        str(sample_dir),
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    written = json.loads((out / "results.json").read_text())
    assert written["metrics"]["execution_accuracy"] == json.loads(done.stdout)["accuracy"]
    assert written["info"]["total"] == 3 and len(written["items"]) == 3
    assert (out / "results.png").read_bytes()[:8] == PNG_MAGIC
