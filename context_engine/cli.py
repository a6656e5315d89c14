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
    from context_engine.store.expressions import finite_for_json

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

    return Settings().with_overrides(data_dir=getattr(args, "data_dir", None), tenant=getattr(args, "tenant", None),
                                     asker=getattr(args, "as_user", None))


class _Progress:
    """Ingest progress on stderr when it is a terminal: record counts as lines, embedding as a bar
    with its rate (the slow step); silent otherwise."""

    def __init__(self):
        from rich.console import Console

        self.console = Console(stderr=True)
        self.bar = None
        self.tasks: dict[str, int] = {}
        self.started = time.perf_counter()

    def __enter__(self):
        return self.report if self.console.is_terminal else None

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def report(self, label: str, count: int) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        tenant, _, what = label.rpartition(": ")
        if what == "chunks to embed" and count:
            if self.bar is None:
                self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TimeElapsedColumn(), TimeRemainingColumn(), console=self.console)
                self.bar.start()
            self.tasks[tenant] = self.bar.add_task(f"  {tenant}: embedding", total=count)
        elif what == "embedded" and tenant in self.tasks:
            self.bar.update(self.tasks[tenant], completed=count)
        elif what != "chunks to embed":
            rate = count / max(time.perf_counter() - self.started, 1e-3)
            self.console.print(f"  {label}: {count:,} ({rate:,.0f}/s)")


def cmd_ingest(args: argparse.Namespace) -> int:
    from context_engine.sources.connectors import SourceRequest, read_source
    from context_engine.sources.problems import ReadProblems, SourceError
    from context_engine.ingest import ingest

    settings = _settings(args)
    problems = ReadProblems()
    own = args.source in ("json", "mongodb")
    request = SourceRequest(args.source, [Path(p) for p in args.paths] if args.source != "mongodb" else [],
                            repo=args.repo, since=args.since, full=args.prune)
    if own:
        request.own = _own_options(args)
        request.logins = _tenant_logins(settings)
    else:
        given = [f"--{name.replace('_', '-')}" for name in OWN_OPTIONS if getattr(args, name) not in (None, [])]
        if given:
            raise InputError(f"{', '.join(given)}: for `ingest json` and `ingest mongodb` only")
    if args.source == "mongodb":
        if len(args.paths) != 1:
            raise InputError("`ingest mongodb` needs one MongoDB URI (mongodb://..., mongodb+srv://...)")
        request.uri, request.db, request.source_collection = args.paths[0], args.db, args.source_collection
        from context_engine.query.plan import from_extended_json

        request.query = from_extended_json(_json_argument(args.filter, "--filter")) if args.filter else None
        if request.query is not None and not isinstance(request.query, dict):
            raise InputError("--filter: a JSON object is expected, e.g. '{\"team\": \"payments\"}'")
        request.limit = args.limit or 0
    try:
        read = read_source(request, settings.tenant, settings.data_dir, problems)
    except SourceError as exc:
        raise InputError(str(exc)) from None
    if not args.json:
        for note in read.notes:
            print(f"{read.kinds[settings.tenant][0].name}: {note}")
    for warning in read.warnings:
        print(f"context-engine: warning: {warning}", file=sys.stderr)
    per_tenant = read.per_tenant
    with _Progress() as progress:
        try:
            reports = ingest(settings, per_tenant, progress=progress, index=not args.no_index, prune=args.prune,
                             public=args.public, kinds=read.kinds)
        except ValueError as exc:  # e.g. --prune of records that do not say which source they are from
            raise InputError(str(exc)) from None
    if read.after_commit:
        read.after_commit()
    out = [r.to_json() for r in reports]
    for item in out:
        item["skipped"] += problems.count
        item["problems"] = problems.examples + item["problems"]
        if own:
            item["inferred"] = read.notes
    if args.json:
        _print_json(out)
    else:
        for r in out:
            counts = ", ".join(f"{n} {v['inserted']}+{v['updated']}~{v['unchanged']}=" for n, v in r["collections"].items())
            total = sum(v["inserted"] + v["updated"] + v["unchanged"] for v in r["collections"].values())
            print(f"tenant {r['tenant']}: {total:,} records ({counts.replace('=', '')}; new+updated~unchanged), "
                  f"{r['skipped']} skipped, {r['seconds']:.1f}s")
            if r["index"]:
                ix = r["index"]
                print(f"  semantic index: {ix['chunks']:,} chunks (+{ix['added']} ~{ix['updated']} -{ix['removed']}), "
                      f"{ix['embedded']:,} embedded, {ix['cache_hits']:,} from the embedding cache, {ix['seconds']:.1f}s")
            if r["removed"]:
                print("  removed (no longer in the source): "
                      + ", ".join(f"{n} {count:,}" for n, count in r["removed"].items()))
            if r["readable_by_nobody"]:
                print(f"  access: {r['readable_by_nobody']:,} new records whose source does not say who may read them "
                      "are readable by nobody; pass --public if the whole tenant may read this source", file=sys.stderr)
            if r["people_conflicts"]:
                print(f"  people: {r['people_conflicts']} possible matches left apart (see `context-engine people`)")
            for problem in r["problems"]:
                print(f"  skipped {problem}", file=sys.stderr)
    return EXIT_OK


