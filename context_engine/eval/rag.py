"""RAG evaluation of the whole graph with RAGAS: `context-engine eval rag --dataset clapnq|FILE`.

Each question goes through the main graph (`context_graph`, with the run context of the tenant being
evaluated); the answer and the compressed contexts it was composed from are scored against the
references with RAGAS:

- offline, always: NonLLMContextPrecisionWithReference and NonLLMContextRecall (contexts vs. the
  reference contexts, sentence by sentence), IDBasedContextPrecision/Recall (the contexts' record refs
  vs. the reference ids), NonLLMStringSimilarity and ExactMatch (answer vs. reference), and BleuScore,
  ChrfScore, RougeScore where the reference is whitespace-tokenized text (not Chinese or Japanese) and
  their packages (sacrebleu, rouge-score) are installed;
- with a judge model: Faithfulness and AnswerRelevancy on the answered questions, LLMContextRecall.

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

- `dataset.jsonl`: the filled `EvaluationDataset` (one `SingleTurnSample` per question, `response` and
  `retrieved_contexts` from the graph, `retrieved_context_ids` beside them), exactly as
  `EvaluationDataset.to_jsonl` writes it, so `EvaluationDataset.from_jsonl` loads it and RAGAS can
  re-score it (`ragas.evaluate`, or `metric.single_turn_score` per sample). `retrieved_contexts` are
  the compressed hits' texts; the two NonLLMContext* metrics of this run split them into sentences
  first (the CLAP NQ reference contexts are sentences), so only those two may differ when re-scored;
- `samples.csv` / `samples.json`: one row per question: id, user_input, response, retrieved_contexts,
  retrieved_context_ids, reference, reference_contexts, answerable, declined, route, latency (seconds)
  and every metric (empty / null where the metric does not apply or had no verdict). Lists are JSON
  in the CSV.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any, Callable, Sequence

from context_engine.text import split_sentences

__all__ = ["RagQuestion", "RagRun", "RagReport", "CLAPNQ_TENANT", "clapnq_questions", "clapnq_documents",
           "ingest_clapnq", "load_questions", "run_question", "score", "evaluate_rag", "to_evaluation_dataset",
           "write_dataset", "sample_rows", "write_samples"]

CLAPNQ_TENANT = "clapnq"

# Whitespace-tokenized n-gram metrics say nothing about text written without spaces.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass
class RagQuestion:
    question: str
    reference: str | None = None                 # a reference answer
    reference_contexts: list[str] = field(default_factory=list)
    reference_context_ids: list[str] = field(default_factory=list)
    answerable: bool | None = None               # None: not known
    id: str = ""
    passage_ids: list[str] = field(default_factory=list)  # clapnq: the corpus passages the question was asked of


@dataclass
class RagRun:
    answer: str
    declined: bool
    route: str
    contexts: list[dict[str, Any]]               # the compressed hits the answer was composed from
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


def clapnq_questions(root: Path) -> tuple[list[RagQuestion], list[dict[str, Any]]]:
    """(questions, documents): answerable and unanswerable questions alternating, and every passage as a
    document to ingest (`clapnq_documents` keeps those of the questions asked). `root` is the CLAP NQ
    dev folder; raises ValueError when it is not one."""
    from context_engine.eval.clapnq import load_clapnq

    questions, passages = load_clapnq(Path(root))
    converted = [RagQuestion(q.question, q.answers[0] if q.answers else None, q.reference_contexts,
                             [q.passage_id] if q.answerable else [], q.answerable, q.id, [q.passage_id])
                 for q in questions]
    answerable = [q for q in converted if q.answerable]
    unanswerable = [q for q in converted if not q.answerable]
    alternating = [q for q in chain.from_iterable(zip_longest(answerable, unanswerable)) if q is not None]
    documents = [{"doc_id": pid, "title": d.metadata["title"], "body": d.page_content, "acl": ["*"]}
                 for pid, d in passages.items()]
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
    (report,) = ingest(settings.with_overrides(tenant=CLAPNQ_TENANT), {CLAPNQ_TENANT: {"documents": documents}},
                       progress=progress, public=True, prune=True)
    return report.to_json()["index"]


_RAGAS_LISTS = ("retrieved_contexts", "reference_contexts", "retrieved_context_ids", "reference_context_ids",
                "multi_responses")


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
        raise ValueError(f"{where}: a multi-turn sample (user_input is a list of messages); only single-turn "
                         "samples can be asked")
    fields = {k: v for k, v in row.items() if k in SingleTurnSample.model_fields}
    try:
        sample = SingleTurnSample(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{where}: not a RAGAS SingleTurnSample: {'.'.join(map(str, first['loc']))}: "
                         f"{first['msg']}") from None
    question = (sample.user_input or "").strip()
    if not question:
        raise ValueError(f"{where}: `user_input` is empty")
    return RagQuestion(question, sample.reference or None, list(sample.reference_contexts or []),
                       [str(i) for i in sample.reference_context_ids or []], _bool(row.get("answerable"), where),
                       str(row.get("id") or number))


def _from_legacy(row: dict[str, Any], where: str, number: int) -> RagQuestion:
    question = str(row["question"]).strip()
    if not question:
        raise ValueError(f"{where}: the question is empty")
    contexts, ids = row.get("reference_contexts") or [], row.get("reference_context_ids") or []
    if not isinstance(contexts, list) or not isinstance(ids, list):
        raise ValueError(f"{where}: `reference_contexts` and `reference_context_ids` must be lists")
    return RagQuestion(question, row.get("reference"), [str(c) for c in contexts], [str(i) for i in ids],
                       _bool(row.get("answerable"), where), str(row.get("id", number)))


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
            raise ValueError(f"{path}: a CSV dataset needs a `user_input` column (as EvaluationDataset.to_csv "
                             "writes it)")
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
    for mode, chunk in context_graph.stream({"question": question}, context=context,
                                            stream_mode=["updates", "values"]):
        if mode == "values":
            output = chunk
        elif "compress" in chunk:  # the last compression (after any reflect retry) is the one answered from
            contexts = chunk["compress"]["contexts"]
    return RagRun(output.get("answer", ""), bool(output.get("declined")), output.get("route", ""), contexts,
                  time.perf_counter() - started)


def _offline_metrics() -> tuple[dict[str, Any], dict[str, str]]:
    """(metric objects by name, unavailable metric -> why)."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with warnings.catch_warnings():
        # ragas 0.4.3 points to ragas.metrics.collections, which lacks several of these.
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import (BleuScore, ChrfScore, ExactMatch, IDBasedContextPrecision, IDBasedContextRecall,
                                   NonLLMContextPrecisionWithReference, NonLLMContextRecall, NonLLMStringSimilarity,
                                   RougeScore)
    metrics = {"non_llm_context_precision_with_reference": NonLLMContextPrecisionWithReference(),
               "non_llm_context_recall": NonLLMContextRecall(),
               "id_based_context_precision": IDBasedContextPrecision(),
               "id_based_context_recall": IDBasedContextRecall(),
               "non_llm_string_similarity": NonLLMStringSimilarity(), "exact_match": ExactMatch()}
    unavailable = {}
    for name, factory in (("bleu_score", BleuScore), ("chrf_score", ChrfScore), ("rouge_score", RougeScore)):
        try:
            metrics[name] = factory()
        except ImportError as exc:  # sacrebleu / rouge-score are optional extras of ragas
            unavailable[name] = str(exc)
    return metrics, unavailable


