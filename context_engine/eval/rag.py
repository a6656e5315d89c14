"""RAG evaluation of the whole graph with RAGAS: `context-engine eval rag --dataset clapnq|FILE`.

Each question goes through the main graph (`context_graph`, with the run context of the tenant being
evaluated); the answer and the compressed contexts it was composed from (as sentences:
`retrieved_contexts`) are scored against the references by `ragas.evaluate` itself, over the very
dataset the run writes, with RAGAS's metric classes at their default settings (`OFFLINE_METRICS`,
`JUDGE_METRICS`):

- offline, always: NonLLMContextPrecisionWithReference and NonLLMContextRecall (context sentences vs.
  the reference contexts), IDBasedContextPrecision/Recall (the contexts' record refs vs. the reference
  ids), NonLLMStringSimilarity and ExactMatch (answer vs. reference), and BleuScore, ChrfScore,
  RougeScore where their packages (sacrebleu, rouge-score) are installed;
- with a judge model: Faithfulness, AnswerRelevancy and LLMContextRecall (`context_recall`).

A metric's figure is RAGAS's own: the mean over the samples it gave a number (a sample without the
reference a metric needs, or with nothing retrieved for a metric that takes the best match over the
contexts, gives NaN and is left out; "(scored)" in the info counts the samples behind each mean).

Besides: the decline rate on unanswerable questions, the answer rate on answerable ones, and latency.

Datasets (RAGAS conventions in and out):

- `clapnq` (read from `--clapnq DIR`): asks the CLAP NQ dev questions, answerable and unanswerable
  alternating (so `--limit N` is a balanced slice), of tenant "clapnq" whose corpus is every dev
  passage, or with `--limit N` only the passages of the N questions asked (`clapnq_documents`): about
  N passages embedded instead of ~600, and fewer distractors, so a slice's context figures are not
  comparable with a whole run's;
- a FILE asked of an existing tenant, in any of these forms (`load_questions`):
  - a RAGAS `EvaluationDataset` as `to_jsonl` writes it (`user_input`, `reference`?,
    `reference_contexts`?, `reference_context_ids`?; `response` and `retrieved_contexts`, if there, are
    replaced by the graph's), or as `to_csv` writes it (lists as Python literals), or a JSON array of
    such samples; an extra `answerable` key/column (true/false) is read too (RAGAS ignores it);
  - JSON lines `{question, reference?, reference_contexts?, reference_context_ids?, answerable?}`.

What a run writes besides the report (`write_dataset`, `write_samples`):

- `dataset.jsonl`: the filled `EvaluationDataset` that was scored (one `SingleTurnSample` per question,
  `response` and `retrieved_contexts` from the graph, `retrieved_context_ids` beside them), as
  `EvaluationDataset.to_jsonl` writes it, so `EvaluationDataset.from_jsonl` loads it;
- `rescore.py`: `ragas.evaluate` on `dataset.jsonl` with the run's metric classes, printing the means:
  the run's metrics again, with RAGAS alone (a judge's only when given the same judge);
- `samples.csv` / `samples.json`: one row per question: id, user_input, response, retrieved_contexts,
  retrieved_context_ids, reference, reference_contexts, answerable, declined, route, latency (seconds)
  and every metric (empty / null where the metric does not apply or had no verdict). Lists are JSON
  in the CSV.
"""

from __future__ import annotations

import ast
import csv
import json
import logging
import os
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

from context_engine.text import split_sentences

__all__ = [
    "CLAPNQ_TENANT",
    "RagQuestion",
    "RagReport",
    "RagRun",
    "clapnq_documents",
    "clapnq_questions",
    "evaluate_rag",
    "ingest_clapnq",
    "load_questions",
    "run_question",
    "sample_rows",
    "score",
    "to_evaluation_dataset",
    "write_dataset",
    "write_samples",
]

CLAPNQ_TENANT = "clapnq"


@dataclass
class RagQuestion:
    question: str
    reference: str | None = None  # a reference answer
    reference_contexts: list[str] = field(default_factory=list)
    reference_context_ids: list[str] = field(default_factory=list)
    answerable: bool | None = None  # None: not known
    id: str = ""
    passage_ids: list[str] = field(default_factory=list)  # clapnq: the corpus passages the question was asked of


@dataclass
class RagRun:
    answer: str
    declined: bool
    route: str
    contexts: list[dict[str, Any]]  # the compressed hits the answer was composed from
    seconds: float

    @property
    def context_ids(self) -> list[str]:
        return list(dict.fromkeys(str(h.get("doc_ref") or h.get("id")) for h in self.contexts))