OWN_OPTIONS = ("collection", "key", "ref_prefix", "noun", "time", "person", "text", "value", "reference",
               "access_field", "spec", "db", "source_collection", "filter", "limit")


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
    from context_engine.kinds import SpecError
    from context_engine.kinds.spec import HANDLE_KINDS
    from context_engine.sources.generic import OwnOptions, spec_file_options
    from context_engine.sources.problems import SourceError

    if not args.collection:
        raise InputError(f"`ingest {args.source}` needs --collection NAME (the collection the records go to)")
    described = [f"--{name.replace('_', '-')}" for name in ("key", "ref_prefix", "noun", "time", "person", "text",
                                                             "value", "reference") if getattr(args, name) not in (None, [])]
    try:
        if args.spec:
            if described:
                raise InputError(f"--spec FILE says the whole spec: leave out {', '.join(described)}")
            return spec_file_options(Path(args.spec), args.collection, args.access_field, args.public)
        people = {}
        for role, target in _pairs(args.person, "--person", "ROLE=FIELD[:HANDLE]"):
            path, _, handle = target.partition(":")
            people[role] = (path, handle or "github")
            if people[role][1] not in HANDLE_KINDS:
                raise InputError(f"--person {role}={target}: handle {handle!r} is not one of {', '.join(HANDLE_KINDS)}")
        options = OwnOptions(args.collection, key=args.key, ref_prefix=args.ref_prefix, noun=args.noun,
                             times=dict(_pairs(args.time, "--time", "ROLE=FIELD")), people=people, text=args.text or [],
                             values=dict(_pairs(args.value, "--value", "ROLE=FIELD")),
                             references=dict(_pairs(args.reference, "--reference", "FIELD=COLLECTION")),
                             access_field=args.access_field, public=args.public)
        # every field named is checked now, by the spec itself, before any file is read
        from context_engine.kinds import CollectionSpec, PersonField

        CollectionSpec(name=options.collection, noun=options.noun or options.collection, key=options.key or "id",
                       times={r: (p,) for r, p in options.times.items()},
                       people={r: (PersonField(p, h),) for r, (p, h) in options.people.items()},
                       values={r: (p,) for r, p in options.values.items()}, text=tuple(options.text),
                       references=options.references)
        return options
    except (SpecError, SourceError) as exc:
        raise InputError(str(exc)) from None


def _tenant_logins(settings) -> set[str]:
    """The GitHub logins of the tenant's people directory (none before its first ingest)."""
    from context_engine.store.documents import has_data, open_store

    if not has_data(settings):
        return set()
    people = open_store(settings).collection("people").find({"tenant_id": settings.tenant}, {"login": 1})
    return {p["login"] for p in people if isinstance(p.get("login"), str)}


ASKER_HELP = ("the asker, named exactly: a GitHub login, Slack user id, Jira/Linear account, verified e-mail or "
              "system:account (github:login, slack:U...); never a name or handle (default: public records only)")


def _check_tenant_and_asker(settings) -> None:
    """The tenant must have data and `--as` must name one account exactly (`PeopleDirectory.asker`:
    never a name, a handle or a near miss); both are input errors."""
    from context_engine.query.identity import AmbiguousPerson, UnknownPerson
    from context_engine.runtime import principals_for, store_for

    tenants = store_for(settings).tenants()
    if settings.tenant not in tenants:
        raise InputError(f"tenant {settings.tenant!r} has no data (tenants with data: {', '.join(tenants) or 'none'})")
    try:
        principals_for(settings)
    except (UnknownPerson, AmbiguousPerson) as exc:
        raise InputError(f"--as: {exc.args[0]}") from None


def cmd_ask(args: argparse.Namespace) -> int:
    from context_engine.text import parse_now

    from context_engine.config import check_question

    try:
        question = check_question((args.question or "").strip())
        now = parse_now(args.now)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    settings = _settings(args)
    _check_tenant_and_asker(settings)
    context = {"tenant": settings.tenant, "user": settings.asker, "data_dir": str(settings.data_dir)}
    graph = _import_frozen("context_engine.assistant.graph").graph
    result = graph.invoke({"question": question, "now": now.isoformat()}, context=context)
    from context_engine.query.feedback import remember_ask

    remember_ask(settings.data_dir, settings.tenant, settings.asker, question, result, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    # Pipelines are in Extended JSON, so any of them can be re-run with `context-engine query`.
    if args.json:
        _print_json({"question": question, **{key: result.get(key) for key in (
            "route", "answer", "queries", "records", "citations", "reflection", "declined")},
            "model_error": result.get("model_error", ""),
            "documents": [{"text": d.page_content, "metadata": d.metadata} for d in result.get("documents", [])]})
    else:
        if result.get("model_error"):  # the answer says so too; stderr tells whoever reads only the log
            print(f"context-engine: warning: {result['model_error']}", file=sys.stderr)
        print(result.get("answer", ""))
        if result.get("citations"):
            print("\nSources:")
            for n, cite in enumerate(result["citations"], 1):
                print(f"[{cite.get('n', n)}] " + " · ".join(str(x) for x in (cite.get("title"), cite.get("id"),
                                                                            cite.get("url")) if x))
        for q in result.get("queries", []):
            if "pipeline" in q:
                print(f"\nquery: {q['collection']} {json.dumps(q['pipeline'], ensure_ascii=False, default=_json_default)}")
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


def _policy(settings):
    from context_engine.query.validate import ValidationPolicy

    return ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows)


def cmd_context_set(args: argparse.Namespace) -> int:
    from context_engine.query import context_sets
    from context_engine.runtime import catalog_for

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    catalog = catalog_for(settings)
    try:
        if args.action == "add":
            if not args.item:
                raise InputError("`context-set add` needs a template: JSON or a FILE holding one")
            template = context_sets.template_from_json(_json_argument(args.item, "template"))
            context_sets.add_template(settings.data_dir, settings.tenant, template, catalog.schemas,
                                      _policy(settings), replace=args.replace)
            print(f"added template {template.name!r} to tenant {settings.tenant}")
            return EXIT_OK
        if args.action == "remove":
            if not args.item:
                raise InputError("`context-set remove` needs a template NAME")
            context_sets.remove_template(settings.data_dir, settings.tenant, args.item, catalog.schemas)
            print(f"removed template {args.item!r} from tenant {settings.tenant}")
            return EXIT_OK
        cs = context_sets.load(settings.data_dir, settings.tenant, catalog.schemas, _policy(settings))
    except context_sets.ContextSetError as exc:
        raise InputError(f"context set: {exc}") from None
    if args.action == "export":
        path = context_sets.tenant_file(settings.data_dir, settings.tenant)
        whole = context_sets.read_file(path) if path else context_sets.shipped()  # inactive ones too
        _print_json(whole.to_json())
        return EXIT_OK
    if args.action == "test":
        return _test_template(args, settings, catalog, cs)
    where = context_sets.tenant_file(settings.data_dir, settings.tenant) or "shipped defaults"
    if args.json:
        _print_json({"file": str(where), **cs.to_json(), "inactive": cs.inactive})
        return EXIT_OK
    print(f"context set of tenant {settings.tenant} ({where}): {len(cs.templates)} templates, {len(cs.facets)} facets")
    for t in cs.templates:
        params = ", ".join(f"{k}: {v}" for k, v in t.params.items()) or "no parameters"
        print(f"  template {t.name}: {t.question!r} -> {t.collection} ({params})" + (f" [{t.source}]" if t.source else ""))
    for f in cs.facets:
        print(f"  facet {f.name} ({f.collection}): {', '.join(f.phrases)}")
    if cs.inactive:
        print(f"  not used here (their fields are not in this tenant's data): {', '.join(cs.inactive)}")
    return EXIT_OK


