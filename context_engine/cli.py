"""`context-engine`: ingest, ask, query, people, schema, context-set, feedback, eval, serve.

Exit codes: 0 ok; 2 usage or input error (one line on stderr, never a traceback); 3 a hand-written
pipeline was rejected by validation; 4 the data dir cannot be read or written (a full disk, a damaged
store file: one line too).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INPUT, EXIT_REJECTED, EXIT_IO = 0, 2, 3, 4


class InputError(Exception):
    """Bad input: reported as one line, exit 2."""


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def _print_json(data: Any) -> None:
    from context_engine.service import finite_for_json

    print(json.dumps(finite_for_json(data), ensure_ascii=False, default=_json_default, indent=2, allow_nan=False))


def _import_frozen(name: str) -> Any:
    """Import a module with the cyclic garbage collector paused, then freeze what the import made
    (`gc.freeze`). Why: importing the graph leaves ~150k objects (LangGraph, LangChain, pydantic
    models) that live as long as the process, and the collector would otherwise walk them again and
    again, during the import as the heap grows and in every full collection after it (0.15 s of a
    cold `ask`). A module already imported is returned as it is, nothing frozen again."""
    if name in sys.modules:
        return sys.modules[name]
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _settings(args: argparse.Namespace):
    from context_engine.config import Settings

    return Settings().with_overrides(
        data_dir=getattr(args, "data_dir", None),
        tenant=getattr(args, "tenant", None),
        asker=getattr(args, "as_user", None),
    )


# Rich tables wrap at the width of the terminal; piped, rich assumes 80 columns, and a log or a file
# is read by scrolling, not by a terminal's width: wide enough that no table of ours wraps.
PIPED_WIDTH = 240
# Piped (a log, a CI job), progress is a plain line at most this often, the first after this long:
# a run of a few seconds stays quiet, a long one is never silent and never floods the log.
PLAIN_PROGRESS_EVERY = 5.0


def _console(stderr: bool = False):
    """A rich console: a terminal's own width; piped, $COLUMNS when set, else `PIPED_WIDTH`."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console
    return Console(stderr=stderr, width=PIPED_WIDTH)


def _plain(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Stages:
    """Progress through stages of known length on stderr: rich bars on a terminal; otherwise a plain
    line `description n/N` every `PLAIN_PROGRESS_EVERY` seconds, and `N/N` when a stage that said
    something is done."""

    def __init__(self, stages: dict[str, tuple[str, int]], clock=time.monotonic):
        self.console = _console(stderr=True)
        self.stages = stages  # key -> (description, total)
        self.done = dict.fromkeys(stages, 0)
        self.clock = clock
        self.last_line = clock()
        self.spoke: set[str] = set()
        self.bar = None
        self.tasks: dict[str, int] = {}

    def __enter__(self) -> _Stages:
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.bar.start()
            self.tasks = {
                key: self.bar.add_task(description, total=total) for key, (description, total) in self.stages.items()
            }
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, stage: str) -> None:
        self.done[stage] += 1
        if self.bar is not None:
            self.bar.advance(self.tasks[stage])
            return
        description, total = self.stages[stage]
        now = self.clock()
        if now - self.last_line >= PLAIN_PROGRESS_EVERY or (self.done[stage] == total and stage in self.spoke):
            self.last_line = now
            self.spoke.add(stage)
            _plain(f"{description} {self.done[stage]}/{total}")


class _Progress:
    """Ingest progress on stderr. On a terminal: record counts as lines, embedding as a bar with its
    rate (the slow step). Otherwise the embedding only (reading is thousands of records a second;
    a line there would only crowd the one-line warnings and errors of a quick run): `embedded n/N`
    every `PLAIN_PROGRESS_EVERY` seconds, and `N/N` when it is done after saying something."""

    def __init__(self, clock=time.monotonic):
        self.console = _console(stderr=True)
        self.bar = None
        self.tasks: dict[str, int] = {}
        self.to_embed: dict[str, int] = {}
        self.clock = clock
        self.last_line = clock()
        self.spoke: set[str] = set()  # tenants whose embedding progress was said
        self.started = time.perf_counter()

    def __enter__(self):
        return self.report

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def _plain_report(self, label: str, count: int) -> None:
        tenant, _, what = label.rpartition(": ")
        if what == "chunks to embed":
            self.to_embed[tenant] = count
            self.last_line = self.clock()  # the embedding's first line comes after it has run a while
            return
        if what != "embedded":
            return
        now, total = self.clock(), self.to_embed.get(tenant, 0)
        if now - self.last_line >= PLAIN_PROGRESS_EVERY or (count >= total and tenant in self.spoke):
            self.last_line = now
            self.spoke.add(tenant)
            _plain(f"  {tenant}: embedded {count:,}/{total:,}")

    def report(self, label: str, count: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if not self.console.is_terminal:
            self._plain_report(label, count)
            return
        tenant, _, what = label.rpartition(": ")
        if what == "chunks to embed" and count:
            if self.bar is None:
                self.bar = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    console=self.console,
                )
                self.bar.start()
            self.tasks[tenant] = self.bar.add_task(f"  {tenant}: embedding", total=count)
        elif what == "embedded" and tenant in self.tasks:
            self.bar.update(self.tasks[tenant], completed=count)
        elif what != "chunks to embed":
            rate = count / max(time.perf_counter() - self.started, 1e-3)
            self.console.print(f"  {label}: {count:,} ({rate:,.0f}/s)")


def cmd_ingest(args: argparse.Namespace) -> int:
    from context_engine import service

    settings = _settings(args)
    request = service.SourceRequest(
        args.source,
        [Path(p) for p in args.paths] if args.source != "mongodb" else [],
        repo=args.repo,
        since=args.since,
        full=args.prune,
    )
    if args.source in ("json", "mongodb"):
        request.own = _own_options(args)
    else:
        given = [f"--{name.replace('_', '-')}" for name in OWN_OPTIONS if getattr(args, name) not in (None, [])]
        if given:
            raise InputError(f"{', '.join(given)}: for `ingest json` and `ingest mongodb` only")
    if args.source == "mongodb":
        if len(args.paths) != 1:
            raise InputError("`ingest mongodb` needs one MongoDB URI (mongodb://..., mongodb+srv://...)")
        request.uri, request.db, request.source_collection = args.paths[0], args.db, args.source_collection
        if args.filter:
            try:
                request.query = service.mongodb_filter(_json_argument(args.filter, "--filter"))
            except service.InvalidInput as exc:
                raise InputError(f"--filter: {exc}") from None
        request.limit = args.limit or 0
    try:
        reading = service.read_source(settings, request)
        read = reading.read
        if not args.json:
            for note in read.notes:
                print(f"{read.kinds[settings.tenant][0].name}: {note}")
        for warning in read.warnings:
            print(f"context-engine: warning: {warning}", file=sys.stderr)
        with _Progress() as progress:
            out = service.ingest(
                settings, reading, progress=progress, index=not args.no_index, prune=args.prune, public=args.public
            )
    except service.InvalidInput as exc:
        raise InputError(str(exc)) from None
    if args.json:
        _print_json(out)
    else:
        for r in out:
            counts = ", ".join(
                f"{n} {v['inserted']}+{v['updated']}~{v['unchanged']}=" for n, v in r["collections"].items()
            )
            total = sum(v["inserted"] + v["updated"] + v["unchanged"] for v in r["collections"].values())
            print(
                f"tenant {r['tenant']}: {total:,} records ({counts.replace('=', '')}; new+updated~unchanged), "
                f"{r['skipped']} skipped, {r['seconds']:.1f}s"
            )
            if r["index"]:
                ix = r["index"]
                print(
                    f"  semantic index: {ix['chunks']:,} chunks (+{ix['added']} ~{ix['updated']} -{ix['removed']}), "
                    f"{ix['embedded']:,} embedded, {ix['cache_hits']:,} from the embedding cache, {ix['seconds']:.1f}s"
                )
            if r["removed"]:
                print(
                    "  removed (no longer in the source): "
                    + ", ".join(f"{n} {count:,}" for n, count in r["removed"].items())
                )
            if r["readable_by_nobody"]:
                print(
                    f"  access: {r['readable_by_nobody']:,} new records whose source does not say who may read them "
                    "are readable by nobody; pass --public if the whole tenant may read this source",
                    file=sys.stderr,
                )
            if r["people_conflicts"]:
                print(f"  people: {r['people_conflicts']} possible matches left apart (see `context-engine people`)")
            for problem in r["problems"]:
                print(f"  skipped {problem}", file=sys.stderr)
    return EXIT_OK


