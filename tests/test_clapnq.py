"""A small real slice of CLAP NQ through the decline-check pipeline and its metrics."""

import pytest

from context_engine.eval.clapnq import DATA_DIR, PassageRetriever, answer_question, evaluate, half_of, load_clapnq, sweep

pytestmark = pytest.mark.skipif(not (DATA_DIR / "clapnq_dev_answerable.jsonl").exists(), reason="no CLAP NQ data")


@pytest.fixture(scope="module")
def clapnq():
    questions, passages = load_clapnq()
    return questions, passages, PassageRetriever(passages)


def test_the_data_and_the_deterministic_halves(clapnq):
    questions, passages, _ = clapnq
    assert len(questions) == 600 and sum(q.answerable for q in questions) == 300
    assert len(passages) < 600  # identical passages are one corpus entry
    assert all(q.answers for q in questions if q.answerable)
    assert sum(bool(q.reference_contexts) for q in questions if q.answerable) >= 299  # one lacks selected sentences
    assert all(not q.answers for q in questions if not q.answerable)
    halves = [half_of(q.id) for q in questions]
    assert halves == [half_of(q.id) for q in questions]
    assert 250 < halves.count("tune") < 350


def test_a_slice_runs_through_the_pipeline_and_the_metrics(clapnq):
    questions, _, retriever = clapnq
    chosen = [q for q in questions if q.answerable][:6] + [q for q in questions if not q.answerable][:6]
    results = [answer_question(q.question, retriever) for q in chosen]
    for q, r in zip(chosen, results):
        assert 1 <= len(r.retrieved_ids) <= 3
        assert r.declined == (not r.answerability.answerable)
        if r.declined:
            assert r.answer == ""
        else:  # extractive: the answer is a sentence of the compressed context
            assert r.answer and any(r.answer in d.page_content for d in r.contexts)
    # BM25 over 597 passages finds the annotated passage of these answerable questions.
    assert sum(q.passage_id in r.retrieved_ids for q, r in zip(chosen, results) if q.answerable) >= 5
    report = evaluate(chosen, results)
    assert report["answerable"] == 6 and report["unanswerable"] == 6
    assert report["decline_rate_unanswerable"] == pytest.approx(sum(r.declined for r in results[6:]) / 6, abs=1e-4)
    assert report["answer_rate_answerable"] == pytest.approx(sum(not r.declined for r in results[:6]) / 6, abs=1e-4)
    if report["answer_rate_answerable"]:
        assert 0.0 <= report["context_recall"] <= 1.0 and 0.0 < report["string_similarity"] <= 1.0
    rows = sweep(chosen, [r.answerability.score for r in results], [0.0, 1.01])
    assert rows[0]["answer_rate_answerable"] == 1.0 and rows[1]["decline_rate_unanswerable"] == 1.0