def _test_template(args: argparse.Namespace, settings, catalog, cs) -> int:
    """Run a template's example question through the engine; show the engine's plan beside the
    template's own (bound to the example's values) and whether their results agree."""
    from context_engine.assistant.structured_query import jsonable, run_structured
    from context_engine.query.context_sets import slots_for
    from context_engine.query.engine import principals_of, resolve
    from context_engine.query.execute import run_pipeline
    from context_engine.query.plan import to_extended_json
    from context_engine.runtime import asker_for, store_for
    from context_engine.text import parse_now

    template = cs.template(args.item or "")
    if template is None:
        raise InputError(f"no template {args.item!r} here (see `context-engine context-set list`)")
    question = template.example.get("question")
    if not question:
        raise InputError(f"template {template.name!r} has no example question to test")
    try:
        now = parse_now(args.now)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    asker = asker_for(settings, catalog)
    expected = template.instantiate(template.example_bindings())
    want = jsonable(run_pipeline(store_for(settings), template.collection, expected, tenant=settings.tenant,
                        principals=principals_of(asker), schema=catalog.schemas.get(template.collection),
                        max_rows=settings.max_rows, max_time_ms=settings.max_time_ms))
    result = run_structured(question, settings, now=now)
    plan = result.attempts[-1].plan if getattr(result, "attempts", None) else None
    ctx, _ = resolve(question, now, catalog, asker)
    matched = cs.match_template(question, slots_for(question, ctx.mentions, ctx.times)) if ctx else None
    same = plan is not None and result.kind == "success" and plan.collection == template.collection \
        and result.rows == want
    report = {"template": template.name, "question": question,
              "template_plan": {"collection": template.collection, "pipeline": to_extended_json(expected)},
              "engine_plan": {"collection": plan.collection, "pipeline": to_extended_json(plan.pipeline)} if plan else None,
              "engine_outcome": result.kind, "template_rows": len(want), "engine_rows": len(result.rows),
              "same_result": same, "matched_template": matched[0].name if matched else None,
              "match_score": round(matched[2], 1) if matched else None}
    if args.json:
        _print_json(report)
        return EXIT_OK
    print(f"template {template.name}: {question!r}")
    print(f"  template plan: {template.collection} {json.dumps(report['template_plan']['pipeline'], ensure_ascii=False)}"
          f" ({len(want)} rows)")
    if plan is not None:
        print(f"  engine plan:   {plan.collection} {json.dumps(report['engine_plan']['pipeline'], ensure_ascii=False)}"
              f" ({result.kind}, {len(result.rows)} rows, planner {plan.planner})")
    else:
        print(f"  engine: {result.kind}: {getattr(result, 'message', '')}")
    print(f"  same result: {'yes' if same else 'no'}; the question matches template "
          + (f"{matched[0].name} (score {matched[2]:.0f})" if matched else "none"))
    return EXIT_OK