OWN_OPTIONS = (
    "collection",
    "key",
    "ref_prefix",
    "noun",
    "time",
    "person",
    "text",
    "value",
    "reference",
    "access_field",
    "spec",
    "db",
    "source_collection",
    "filter",
    "limit",
)


def _pairs(values: list[str] | None, option: str, shape: str) -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        left, sep, right = value.partition("=")
        if not sep or not left or not right:
            raise InputError(f"{option} {value!r}: expected {shape}")
        out.append((left, right))
    return out


def _own_options(args: argparse.Namespace):
    """The operator's description of an own collection (`ingest json|mongodb`), checked: one line for
    a name or field the engine cannot take."""
    from context_engine import service

    if not args.collection:
        raise InputError(f"`ingest {args.source}` needs --collection NAME (the collection the records go to)")
    described = [
        f"--{name.replace('_', '-')}"
        for name in ("key", "ref_prefix", "noun", "time", "person", "text", "value", "reference")
        if getattr(args, name) not in (None, [])
    ]
    try:
        if args.spec:
            if described:
                raise InputError(f"--spec FILE says the whole spec: leave out {', '.join(described)}")
            return service.own_options_from_spec(Path(args.spec), args.collection, args.access_field, args.public)
        people = {}
        for role, target in _pairs(args.person, "--person", "ROLE=FIELD[:HANDLE]"):
            path, _, handle = target.partition(":")
            people[role] = (path, handle or "github")
            if people[role][1] not in service.HANDLE_KINDS:
                raise InputError(
                    f"--person {role}={target}: handle {handle!r} is not one of {', '.join(service.HANDLE_KINDS)}"
                )
        return service.own_options(
            args.collection,
            key=args.key,
            ref_prefix=args.ref_prefix,
            noun=args.noun,
            times=dict(_pairs(args.time, "--time", "ROLE=FIELD")),
            people=people,
            text=args.text or [],
            values=dict(_pairs(args.value, "--value", "ROLE=FIELD")),
            references=dict(_pairs(args.reference, "--reference", "FIELD=COLLECTION")),
            access_field=args.access_field,
            public=args.public,
        )
    except service.InvalidInput as exc:
        raise InputError(str(exc)) from None


ASKER_HELP = (
    "the asker, named exactly: a GitHub login, Slack user id, Jira/Linear account, verified e-mail or "
    "system:account (github:login, slack:U...); never a name or handle (default: public records only)"
)


def _check_tenant_and_asker(settings) -> None:
    """The tenant must have data and `--as` must name one account exactly (`PeopleDirectory.asker`:
    never a name, a handle or a near miss); both are input errors."""
    from context_engine import service

    try:
        service.check_scope(settings)
    except service.NoTenantData as exc:
        raise InputError(str(exc)) from None
    except (service.UnknownPerson, service.AmbiguousPerson) as exc:
        raise InputError(f"--as: {exc.args[0]}") from None


def cmd_ask(args: argparse.Namespace) -> int:
    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    _import_frozen("context_engine.assistant.graph")  # before `service.ask` imports it: frozen, see above
    try:
        answer = service.ask(settings, args.question or "", now=args.now)
    except service.InvalidInput as exc:
        raise InputError(str(exc)) from None
    result = answer.output
    # Pipelines are in Extended JSON, so any of them can be re-run with `context-engine query`.
    if args.json:
        _print_json(answer.to_json())
    else:
        if result.get("model_error"):  # the answer says so too; stderr tells whoever reads only the log
            print(f"context-engine: warning: {result['model_error']}", file=sys.stderr)
        print(result.get("answer", ""))
        if result.get("citations"):
            print("\nSources:")
            for n, cite in enumerate(result["citations"], 1):
                print(
                    f"[{cite.get('n', n)}] "
                    + " · ".join(str(x) for x in (cite.get("title"), cite.get("id"), cite.get("url")) if x)
                )
        for q in result.get("queries", []):
            if "first_step" in q:  # a nested question: the query whose top result the next one is for
                step = q["first_step"]
                said = json.dumps(step["pipeline"], ensure_ascii=False, default=_json_default)
                print(f"\nfirst query: {step['collection']} {said}")
            if "pipeline" in q:
                print(
                    f"\nquery: {q['collection']} {json.dumps(q['pipeline'], ensure_ascii=False, default=_json_default)}"
                )
                for i, attempt in enumerate(q["attempts"], 1):
                    if attempt["error"]:
                        print(f"  attempt {i} rejected: {attempt['error']}")
            else:
                found = ", ".join(f"{n} {name}" for name, n in q["retrievers"].items())
                print(f"\nsearch: {q['search']!r} ({found}; fusion {q['fusion']}, reranker {q['reranker']})")
    return EXIT_OK


def _json_argument(value: str, what: str) -> Any:
    """A JSON value given inline or as a FILE holding it."""
    text = value
    if not value.lstrip().startswith(("{", "[")):
        path = Path(value)
        if not path.is_file():
            raise InputError(f"{what}: {value!r} is neither JSON nor a file")
        if path.stat().st_size > 512_000:
            raise InputError(f"{what}: {value} is over 512,000 bytes")
        text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON: {exc.msg} at position {exc.pos}") from None
    except (ValueError, RecursionError):
        raise InputError(f"{what}: a number too long or nesting too deep to read") from None


def cmd_context_set(args: argparse.Namespace) -> int:
    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    try:
        if args.action == "add":
            if not args.item:
                raise InputError("`context-set add` needs a template: JSON or a FILE holding one")
            name = service.add_template(settings, _json_argument(args.item, "template"), replace=args.replace)
            print(f"added template {name!r} to tenant {settings.tenant}")
            return EXIT_OK
        if args.action == "remove":
            if not args.item:
                raise InputError("`context-set remove` needs a template NAME")
            service.remove_template(settings, args.item)
            print(f"removed template {args.item!r} from tenant {settings.tenant}")
            return EXIT_OK
        view = service.context_set(settings)
    except service.ContextSetError as exc:
        raise InputError(f"context set: {exc}") from None
    if args.action == "export":
        _print_json(service.export_context_set(settings))
        return EXIT_OK
    if args.action == "test":
        return _test_template(args, settings)
    if args.json:
        _print_json(view.to_json())
        return EXIT_OK
    cs = view.context_set
    print(
        f"context set of tenant {settings.tenant} ({view.source}): {len(cs.templates)} templates, "
        f"{len(cs.facets)} facets"
    )
    for t in cs.templates:
        params = ", ".join(f"{k}: {v}" for k, v in t.params.items()) or "no parameters"
        print(
            f"  template {t.name}: {t.question!r} -> {t.collection} ({params})" + (f" [{t.source}]" if t.source else "")
        )
    for f in cs.facets:
        print(f"  facet {f.name} ({f.collection}): {', '.join(f.phrases)}")
    if cs.inactive:
        print(f"  not used here (their fields are not in this tenant's data): {', '.join(cs.inactive)}")
    return EXIT_OK