def _llm_metrics(judge, embeddings) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.embeddings import LangchainEmbeddingsWrapper
        from ragas.llms import LangchainLLMWrapper
        from ragas.metrics import AnswerRelevancy, Faithfulness, LLMContextRecall

        llm = LangchainLLMWrapper(judge)
        return {"faithfulness": Faithfulness(llm=llm),
                "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=LangchainEmbeddingsWrapper(embeddings)),
                "llm_context_recall": LLMContextRecall(llm=llm)}


_CONTEXT_METRICS = ("non_llm_context_precision_with_reference", "non_llm_context_recall")
_ID_METRICS = ("id_based_context_precision", "id_based_context_recall")
_NGRAM_METRICS = ("bleu_score", "chrf_score", "rouge_score")


def _applies(name: str, q: RagQuestion, run: RagRun) -> bool:
    """Which questions a metric scores: those with the reference it compares against; faithfulness and
    answer relevancy only answered questions (a decline makes no claims)."""
    if name in _CONTEXT_METRICS:
        return bool(q.reference_contexts)
    if name in _ID_METRICS:
        return bool(q.reference_context_ids)
    if name in ("faithfulness", "answer_relevancy"):
        return not run.declined and bool(run.contexts)
    if name in _NGRAM_METRICS:
        return bool(q.reference) and not _UNSPACED.search(q.reference)
    return bool(q.reference)  # string similarity, exact match, LLM context recall