def cmd_feedback(args: argparse.Namespace) -> int:
    from context_engine.query.feedback import FeedbackError, submit
    from context_engine.query.context_sets import ContextSetError
    from context_engine.runtime import catalog_for

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    catalog = catalog_for(settings)
    corrected = _json_argument(args.plan, "--plan") if args.plan else None
    try:
        out = submit(settings.data_dir, catalog, asker=settings.asker, rating="up" if args.up else "down",
                     question=args.question, note=args.note, corrected=corrected, policy=_policy(settings))
    except (FeedbackError, ContextSetError) as exc:
        raise InputError(f"feedback: {exc}") from None
    if args.json:
        _print_json(out)
    else:
        print(f"feedback #{out['id']} ({out['rating']}) on {out['question']!r} stored"
              + (f"; its plan is now template {out['template']!r} of tenant {settings.tenant}" if out["template"] else ""))
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from context_engine.query.execute import ExecutionError, run_pipeline
    from context_engine.query.plan import from_extended_json
    from context_engine.query.validate import ValidationPolicy, validate_pipeline
    from context_engine.runtime import asker_for, catalog_for, store_for
    from context_engine.query.engine import principals_of

    try:
        pipeline = from_extended_json(json.loads(args.pipeline))
    except json.JSONDecodeError as exc:
        raise InputError(f"PIPELINE_JSON is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except ValueError:  # Python's own cap on the digits of an integer it reads (4,300)
        raise InputError("PIPELINE_JSON has a number too long to read; MongoDB numbers fit 64 bits") from None
    settings = _settings(args)
    _check_tenant_and_asker(settings)
    catalog = catalog_for(settings)
    kinds = store_for(settings).kinds(settings.tenant)
    if args.collection not in kinds:
        raise InputError(f"unknown collection {args.collection[:80]!r}; known: {', '.join(kinds.names())}")
    schema = catalog.schemas.get(args.collection)
    errors = validate_pipeline(pipeline, schema, ValidationPolicy(allow_regex=settings.allow_regex,
                                                                  max_limit=settings.max_rows), schemas=catalog.schemas)
    if errors:
        if args.json:
            _print_json({"errors": errors})
        else:
            for error in errors:
                print(f"rejected: {error}", file=sys.stderr)
        return EXIT_REJECTED
    try:
        rows = run_pipeline(store_for(settings), args.collection, pipeline, tenant=settings.tenant,
                            principals=principals_of(asker_for(settings, catalog)), schema=schema,
                            max_rows=settings.max_rows, max_time_ms=settings.max_time_ms)
    except ExecutionError as exc:
        raise InputError(f"the database refused the query: {exc}") from None
    _print_json({"records": rows})
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from context_engine.runtime import catalog_for

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    catalog = catalog_for(settings)
    if args.json:
        _print_json({name: schema.to_json() for name, schema in catalog.schemas.items()})
    else:
        for schema in catalog.schemas.values():
            print(schema.describe())
            print()
    return EXIT_OK


def cmd_people(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from context_engine.runtime import store_for
    from context_engine.sources.connectors import saved_overrides
    from context_engine.sources.people import merge_people
    from context_engine.store.documents import strip_hidden

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    stored = [strip_hidden(p) for p in store_for(settings).collection("people").find({"tenant_id": settings.tenant})]
    # Merging the stored directory again changes nothing and recovers the conflicts left apart.
    directory = merge_people(stored, saved_overrides(settings.data_dir, settings.tenant))
    people = sorted(directory.people, key=lambda p: str(p.get("name") or p.get("login") or "").lower())
    if args.json:
        _print_json({"people": people, "conflicts": [vars(c) for c in directory.conflicts]})
        return EXIT_OK
    table = Table(title=f"people of tenant {settings.tenant}: {len(people):,}")
    for column in ("name", "github", "slack", "email", "jira", "team", "access (one line per account group)",
                   "merged by"):
        table.add_column(column, overflow="fold")
    for p in people:
        # Evidence that joined accounts grants access; the rest (names, handles, unverified e-mails)
        # only helps find the person in questions.
        evidence = [f"{e['rule']} {e['detail']} ({'grants access' if e.get('access') else 'finding only'})"
                    for e in p.get("evidence") or []]
        table.add_row(str(p.get("name") or ""), p.get("login") or "", p.get("slack_handle") or p.get("slack_id") or "",
                      ", ".join(p.get("emails") or ([p["email"]] if p.get("email") else [])), p.get("jira") or "",
                      p.get("team") or "", "\n".join(", ".join(g["principals"]) for g in p.get("accounts") or []),
                      "\n".join(evidence))
    console = Console()
    console.print(table)
    for conflict in directory.conflicts:
        console.print(f"conflict: {conflict.name}: {', '.join(conflict.candidates)} ({conflict.reason})")
    return EXIT_OK


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from context_engine.eval.retrieval import METRICS, BeirInputError, evaluate_retrieval
    from context_engine.models import chat_model
    from context_engine.retrievers.rerank import RerankerError

    if not args.beir or not args.split:
        raise InputError("`eval retrieval` needs --beir DIR (corpus.jsonl[.gz], queries.jsonl, qrels/) and --split SPLIT")
    settings = _settings(args)
    try:
        report = evaluate_retrieval(Path(args.beir), args.split, settings, limit=args.limit,
                                    llm=chat_model(settings) if settings.reranker == "llm" else None,
                                    progress=lambda message: print(message, file=sys.stderr, flush=True))
    except (BeirInputError, RerankerError) as exc:
        raise InputError(str(exc)) from None
    if args.json:
        _print_json(report)
    else:
        weights = f"bm25 {settings.bm25_weight:g}, dense {settings.dense_weight:g}"
        print(f"{args.beir} ({args.split}): fusion {settings.fusion} ({weights}"
              + (f", k {settings.rrf_k}" if settings.fusion == "rrf" else "")
              + f"), reranker {settings.reranker} over {settings.rerank_k}, default retrieve_k {settings.retrieve_k}")
        print(f"{'run':<10}" + "".join(f"{m:>12}" for m in METRICS))
        for name, metrics in report.items():
            print(f"{name:<10}" + "".join(f"{metrics[m]:>12.4f}" for m in METRICS))
    return EXIT_OK


def cmd_eval_rag(args: argparse.Namespace) -> int:
    import tempfile

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from context_engine.eval.clapnq import CLAPNQ_ENV
    from context_engine.eval.rag import (CLAPNQ_TENANT, clapnq_documents, clapnq_questions, evaluate_rag,
                                        ingest_clapnq, load_questions, write_samples)
    from context_engine.eval.report import summary_table, write_report

    if not args.dataset:
        raise InputError("`eval rag` needs --dataset clapnq|FILE (FILE: a RAGAS EvaluationDataset .jsonl/.csv "
                         "or JSON lines with `question`)")
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
            raise InputError(f"--as: tenant {CLAPNQ_TENANT} has no people (its passages are public), so "
                             f"{args.as_user!r} names nobody there; --as is for a --dataset FILE asked of a tenant")
        root = args.clapnq or os.environ.get(CLAPNQ_ENV)
        if not root:
            raise InputError(f"--dataset clapnq needs the CLAP NQ dev folder: pass --clapnq DIR (the folder with "
                             f"clapnq_dev_answerable.jsonl and clapnq_dev_unanswerable.jsonl) or set ${CLAPNQ_ENV}")
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
            questions = questions[:args.limit]
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
        questions = questions[:args.limit]
        _check_tenant_and_asker(settings)
        out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="eval-rag-"))
    judge = embeddings = None
    if args.judge:
        from context_engine.models import chat_model
        from context_engine.retrievers.dense import make_embeddings

        judge = chat_model(settings.with_overrides(model=args.judge))
        if judge is None:
            raise InputError("--judge needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY)")
        embeddings = make_embeddings(settings.embedding_model)
    context = {"tenant": settings.tenant, "user": settings.asker, "data_dir": str(settings.data_dir)}
    console = Console(stderr=True)
    marks = {"ask": None, "score": None}
    started = time.perf_counter()

    def advance(stage: str) -> None:
        marks[stage] = time.perf_counter()
        bar.advance(tasks[stage])

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not console.is_terminal) as bar:
        tasks = {"ask": bar.add_task("asking the graph", total=len(questions)),
                 "score": bar.add_task("scoring (RAGAS)", total=len(questions))}
        report = evaluate_rag(questions, context, judge=judge, embeddings=embeddings, progress=advance)
    asked = marks["ask"] or started
    timings["asking the graph (s)"] = round(asked - started, 2)
    timings["scoring (s)"] = round((marks["score"] or asked) - asked, 2)
    info = {"dataset": args.dataset, **({"asker": settings.asker} if settings.asker else {}), **report.info}
    if args.dataset == "clapnq":
        info["corpus passages"] = len(documents)
    info.update(timings)
    title = f"eval rag: {args.dataset}" + (f" ({args.half} half)" if args.half else "")
    rates = {f"decline rate (of {report.info['unanswerable']} unanswerable)": report.info["decline_rate_unanswerable"],
             f"answer rate (of {report.info['answerable']} answerable)": report.info["answer_rate_answerable"]}
    files = write_report(out_dir, title=title, metrics=report.metrics, info=info, latencies=report.latencies,
                         items=report.items, rates=rates)
    files.update(write_samples(out_dir, report))
    if args.json:
        from context_engine.eval.report import latency_summary

        _print_json({"metrics": report.metrics, "info": info, "latency": latency_summary(report.latencies),
                     "files": files})
    else:
        Console().print(summary_table(title, report.metrics, info, report.latencies))
        print("wrote " + ", ".join(files.values()))
    return EXIT_OK