def _test_template(args: argparse.Namespace, settings) -> int:
    """Run a template's example question through the engine; show the engine's plan beside the
    template's own (bound to the example's values) and whether their results agree."""
    from context_engine import service

    try:
        report = service.try_template(settings, args.item or "", now=args.now)
    except service.UnknownTemplate as exc:
        raise InputError(f"{exc} (see `context-engine context-set list`)") from None
    except service.InvalidInput as exc:
        raise InputError(str(exc)) from None
    if args.json:
        _print_json(report)
        return EXIT_OK
    template, plan, matched = report["template_plan"], report["engine_plan"], report["matched_template"]
    print(f"template {report['template']}: {report['question']!r}")
    print(
        f"  template plan: {template['collection']} {json.dumps(template['pipeline'], ensure_ascii=False)}"
        f" ({report['template_rows']} rows)"
    )
    if plan is not None:
        print(
            f"  engine plan:   {plan['collection']} {json.dumps(plan['pipeline'], ensure_ascii=False)}"
            f" ({report['engine_outcome']}, {report['engine_rows']} rows, planner {plan['planner']})"
        )
    else:
        print(f"  engine: {report['engine_outcome']}: {report['engine_message']}")
    print(
        f"  same result: {'yes' if report['same_result'] else 'no'}; the question matches template "
        + (f"{matched} (score {report['match_score']:.0f})" if matched else "none")
    )
    return EXIT_OK


def cmd_feedback(args: argparse.Namespace) -> int:
    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    corrected = _json_argument(args.plan, "--plan") if args.plan else None
    try:
        out = service.feedback(
            settings, "up" if args.up else "down", question=args.question, note=args.note, corrected=corrected
        )
    except (service.FeedbackError, service.ContextSetError) as exc:
        raise InputError(f"feedback: {exc}") from None
    if args.json:
        _print_json(out)
    else:
        print(
            f"feedback #{out['id']} ({out['rating']}) on {out['question']!r} stored"
            + (f"; its plan is now template {out['template']!r} of tenant {settings.tenant}" if out["template"] else "")
        )
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from context_engine import service

    try:
        pipeline = json.loads(args.pipeline)
    except json.JSONDecodeError as exc:
        raise InputError(f"PIPELINE_JSON is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except ValueError:  # Python's own cap on the digits of an integer it reads (4,300)
        raise InputError("PIPELINE_JSON has a number too long to read; MongoDB numbers fit 64 bits") from None
    settings = _settings(args)
    _check_tenant_and_asker(settings)
    try:
        rows = service.query(settings, args.collection, pipeline)
    except service.UnknownCollection as exc:
        raise InputError(str(exc)) from None
    except service.PipelineRejected as exc:
        if args.json:
            _print_json({"errors": exc.errors})
        else:
            for error in exc.errors:
                print(f"rejected: {error}", file=sys.stderr)
        return EXIT_REJECTED
    except service.ExecutionError as exc:
        raise InputError(f"the database refused the query: {exc}") from None
    _print_json({"records": rows})
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    schemas = service.schema(settings)
    if args.json:
        _print_json({name: schema.to_json() for name, schema in schemas.items()})
    else:
        for schema in schemas.values():
            print(schema.describe())
            print()
    return EXIT_OK


def cmd_people(args: argparse.Namespace) -> int:
    from rich.table import Table

    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    directory = service.people(settings)
    people = directory.people
    if args.json:
        _print_json(directory.to_json())
        return EXIT_OK
    table = Table(title=f"people of tenant {settings.tenant}: {len(people):,}")
    for column in (
        "name",
        "github",
        "slack",
        "email",
        "jira",
        "team",
        "access (one line per account group)",
        "merged by",
    ):
        table.add_column(column, overflow="fold")
    for p in people:
        # Evidence that joined accounts grants access; the rest (names, handles, unverified e-mails)
        # only helps find the person in questions.
        evidence = [
            f"{e['rule']} {e['detail']} ({'grants access' if e.get('access') else 'finding only'})"
            for e in p.get("evidence") or []
        ]
        table.add_row(
            str(p.get("name") or ""),
            p.get("login") or "",
            p.get("slack_handle") or p.get("slack_id") or "",
            ", ".join(p.get("emails") or ([p["email"]] if p.get("email") else [])),
            p.get("jira") or "",
            p.get("team") or "",
            "\n".join(", ".join(g["principals"]) for g in p.get("accounts") or []),
            "\n".join(evidence),
        )
    console = _console()
    console.print(table)
    for conflict in directory.conflicts:
        console.print(f"conflict: {conflict.name}: {', '.join(conflict.candidates)} ({conflict.reason})")
    return EXIT_OK


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from context_engine.chat_models import chat_model
    from context_engine.eval.retrieval import METRICS, BeirInputError, evaluate_retrieval
    from context_engine.service import RerankerError

    if not args.beir or not args.split:
        raise InputError(
            "`eval retrieval` needs --beir DIR (corpus.jsonl[.gz], queries.jsonl, qrels/) and --split SPLIT"
        )
    settings = _settings(args)
    try:
        report = evaluate_retrieval(
            Path(args.beir),
            args.split,
            settings,
            limit=args.limit,
            llm=chat_model(settings) if settings.reranker == "llm" else None,
            progress=lambda message: print(message, file=sys.stderr, flush=True),
        )
    except (BeirInputError, RerankerError) as exc:
        raise InputError(str(exc)) from None
    if args.json:
        _print_json(report)
    else:
        weights = f"bm25 {settings.bm25_weight:g}, dense {settings.dense_weight:g}"
        print(
            f"{args.beir} ({args.split}): fusion {settings.fusion} ({weights}"
            + (f", k {settings.rrf_k}" if settings.fusion == "rrf" else "")
            + f"), reranker {settings.reranker} over {settings.rerank_k}, default retrieve_k {settings.retrieve_k}"
        )
        print(f"{'run':<10}" + "".join(f"{m:>12}" for m in METRICS))
        for name, metrics in report.items():
            print(f"{name:<10}" + "".join(f"{metrics[m]:>12.4f}" for m in METRICS))
    return EXIT_OK


def cmd_eval_rag(args: argparse.Namespace) -> int:
    import tempfile

    from context_engine.eval.clapnq import CLAPNQ_ENV
    from context_engine.eval.rag import (
        CLAPNQ_TENANT,
        clapnq_documents,
        clapnq_questions,
        evaluate_rag,
        ingest_clapnq,
        load_questions,
        write_samples,
    )
    from context_engine.eval.report import summary_table, write_report

    if not args.dataset:
        raise InputError(
            "`eval rag` needs --dataset clapnq|FILE (FILE: a RAGAS EvaluationDataset .jsonl/.csv "
            "or JSON lines with `question`)"
        )
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, not {args.limit}")
    if args.half and args.dataset != "clapnq":
        raise InputError("--half is for --dataset clapnq")
    if args.clapnq and args.dataset != "clapnq":
        raise InputError("--clapnq is for --dataset clapnq")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"--out: {args.out} exists and is not a folder")
    settings = _settings(args)
    timings: dict[str, Any] = {}  # shown in the info table
    if args.dataset == "clapnq":
        if args.as_user:  # checked before minutes of embedding: ingest_clapnq writes passages, never people
            raise InputError(
                f"--as: tenant {CLAPNQ_TENANT} has no people (its passages are public), so "
                f"{args.as_user!r} names nobody there; --as is for a --dataset FILE asked of a tenant"
            )
        root = args.clapnq or os.environ.get(CLAPNQ_ENV)
        if not root:
            raise InputError(
                f"--dataset clapnq needs the CLAP NQ dev folder: pass --clapnq DIR (the folder with "
                f"clapnq_dev_answerable.jsonl and clapnq_dev_unanswerable.jsonl) or set ${CLAPNQ_ENV}"
            )
        try:
            questions, documents = clapnq_questions(Path(root))
        except ValueError as exc:
            raise InputError(f"--clapnq: {exc}") from None
        if args.half:
            from context_engine.eval.clapnq import half_of

            questions = [q for q in questions if half_of(q.id) == args.half]
        if args.limit:
            # Only the passages of the questions asked: a slice embeds a handful, not the ~600 of the dev set.
            # (Without --limit the corpus is every passage, --half too, as the published figures were run.)
            questions = questions[: args.limit]
            documents = clapnq_documents(questions, documents)
        out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="eval-rag-"))
        # Its own data dir: the CLAP NQ passages never mix with a real tenant's data.
        settings = settings.with_overrides(data_dir=str(out_dir / "data"), tenant=CLAPNQ_TENANT)
        started = time.perf_counter()
        with _Progress() as progress:
            index = ingest_clapnq(settings, documents, progress=progress)
        timings["ingest and embed (s)"] = round(time.perf_counter() - started, 2)
        if index:
            timings["passages embedded (cache hits)"] = f"{index['embedded']} ({index['cache_hits']})"
    else:
        path = Path(args.dataset)
        if not path.is_file():
            raise InputError(f"--dataset: {path} is neither `clapnq` nor a readable file")
        try:
            questions = load_questions(path)
        except ValueError as exc:
            raise InputError(f"--dataset: {exc}") from None
        questions = questions[: args.limit]
        _check_tenant_and_asker(settings)
        out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="eval-rag-"))
    judge = embeddings = None
    if args.judge:
        from context_engine.chat_models import chat_model
        from context_engine.retrievers.dense import make_embeddings

        judge = chat_model(settings.with_overrides(model=args.judge))
        if judge is None:
            raise InputError("--judge needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY)")
        embeddings = make_embeddings(settings.embedding_model)
    context = {"tenant": settings.tenant, "user": settings.asker, "data_dir": str(settings.data_dir)}
    marks = {"ask": None, "score": None}
    started = time.perf_counter()

    with _Stages({"ask": ("asking the graph", len(questions)), "score": ("scoring (RAGAS)", len(questions))}) as stages:

        def advance(stage: str) -> None:
            marks[stage] = time.perf_counter()
            stages.advance(stage)

        report = evaluate_rag(questions, context, judge=judge, embeddings=embeddings, progress=advance)
    asked = marks["ask"] or started
    timings["asking the graph (s)"] = round(asked - started, 2)
    timings["scoring (s)"] = round((marks["score"] or asked) - asked, 2)
    info = {"dataset": args.dataset, **({"asker": settings.asker} if settings.asker else {}), **report.info}
    if args.dataset == "clapnq":
        info["corpus passages"] = len(documents)
    info.update(timings)
    title = f"eval rag: {args.dataset}" + (f" ({args.half} half)" if args.half else "")
    rates = {
        f"decline rate (of {report.info['unanswerable']} unanswerable)": report.info["decline_rate_unanswerable"],
        f"answer rate (of {report.info['answerable']} answerable)": report.info["answer_rate_answerable"],
    }
    files = write_report(
        out_dir,
        title=title,
        metrics=report.metrics,
        info=info,
        latencies=report.latencies,
        items=report.items,
        rates=rates,
    )
    files.update(write_samples(out_dir, report))
    if args.json:
        from context_engine.eval.report import latency_summary

        _print_json(
            {"metrics": report.metrics, "info": info, "latency": latency_summary(report.latencies), "files": files}
        )
    else:
        _console().print(summary_table(title, report.metrics, info, report.latencies))
        print("wrote " + ", ".join(files.values()))
    return EXIT_OK