def score(questions: Sequence[RagQuestion], runs: Sequence[RagRun], *, judge=None, embeddings=None,
          progress: Callable[[], None] | None = None) -> RagReport:
    """RAGAS scores (mean over the questions each metric applies to), rates and latencies.

    `judge` (a LangChain chat model) adds the LLM metrics; AnswerRelevancy also needs `embeddings`.
    `progress()` is called once per question scored."""
    from ragas.dataset_schema import SingleTurnSample
    from ragas.exceptions import RagasOutputParserException

    metrics, unavailable = _offline_metrics()
    if judge is not None:
        metrics.update(_llm_metrics(judge, embeddings))
    scores: dict[str, list[float]] = {name: [] for name in metrics}
    failures: Counter = Counter()
    items = []
    for q, run in zip(questions, runs):
        # Sentence by sentence: reference contexts are sentences, and the non-LLM metrics compare whole strings.
        sentences = [s for hit in run.contexts for s in split_sentences(hit.get("text", ""))]
        item = {"id": q.id, "question": q.question, "answerable": q.answerable, "route": run.route,
                "declined": run.declined, "seconds": round(run.seconds, 4), "answer": run.answer,
                "context_ids": run.context_ids, "scores": {}}
        for name, metric in metrics.items():
            if not _applies(name, q, run):
                continue
            retrieved = sentences if name in _CONTEXT_METRICS else [hit.get("text", "") for hit in run.contexts]
            if not retrieved and name in _CONTEXT_METRICS + _ID_METRICS:
                # Nothing retrieved recalls nothing (RAGAS itself fails on an empty list).
                scores[name].append(0.0)
                item["scores"][name] = 0.0
                continue
            sample = SingleTurnSample(user_input=q.question, response=run.answer, reference=q.reference,
                                      retrieved_contexts=retrieved, reference_contexts=q.reference_contexts or None,
                                      retrieved_context_ids=run.context_ids,
                                      reference_context_ids=q.reference_context_ids or None)
            try:
                value = float(metric.single_turn_score(sample))
            except RagasOutputParserException:  # a judge whose output does not parse: no score, counted
                value = float("nan")
            if value != value:  # NaN: the judge gave no usable verdict
                failures[name] += 1
                continue
            scores[name].append(value)
            item["scores"][name] = round(value, 4)
        items.append(item)
        if progress:
            progress()

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    answerable = [r for q, r in zip(questions, runs) if q.answerable is True]
    unanswerable = [r for q, r in zip(questions, runs) if q.answerable is False]
    info = {"questions": len(runs), "answerable": len(answerable), "unanswerable": len(unanswerable),
            "decline_rate_unanswerable": mean([float(r.declined) for r in unanswerable]),
            "answer_rate_answerable": mean([float(not r.declined) for r in answerable]),
            # neither an answer nor a decline: a defect of the graph, never a good outcome
            "empty answers (not declined)": sum(1 for r in runs if not r.declined and not r.answer.strip()),
            "routes": ", ".join(f"{route} {n}" for route, n in sorted(Counter(r.route for r in runs).items())),
            "judge": "yes" if judge is not None else "none (offline metrics only)"}
    info.update({f"{name} (scored)": len(values) for name, values in scores.items()})
    info.update({f"{name} (no verdict)": n for name, n in failures.items()})
    info.update({f"{name} (unavailable)": why for name, why in unavailable.items()})
    return RagReport({name: mean(values) for name, values in scores.items()}, info,
                     [r.seconds for r in runs], items, list(questions), list(runs))


def evaluate_rag(questions: Sequence[RagQuestion], context: dict[str, Any], *, judge=None, embeddings=None,
                 progress: Callable[[str], None] | None = None) -> RagReport:
    """Run every question through the graph with the run `context` (tenant, data_dir, ...), then score.
    `progress(stage)` is called after each question asked ("ask") and each scored ("score")."""
    runs = []
    for q in questions:
        runs.append(run_question(q.question, context))
        if progress:
            progress("ask")
    return score(questions, runs, judge=judge, embeddings=embeddings,
                 progress=(lambda: progress("score")) if progress else None)


def to_evaluation_dataset(questions: Sequence[RagQuestion], runs: Sequence[RagRun]):
    """The filled RAGAS `EvaluationDataset`: per question the graph's `response` and `retrieved_contexts`
    (the compressed hits it answered from) with their `retrieved_context_ids`, beside the references."""
    from ragas import EvaluationDataset
    from ragas.dataset_schema import SingleTurnSample

    return EvaluationDataset(samples=[
        SingleTurnSample(user_input=q.question, retrieved_contexts=[hit.get("text", "") for hit in run.contexts],
                         retrieved_context_ids=run.context_ids, response=run.answer, reference=q.reference,
                         reference_contexts=q.reference_contexts or None,
                         reference_context_ids=q.reference_context_ids or None)
        for q, run in zip(questions, runs)])


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
        rows.append({"id": q.id, "user_input": q.question, "response": run.answer,
                     "retrieved_contexts": [hit.get("text", "") for hit in run.contexts],
                     "retrieved_context_ids": run.context_ids, "reference": q.reference,
                     "reference_contexts": q.reference_contexts, "answerable": q.answerable,
                     "declined": run.declined, "route": run.route, "latency": round(run.seconds, 4),
                     **{name: item["scores"].get(name) for name in report.metrics}})
    return rows


def write_samples(out_dir: Path, report: RagReport) -> dict[str, str]:
    """Write dataset.jsonl (the filled EvaluationDataset), samples.csv and samples.json into `out_dir`;
    returns their paths by kind."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"dataset": out_dir / "dataset.jsonl", "samples_csv": out_dir / "samples.csv",
             "samples_json": out_dir / "samples.json"}
    write_dataset(paths["dataset"], to_evaluation_dataset(report.questions, report.runs))
    rows = sample_rows(report)
    paths["samples_json"].write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    columns = list(rows[0]) if rows else ["id", "user_input", "response", "retrieved_contexts", "reference",
                                          "answerable", "declined", "latency", *report.metrics]

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