def _missing_extra(command: str, extra: str, *modules: str) -> bool:
    """True, after one line on stderr, when a module of an optional extra is not installed."""
    import importlib.util

    if all(importlib.util.find_spec(module) is not None for module in modules):
        return False
    print(f"context-engine {command} needs the {extra} extra: pip install 'context-engine[{extra}]'", file=sys.stderr)
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
        print(f"{'ok  ' if o.correct else 'FAIL'} {o.db:<22} {o.shape:<12} {o.seconds * 1000:8.1f} ms  {o.question}"
              + (f"\n      {o.why}" if o.why and not o.correct else ""), flush=True)

    try:
        report = evaluate(Path(args.data), settings, split=args.split or "test", planner=args.planner,
                          limit=args.limit, sample=parse_sample(args.sample), progress=None if args.json else show)
    except TendError as exc:
        raise InputError(str(exc)) from None
    summary = report.summary()
    if args.out:
        write_outcomes(report, Path(args.out))
    if args.json:
        _print_json(summary)
        return EXIT_OK
    print(f"TEND {summary['split']}, planner {summary['planner']}, questions: {summary['sample']}")
    print(f"execution accuracy {summary['accuracy']:.1%} ({summary['correct']}/{summary['total']}), "
          f"declined {summary['declined']}, {summary['median_seconds']} s per question (median), "
          f"{summary['p90_seconds']} s (p90)")
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

    from context_engine.query.feedback import FeedbackStore, regression_items

    settings = _settings(args)
    _check_tenant_and_asker(settings)
    items = regression_items(FeedbackStore(settings.data_dir), settings.tenant)
    if not items:
        raise InputError(f"tenant {settings.tenant} has no feedback with a plan to replay (give some: "
                         "`context-engine feedback --up`)")
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
        print(f"{mark} {r.conversation:>6}.{r.turn} {r.kind:<14} {r.seconds * 1000:8.1f} ms  {r.question}"
              + (f"\n      {r.error or r.detail}" if r.error or r.detail else ""), flush=True)

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
        print(f"{name:<15} {row['correct']:>4}/{row['total']:<4} {row['accuracy']:>8.1%} {row['flagged']:>8} "
              f"{row['silent']:>7} {row['errors']:>7}")
    print(f"turn accuracy: {summary['turns_correct']}/{summary['turns']} = {report.turn_accuracy:.1%}; conversation "
          f"accuracy (every turn right): {summary['conversations_correct']}/{summary['conversations']} = "
          f"{report.conversation_accuracy:.1%}; wrong: {summary['wrong_flagged']} flagged (declined or not "
          f"understood), {summary['wrong_silent']} silent, {summary['errors']} errors; median "
          f"{summary['median_seconds']:.2f} s per turn")
    return EXIT_OK