def _missing_extra(command: str, extra: str, *modules: str) -> bool:
    """True, after one line on stderr, when a module of an optional extra is not installed."""
    import importlib.util

    if all(importlib.util.find_spec(module) is not None for module in modules):
        return False
    print(
        f"context-engine {command} needs the {extra} extra: pip install 'relational-context-engine[{extra}]'",
        file=sys.stderr,
    )
    return True


def cmd_eval(args: argparse.Namespace) -> int:
    if args.kind == "retrieval":
        return cmd_eval_retrieval(args)
    if args.kind == "rag":
        if _missing_extra("eval rag", "eval", "ragas", "matplotlib"):
            return EXIT_INPUT
        return cmd_eval_rag(args)
    if args.kind == "compare":
        return cmd_eval_compare(args)
    if args.kind == "conversations":
        return cmd_eval_conversations(args)
    if args.kind == "tend":
        return cmd_eval_tend(args)
    if args.out and _missing_extra("eval structured --out", "eval", "matplotlib"):  # the report's chart
        return EXIT_INPUT
    if args.from_feedback:
        return _eval_from_feedback(args)
    if not args.questions:
        raise InputError("`eval structured` needs --questions FILE (or --from-feedback)")
    path = Path(args.questions)
    if not path.is_file():
        raise InputError(f"cannot read {path}: no such file")
    return _eval_structured(args, path)


def cmd_eval_tend(args: argparse.Namespace) -> int:
    """TEND: every database a tenant of generic collections in a store of its own (a new temporary
    data dir unless --data-dir), its questions asked, execution accuracy printed."""
    import tempfile

    from context_engine.eval.tend import TendError, evaluate, parse_sample, write_outcomes

    if not args.data:
        raise InputError("`eval tend` needs --data DIR (the TEND folder: test.json, train.json, mongodb_data/)")
    if args.planner == "auto":
        raise InputError("`eval tend` takes --planner offline or llm")
    settings = _settings(args)
    if not getattr(args, "data_dir", None):
        settings = settings.with_overrides(data_dir=tempfile.mkdtemp(prefix="eval-tend-"))
    if args.planner == "llm" and not settings.llm_configured:
        raise InputError("--planner llm needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")

    def show(o) -> None:
        print(
            f"{'ok  ' if o.correct else 'FAIL'} {o.db:<22} {o.shape:<12} {o.seconds * 1000:8.1f} ms  {o.question}"
            + (f"\n      {o.why}" if o.why and not o.correct else ""),
            flush=True,
        )

    try:
        report = evaluate(
            Path(args.data),
            settings,
            split=args.split or "test",
            planner=args.planner,
            limit=args.limit,
            sample=parse_sample(args.sample),
            progress=None if args.json else show,
        )
    except TendError as exc:
        raise InputError(str(exc)) from None
    summary = report.summary()
    if args.out:
        write_outcomes(report, Path(args.out))
    if args.json:
        _print_json(summary)
        return EXIT_OK
    print(f"TEND {summary['split']}, planner {summary['planner']}, questions: {summary['sample']}")
    print(
        f"execution accuracy {summary['accuracy']:.1%} ({summary['correct']}/{summary['total']}), "
        f"declined {summary['declined']}, {summary['median_seconds']} s per question (median), "
        f"{summary['p90_seconds']} s (p90)"
    )
    for title, table in (("shape", summary["by_shape"]), ("database", summary["by_database"])):
        print(f"{title:<24} {'correct':>11} {'accuracy':>8} {'declined':>8}")
        for name, row in table.items():
            print(f"{name:<24} {row['correct']:>5}/{row['total']:<5} {row['accuracy']:>8.1%} {row['declined']:>8}")
    if summary["gold_failures"]:
        print(f"gold queries that do not run (not scored): {len(summary['gold_failures'])}")
    if summary["missing_databases"]:
        print(f"databases missing from --data (not scored): {', '.join(summary['missing_databases'])}")
    return EXIT_OK


