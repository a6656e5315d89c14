"""`eval rag` with RAGAS conventions: an EvaluationDataset in (JSONL/CSV as RAGAS writes them, or the
older JSON lines), the filled dataset and per-sample scores out, `--as`, `--clapnq`, `--limit` that
embeds only the passages asked about, the rates in the chart, and bad input as one line, exit 2.

Small and real: a 2-4 question CLAP NQ slice (so 2-4 passages embedded) and structured questions over
the sample corpus ingested without a semantic index (structured questions need none)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ragas import EvaluationDataset
from ragas.dataset_schema import SingleTurnSample

from context_engine.cli import main
from context_engine.config import Settings
from context_engine.eval.rag import clapnq_questions, load_questions
from tests.conftest import EVAL_DATA, needs_clapnq, run_cli

CLAPNQ = EVAL_DATA / "clapnq"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAMPLE_COLUMNS = {"user_input", "response", "retrieved_contexts", "reference", "declined", "answerable", "latency"}


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch):
    """In-process runs see the environment a CI run would: no chat model, no MongoDB, no default asker."""
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "MONGODB_URI",
        "CONTEXT_ENGINE_USER",
        "CONTEXT_ENGINE_CLAPNQ",
        "CONTEXT_ENGINE_TENANT",
    ):
        monkeypatch.delenv(name, raising=False)


def _eval_rag(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["eval", "rag", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def structured_dir(tmp_path_factory) -> Path:
    """The sample corpus as `context-engine ingest sample --no-index` writes it: seconds, nothing embedded."""
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    data_dir = tmp_path_factory.mktemp("sample-no-index")
    ingest(Settings(data_dir=data_dir, mongodb_uri=None), generate(), index=False)
    return data_dir


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@needs_clapnq
def test_clapnq_slice_writes_a_ragas_dataset_and_embeds_only_its_passages(tmp_path, capsys, monkeypatch):
    from ragas.metrics import ExactMatch, IDBasedContextRecall

    from context_engine.resources import store_for

    out = tmp_path / "out"
    code, stdout, err = _eval_rag(
        capsys, "--dataset", "clapnq", "--clapnq", str(CLAPNQ), "--limit", "4", "--out", str(out), "--json"
    )
    assert code == 0, err
    result = json.loads(stdout)
    asked = clapnq_questions(CLAPNQ)[0][:4]
    passages = {pid for q in asked for pid in q.passage_ids}
    # Only the passages of the 4 questions were ingested (not the ~600 of the dev set).
    assert result["info"]["corpus passages"] == len(passages) <= 4
    assert result["info"]["empty answers (not declined)"] == sum(
        1 for s in json.loads((out / "samples.json").read_text()) if not s["response"].strip() and not s["declined"]
    )
    assert store_for(Settings(data_dir=out / "data", tenant="clapnq")).count("documents", "clapnq") == len(passages)

    # dataset.jsonl: RAGAS loads it back, filled with the graph's answers and contexts.
    dataset = EvaluationDataset.from_jsonl(out / "dataset.jsonl")
    assert len(dataset) == 4 and all(isinstance(s, SingleTurnSample) for s in dataset)
    assert [s.user_input for s in dataset] == [q.question for q in asked]
    assert any(sample.response for sample in dataset)
    for sample, q in zip(dataset, asked):
        # (the graph of this commit answers the 4th question with "" and no decline: counted in the info)
        assert isinstance(sample.response, str)
        assert isinstance(sample.retrieved_contexts, list)
        assert set(sample.retrieved_context_ids) <= passages
        assert sample.reference == q.reference and (sample.reference_contexts or []) == q.reference_contexts

    # samples.csv / samples.json: one row per question, the asked-for columns and every metric.
    rows = _csv_rows(out / "samples.csv")
    samples = json.loads((out / "samples.json").read_text())
    assert len(rows) == len(samples) == 4
    assert SAMPLE_COLUMNS | set(result["metrics"]) <= set(rows[0])
    for row, sample, q, ds in zip(rows, samples, asked, dataset):
        assert row["user_input"] == sample["user_input"] == q.question
        assert json.loads(row["retrieved_contexts"]) == sample["retrieved_contexts"] == ds.retrieved_contexts
        assert sample["answerable"] is q.answerable and row["answerable"] == str(q.answerable)
        assert isinstance(sample["declined"], bool) and sample["latency"] > 0
    # RAGAS re-scores the written dataset to the same per-sample figures.
    for ds, sample in zip(dataset, samples):
        if ds.reference_context_ids:
            assert IDBasedContextRecall().single_turn_score(ds) == sample["id_based_context_recall"]
        if ds.reference:
            assert ExactMatch().single_turn_score(ds) == sample["exact_match"]
    # The means in results.json are the means of the per-sample rows (those rounded to 4 places).
    for name, mean in result["metrics"].items():
        values = [s[name] for s in samples if s[name] is not None]
        assert mean == (pytest.approx(sum(values) / len(values), abs=1e-4) if values else None)
    written = json.loads((out / "results.json").read_text())
    assert written["info"]["decline_rate_unanswerable"] == result["info"]["decline_rate_unanswerable"]
    assert (out / "results.png").read_bytes()[:8] == PNG_MAGIC
    assert set(result["files"]) == {"json", "markdown", "chart", "dataset", "rescore", "samples_csv", "samples_json"}
    # rescore.py (ragas.evaluate on dataset.jsonl, RAGAS alone) gives every figure of the run again
    rescored = subprocess.run([sys.executable, result["files"]["rescore"]], capture_output=True, text=True, timeout=300)
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout) == result["metrics"]
    assert result["metrics"]["non_llm_context_recall"] is not None

    # The folder from $CONTEXT_ENGINE_CLAPNQ; a smaller slice into the same --out drops the other passages.
    monkeypatch.setenv("CONTEXT_ENGINE_CLAPNQ", str(CLAPNQ))
    code, stdout, err = _eval_rag(capsys, "--dataset", "clapnq", "--limit", "2", "--out", str(out), "--json")
    assert code == 0, err
    kept = {pid for q in asked[:2] for pid in q.passage_ids}
    assert json.loads(stdout)["info"]["corpus passages"] == len(kept)
    assert store_for(Settings(data_dir=out / "data", tenant="clapnq")).count("documents", "clapnq") == len(kept)
    assert len(_csv_rows(out / "samples.csv")) == 2 and len(EvaluationDataset.from_jsonl(out / "dataset.jsonl")) == 2


STRUCTURED = [
    ("how many open PRs are labelled security?", "1 pull request matches."),
    ("open issues assigned to me", None),
]


def test_a_ragas_jsonl_dataset_in_the_filled_dataset_out_and_again(structured_dir, tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    EvaluationDataset(samples=[SingleTurnSample(user_input=q, reference=r) for q, r in STRUCTURED]).to_jsonl(path)
    out = tmp_path / "out"
    code, stdout, err = _eval_rag(
        capsys,
        "--dataset",
        str(path),
        "--data-dir",
        str(structured_dir),
        "--tenant",
        "acme",
        "--as",
        "rsh-dev",
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, err
    dataset = EvaluationDataset.from_jsonl(out / "dataset.jsonl")
    assert [s.user_input for s in dataset] == [q for q, _ in STRUCTURED]
    assert dataset[0].response.startswith("1 pull request matches") and dataset[0].reference == STRUCTURED[0][1]
    # the reference is the engine's exact answer; RAGAS's ExactMatch counts the sample without one as a miss
    assert [s["exact_match"] for s in json.loads((out / "samples.json").read_text())] == [1.0, 0.0]
    assert json.loads(stdout)["metrics"]["exact_match"] == 0.5
    # A run's own output is a dataset too: its responses are replaced by the new run's.
    again = tmp_path / "again"
    code, _, err = _eval_rag(
        capsys,
        "--dataset",
        str(out / "dataset.jsonl"),
        "--data-dir",
        str(structured_dir),
        "--tenant",
        "acme",
        "--as",
        "rsh-dev",
        "--out",
        str(again),
        "--json",
    )
    assert code == 0, err
    assert [s.response for s in EvaluationDataset.from_jsonl(again / "dataset.jsonl")] == [s.response for s in dataset]


def test_as_is_the_asker_of_the_run(structured_dir, tmp_path, capsys):
    path = tmp_path / "me.jsonl"
    EvaluationDataset(samples=[SingleTurnSample(user_input="open issues assigned to me")]).to_jsonl(path)
    answers = {}
    for alias, name in (("rsh-dev", "Rashid Khan"), ("sokafor", "Sam Okafor")):
        out = tmp_path / alias
        code, stdout, err = _eval_rag(
            capsys,
            "--dataset",
            str(path),
            "--data-dir",
            str(structured_dir),
            "--tenant",
            "acme",
            "--as",
            alias,
            "--out",
            str(out),
            "--json",
        )
        assert code == 0, err
        assert json.loads(stdout)["info"]["asker"] == alias
        (sample,) = json.loads((out / "samples.json").read_text())
        answers[alias] = sample["response"]
        assert name in sample["response"]
    assert answers["rsh-dev"] != answers["sokafor"]
    code, _, err = _eval_rag(
        capsys,
        "--dataset",
        str(path),
        "--data-dir",
        str(structured_dir),
        "--tenant",
        "acme",
        "--as",
        "nobody-at-all",
        "--out",
        str(tmp_path / "x"),
    )
    assert code == 2 and err.startswith("context-engine: error: --as:") and err.count("\n") == 1


def test_csv_and_json_array_datasets_read_as_ragas_writes_them(tmp_path):
    samples = [
        SingleTurnSample(
            user_input="Why Redis?",
            reference="evictions",
            reference_contexts=["a, 'b'", "c"],
            reference_context_ids=["DOC-14"],
        ),
        SingleTurnSample(user_input="你好吗？", reference="很好", reference_contexts=["x"], reference_context_ids=[7]),
    ]
    dataset = EvaluationDataset(samples=samples)
    dataset.to_csv(tmp_path / "d.csv")  # lists as Python literals
    (tmp_path / "d.json").write_text(json.dumps(dataset.to_list(), ensure_ascii=False), encoding="utf-8")
    for name in ("d.csv", "d.json"):
        questions = load_questions(tmp_path / name)
        assert [
            (q.question, q.reference, q.reference_contexts, q.reference_context_ids, q.answerable) for q in questions
        ] == [("Why Redis?", "evictions", ["a, 'b'", "c"], ["DOC-14"], None), ("你好吗？", "很好", ["x"], ["7"], None)]
    # `answerable` rides along as an extra column/key (RAGAS itself ignores it).
    with open(tmp_path / "a.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["user_input", "reference", "answerable"], ["q1", "r", "True"], ["q2", "", "false"]])
    assert [(q.reference, q.answerable) for q in load_questions(tmp_path / "a.csv")] == [("r", True), (None, False)]
    (tmp_path / "a.jsonl").write_text('{"user_input": "q", "answerable": false}\n{"question": "old style"}\n')
    assert [(q.question, q.answerable) for q in load_questions(tmp_path / "a.jsonl")] == [
        ("q", False),
        ("old style", None),
    ]


def test_the_chart_shows_the_rates_beside_the_metrics(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from context_engine.eval.report import write_report

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    rates = {"decline rate (of 5 unanswerable)": 0.6, "answer rate (of 0 answerable)": None}
    files = write_report(
        tmp_path,
        title="t",
        metrics={"exact_match": 0.25, "bleu_score": None},
        info={},
        latencies=[0.1, 0.2],
        items=[],
        rates=rates,
    )
    assert Path(files["chart"]).read_bytes()[:8] == PNG_MAGIC
    bars = figures[0].axes[0]
    assert [t.get_text() for t in bars.get_yticklabels()] == ["exact_match", *rates]
    assert [round(p.get_width(), 4) for p in bars.patches] == [0.25, 0.6, 0.0]
    assert {t.get_text() for t in bars.texts} >= {"0.250", "0.600", "n/a (no such questions)"}
    monkeypatch.undo()
    plt.close(figures[0])


def _clapnq_folder(tmp_path: Path, bad_line: str) -> Path:
    """A two-file CLAP NQ folder whose unanswerable file has `bad_line` as its line 2."""
    folder = tmp_path / "clap"
    folder.mkdir()
    record = {
        "id": "1",
        "input": "what is grass?",
        "passages": [{"title": "Grass", "text": "Grass is green."}],
        "output": [{"answer": "a plant", "selected_sentences": ["Grass is green."]}],
    }
    (folder / "clapnq_dev_answerable.jsonl").write_text(json.dumps(record) + "\n")
    (folder / "clapnq_dev_unanswerable.jsonl").write_text(json.dumps({**record, "output": []}) + "\n" + bad_line + "\n")
    return folder


def test_bad_input_is_one_line_and_exit_2(structured_dir, tmp_path, capsys):
    def dataset(name: str, text: str) -> str:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return str(tmp_path / name)

    file_args = ["--data-dir", str(structured_dir), "--tenant", "acme", "--out", str(tmp_path / "o")]
    (tmp_path / "a-file").write_text("x")
    cases = [
        (["--dataset", "clapnq"], "pass --clapnq DIR"),
        (["--dataset", "clapnq", "--clapnq", str(tmp_path / "nowhere")], "is not a folder"),
        (["--dataset", "clapnq", "--clapnq", str(tmp_path)], "has no clapnq_dev_answerable.jsonl"),
        (
            ["--dataset", "clapnq", "--clapnq", str(_clapnq_folder(tmp_path, '{"id": 1}'))],
            "clapnq_dev_unanswerable.jsonl:2: not a CLAP NQ record",
        ),
        (["--dataset", "clapnq", "--clapnq", str(CLAPNQ), "--limit", "0"], "--limit must be at least 1"),
        (["--dataset", "clapnq", "--clapnq", str(CLAPNQ), "--as", "rsh-dev"], "--as: tenant clapnq has no people"),
        (["--dataset", "clapnq", "--clapnq", str(CLAPNQ), "--out", str(tmp_path / "a-file")], "is not a folder"),
        (["--dataset", dataset("q.jsonl", '{"user_input": "q"}\n'), "--clapnq", str(CLAPNQ)], "--clapnq is for"),
        (
            ["--dataset", dataset("m.jsonl", '{"user_input": "q"}\n{"user_input": [{"content": "hi"}]}\n'), *file_args],
            "m.jsonl:2: a multi-turn sample",
        ),
        (
            ["--dataset", dataset("t.jsonl", '{"user_input": "q", "reference_contexts": "not a list"}\n'), *file_args],
            "t.jsonl:1: not a RAGAS SingleTurnSample: reference_contexts",
        ),
        (["--dataset", dataset("e.jsonl", '{"user_input": "  "}\n'), *file_args], "e.jsonl:1: `user_input` is empty"),
        (["--dataset", dataset("j.jsonl", '{"user_input": "q"}\n{oops\n'), *file_args], "j.jsonl:2: expected a JSON"),
        (
            ["--dataset", dataset("c.csv", "user_input,reference_contexts\nq,\"['a', \"\n"), *file_args],
            "c.csv:2: `reference_contexts` is not a list",
        ),
        (["--dataset", dataset("h.csv", "prompt,answer\nq,a\n"), *file_args], "needs a `user_input` column"),
        (
            ["--dataset", dataset("b.jsonl", '{"user_input": "q", "answerable": "maybe"}\n'), *file_args],
            "`answerable` must be true or false",
        ),
        (["--dataset", dataset("n.jsonl", "\n"), *file_args], "no questions in it"),
    ]
    for args, expected in cases:
        code, _, err = _eval_rag(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("context-engine: error: ") and err.count("\n") == 1, err
        assert expected in err, (expected, err)
    # And as a user sees it: a separate process, no traceback.
    done = run_cli("eval", "rag", "--dataset", "clapnq", env={"CONTEXT_ENGINE_CLAPNQ": ""})
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert "--clapnq DIR" in done.stderr and "CONTEXT_ENGINE_CLAPNQ" in done.stderr