@dataclass
class RagReport:
    metrics: dict[str, float | None]
    info: dict[str, Any]
    latencies: list[float]
    items: list[dict[str, Any]]
    questions: list[RagQuestion] = field(default_factory=list)
    runs: list[RagRun] = field(default_factory=list)
    metric_classes: list[str] = field(default_factory=list)  # the RAGAS classes scored with, for rescore.py


def clapnq_questions(root: Path) -> tuple[list[RagQuestion], list[dict[str, Any]]]:
    """(questions, documents): answerable and unanswerable questions alternating, and every passage as a
    document to ingest (`clapnq_documents` keeps those of the questions asked). `root` is the CLAP NQ
    dev folder; raises ValueError when it is not one."""
    from context_engine.eval.clapnq import load_clapnq

    questions, passages = load_clapnq(Path(root))
    converted = [
        RagQuestion(
            q.question,
            q.answers[0] if q.answers else None,
            q.reference_contexts,
            [q.passage_id] if q.answerable else [],
            q.answerable,
            q.id,
            [q.passage_id],
        )
        for q in questions
    ]
    answerable = [q for q in converted if q.answerable]
    unanswerable = [q for q in converted if not q.answerable]
    alternating = [q for q in chain.from_iterable(zip_longest(answerable, unanswerable)) if q is not None]
    documents = [
        {"doc_id": pid, "title": d.metadata["title"], "body": d.page_content, "acl": ["*"]}
        for pid, d in passages.items()
    ]
    return alternating, documents