def _eval_structured(args: argparse.Namespace, path: Path) -> int:
    from context_engine.eval.structured import QuestionFileError, evaluate

    settings = _settings(args)
    if args.planner != "offline" and not settings.llm_configured:
        raise InputError(f"--planner {args.planner} needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")

    def show(r) -> None:
        mark = "ok  " if r.correct else "FAIL"
        print(f"{mark} {r.id:>5} {r.planner:>7} {r.seconds * 1000:8.1f} ms  {r.question}"
              + (f"\n      {r.detail}" if r.detail else ""), flush=True)

    try:
        report = evaluate(path, settings, planner=args.planner, limit=args.limit,
                          progress=None if args.json else show)
    except QuestionFileError as exc:
        raise InputError(str(exc)) from None
    summary = report.to_json()
    files = None
    if args.out:
        from context_engine.eval.report import write_report

        files = write_report(Path(args.out), title=f"eval structured: {path.name}",
                             metrics={"execution_accuracy": round(report.accuracy, 4)},
                             info={"correct": sum(r.correct for r in report.results), "total": len(report.results),
                                   "planner": args.planner, "wrong_flagged": summary["wrong_flagged"],
                                   "wrong_silent": summary["wrong_silent"]},
                             latencies=[r.seconds for r in report.results],
                             items=[r.__dict__ for r in report.results])
    if args.json:
        _print_json({**summary, **({"files": files} if files else {})})
    else:
        if args.by_class:
            print(f"{'class':<14} {'correct':>9} {'accuracy':>8} {'flagged':>8} {'silent':>7}")
            for name, row in summary["by_class"].items():
                print(f"{name:<14} {row['correct']:>4}/{row['total']:<4} {row['accuracy']:>8.1%} "
                      f"{row['flagged']:>8} {row['silent']:>7}")
        model = (f", {summary['median_seconds_model']:.2f} s where the model planned"
                 if summary["median_seconds_model"] is not None else "")
        print(f"execution accuracy: {summary['correct']}/{summary['total']} = {report.accuracy:.1%}; wrong: "
              f"{summary['wrong_flagged']} flagged (declined or not understood), {summary['wrong_silent']} silent; "
              f"median {summary['median_seconds']:.2f} s per question{model}")
        if files:
            print(f"wrote {files['json']}, {files['markdown']}, {files['chart']}")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    if _missing_extra("serve", "server", "fastapi", "langserve", "sse_starlette", "uvicorn"):
        return EXIT_INPUT
    import uvicorn

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
    from context_engine.models import probe_endpoints

    for problem in probe_endpoints(settings):
        print(f"context-engine: warning: {problem}; answers fall back to the offline rules and say so",
              file=sys.stderr)


def _serve_until_signalled(app: Any, host: str, port: int, **config: Any) -> None:
    """uvicorn until SIGTERM or Ctrl-C, which also stop the runs in progress: uvicorn alone waits
    for them (a query in a worker thread could hold the process for minutes); `SHUTDOWN` makes each
    stop at its next document or graph step, and whatever is left is cut after a few seconds."""
    import uvicorn

    from context_engine.store.bounded import SHUTDOWN

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            SHUTDOWN.cancel("the server is shutting down")
            super().handle_exit(sig, frame)

    Server(uvicorn.Config(app, host=host, port=port, timeout_graceful_shutdown=3, **config)).run()


def cmd_status(args: argparse.Namespace) -> int:
    from context_engine.retrievers.index import index_lag, index_status
    from context_engine.runtime import store_for
    from context_engine.store.writer_lock import writer_busy

    settings = _settings(args)
    store = store_for(settings)
    tenants = [settings.tenant] if args.tenant else store.tenants()
    report = {"data_dir": str(settings.data_dir), "store_generation": store.generation,
              "writer": writer_busy(settings.data_dir), "tenants": {}}
    for tenant in tenants:
        counts = {name: n for name in store.kinds(tenant).names() if (n := store.count(name, tenant))}
        index = index_status(settings, tenant)
        if index is not None and not index.get("damaged"):
            index["lag"] = index_lag(settings, tenant, store)
        report["tenants"][tenant] = {"records": counts, "index": index}
    report["damaged_rows"] = store.damaged_rows()  # skipped wherever read; of no tenant one can name
    if args.json:
        _print_json(report)
        return EXIT_OK
    busy = f"an ingest is writing (pid {report['writer']})" if report["writer"] else "no ingest running"
    print(f"{settings.data_dir}: store generation {store.generation}; {busy}")
    if report["damaged_rows"]:
        print("  damaged rows skipped (every other record answers as usual): "
              + ", ".join(f"{name} {n:,}" for name, n in report["damaged_rows"].items()))
    for tenant, info in report["tenants"].items():
        records = ", ".join(f"{name} {n:,}" for name, n in info["records"].items()) or "no records"
        index = info["index"]
        if index is None:
            state = "no semantic index (content questions need `ingest` without --no-index)"
        elif index.get("damaged"):
            state = "semantic index damaged: re-run ingest"
        elif index["pending"]:
            state = (f"semantic index: {index['chunks']:,} chunks, {index['pending']:,} still embedding "
                     "(keyword search covers them meanwhile)")
            if running := index.get("embedding"):
                state += (f"; {running['done']:,}/{running['total']:,} embedded at {running['per_second']}/s, "
                          f"about {running['eta_seconds']:,} s left")
        else:
            state = f"semantic index: {index['chunks']:,} chunks, all embedded ({index['model']}, {index['built_at']})"
        if index is not None and not index.get("damaged"):
            state += "\n    " + _index_freshness(index, store.generation)
        print(f"  {tenant}: {records}\n    {state}")
    return EXIT_OK


def _index_freshness(index: dict[str, Any], store_generation: int) -> str:
    """Whether the index holds what the store holds now: `status` never calls a lagging index current."""
    lag = index.get("lag")
    if lag is None:  # MongoDB, or an index stamped before row numbers: the commit it was built at
        return (f"index built at store generation {index.get('store_generation')} (store now at {store_generation}); "
                "records written since are not counted here")
    if not lag["written_since"]:
        return "index up to date with the store"
    return (f"index BEHIND the store: {lag['written_since']:,} records written since it was built, "
            f"{lag['access_changed']:,} of them with changed access (search checks every hit against the "
            "store meanwhile; the next ingest or webhook sync catches up)")


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