def _eval_from_feedback(args: argparse.Namespace) -> int:
    """The tenant's feedback as a question file, evaluated as any other."""
    import tempfile

    from context_engine import service

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    items = service.feedback_questions(settings)
    if not items:
        raise InputError(
            f"tenant {settings.tenant} has no feedback with a plan to replay (give some: "
            "`context-engine feedback --up`)"
        )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "feedback.jsonl"
        path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
        return _eval_structured(args, path)


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from context_engine.eval.compare import ConfigError, compare, parse_config

    if not args.questions or not args.config_a or not args.config_b:
        raise InputError("`eval compare` needs --questions FILE, --a CONFIG and --b CONFIG")
    path = Path(args.questions)
    if not path.is_file():
        raise InputError(f"cannot read {path}: no such file")
    settings = _settings(args)
    try:
        configs = [parse_config(args.config_a), parse_config(args.config_b)]
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    if any(c.planner != "offline" for c in configs) and not settings.llm_configured:
        raise InputError("configuration `model` needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")
    report = compare(path, settings, configs, limit=args.limit)
    if args.json:
        _print_json(report.to_json())
    else:
        print(report.table())
    return EXIT_OK


def cmd_eval_conversations(args: argparse.Namespace) -> int:
    from context_engine.eval.conversations import evaluate_conversations
    from context_engine.eval.structured import QuestionFileError

    if not args.questions:
        raise InputError("`eval conversations` needs --questions FILE (JSON lines, one conversation each)")
    if args.planner != "offline":
        raise InputError("`eval conversations` runs offline only: drop --planner")
    path = Path(args.questions)
    if not path.is_file():
        raise InputError(f"cannot read {path}: no such file")

    def show(r) -> None:
        mark = "ok  " if r.correct else "ERR " if r.error else "FAIL"
        print(
            f"{mark} {r.conversation:>6}.{r.turn} {r.kind:<14} {r.seconds * 1000:8.1f} ms  {r.question}"
            + (f"\n      {r.error or r.detail}" if r.error or r.detail else ""),
            flush=True,
        )

    try:
        report = evaluate_conversations(path, _settings(args), limit=args.limit, progress=None if args.json else show)
    except QuestionFileError as exc:
        raise InputError(str(exc)) from None
    summary = report.to_json()
    if args.json:
        _print_json(summary)
        return EXIT_OK
    print(f"{'kind':<15} {'correct':>9} {'accuracy':>8} {'flagged':>8} {'silent':>7} {'errors':>7}")
    for name, row in summary["by_kind"].items():
        print(
            f"{name:<15} {row['correct']:>4}/{row['total']:<4} {row['accuracy']:>8.1%} {row['flagged']:>8} "
            f"{row['silent']:>7} {row['errors']:>7}"
        )
    print(
        f"turn accuracy: {summary['turns_correct']}/{summary['turns']} = {report.turn_accuracy:.1%}; conversation "
        f"accuracy (every turn right): {summary['conversations_correct']}/{summary['conversations']} = "
        f"{report.conversation_accuracy:.1%}; wrong: {summary['wrong_flagged']} flagged (declined or not "
        f"understood), {summary['wrong_silent']} silent, {summary['errors']} errors; median "
        f"{summary['median_seconds']:.2f} s per turn"
    )
    return EXIT_OK


def _eval_structured(args: argparse.Namespace, path: Path) -> int:
    from context_engine.eval.structured import QuestionFileError, evaluate

    settings = _settings(args)
    if args.planner != "offline" and not settings.llm_configured:
        raise InputError(f"--planner {args.planner} needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")

    def show(r) -> None:
        mark = "ok  " if r.correct else "FAIL"
        print(
            f"{mark} {r.id:>5} {r.planner:>7} {r.seconds * 1000:8.1f} ms  {r.question}"
            + (f"\n      {r.detail}" if r.detail else ""),
            flush=True,
        )

    try:
        report = evaluate(path, settings, planner=args.planner, limit=args.limit, progress=None if args.json else show)
    except QuestionFileError as exc:
        raise InputError(str(exc)) from None
    summary = report.to_json()
    files = None
    if args.out:
        from context_engine.eval.report import write_report

        files = write_report(
            Path(args.out),
            title=f"eval structured: {path.name}",
            metrics={"execution_accuracy": round(report.accuracy, 4)},
            info={
                "correct": sum(r.correct for r in report.results),
                "total": len(report.results),
                "planner": args.planner,
                "wrong_flagged": summary["wrong_flagged"],
                "wrong_silent": summary["wrong_silent"],
            },
            latencies=[r.seconds for r in report.results],
            items=[r.__dict__ for r in report.results],
        )
    if args.json:
        _print_json({**summary, **({"files": files} if files else {})})
    else:
        if args.by_class:
            print(f"{'class':<14} {'correct':>9} {'accuracy':>8} {'flagged':>8} {'silent':>7}")
            for name, row in summary["by_class"].items():
                print(
                    f"{name:<14} {row['correct']:>4}/{row['total']:<4} {row['accuracy']:>8.1%} "
                    f"{row['flagged']:>8} {row['silent']:>7}"
                )
        model = (
            f", {summary['median_seconds_model']:.2f} s where the model planned"
            if summary["median_seconds_model"] is not None
            else ""
        )
        print(
            f"execution accuracy: {summary['correct']}/{summary['total']} = {report.accuracy:.1%}; wrong: "
            f"{summary['wrong_flagged']} flagged (declined or not understood), {summary['wrong_silent']} silent"
            + (
                f" ({listed} of the wrong listed exactly the records a count asked for)"
                if (listed := summary["wrong_but_listed_the_count"])
                else ""
            )
            + f"; median {summary['median_seconds']:.2f} s per question{model}"
        )
        if files:
            print(f"wrote {files['json']}, {files['markdown']}, {files['chart']}")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    if _missing_extra("serve", "server", "fastapi", "langserve", "sse_starlette", "uvicorn"):
        return EXIT_INPUT
    from context_engine.server import create_app, load_keys

    try:
        keys = load_keys(args.keys)
    except (OSError, ValueError) as exc:
        raise InputError(f"--keys: {exc}") from None
    settings = _settings(args)
    try:
        app = create_app(settings, keys)
    except ValueError as exc:  # a key's person is not in its tenant's directory
        raise InputError(f"--keys: {exc}") from None
    _warn_unreachable_models(settings)
    _serve_until_signalled(app, args.host, args.port)
    return EXIT_OK


def _warn_unreachable_models(settings: Any) -> None:
    """One warning line per configured model endpoint that does not accept a connection. A warning,
    not a refusal: the engine answers offline meanwhile (each answer saying the model failed, and each
    run trying the model again), and a model server started after the engine is not a reason to stay down."""
    from context_engine.chat_models import probe_endpoints

    for problem in probe_endpoints(settings):
        print(f"context-engine: warning: {problem}; answers fall back to the offline rules and say so", file=sys.stderr)


