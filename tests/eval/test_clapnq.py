"""The CLAP NQ dev set as the engine reads it (the graph runs over it in tests/eval/test_rag.py)."""

import pytest

from context_engine.eval.clapnq import half_of, load_clapnq
from tests.conftest import EVAL_DATA

DATA_DIR = EVAL_DATA / "clapnq"  # the data is beside the checkout, never in the package
pytestmark = pytest.mark.skipif(not (DATA_DIR / "clapnq_dev_answerable.jsonl").exists(), reason="no CLAP NQ data")


@pytest.fixture(scope="module")
def clapnq():
    return load_clapnq(DATA_DIR)


def test_the_data_and_the_deterministic_halves(clapnq):
    questions, passages = clapnq
    assert len(questions) == 600 and sum(q.answerable for q in questions) == 300
    assert len(passages) < 600  # identical passages are one corpus entry
    assert all(q.answers for q in questions if q.answerable)
    assert sum(bool(q.reference_contexts) for q in questions if q.answerable) >= 299  # one lacks selected sentences
    assert all(not q.answers for q in questions if not q.answerable)
    halves = [half_of(q.id) for q in questions]
    assert halves == [half_of(q.id) for q in questions]
    assert 250 < halves.count("tune") < 350