EXIT_CODES = ("\nexit codes: 0 ok; 2 usage or input error (one line on stderr); 3 a pipeline rejected by validation; "
              "4 the data dir cannot be read or written\n")
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
    common.add_argument("--tenant", help=f"tenant to read or write (default $CONTEXT_ENGINE_TENANT or acme); "
                        f"a tenant name is {TENANT_RULE}")
    common.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    parser = _Parser(prog="context-engine", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=(
        "A relational context engine: answers questions over PRs, issues, Slack and docs with validated, "
        "tenant-scoped MongoDB queries and hybrid semantic search."), epilog=EXAMPLES["context-engine"] + EXIT_CODES)
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("context-engine")
    except PackageNotFoundError:  # run from a source tree that was never installed
        installed = "unknown"
    parser.add_argument("--version", action="version", version=f"context-engine {installed}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        return sub.add_parser(name, parents=[common], epilog=EXAMPLES[name] + EXIT_CODES, **kwargs)

    from context_engine.sources.connectors import SOURCES

    p = add("ingest", help="load data from a source (re-ingesting upserts by source id)",
            description="sources:\n" + "\n".join(f"  {name:8s} {what}" for name, what in SOURCES.items()))
    p.add_argument("source", choices=list(SOURCES), help="where the records come from (see below)")
    p.add_argument("paths", nargs="*", help="files or folders of the source")
    p.add_argument("--repo", metavar="OWNER/NAME", help="github: sync this repository live through the REST API "
                   "(token: $GITHUB_TOKEN or `gh auth token`; incremental after the first run)")
    p.add_argument("--since", metavar="DATE", help="git, github --repo: only history after this date")
    p.add_argument("--prune", action="store_true", help="remove records the source no longer has "
                   "(github --repo: makes the sync a full one)")
    p.add_argument("--no-index", action="store_true",
                   help="structured store only: skip chunking and embedding for the semantic index")
    p.add_argument("--public", action="store_true",
                   help="declare that records whose source does not say who may read them (a git clone, a dump "
                   "without repository visibility, Jira/Linear/docs exports) are readable by the whole tenant; "
                   "without it they are readable by nobody (deny by default)")
    own = p.add_argument_group("json, mongodb: your own collection (what is not given is inferred and printed)")
    own.add_argument("--collection", metavar="NAME", help="the collection the records go to (not a built-in one); "
                     "letters, digits, '_'")
    own.add_argument("--key", metavar="FIELD", help="the field whose value keys a record (default: id, key, "
                     "<noun>_id or the first column unique in every row)")
    own.add_argument("--ref-prefix", metavar="TEXT", help="a record's reference is TEXT + its key, e.g. INC- "
                     "(default: <collection>/ for numeric keys, nothing otherwise)")
    own.add_argument("--noun", help="one record, as an answer says it (default: the collection name made singular)")
    own.add_argument("--time", action="append", metavar="ROLE=FIELD", help="a date field and its role (created, "
                     "resolved, ...); repeatable")
    own.add_argument("--person", action="append", metavar="ROLE=FIELD[:HANDLE]", help="a people field and its role "
                     "(author, assignee, ...); HANDLE: github (default), slack_id, jira, email or name; repeatable")
    own.add_argument("--text", action="append", metavar="FIELD", help="a free-text field (the first is the subject), "
                     "indexed for search; repeatable")
    own.add_argument("--value", action="append", metavar="ROLE=FIELD", help="a field whose values questions name "
                     "(severity, status, ...); repeatable")
    own.add_argument("--reference", action="append", metavar="FIELD=COLLECTION", help="a field whose values are "
                     "references of another collection, e.g. pr=pull_requests; repeatable")
    own.add_argument("--access-field", metavar="FIELD", help="the field naming who may read each record: a principal "
                     "(github:login, slack:U..., email:...) or a list of them, '*' for the whole tenant; a record "
                     "naming none is readable by nobody, or by the whole tenant with --public")
    own.add_argument("--spec", metavar="FILE", help="a JSON collection spec (name, noun, key, ref_prefix, people, "
                     "times, values, text, references, ... plus access_field, public) instead of the options above")
    own.add_argument("--db", metavar="DATABASE", help="mongodb: the database to read")
    own.add_argument("--source-collection", metavar="NAME", help="mongodb: the collection to read (default: --collection)")
    own.add_argument("--filter", metavar="JSON", help="mongodb: only the documents matching this query")
    own.add_argument("--limit", type=int, metavar="N", help="mongodb: at most N documents")
    p.set_defaults(func=cmd_ingest)

    p = add("ask", help="answer a question")
    p.add_argument("question", help="in English or Chinese; structured, content or both")
    p.add_argument("--now", help="the time the question is asked, ISO 8601 (default: the clock)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_ask)

    p = add("query", help="run a hand-written pipeline through validation and scoping")
    p.add_argument("collection", help="pull_requests, issues, messages, documents, commits, people or one of the "
                   "tenant's own (`ingest json|mongodb`)")
    p.add_argument("pipeline", metavar="PIPELINE_JSON", help='e.g. \'[{"$match": {"state": "open"}}]\'; dates as {"$date": "..."}')
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_query)

    p = add("eval", help="evaluate: `eval structured --questions FILE`, "
                       "`eval retrieval --beir DIR --split train|test`, `eval rag --dataset clapnq|FILE`")
    p.add_argument("kind", choices=["structured", "retrieval", "rag", "compare", "conversations", "tend"], help="structured: execution "
                   "accuracy against gold pipelines; retrieval: nDCG@10, recall@10/100, MRR@10 of bm25, dense, hybrid, "
                   "reranked, default; rag: the graph's answers and contexts scored with RAGAS; compare: one "
                   "structured question set under two configurations (--a, --b) side by side; conversations: "
                   "multi-turn threads through the graph with a checkpointer, each turn scored as structured; tend: "
                   "execution accuracy on the TEND NL-to-MongoDB benchmark (--data DIR), per database and shape")
    p.add_argument("--data", metavar="DIR", help="tend: the TEND folder (test.json, train.json, mongodb_data/)")
    p.add_argument("--sample", metavar="stratified:N", help="tend: N questions dealt over (database, shape) strata, "
                   "one phrasing per record, fixed seed")
    p.add_argument("--from-feedback", action="store_true", help="structured: replay the tenant's feedback as the "
                   "question set (a 👍's plan or a corrected plan is the gold)")
    p.add_argument("--a", dest="config_a", metavar="CONFIG", help="compare: the first configuration: offline, model, "
                   "no-context-set, optionally with retrieval settings (offline,fusion=rrf,reranker=none)")
    p.add_argument("--b", dest="config_b", metavar="CONFIG", help="compare: the second configuration")
    p.add_argument("--dataset", help="rag: `clapnq` (the CLAP NQ dev set from --clapnq, ingested as tenant clapnq "
                   "under --out) or a FILE asked of --tenant: a RAGAS EvaluationDataset as to_jsonl/to_csv write it "
                   "(user_input, reference?, reference_contexts?, reference_context_ids?; an extra `answerable` is "
                   "read too), or JSON lines: question, reference, reference_contexts?, reference_context_ids?, "
                   "answerable?")
    p.add_argument("--clapnq", metavar="DIR", help="rag, clapnq: the CLAP NQ dev folder (clapnq_dev_answerable.jsonl, "
                   "clapnq_dev_unanswerable.jsonl); default $CONTEXT_ENGINE_CLAPNQ")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help="rag: the asker, as `ask --as`: the graph "
                   "sees what this account may read")
    p.add_argument("--judge", metavar="MODEL", help="rag: an OpenAI-compatible chat model for the LLM metrics "
                   "(faithfulness, answer relevancy, LLM context recall)")
    p.add_argument("--out", metavar="DIR", help="rag, structured: write results.json, results.md and results.png "
                   "here; rag also dataset.jsonl (the filled RAGAS EvaluationDataset), samples.csv and samples.json "
                   "(per question scores) (rag default: a new temporary directory); tend: a FILE of JSON lines, the "
                   "summary then every question (question, gold, predicted pipeline, correct, why)")
    p.add_argument("--questions", help="structured: JSON lines: question, now, as, tenant, collection, gold "
                   "(or gold_refs, gold_value), compare (refs, count, value, groups, top, declines), class?; "
                   "conversations: JSON lines: id, tenant, now, as, turns (each a structured question and its kind)")
    p.add_argument("--by-class", action="store_true", help="structured: a table of accuracy per question class, "
                   "with the wrong answers split into flagged (declined, or words not understood) and silent")
    p.add_argument("--beir", metavar="DIR", help="retrieval: a BEIR folder (corpus.jsonl[.gz], queries.jsonl, qrels/)")
    p.add_argument("--split", help="retrieval: the qrels split to score (train, test, ...); tend: test (default) or train")
    p.add_argument("--planner", choices=["offline", "auto", "llm"], default="offline",
                   help="offline (default); auto: the LLM where the offline planner is unsure; llm: every question")
    p.add_argument("--half", choices=["tune", "report"], help="rag, clapnq: only the half of the questions the "
                   "answerability judge was tuned on, or only the half it never saw")
    p.add_argument("--limit", type=int, help="only the first N questions (queries); rag, clapnq: the corpus is "
                   "only their passages (ingested and embedded), not the whole dev set's")
    p.set_defaults(func=cmd_eval)

    p = add("context-set", help="the tenant's context set: templates (solved questions with parameters), facets "
            "(named filters) and value-search settings")
    p.add_argument("action", choices=["list", "add", "remove", "test", "export"],
                   help="list; add TEMPLATE (JSON or FILE); remove NAME; test NAME (its example question through the "
                   "engine); export (the whole set as JSON)")
    p.add_argument("item", nargs="?", help="add: the template; remove, test: its name")
    p.add_argument("--replace", action="store_true", help="add: replace a template of the same name")
    p.add_argument("--now", help="test: the time the example is asked, ISO 8601 (default: the clock)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_context_set)

    p = add("feedback", help="👍/👎 on the last answer (or --question): stored per tenant; a confirmed or corrected "
            "plan becomes a template of the context set")
    rating = p.add_mutually_exclusive_group(required=True)
    rating.add_argument("--up", action="store_true", help="the answer was right")
    rating.add_argument("--down", action="store_true", help="the answer was wrong")
    p.add_argument("--note", help="what was wrong or right, in a sentence (at most 2,000 characters)")
    p.add_argument("--plan", metavar="FILE|JSON", help='the right plan, {"collection": ..., "pipeline": [...]}: '
                   "validated, then kept as a template")
    p.add_argument("--question", help="the question the feedback is about (default: the last one asked of this tenant)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help="who gives it (default: who asked the last question)")
    p.set_defaults(func=cmd_feedback)

    p = add("people", help="the identity directory: each person's accounts across "
                       "sources, why they were merged, and the possible matches left apart")
    p.set_defaults(func=cmd_people)

    p = add("schema", help="print the discovered schema (as the asker may see it: private records' fields and "
                          "values only for their readers)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help=ASKER_HELP)
    p.set_defaults(func=cmd_schema)

    p = add("status", help="per tenant: records, semantic index (chunks, still embedding), a running ingest")
    p.set_defaults(func=cmd_status)

    p = add("mcp", help="serve the engine to coding agents over the Model Context Protocol: stdio (identity "
                       "from --tenant/--as) or --http with --keys (Bearer key -> tenant and person, as `serve`)")
    p.add_argument("--as", dest="as_user", metavar="ACCOUNT", help="stdio: the account the agent acts for, exactly "
                   "as `ask --as` "
                   "(default $CONTEXT_ENGINE_USER; none: public records only)")
    p.add_argument("--http", action="store_true", help="streamable HTTP at /mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--keys", metavar="FILE", help="--http: API keys, the same JSON as `serve --keys` "
                   "(default $CONTEXT_ENGINE_API_KEYS)")
    p.set_defaults(func=cmd_mcp)

    p = add("serve", help="serve the graph over HTTP (LangServe) behind API keys; "
                       "--tenant is where signed webhooks ingest")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--keys", metavar="FILE", help='API keys, JSON {"KEY": {"tenant": ..., "user": ...}} '
                   "(default $CONTEXT_ENGINE_API_KEYS)")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help and usage errors exit here, before anything heavy is imported
    from context_engine.config import TenantError
    from context_engine.retrievers.index import IndexDamaged, IndexMissing
    from context_engine.store.documents import StoreError
    from context_engine.store.sqlite_file import StoreFileError
    from context_engine.text import TimeRangeError

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