def _serve_until_signalled(app: Any, host: str, port: int, **config: Any) -> None:
    """uvicorn until SIGTERM or Ctrl-C, which also stop the runs in progress: uvicorn alone waits
    for them (a query in a worker thread could hold the process for minutes); `SHUTDOWN` makes each
    stop at its next document or graph step, and whatever is left is cut after a few seconds."""
    import uvicorn

    from context_engine.service import SHUTDOWN

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            SHUTDOWN.cancel("the server is shutting down")
            super().handle_exit(sig, frame)

    Server(uvicorn.Config(app, host=host, port=port, timeout_graceful_shutdown=3, **config)).run()


def cmd_status(args: argparse.Namespace) -> int:
    from context_engine import DISTRIBUTION, other_distributions, service

    for other in other_distributions():  # PyPI's `context-engine` is another project with the same package
        print(
            f"context-engine: warning: the context_engine package is also installed by {other!r}, not this "
            f"project ({DISTRIBUTION}); they overwrite each other's files: pip uninstall {other}, then "
            f"pip install --force-reinstall {DISTRIBUTION}",
            file=sys.stderr,
        )
    settings = _settings(args)
    report = service.status(settings, [settings.tenant] if args.tenant else None)
    if args.json:
        _print_json(report)
        return EXIT_OK
    busy = f"an ingest is writing (pid {report['writer']})" if report["writer"] else "no ingest running"
    print(f"{settings.data_dir}: store generation {report['store_generation']}; {busy}")
    if report["damaged_rows"]:
        print(
            "  damaged rows skipped (every other record answers as usual): "
            + ", ".join(f"{name} {n:,}" for name, n in report["damaged_rows"].items())
        )
    for tenant, info in report["tenants"].items():
        records = ", ".join(f"{name} {n:,}" for name, n in info["records"].items()) or "no records"
        index = info["index"]
        if index is None:
            state = "no semantic index (content questions need `ingest` without --no-index)"
        elif index.get("damaged"):
            state = "semantic index damaged: re-run ingest"
        elif index["pending"]:
            state = (
                f"semantic index: {index['chunks']:,} chunks, {index['pending']:,} still embedding "
                "(keyword search covers them meanwhile)"
            )
            if running := index.get("embedding"):
                state += (
                    f"; {running['done']:,}/{running['total']:,} embedded at {running['per_second']}/s, "
                    f"about {running['eta_seconds']:,} s left"
                )
        else:
            state = f"semantic index: {index['chunks']:,} chunks, all embedded ({index['model']}, {index['built_at']})"
        if index is not None and not index.get("damaged"):
            state += "\n    " + _index_freshness(index, report["store_generation"])
        print(f"  {tenant}: {records}\n    {state}")
    return EXIT_OK