def clapnq_documents(questions: Sequence[RagQuestion], documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents the questions were asked of (answerable or not), in corpus order: the corpus of a
    `--limit`/`--half` run, so nothing else is embedded."""
    wanted = {pid for q in questions for pid in q.passage_ids}
    return [d for d in documents if d["doc_id"] in wanted]


def ingest_clapnq(settings, documents: list[dict[str, Any]], progress=None) -> dict[str, Any] | None:
    """Make the passages the `documents` of tenant "clapnq" and index them: unchanged ones stay as they
    are (their embeddings too), and passages of an earlier run into the same data dir that are not
    among these are removed, so the corpus is exactly `documents`. Returns the index sync's report
    (chunks, embedded, cache_hits, ...) as `IngestReport.to_json` gives it."""
    from context_engine.ingest import ingest

    # CLAP NQ is public Wikipedia text: the whole (evaluation) tenant may read it.
    documents = [{**d, "source": CLAPNQ_TENANT} for d in documents]
    (report,) = ingest(
        settings.with_overrides(tenant=CLAPNQ_TENANT),
        {CLAPNQ_TENANT: {"documents": documents}},
        progress=progress,
        public=True,
        prune=True,
    )
    return report.to_json()["index"]


_RAGAS_LISTS = (
    "retrieved_contexts",
    "reference_contexts",
    "retrieved_context_ids",
    "reference_context_ids",
    "multi_responses",
)


def _bool(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("", "none", "null"):
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"{where}: `answerable` must be true or false, not {value!r}")


def _from_ragas(row: dict[str, Any], where: str, number: int) -> RagQuestion:
    """A RAGAS SingleTurnSample (validated by RAGAS itself) as a question; `answerable` and `id` are extras."""
    from pydantic import ValidationError
    from ragas.dataset_schema import SingleTurnSample

    if isinstance(row.get("user_input"), list):
        raise ValueError(
            f"{where}: a multi-turn sample (user_input is a list of messages); only single-turn samples can be asked"
        )
    fields = {k: v for k, v in row.items() if k in SingleTurnSample.model_fields}
    try:
        sample = SingleTurnSample(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(
            f"{where}: not a RAGAS SingleTurnSample: {'.'.join(map(str, first['loc']))}: {first['msg']}"
        ) from None
    question = (sample.user_input or "").strip()
    if not question:
        raise ValueError(f"{where}: `user_input` is empty")
    return RagQuestion(
        question,
        sample.reference or None,
        list(sample.reference_contexts or []),
        [str(i) for i in sample.reference_context_ids or []],
        _bool(row.get("answerable"), where),
        str(row.get("id") or number),
    )


def _from_legacy(row: dict[str, Any], where: str, number: int) -> RagQuestion:
    question = str(row["question"]).strip()
    if not question:
        raise ValueError(f"{where}: the question is empty")
    contexts, ids = row.get("reference_contexts") or [], row.get("reference_context_ids") or []
    if not isinstance(contexts, list) or not isinstance(ids, list):
        raise ValueError(f"{where}: `reference_contexts` and `reference_context_ids` must be lists")
    return RagQuestion(
        question,
        row.get("reference"),
        [str(c) for c in contexts],
        [str(i) for i in ids],
        _bool(row.get("answerable"), where),
        str(row.get("id", number)),
    )


def _from_row(row: Any, where: str, number: int) -> RagQuestion:
    if isinstance(row, dict) and "user_input" in row:
        return _from_ragas(row, where, number)
    if isinstance(row, dict) and "question" in row:
        return _from_legacy(row, where, number)
    raise ValueError(f"{where}: expected a JSON object with `user_input` (a RAGAS sample) or `question`")


def _csv_cell(name: str, value: str, where: str) -> Any:
    """A cell of `EvaluationDataset.to_csv`: lists are written as Python literals (`['a', 'b']`), JSON
    arrays are read too; an empty cell is a missing value."""
    if value is None or value == "":
        return None
    if name not in _RAGAS_LISTS:
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{where}: `{name}` is not a list ({value[:60]!r})") from None
    if not isinstance(parsed, list):
        raise ValueError(f"{where}: `{name}` is not a list ({value[:60]!r})")
    return parsed


def _read_csv(path: Path) -> list[RagQuestion]:
    csv.field_size_limit(1 << 30)  # a cell holds whole retrieved contexts
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or ("user_input" not in reader.fieldnames and "question" not in reader.fieldnames):
            raise ValueError(
                f"{path}: a CSV dataset needs a `user_input` column (as EvaluationDataset.to_csv writes it)"
            )
        questions = []
        for number, row in enumerate(reader, 1):
            where = f"{path}:{number + 1}"  # the header is line 1
            if None in row:
                raise ValueError(f"{where}: more cells than columns")
            row = {k: _csv_cell(k, v, where) for k, v in row.items()}
            if row.get("user_input") is None and "question" in row:
                row["user_input"] = row.pop("question")
            row["user_input"] = row.get("user_input") or ""
            questions.append(_from_ragas(row, where, number))
    return questions


def load_questions(path: Path) -> list[RagQuestion]:
    """The questions of a dataset FILE: a RAGAS EvaluationDataset (JSONL, CSV or a JSON array of samples)
    or JSON lines `{question, ...}` (see the module doc). Raises ValueError naming the first bad line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix.lower() == ".csv":
        questions = _read_csv(path)
    elif text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not a JSON array of samples ({exc.msg} at line {exc.lineno})") from None
        questions = [_from_row(row, f"{path}: sample {number}", number) for number, row in enumerate(rows, 1)]
    else:
        questions = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: expected a JSON object with `user_input` or `question` ({exc})") from None
            try:
                questions.append(_from_row(row, where, number))
            except (KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"{where}: expected a JSON object with `user_input` or `question` ({exc!r})") from None
    if not questions:
        raise ValueError(f"{path}: no questions in it")
    return questions


def run_question(question: str, context: dict[str, Any]) -> RagRun:
    """Ask the main graph. It is streamed rather than invoked because the compressed contexts (what the
    answer is composed from, what RAGAS calls the retrieved contexts) are internal state, not output."""
    from context_engine.assistant.graph import graph as context_graph

    started = time.perf_counter()
    contexts: list[dict[str, Any]] = []
    output: dict[str, Any] = {}
    for mode, chunk in context_graph.stream({"question": question}, context=context, stream_mode=["updates", "values"]):
        if mode == "values":
            output = chunk
        elif "compress" in chunk:  # the last compression (after any reflect retry) is the one answered from
            contexts = chunk["compress"]["contexts"]
    return RagRun(
        output.get("answer", ""),
        bool(output.get("declined")),
        output.get("route", ""),
        contexts,
        time.perf_counter() - started,
    )


# The metrics of a run, by the RAGAS class that computes them, each built with its defaults: the run
# scores with these and the re-score script written beside the dataset names the same classes.
OFFLINE_METRICS = (
    "NonLLMContextPrecisionWithReference",
    "NonLLMContextRecall",
    "IDBasedContextPrecision",
    "IDBasedContextRecall",
    "NonLLMStringSimilarity",
    "ExactMatch",
    "BleuScore",
    "ChrfScore",
    "RougeScore",
)
JUDGE_METRICS = ("Faithfulness", "AnswerRelevancy", "LLMContextRecall")  # need the judge (and embeddings)


def rag_metrics(*, judged: bool = False) -> tuple[list[Any], dict[str, str]]:
    """(the RAGAS metric objects of a run, unavailable metric class -> why). Judge metrics come without a
    model: `ragas.evaluate(..., llm=, embeddings=)` gives them theirs, in a run and in a re-score alike."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # read once by RAGAS: before its first use
    with warnings.catch_warnings():
        # ragas 0.4.3 points to ragas.metrics.collections, which lacks several of these.
        warnings.simplefilter("ignore", DeprecationWarning)
        import ragas.metrics

        metrics, unavailable = [], {}
        for name in OFFLINE_METRICS + (JUDGE_METRICS if judged else ()):
            try:
                metrics.append(getattr(ragas.metrics, name)())
            except ImportError as exc:  # sacrebleu / rouge-score are optional extras of ragas
                unavailable[name] = str(exc)
    return metrics, unavailable


def _metric_key(metric) -> str:
    """The metric's name as `ragas.evaluate` reports it (RougeScore: `rouge_score(mode=fmeasure)`)."""
    from ragas.metrics.base import ModeMetric

    return f"{metric.name}(mode={metric.mode})" if isinstance(metric, ModeMetric) else metric.name


def _required(metric) -> set[str]:
    from ragas.metrics.base import MetricType

    return set(metric.required_columns[MetricType.SINGLE_TURN.name])


class _ScoredJobs:
    """What `ragas.evaluate` takes as its progress bar (it calls `update(1)` per metric and sample):
    `progress()` once per sample's worth of finished jobs."""

    def __init__(self, per_sample: int, progress: Callable[[], None]):
        self.per_sample, self.progress, self.done = per_sample, progress, 0

    def update(self, n: int = 1) -> None:
        for _ in range(n):
            self.done += 1
            if self.done % self.per_sample == 0:
                self.progress()


def score(
    questions: Sequence[RagQuestion],
    runs: Sequence[RagRun],
    *,
    judge=None,
    embeddings=None,
    progress: Callable[[], None] | None = None,
) -> RagReport:
    """`ragas.evaluate` over the run's dataset (`to_evaluation_dataset`, what `write_samples` writes), so
    re-scoring the written dataset gives the same figures; plus rates and latencies.

    Each metric's figure is RAGAS's: the mean over the samples it scores (NaN ones left out, as
    `EvaluationResult` does). `ragas.evaluate` reads a dataset's columns from its first sample and
    refuses a metric whose columns that sample lacks, so the sample with the most references leads
    (the report, and what is written, in that order); a metric it still lacks is unavailable. `judge` (a
    LangChain chat model) adds the judge metrics; AnswerRelevancy also needs `embeddings` (LangChain).
    `progress()` is called once per question scored."""
    from ragas import evaluate
    from ragas.dataset_schema import EvaluationResult

    dataset = to_evaluation_dataset(questions, runs)
    lead = max(range(len(dataset)), key=lambda i: len(dataset[i].get_features()), default=0)
    if lead:
        order = [lead, *(i for i in range(len(dataset)) if i != lead)]
        questions, runs = [questions[i] for i in order], [runs[i] for i in order]
        dataset = to_evaluation_dataset(questions, runs)
    metrics, unavailable = rag_metrics(judged=judge is not None)
    if embeddings is None:  # ragas.evaluate would otherwise make OpenAI embeddings of its own
        for metric in [m for m in metrics if type(m).__name__ == "AnswerRelevancy"]:
            metrics.remove(metric)
            unavailable["AnswerRelevancy"] = "needs embeddings (none given)"
    present = set(dataset.features())
    for metric in list(metrics):
        if not _required(metric) <= present:
            metrics.remove(metric)
            missing = ", ".join(sorted(_required(metric) - present))
            unavailable[type(metric).__name__] = f"the first sample has no {missing} (RAGAS reads the columns from it)"
    per_sample: list[dict[str, float]] = [{} for _ in dataset]
    if metrics:
        # RAGAS logs an ERROR per sample a metric gives NaN (a sample without that metric's reference is
        # one): expected here, and counted below, so not printed.
        executor_log = logging.getLogger("ragas.executor")
        level = executor_log.level
        executor_log.setLevel(logging.CRITICAL)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # evaluate() is deprecated for @experiment
                result = evaluate(
                    dataset,
                    metrics=metrics,
                    llm=judge,
                    embeddings=embeddings,
                    show_progress=False,
                    _pbar=_ScoredJobs(len(metrics), progress) if progress else None,
                )
        finally:
            executor_log.setLevel(level)
        assert isinstance(result, EvaluationResult)  # an Executor only when asked for one (return_executor)
        per_sample = result.scores
    elif progress:
        for _ in dataset:
            progress()
    keys = [_metric_key(metric) for metric in metrics]
    scores: dict[str, list[float]] = {key: [] for key in keys}
    no_verdict: Counter = Counter()
    items = []
    for q, run, sample, values in zip(questions, runs, dataset, per_sample):
        item = {
            "id": q.id,
            "question": q.question,
            "answerable": q.answerable,
            "route": run.route,
            "declined": run.declined,
            "seconds": round(run.seconds, 4),
            "answer": run.answer,
            "context_ids": run.context_ids,
            "scores": {},
        }
        for metric, key in zip(metrics, keys):
            value = float(values[key])
            if value == value:
                scores[key].append(value)
                item["scores"][key] = round(value, 4)
            elif _required(metric) <= set(sample.get_features()):
                no_verdict[key] += 1  # it had what it needs: the metric (or its judge) gave no verdict
        items.append(item)

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    answerable = [r for q, r in zip(questions, runs) if q.answerable is True]
    unanswerable = [r for q, r in zip(questions, runs) if q.answerable is False]
    info = {
        "questions": len(runs),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "decline_rate_unanswerable": mean([float(r.declined) for r in unanswerable]),
        "answer_rate_answerable": mean([float(not r.declined) for r in answerable]),
        # neither an answer nor a decline: a defect of the graph, never a good outcome
        "empty answers (not declined)": sum(1 for r in runs if not r.declined and not r.answer.strip()),
        "routes": ", ".join(f"{route} {n}" for route, n in sorted(Counter(r.route for r in runs).items())),
        "judge": "yes" if judge is not None else "none (offline metrics only)",
        "scored by": "ragas.evaluate on dataset.jsonl (re-score: python rescore.py)",
    }
    info.update({f"{key} (scored)": len(values) for key, values in scores.items()})
    info.update({f"{key} (no verdict)": n for key, n in no_verdict.items()})
    info.update({f"{name} (unavailable)": why for name, why in unavailable.items()})
    return RagReport(
        {key: mean(values) for key, values in scores.items()},
        info,
        [r.seconds for r in runs],
        items,
        list(questions),
        list(runs),
        [type(metric).__name__ for metric in metrics],
    )


def evaluate_rag(
    questions: Sequence[RagQuestion],
    context: dict[str, Any],
    *,
    judge=None,
    embeddings=None,
    progress: Callable[[str], None] | None = None,
) -> RagReport:
    """Run every question through the graph with the run `context` (tenant, data_dir, ...), then score.
    `progress(stage)` is called after each question asked ("ask") and each scored ("score")."""
    runs = []
    for q in questions:
        runs.append(run_question(q.question, context))
        if progress:
            progress("ask")
    return score(
        questions, runs, judge=judge, embeddings=embeddings, progress=(lambda: progress("score")) if progress else None
    )


def retrieved_contexts(run: RagRun) -> list[str]:
    """The sentences of the compressed hits the answer was composed from, in order: what RAGAS scores as
    the retrieved contexts. Sentences, because reference contexts are (CLAP NQ's are) and the non-LLM
    context metrics compare whole strings: a passage is never "similar" to one of its sentences."""
    return [sentence for hit in run.contexts for sentence in split_sentences(hit.get("text", ""))]


def to_evaluation_dataset(questions: Sequence[RagQuestion], runs: Sequence[RagRun]):
    """The filled RAGAS `EvaluationDataset`, scored as it is and written as it is: per question the
    graph's `response` and `retrieved_contexts` (`retrieved_contexts(run)`) with the ids of the hits
    they come from (`retrieved_context_ids`), beside the references."""
    from ragas import EvaluationDataset
    from ragas.dataset_schema import SingleTurnSample

    return EvaluationDataset(
        samples=[
            SingleTurnSample(
                user_input=q.question,
                retrieved_contexts=retrieved_contexts(run),
                retrieved_context_ids=run.context_ids,
                response=run.answer,
                reference=q.reference,
                reference_contexts=q.reference_contexts or None,
                reference_context_ids=q.reference_context_ids or None,
            )
            for q, run in zip(questions, runs)
        ]
    )


def write_dataset(path: Path, dataset) -> Path:
    """`dataset` as `EvaluationDataset.to_jsonl` writes it (one sample per line, no None fields), but
    always in UTF-8 whatever the locale."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in dataset.to_list() if len(dataset) else []:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def sample_rows(report: RagReport) -> list[dict[str, Any]]:
    """One row per question: what was asked and answered, and every metric of the run (None where it
    does not apply to that question or the judge gave no verdict)."""
    rows = []
    for q, run, item in zip(report.questions, report.runs, report.items):
        rows.append(
            {
                "id": q.id,
                "user_input": q.question,
                "response": run.answer,
                "retrieved_contexts": retrieved_contexts(run),
                "retrieved_context_ids": run.context_ids,
                "reference": q.reference,
                "reference_contexts": q.reference_contexts,
                "answerable": q.answerable,
                "declined": run.declined,
                "route": run.route,
                "latency": round(run.seconds, 4),
                **{name: item["scores"].get(name) for name in report.metrics},
            }
        )
    return rows


_RESCORE = '''"""Re-score dataset.jsonl, written by `context-engine eval rag`, with RAGAS alone: the same samples
and the same metrics with their default settings, so the means printed are the run's metrics
(results.json). From this folder, with ragas {version}:

    python rescore.py
{judge_note}"""

import json
import logging
import math
import os
import warnings
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
warnings.simplefilter("ignore", DeprecationWarning)  # ragas 0.4 points these classes to ragas.metrics.collections
# RAGAS logs an ERROR per sample a metric gives no number (one without the reference it needs): expected
logging.getLogger("ragas.executor").setLevel(logging.CRITICAL)

from ragas import EvaluationDataset, evaluate  # noqa: E402
from ragas import metrics as m  # noqa: E402

JUDGE = None  # the LangChain chat model that judged the run, if any
EMBEDDINGS = None  # LangChain embeddings, for AnswerRelevancy

metrics = [{offline}]
if JUDGE is not None:
    metrics += [{judged}]
dataset = EvaluationDataset.from_jsonl(str(Path(__file__).with_name("dataset.jsonl")))
result = evaluate(dataset, metrics=metrics, llm=JUDGE, embeddings=EMBEDDINGS, show_progress=False)
means = {{}}
for name in result.scores[0] if result.scores else []:
    values = [row[name] for row in result.scores if not math.isnan(row[name])]
    means[name] = round(sum(values) / len(values), 4) if values else None
print(json.dumps(means, indent=2))
'''


def rescore_script(report: RagReport) -> str:
    """rescore.py: `ragas.evaluate` on dataset.jsonl with the metric classes of this run."""
    from importlib.metadata import version

    offline = [name for name in report.metric_classes if name not in JUDGE_METRICS]
    judged = [name for name in report.metric_classes if name in JUDGE_METRICS]
    note = (
        (
            "\nThe run had a judge: set JUDGE (and EMBEDDINGS) below to the same models to re-score "
            f"{', '.join(judged)} too; a model's verdicts are only as repeatable as the model.\n"
        )
        if judged
        else ""
    )
    return _RESCORE.format(
        version=version("ragas"),
        judge_note=note,
        offline=", ".join(f"m.{name}()" for name in offline),
        judged=", ".join(f"m.{name}()" for name in judged),
    )


def write_samples(out_dir: Path, report: RagReport) -> dict[str, str]:
    """Write dataset.jsonl (the filled EvaluationDataset, exactly as scored), rescore.py (how to re-score
    it with RAGAS alone), samples.csv and samples.json into `out_dir`; returns their paths by kind."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "dataset": out_dir / "dataset.jsonl",
        "rescore": out_dir / "rescore.py",
        "samples_csv": out_dir / "samples.csv",
        "samples_json": out_dir / "samples.json",
    }
    write_dataset(paths["dataset"], to_evaluation_dataset(report.questions, report.runs))
    paths["rescore"].write_text(rescore_script(report), encoding="utf-8")
    rows = sample_rows(report)
    paths["samples_json"].write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    columns = (
        list(rows[0])
        if rows
        else [
            "id",
            "user_input",
            "response",
            "retrieved_contexts",
            "reference",
            "answerable",
            "declined",
            "latency",
            *report.metrics,
        ]
    )

    def cell(value: Any) -> Any:
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False)
        return "" if value is None else value

    with open(paths["samples_csv"], "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: cell(v) for k, v in row.items()})
    return {kind: str(path) for kind, path in paths.items()}
