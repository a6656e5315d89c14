"""`eval rag` and the shared report writer: real RAGAS metrics on small real slices."""

import json

import pytest

from context_engine.config import Settings
from context_engine.eval.rag import (CLAPNQ_TENANT, RagQuestion, RagRun, clapnq_questions, evaluate_rag, ingest_clapnq,
                                     load_questions, score)
from context_engine.eval.report import write_report

from tests.conftest import EVAL_DATA, needs_clapnq, run_cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_score_wires_each_metric_to_its_references():
    questions = [RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a"),
                 RagQuestion("Who won the 1850 World Cup?", None, [], [], False, "u")]
    runs = [RagRun("green", False, "semantic",
                   [{"doc_ref": "p1", "text": "The sky is blue. Grass is green."}, {"doc_ref": "p2", "text": "Cats purr."}],
                   0.2),
            RagRun("No source answers this.", True, "semantic", [{"doc_ref": "p3", "text": "Football began later."}], 0.4)]
    report = score(questions, runs)
    m = report.metrics
    assert m["exact_match"] == 1.0 and m["non_llm_string_similarity"] == 1.0
    assert m["id_based_context_recall"] == 1.0 and m["id_based_context_precision"] == 0.5
    assert m["non_llm_context_recall"] == 1.0
    # 3 retrieved sentences, only the second matches: precision@2 weighted by relevance = (1/2) / 1
    assert m["non_llm_context_precision_with_reference"] == pytest.approx(0.5)
    assert report.info["decline_rate_unanswerable"] == 1.0 and report.info["answer_rate_answerable"] == 1.0
    # the unanswerable question has no reference: no metric scores it
    assert report.items[1]["scores"] == {} and report.info["exact_match (scored)"] == 1
    assert report.latencies == [0.2, 0.4]


def test_nothing_retrieved_scores_zero_context_metrics():
    question = RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a")
    report = score([question], [RagRun("Nothing in the sources answers this.", True, "semantic", [], 0.1)])
    assert report.metrics["non_llm_context_recall"] == 0.0 and report.metrics["id_based_context_recall"] == 0.0
    assert report.metrics["exact_match"] == 0.0 and report.info["answer_rate_answerable"] == 0.0


class _ConstantEmbeddings:
    """Two-dimensional constant vectors: AnswerRelevancy needs embeddings, this test needs no model."""

    def embed_query(self, text):
        return [1.0, 0.0]

    def embed_documents(self, texts):
        return [[1.0, 0.0] for _ in texts]

    async def aembed_query(self, text):
        return self.embed_query(text)

    async def aembed_documents(self, texts):
        return self.embed_documents(texts)


def test_judge_metrics_go_through_the_langchain_wrapper():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    # A scripted judge (RAGAS itself is real): two statements, the context supports one of them.
    judge = FakeListChatModel(responses=[
        json.dumps({"statements": ["Grass is green.", "Grass is purple."]}),
        json.dumps({"statements": [{"statement": "Grass is green.", "reason": "stated", "verdict": 1},
                                   {"statement": "Grass is purple.", "reason": "not stated", "verdict": 0}]})])
    question = RagQuestion("What colour is grass?", "green", ["Grass is green."], ["p1"], True, "a")
    run = RagRun("Grass is green, sometimes purple.", False, "semantic", [{"doc_ref": "p1", "text": "Grass is green."}], 0.1)
    report = score([question], [run], judge=judge, embeddings=_ConstantEmbeddings())
    assert report.metrics["faithfulness"] == 0.5
    for name in ("answer_relevancy", "llm_context_recall"):  # the script has no usable verdict for these
        assert report.info.get(f"{name} (scored)", 0) + report.info.get(f"{name} (no verdict)", 0) == 1


def test_load_questions_names_the_bad_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "a?", "reference": "b", "answerable": true}\n\n{"reference": "x"}\n')
    with pytest.raises(ValueError, match=r"q.jsonl:3"):
        load_questions(path)
    path.write_text('{"question": "a?", "reference": "b", "reference_context_ids": [7]}\n')
    (q,) = load_questions(path)
    assert (q.question, q.reference, q.reference_context_ids, q.answerable) == ("a?", "b", ["7"], None)


def test_write_report_files(tmp_path):
    files = write_report(tmp_path / "out", title="t", metrics={"a": 0.5, "b": None}, info={"questions": 2},
                         latencies=[0.1, 0.3], items=[{"id": 1}])
    data = json.loads(open(files["json"]).read())
    assert data["metrics"] == {"a": 0.5, "b": None} and data["latency"]["max"] == 0.3 and data["items"] == [{"id": 1}]
    markdown = open(files["markdown"]).read()
    assert "| a | 0.5000 |" in markdown and "| b | – |" in markdown and "| questions | 2 |" in markdown
    assert open(files["chart"], "rb").read(8) == PNG_MAGIC


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
    path.write_text(json.dumps({"question": "Why did we move the session cache to Redis?",
                                "reference": "Memcached evictions logged users out",
                                "reference_context_ids": ["DOC-14"], "answerable": True}) + "\n")
    out = tmp_path / "out"
    done = run_cli("eval", "rag", "--dataset", str(path), "--data-dir", str(sample_dir), "--tenant", "acme",
                   "--out", str(out), "--json")
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
    done = run_cli("eval", "structured", "--questions", "tests/data/structured_dev.jsonl", "--limit", "3",
                   "--data-dir", str(sample_dir), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    written = json.loads((out / "results.json").read_text())
    assert written["metrics"]["execution_accuracy"] == json.loads(done.stdout)["accuracy"]
    assert written["info"]["total"] == 3 and len(written["items"]) == 3
    assert (out / "results.png").read_bytes()[:8] == PNG_MAGIC