def _index_freshness(index: dict[str, Any], store_generation: int) -> str:
    """Whether the index holds what the store holds now: `status` never calls a lagging index current."""
    lag = index.get("lag")
    if lag is None:  # MongoDB, or an index stamped before row numbers: the commit it was built at
        return (
            f"index built at store generation {index.get('store_generation')} (store now at {store_generation}); "
            "records written since are not counted here"
        )
    if not lag["written_since"]:
        return "index up to date with the store"
    return (
        f"index BEHIND the store: {lag['written_since']:,} records written since it was built, "
        f"{lag['access_changed']:,} of them with changed access (search checks every hit against the "
        "store meanwhile; the next ingest or webhook sync catches up)"
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    if _missing_extra("mcp", "server", "mcp", *(("uvicorn",) if args.http else ())):
        return EXIT_INPUT
    settings = _settings(args)
    _warn_unreachable_models(settings)
    if not args.http:
        from context_engine.mcp_server import build_server

        _check_tenant_and_asker(settings)  # stdio: the operator's flags name who asks, checked up front
        build_server(settings).run("stdio")
        return EXIT_OK
    from context_engine.mcp_server import http_app
    from context_engine.server import load_keys

    try:
        keys = load_keys(args.keys)
        app = http_app(settings, keys)
    except (OSError, ValueError) as exc:
        raise InputError(f"--keys: {exc}") from None
    _serve_until_signalled(app, args.host, args.port, log_level="warning")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (the usage itself is one `--help` away), exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


EXIT_CODES = (
    "\nexit codes: 0 ok; 2 usage or input error (one line on stderr); 3 a pipeline rejected by validation; "
    "4 the data dir cannot be read or written\n"
)
EXAMPLES = {
    "context-engine": """examples:
  context-engine ingest sample
  context-engine ask "PRs Rashid merged last week" --as rsh-dev
  context-engine ask "why did we switch the session cache to Redis?" --json
  context-engine eval rag --dataset clapnq --clapnq $CONTEXT_ENGINE_EVAL_DATA/clapnq --out results/
""",
    "ingest": """examples:
  context-engine ingest sample
  context-engine ingest github dump.jsonl.gz --tenant hf
  GITHUB_TOKEN=... context-engine ingest github --repo acme/api --since 2026-01-01
  context-engine ingest git ~/src/api
  context-engine ingest slack export.zip --no-index
  context-engine ingest jira search-page-*.json && context-engine ingest linear issues.csv
  context-engine ingest docs ./handbook --prune
  context-engine ingest people people.yaml
  context-engine ingest json examples/own-data/incidents.json --collection incidents --access-field visible_to --public
  context-engine ingest json examples/own-data/deploys.csv --collection deploys --public
  context-engine ingest mongodb mongodb://localhost:27017 --db ops --source-collection oncall --collection shifts --public
""",
    "ask": """examples:
  context-engine ask "how many open PRs are labelled security?"
  context-engine ask "open issues assigned to me" --as "Rashid Khan"
  context-engine ask "上周张伟合并了哪些PR？" --now 2026-11-30T12:00:00Z --json
""",
    "query": """examples:
  context-engine query pull_requests '[{"$match": {"state": "open"}}, {"$count": "n"}]'
  context-engine query messages '[{"$match": {"date": {"$gte": {"$date": "2026-11-01T00:00:00Z"}}}}]' --as rsh-dev
""",
    "eval": """examples:
  context-engine eval structured --questions tests/data/structured_heldout.jsonl --out results/
  context-engine eval structured --from-feedback        # every 👍 and corrected plan as a regression set
  context-engine eval compare --questions tests/data/structured_heldout.jsonl --a offline --b no-context-set
  context-engine eval conversations --questions tests/data/conversations.jsonl --data-dir D   # multi-turn, offline
  context-engine eval retrieval --beir $CONTEXT_ENGINE_EVAL_DATA/scifact --split test --json
  context-engine eval rag --dataset clapnq --clapnq $CONTEXT_ENGINE_EVAL_DATA/clapnq --half report --out results/
  context-engine eval rag --dataset clapnq --clapnq $CONTEXT_ENGINE_EVAL_DATA/clapnq --limit 10 --out results/
  context-engine eval rag --dataset ragas.jsonl --tenant acme --as rsh-dev --judge qwen2.5-coder-1.5b
""",
    "context-set": """examples:
  context-engine context-set list
  context-engine context-set export > acme.json        # edit, then copy to <data-dir>/context_sets/acme.json
  context-engine context-set add template.json          # {"name", "question", "params", "plan", "example"}
  context-engine context-set test prs-merged-by-person --now 2026-11-30T12:00:00Z
  context-engine context-set remove feedback-12
""",
    "feedback": """examples:
  context-engine feedback --up                          # the last question asked of this tenant was answered right
  context-engine feedback --down --note "should only count merged PRs"
  context-engine feedback --down --plan fixed.json      # {"collection": ..., "pipeline": [...]}: becomes a template
""",
    "people": """examples:
  context-engine people
  context-engine people --json --tenant oss
""",
    "schema": """examples:
  context-engine schema --tenant acme
""",
    "status": """examples:
  context-engine status
  context-engine status --tenant acme --json
""",
    "mcp": """examples:
  context-engine mcp --tenant acme --as rsh-dev             # stdio, for a local agent (Claude Code, Cursor)
  context-engine mcp --http --keys keys.json --port 8001    # streamable HTTP at http://127.0.0.1:8001/mcp
""",
    "serve": """examples:
  context-engine serve --keys keys.json --port 8000
  CONTEXT_ENGINE_API_KEYS='{"KEY": {"tenant": "acme", "user": "rsh-dev"}}' context-engine serve
""",
}


def build_parser() -> argparse.ArgumentParser:
    from context_engine.config import TENANT_RULE

    common = _Parser(add_help=False)
    common.add_argument("--data-dir", help="data directory (default $CONTEXT_ENGINE_HOME or ./.context-engine)")
    common.add_argument(
        "--tenant",
        help=f"tenant to read or write (default $CONTEXT_ENGINE_TENANT or acme); a tenant name is {TENANT_RULE}",
    )
    common.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    parser = _Parser(
        prog="context-engine",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "A relational context engine: answers questions over PRs, issues, Slack and docs with validated, "
            "tenant-scoped MongoDB queries and hybrid semantic search."
        ),
        epilog=EXAMPLES["context-engine"] + EXIT_CODES,
    )
    import context_engine

    parser.add_argument("--version", action="version", version=f"context-engine {context_engine.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        return sub.add_parser(name, parents=[common], epilog=EXAMPLES[name] + EXIT_CODES, **kwargs)

    from context_engine.sources.connectors import SOURCES

    p = add(
        "ingest",
        help="load data from a source (re-ingesting upserts by source id)",
        description="sources:\n" + "\n".join(f"  {name:8s} {what}" for name, what in SOURCES.items()),
    )
    p.add_argument("source", choices=list(SOURCES), help="where the records come from (see below)")
    p.add_argument("paths", nargs="*", help="files or folders of the source")
    p.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="github: sync this repository live through the REST API "
        "(token: $GITHUB_TOKEN or `gh auth token`; incremental after the first run)",
    )
    p.add_argument("--since", metavar="DATE", help="git, github --repo: only history after this date")
    p.add_argument(
        "--prune",
        action="store_true",
        help="remove records the source no longer has (github --repo: makes the sync a full one)",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="structured store only: skip chunking and embedding for the semantic index",
    )
    p.add_argument(
        "--public",
        action="store_true",
        help="declare that records whose source does not say who may read them (a git clone, a dump "
        "without repository visibility, Jira/Linear/docs exports) are readable by the whole tenant; "
        "without it they are readable by nobody (deny by default)",
    )
    own = p.add_argument_group("json, mongodb: your own collection (what is not given is inferred and printed)")
    own.add_argument(
        "--collection",
        metavar="NAME",
        help="the collection the records go to (not a built-in one); letters, digits, '_'",
    )
    own.add_argument(
        "--key",
        metavar="FIELD",
        help="the field whose value keys a record (default: id, key, "
        "<noun>_id or the first column unique in every row)",
    )
    own.add_argument(
        "--ref-prefix",
        metavar="TEXT",
        help="a record's reference is TEXT + its key, e.g. INC- "
        "(default: <collection>/ for numeric keys, nothing otherwise)",
    )
    own.add_argument("--noun", help="one record, as an answer says it (default: the collection name made singular)")
    own.add_argument(
        "--time",
        action="append",
        metavar="ROLE=FIELD",
        help="a date field and its role (created, resolved, ...); repeatable",
    )
    own.add_argument(
        "--person",
        action="append",
        metavar="ROLE=FIELD[:HANDLE]",
        help="a people field and its role "
        "(author, assignee, ...); HANDLE: github (default), slack_id, jira, email or name; repeatable",
    )
    own.add_argument(
        "--text",
        action="append",
        metavar="FIELD",
        help="a free-text field (the first is the subject), indexed for search; repeatable",
    )
    own.add_argument(
        "--value",
        action="append",
        metavar="ROLE=FIELD",
        help="a field whose values questions name (severity, status, ...); repeatable",
    )
    own.add_argument(
        "--reference",
        action="append",
        metavar="FIELD=COLLECTION",
        help="a field whose values are references of another collection, e.g. pr=pull_requests; repeatable",
    )
    own.add_argument(
        "--access-field",
        metavar="FIELD",
        help="the field naming who may read each record: a principal "
        "(github:login, slack:U..., email:...) or a list of them, '*' for the whole tenant; a record "
        "naming none is readable by nobody, or by the whole tenant with --public",
    )
    own.add_argument(
        "--spec",
        metavar="FILE",
        help="a JSON collection spec (name, noun, key, ref_prefix, people, "
        "times, values, text, references, ... plus access_field, public) instead of the options above",
    )
    own.add_argument("--db", metavar="DATABASE", help="mongodb: the database to read")
    own.add_argument(
        "--source-collection", metavar="NAME", help="mongodb: the collection to read (default: --collection)"
    )
    own.add_argument("--filter", metavar="JSON", help="mongodb: only the documents matching this query")
    own.add_argument("--limit", type=int, metavar="N", help="mongodb: at most N documents")
    p.set_defaults(func=cmd_ingest)

    p = add("ask", help="answer a question")
    p.add_argument("question", help="in English or Chinese; structured, content or both")
    p.add_argument("--now", help="the time the question is asked, ISO 8601 (default: the clock)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_ask)

    p = add("query", help="run a hand-written pipeline through validation and scoping")
    p.add_argument(
        "collection",
        help="pull_requests, issues, messages, documents, commits, people or one of the "
        "tenant's own (`ingest json|mongodb`)",
    )
    p.add_argument(
        "pipeline", metavar="PIPELINE_JSON", help='e.g. \'[{"$match": {"state": "open"}}]\'; dates as {"$date": "..."}'
    )
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_query)

    p = add(
        "eval",
        help="evaluate: `eval structured --questions FILE`, "
        "`eval retrieval --beir DIR --split train|test`, `eval rag --dataset clapnq|FILE`",
    )
    p.add_argument(
        "kind",
        choices=["structured", "retrieval", "rag", "compare", "conversations", "tend"],
        help="structured: execution "
        "accuracy against gold pipelines; retrieval: nDCG@10, recall@10/100, MRR@10 of bm25, dense, hybrid, "
        "reranked, default; rag: the graph's answers and contexts scored with RAGAS; compare: one "
        "structured question set under two configurations (--a, --b) side by side; conversations: "
        "multi-turn threads through the graph with a checkpointer, each turn scored as structured; tend: "
        "execution accuracy on the TEND NL-to-MongoDB benchmark (--data DIR), per database and shape",
    )
    p.add_argument("--data", metavar="DIR", help="tend: the TEND folder (test.json, train.json, mongodb_data/)")
    p.add_argument(
        "--sample",
        metavar="stratified:N",
        help="tend: N questions dealt over (database, shape) strata, one phrasing per record, fixed seed",
    )
    p.add_argument(
        "--from-feedback",
        action="store_true",
        help="structured: replay the tenant's feedback as the "
        "question set (a 👍's plan or a corrected plan is the gold)",
    )
    p.add_argument(
        "--a",
        dest="config_a",
        metavar="CONFIG",
        help="compare: the first configuration: offline, model, "
        "no-context-set, optionally with retrieval settings (offline,fusion=rrf,reranker=none)",
    )
    p.add_argument("--b", dest="config_b", metavar="CONFIG", help="compare: the second configuration")
    p.add_argument(
        "--dataset",
        help="rag: `clapnq` (the CLAP NQ dev set from --clapnq, ingested as tenant clapnq "
        "under --out) or a FILE asked of --tenant: a RAGAS EvaluationDataset as to_jsonl/to_csv write it "
        "(user_input, reference?, reference_contexts?, reference_context_ids?; an extra `answerable` is "
        "read too), or JSON lines: question, reference, reference_contexts?, reference_context_ids?, "
        "answerable?",
    )
    p.add_argument(
        "--clapnq",
        metavar="DIR",
        help="rag, clapnq: the CLAP NQ dev folder (clapnq_dev_answerable.jsonl, "
        "clapnq_dev_unanswerable.jsonl); default $CONTEXT_ENGINE_CLAPNQ",
    )
    p.add_argument(
        "--as",
        dest="as_user",
        metavar="ACCOUNT",
        help="rag: the asker, as `ask --as`: the graph sees what this account may read",
    )
    p.add_argument(
        "--judge",
        metavar="MODEL",
        help="rag: an OpenAI-compatible chat model for the LLM metrics "
        "(faithfulness, answer relevancy, LLM context recall)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="rag, structured: write results.json, results.md and results.png "
        "here; rag also dataset.jsonl (the filled RAGAS EvaluationDataset), samples.csv and samples.json "
        "(per question scores) (rag default: a new temporary directory); tend: a FILE of JSON lines, the "
        "summary then every question (question, gold, predicted pipeline, correct, why)",
    )
    p.add_argument(
        "--questions",
        help="structured: JSON lines: question, now, as, tenant, collection, gold "
        "(or gold_refs, gold_value), compare (refs, count, value, groups, top, declines), class?; "
        "conversations: JSON lines: id, tenant, now, as, turns (each a structured question and its kind)",
    )
    p.add_argument(
        "--by-class",
        action="store_true",
        help="structured: a table of accuracy per question class, "
        "with the wrong answers split into flagged (declined, or words not understood) and silent",
    )
    p.add_argument("--beir", metavar="DIR", help="retrieval: a BEIR folder (corpus.jsonl[.gz], queries.jsonl, qrels/)")
    p.add_argument(
        "--split", help="retrieval: the qrels split to score (train, test, ...); tend: test (default) or train"
    )
    p.add_argument(
        "--planner",
        choices=["offline", "auto", "llm"],
        default="offline",
        help="offline (default); auto: the LLM where the offline planner is unsure; llm: every question",
    )
    p.add_argument(
        "--half",
        choices=["tune", "report"],
        help="rag, clapnq: only the half of the questions the "
        "answerability judge was tuned on, or only the half it never saw",
    )
    p.add_argument(
        "--limit",
        type=int,
        help="only the first N questions (queries); rag, clapnq: the corpus is "
        "only their passages (ingested and embedded), not the whole dev set's",
    )
    p.set_defaults(func=cmd_eval)

    p = add(
        "context-set",
        help="the tenant's context set: templates (solved questions with parameters), facets "
        "(named filters) and value-search settings",
    )
    p.add_argument(
        "action",
        choices=["list", "add", "remove", "test", "export"],
        help="list; add TEMPLATE (JSON or FILE); remove NAME; test NAME (its example question through the "
        "engine); export (the whole set as JSON)",
    )
    p.add_argument("item", nargs="?", help="add: the template; remove, test: its name")
    p.add_argument("--replace", action="store_true", help="add: replace a template of the same name")
    p.add_argument("--now", help="test: the time the example is asked, ISO 8601 (default: the clock)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_context_set)

    p = add(
        "feedback",
        help="👍/👎 on the last answer (or --question): stored per tenant; a confirmed or corrected "
        "plan becomes a template of the context set",
    )
    rating = p.add_mutually_exclusive_group(required=True)
    rating.add_argument("--up", action="store_true", help="the answer was right")
    rating.add_argument("--down", action="store_true", help="the answer was wrong")
    p.add_argument("--note", help="what was wrong or right, in a sentence (at most 2,000 characters)")
    p.add_argument(
        "--plan",
        metavar="FILE|JSON",
        help='the right plan, {"collection": ..., "pipeline": [...]}: validated, then kept as a template',
    )
    p.add_argument("--question", help="the question the feedback is about (default: the last one asked of this tenant)")
    p.add_argument(
        "--as", dest="as_user", metavar="ACCOUNT", help="who gives it (default: who asked the last question)"
    )
    p.set_defaults(func=cmd_feedback)

    p = add(
        "people",
        help="the identity directory: each person's accounts across "
        "sources, why they were merged, and the possible matches left apart",
    )
    p.set_defaults(func=cmd_people)

    p = add(
        "schema",
        help="print the discovered schema (as the asker may see it: private records' fields and "
        "values only for their readers)",
    )
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_schema)

    p = add("status", help="per tenant: records, semantic index (chunks, still embedding), a running ingest")
    p.set_defaults(func=cmd_status)

    p = add(
        "mcp",
        help="serve the engine to coding agents over the Model Context Protocol: stdio (identity "
        "from --tenant/--as) or --http with --keys (Bearer key -> tenant and person, as `serve`)",
    )
    p.add_argument(
        "--as",
        dest="as_user",
        metavar="ACCOUNT",
        help="stdio: the account the agent acts for, exactly "
        "as `ask --as` "
        "(default $CONTEXT_ENGINE_USER; none: public records only)",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP at /mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument(
        "--keys",
        metavar="FILE",
        help="--http: API keys, the same JSON as `serve --keys` (default $CONTEXT_ENGINE_API_KEYS)",
    )
    p.set_defaults(func=cmd_mcp)

    p = add(
        "serve", help="serve the graph over HTTP (LangServe) behind API keys; --tenant is where signed webhooks ingest"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--keys",
        metavar="FILE",
        help='API keys, JSON {"KEY": {"tenant": ..., "user": ...}} (default $CONTEXT_ENGINE_API_KEYS)',
    )
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help and usage errors exit here, before anything heavy is imported
    from context_engine.service import (
        IndexDamaged,
        IndexMissing,
        StoreError,
        StoreFileError,
        TenantError,
        TimeRangeError,
    )

    try:
        return args.func(args)
    except StoreFileError as exc:  # a full disk, an unreadable store file: the data dir's fault, not the input's
        print(f"context-engine: error: {exc}", file=sys.stderr)
        return EXIT_IO
    # TimeRangeError: a time in the question that the graph finds out of range while it runs
    except (InputError, StoreError, TenantError, IndexMissing, IndexDamaged, TimeRangeError) as exc:
        print(f"context-engine: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        # `context-engine schema | head`: the reader stopped listening; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a read-only or full data dir, a file that vanished: say which, in one line
        where = f": {exc.filename}" if exc.filename else ""
        print(f"context-engine: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The `context-engine` program: `main`, then exit with its code. Every object still alive is
    frozen first: the interpreter's shutdown would otherwise run full collections over all that the
    command loaded (~0.25 s after a cold `ask`) only to free it. Not in `main`, which tests call many
    times in one process."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
