"""A subject inside a structured question: the planner makes its words a condition on the records'
subject (the title), whole words in their forms or family (`query/topic_words.py`), not anywhere in their
bodies; a name or a word the index splits goes to full text (`$text`), matched in the title too.

The questions are over the sample organisation; the expected rows are computed here from the titles
(whole words), independently of the engine's tokenizer and index."""

from __future__ import annotations

import re

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.query.engine import Success
from context_engine.query.fulltext import index_words
from context_engine.query.offline import OfflinePlanner
from context_engine.resources import catalog_for, store_for
from tests.conftest import NOW
from tests.query.conftest import plan


def topic(p) -> set[str]:
    return {s["text"] for s in p.understood if s["how"] == "topic"}


@pytest.mark.parametrize(
    "question,conditions,words",
    [
        # a word qualifying the collection noun, that no other step read
        ("flaky PRs that were merged", [("exact_words", ["flaky", "flakies"])], {"flaky"}),
        ("how many merged flaky pull requests", [("exact_words", ["flaky", "flakies"])], {"flaky"}),
        # before "-related" / "related" / 相关: a word that may be a verb, with its inflections
        (
            "churn-related PRs still open",
            [("exact_words", ["churn", "churns", "churned", "churning"])],
            {"churn", "related"},
        ),
        (
            "which open PRs are churn related",
            [("exact_words", ["churn", "churns", "churned", "churning"])],
            {"churn", "related"},
        ),
        # after a cue, up to the next word another step reads ("merged", "in June") or a function word;
        # every word is required, a thing in its forms, an activity in its family
        (
            "PRs about dunning emails that were merged in June",
            [("words", ["dunning"]), ("exact_words", ["email", "emails"])],
            {"about", "dunning", "emails"},
        ),
        (
            "merged PRs on the refund handling",
            [("exact_words", ["refund", "refunds", "refunded", "refunding"]), ("words", ["handling"])],
            {"on", "refund", "handling"},
        ),
        (
            "open PRs that mention payout reconciliation",
            [("exact_words", ["payout", "payouts"]), ("words", ["reconciliation"])],
            {"mention", "payout", "reconciliation"},
        ),
    ],
)
def test_the_subject_of_a_structured_question_is_a_condition_on_its_title(catalog, question, conditions, words):
    p = plan(catalog, question)
    assert p.ir.text == [] and _title_words(p) == [("title", op, value) for op, value in conditions]
    assert topic(p) == words
    assert p.not_understood == []
    assert len(p.pipeline[0]["$match"]) > 1  # a filter besides the topic


def test_a_chinese_topic_the_index_splits_is_searched_as_full_text(catalog):
    p = plan(catalog, "已合并的关于退款流程的PR")  # jieba cuts 退款流程 in two: no one word
    assert p.ir.text == ["退款流程"] and topic(p) == {"关于", "退款流程"} and p.not_understood == []
    assert "$text" in p.pipeline[0]["$match"] and len(p.pipeline[0]["$match"]) > 1


@pytest.mark.parametrize(
    "question",
    [
        "bug PRs merged in June",  # "bug" is a stored label: a condition, not a topic
        "merged PRs in acme/payments",  # a repository
        "how many open PRs",  # nothing but structure
        "PRs merged on Monday",  # "on" followed by a time is no topic cue
    ],
)
def test_words_another_step_reads_are_no_topic(catalog, question):
    p = plan(catalog, question)
    assert p.ir.text == [] and not topic(p)


def test_a_name_is_one_phrase_other_words_match_in_any_order(catalog):
    # Capitalised words are a name: together and in order. Lower-case ones each, in any order, each in
    # its forms (the things in either number; a word that may be a verb with its inflections too).
    assert plan(catalog, "merged PRs about Service Mesh Retries").ir.text == ['"service', "mesh", 'retries"']
    p = plan(catalog, "merged PRs about service mesh retries")
    assert p.ir.text == [] and [(f.field, f.op, f.value) for f in p.ir.filters if "words" in f.op] == [
        ("title", "exact_words", ["service", "services", "serviced", "servicing"]),
        ("title", "exact_words", ["mesh", "meshes", "meshed", "meshing"]),
        ("title", "exact_words", ["retry", "retries"]),
    ]


def _titles(settings, **match):
    store = store_for(settings)
    return list(
        store.collection("pull_requests").find({"tenant_id": "acme", **match}, {"title": 1, "body": 1, "ref": 1})
    )


def _has(text, *words):
    return all(re.search(rf"(?<![0-9a-z_]){w}(?![0-9a-z_])", (text or "").lower()) for w in words)


def test_a_topic_in_a_structured_question_matches_the_title_not_the_body(settings):
    merged = _titles(settings, merged=True)
    in_title = sorted(r["ref"] for r in merged if _has(r["title"], "events?"))
    anywhere = [r for r in merged if _has(r["title"], "events?") or _has(r.get("body"), "events?")]
    assert in_title and len(anywhere) > len(in_title)  # the bodies alone would answer differently
    result = run_structured("merged PRs about events", settings, now=NOW)
    assert isinstance(result, Success)
    assert sorted(r["ref"] for r in result.rows) == in_title
    count = run_structured("how many merged PRs mention event", settings, now=NOW)
    assert count.rows == [{"count": len(in_title)}]


def test_every_word_of_a_topic_is_in_the_title(settings):
    merged = _titles(settings, merged=True)
    want = sorted(r["ref"] for r in merged if _has(r["title"], "schema", "registry"))
    only_one = [r for r in merged if _has(r["title"], "schema") != _has(r["title"], "registry")]
    assert want and only_one  # titles with one of the two words exist, and are not about the topic
    result = run_structured("merged PRs about schema registry", settings, now=NOW)
    assert sorted(r["ref"] for r in result.rows) == want


def test_a_relevance_search_without_structure_still_reads_the_bodies(settings):
    # No condition: a keyword search ranked by BM25 over every text field, titles and bodies.
    rows = _titles(settings)
    assert not any(_has(r["title"], "traffic") for r in rows) and any(_has(r.get("body"), "traffic") for r in rows)
    result = run_structured("PRs mentioning traffic", settings, now=NOW)
    p = result.attempts[-1].plan
    assert p.ir.text == ["traffic"] and any("textScore" in str(stage) for stage in p.pipeline)
    assert result.rows and all(_has(r.get("body"), "traffic") for r in result.rows)
    # the same word filtering a structured question is looked for in the titles: none
    assert run_structured("how many merged PRs mention traffic", settings, now=NOW).rows in ([], [{"count": 0}])


def test_index_words_read_inside_compounds_and_able_forms():
    words = index_words("Make RedCaps streamable; fix audio-folder in datasets.load_dataset")
    assert {"stream", "audio", "folder", "load_dataset", "datasets.load_dataset"} <= set(words)
    # an underscore joins an identifier: "load" alone is not a word of it
    assert "load" not in index_words("datasets.load_dataset")
    # a short word before "-able" is not cut ("table" is no form of "t")
    assert index_words("table") == ["tabl"]


def test_a_quoted_phrase_matches_its_words_together_and_in_order(settings):
    from context_engine.query.fulltext import text_ids

    store, fields = store_for(settings), catalog_for(settings).schemas["pull_requests"].text_fields
    by_ref = {r["_id"]: r["ref"] for r in _titles(settings)}
    in_order = {
        by_ref[i] for i in text_ids(store, "pull_requests", "acme", fields, '"schema registry"', subject="title")
    }
    assert in_order == {r["ref"] for r in _titles(settings) if re.search(r"(?i)\bschema\s+registry\b", r["title"])}
    # the same words, each anywhere in the title: the unquoted search; reversed as a phrase: nothing
    assert {
        by_ref[i] for i in text_ids(store, "pull_requests", "acme", fields, "registry schema", subject="title")
    } >= in_order
    assert text_ids(store, "pull_requests", "acme", fields, '"registry schema"', subject="title") == []


def test_words_said_to_be_in_the_title_are_a_words_filter_on_it(catalog):
    p = plan(catalog, "merged PRs mentioning rounding in their title")
    assert p.ir.text == [] and [(f.field, f.value) for f in p.ir.filters if f.op == "words"] == [
        ("title", ["rounding"])
    ]
    assert topic(p) == {"mentioning", "rounding", "in their title"} and p.not_understood == []


def test_different_words_given_as_alternatives_match_either_in_either_number(settings):
    """ "events or schemas" names two subjects, each in the singular or the plural: "event" too."""
    merged = _titles(settings, merged=True)
    want = sorted(r["ref"] for r in merged if _has(r["title"], "events?") or _has(r["title"], "schemas?"))
    assert want != sorted(r["ref"] for r in merged if _has(r["title"], "events") or _has(r["title"], "schemas"))
    result = run_structured("merged PRs about events or schemas", settings, now=NOW)
    assert isinstance(result, Success)
    assert sorted(r["ref"] for r in result.rows) == want


@pytest.mark.parametrize(
    "question,words",
    [
        # forms of one word: those forms, no other ("event or events" is not "eventing")
        ("merged PRs about event or events", ["event", "events"]),
        ("merged PRs with leak, leaks or leaked in the title", ["leak", "leaks", "leaked"]),
        ("标题里有 leak、leaks 或 leaked 的已合并 PR", ["leak", "leaks", "leaked"]),
        # different words: each in the singular and the plural; a verb form or a name as written
        ("merged PRs about wheels or tarballs", ["wheel", "wheels", "tarball", "tarballs"]),
        ("merged PRs about library or caching", ["library", "libraries", "caching"]),
        ("merged PRs about crash or redis", ["crash", "crashes", "redis"]),
        # a plural ending in parentheses: the word in either number
        ("merged PRs with crash(es) in the title", ["crash", "crashes"]),
        # a word and a longer form of it: those forms exactly, not "fasts"
        ("merged PRs with fast or faster in the title", ["fast", "faster"]),
        # a hyphenated name is one word, as written ("pre-commit", not "pre" and "commit")
        ("merged PRs about pre-commit or linting", ["pre-commit", "pre-commits", "linting"]),
        # a short form beside its long one names two words: each in either number
        (
            "merged PRs whose title says configuration or configs",
            ["configuration", "configurations", "config", "configs"],
        ),
        # the forms spelled out after the word, "in the title" inside the brackets
        ("merged PRs touching packaging (wheel or wheels in the title)", ["wheel", "wheels"]),
    ],
)
def test_the_forms_alternatives_match(catalog, question, words):
    p = plan(catalog, question)
    assert [(f.field, f.op, f.value) for f in p.ir.filters if "words" in f.op] == [("title", "exact_words", words)]
    assert p.not_understood == []


def test_words_given_with_a_slash_are_alternatives_too(catalog):
    p = plan(catalog, "merged PRs about caching / redis")
    assert [(f.field, f.value) for f in p.ir.filters if f.op == "exact_words"] == [("title", ["caching", "redis"])]


def test_a_label_said_as_one_of_the_words_in_the_title_is_a_word_not_a_label():
    from context_engine.query.catalog import Catalog
    from context_engine.query.engine import resolve
    from context_engine.query.schema import schema_from_documents

    issues = [
        {"ref": "i1", "title": "pyarrow fails", "state": "open", "labels": [{"name": "arrow"}], "user": {"login": "q"}}
    ]
    catalog = Catalog("t", {"issues": schema_from_documents("issues", issues)}, [{"login": "q"}])
    ctx, _ = resolve("open issues with arrow or pyarrow in the title", NOW, catalog, None)
    p = OfflinePlanner().plan(ctx)
    assert [(f.field, f.op) for f in p.ir.filters if f.field != "state"] == [("title", "exact_words")]
    assert p.ir.filters[-1].value == ["arrow", "arrows", "pyarrow", "pyarrows"]


def test_phrases_given_as_alternatives_keep_the_first_and_say_the_rest_was_not_read(catalog):
    # two phrases joined by "or" are no one search; the answer says what it left out
    p = plan(catalog, "open PRs about refund flow or payout reconciliation")
    assert {"refund", "flow"} <= topic(p)
    assert [s["text"] for s in p.not_understood] == ["payout reconciliation"]


@pytest.mark.parametrize(
    "question,words",
    [
        ("how many CI PRs were merged", {"CI"}),  # an acronym of two letters
        ("merged PRs that touch caching", {"touch", "caching"}),
        ("how often did flaky tests come up in merged PRs", {"flaky", "tests", "come up"}),
        (
            "merged PRs that mention split in the title",
            {"mention", "split", "in the title"},
        ),  # a shape word after a cue
    ],
)
def test_more_ways_of_naming_a_topic(catalog, question, words):
    p = plan(catalog, question)
    assert topic(p) == words and p.not_understood == []


@pytest.mark.parametrize(
    "question,words",
    [
        (
            "标题里提到 caching 或 redis 的已合并 PR",
            ("exact_words", ["caching", "redis"]),
        ),  # 或: alternatives, as written
        ("merged pull requests whose titles say caching", ("words", ["caching"])),
    ],
)
def test_more_ways_of_naming_words_in_the_title(catalog, question, words):
    p = plan(catalog, question)
    assert [(f.field, (f.op, f.value)) for f in p.ir.filters if "words" in f.op] == [("title", words)]


@pytest.mark.parametrize(
    "question",
    [
        "how many merged PRs don't mention events",
        "count merged PRs not about events",
        "how many merged PRs have nothing to do with events or event",
    ],
)
def test_a_negated_topic_keeps_the_records_whose_title_holds_none_of_its_words(settings, question):
    """Where a topic is looked for (the title, as for "PRs about events"), none of its words."""
    merged = _titles(settings, merged=True)
    want = [r for r in merged if not _has(r["title"], "events?")]
    assert want and len(want) < len(merged)
    result = run_structured(question, settings, now=NOW)
    assert isinstance(result, Success) and result.plan.not_understood == []
    assert result.rows == [{"count": len(want)}]


def test_a_negated_topic_of_several_words_has_no_one_reading_and_says_so(catalog):
    p = plan(catalog, "merged PRs not about payout reconciliation")
    assert "not" in " ".join(s["text"] for s in p.not_understood)


@pytest.mark.parametrize(
    "question", ["PRs with rounding in the title", "PRs whose title mentions rounding", "标题里有 rounding 的 PR"]
)
def test_words_in_the_title_are_a_condition_on_it_with_nothing_else_said(catalog, question):
    p = plan(catalog, question)
    assert [(f.field, f.value) for f in p.ir.filters] == [("title", ["rounding"])] and p.ir.text == []
    assert p.not_understood == []


@pytest.mark.parametrize(
    "question,words",
    [
        ("merged PRs that mention events (event or events)", ["event", "events"]),
        ("标题里提到事件（event、events 或 eventing）的已合并 PR", ["event", "events", "eventing"]),
    ],
)
def test_the_forms_of_a_topic_spelled_out_after_it_are_the_ones_matched(catalog, question, words):
    p = plan(catalog, question)
    assert [(f.field, f.op, f.value) for f in p.ir.filters if "words" in f.op] == [("title", "exact_words", words)]
    assert p.not_understood == []


def test_a_chinese_words_translation_in_brackets_is_the_topic(catalog):
    # "讲事件（event）": the records are written in English; the bracketed word is what they say
    p = plan(catalog, "标题里讲事件（event）的已合并 PR")
    words = [w for f in p.ir.filters if "words" in f.op for w in f.value]
    assert "event" in words and not any("事件" in w for w in words) and p.ir.text == []
    assert p.not_understood == []


def test_two_derivations_of_one_stem_name_its_family(catalog):
    # "validating or validation": neither is a form of the other; the stem with every ending (validate, validated)
    p = plan(catalog, "merged PRs with validating or validation in the title")
    assert [(f.field, f.op, f.value) for f in p.ir.filters if "words" in f.op] == [("title", "words", ["valid"])]
    assert p.not_understood == []


def _title_words(p) -> list[tuple[str, str, list[str]]]:
    return [(f.field, f.op, f.value) for f in p.ir.filters if "words" in f.op]


@pytest.mark.parametrize(
    "question,forms",
    [
        # a noun said in the plural, or one naming who or what does something: the thing, in either number
        ("merged PRs about webhooks", ["webhook", "webhooks"]),
        ("open PRs that talk about the scheduler", ["scheduler", "schedulers"]),
        ("关于 serializer 的已合并 PR", ["serializer", "serialiser", "serializers", "serialisers"]),
        ("webhooks discussion in merged PRs", ["webhook", "webhooks"]),  # a topic said before "discussion"
        # "alias" may be one thing, whose plural is "aliases", and a verb
        ("merged PRs about alias", ["alia", "alias", "aliases", "aliased", "aliasing"]),
        # a singular that may be a verb: its inflections, not its derivations ("throttler")
        ("merged PRs about throttle", ["throttle", "throttles", "throttled", "throttling"]),
        # an identifier: as written, no number
        ("merged PRs mentioning retry_budget", ["retry_budget"]),
        # a word spelled the British or the American way: both spellings
        ("merged PRs dealt with catalogues", ["catalogue", "catalog", "catalogues", "catalogs"]),
        # a capitalised name mid-sentence, or one with a capital inside: as written ("Jenkins" is no "jenkin")
        ("merged PRs about Jenkins", ["jenkins"]),  # not "jenkin"
        ("merged PRs about OpenTelemetry", ["opentelemetry", "opentelemetrys"]),
        ("merged PRs that mention SDKs", ["sdk", "sdks"]),  # an acronym's plural: either number
        ("webhook-related merged PRs", ["webhook", "webhooks"]),  # "-related" names the thing related to
    ],
)
def test_a_thing_named_after_a_cue_is_that_word_not_its_stems_family(catalog, question, forms):
    """ "about decoders" is about decoders, not about decoding: the stem ("decod") would take in the
    verb; the word is a condition on the subject in its own forms."""
    p = plan(catalog, question)
    assert p.ir.text == [] and [(op, value) for _, op, value in _title_words(p)] == [("exact_words", forms)]
    assert p.not_understood == []


@pytest.mark.parametrize(
    "question,text",
    [
        ("merged PRs about throttling", ["throttling"]),  # a verb form: the activity, in any word of it
        ("merged PRs about observability", ["observability"]),  # a quality
        ("merged PRs about reconciliation", ["reconciliation"]),  # an action
        ("merged PRs about docs", ["docs"]),  # a short form, found with its long one ("documentation")
    ],
)
def test_a_concept_keeps_its_whole_family(catalog, question, text):
    p = plan(catalog, question)
    assert p.ir.text == [] and _title_words(p) == [("title", "words", text)]


def test_the_thing_is_found_without_the_verb_that_shares_its_stem(tmp_path):
    from tests.query.conftest import hand_made_world, refs

    titles = ["Decoders for bytes", "Add a decoder", "Decoding fails on ints", "decode the header", "Tokenizer crash"]
    issues = [{"ref": f"i{i}", "title": t, "state": "open", "user": {"login": "quinn"}} for i, t in enumerate(titles)]
    store, catalog = hand_made_world(tmp_path, {"issues": issues}, [{"login": "quinn", "name": "Quinn Adler"}])
    p = plan(catalog, "open issues about decoders")
    assert refs(p.ir, store, catalog.schemas["issues"]) == ["i0", "i1"]
    # said as the activity, the family is meant: every form of the stem
    assert refs(plan(catalog, "open issues about decoding").ir, store, catalog.schemas["issues"]) == [
        "i0",
        "i1",
        "i2",
        "i3",
    ]


def test_a_topic_is_found_in_either_spelling(tmp_path):
    from tests.query.conftest import hand_made_world, refs

    titles = ["Neighbour sampling is slow", "neighbors list empty", "Tokenizer crash", "Add a neighborhood index"]
    issues = [{"ref": f"i{i}", "title": t, "state": "open", "user": {"login": "quinn"}} for i, t in enumerate(titles)]
    store, catalog = hand_made_world(tmp_path, {"issues": issues}, [{"login": "quinn", "name": "Quinn Adler"}])
    for question in ("open issues about neighbours", "open issues about neighbor"):
        assert refs(plan(catalog, question).ir, store, catalog.schemas["issues"]) == ["i0", "i1"], question


def test_filler_ends_a_topic_and_is_read_as_part_of_it(catalog):
    # "stuff" says nothing of the topic: not a word the titles must hold, and not unread either
    p = plan(catalog, "merged PRs about retry stuff")
    assert [(op, value) for _, op, value in _title_words(p)] == [
        ("exact_words", ["retry", "retries", "retried", "retrying"])
    ]
    assert "stuff" in topic(p) and p.not_understood == []
    # a verb before "something" is the topic, in its whole family ("deprecation" too)
    p = plan(catalog, "merged PRs that deprecate something")
    assert _title_words(p) == [("title", "words", ["deprecate"])] and p.not_understood == []
    # ... not a verb of saying or doing: "say something" is no subject
    assert _title_words(plan(catalog, "which PRs did Rashid merge that say something")) == []


@pytest.mark.parametrize("question", ["2026 年有多少 issue 提到了 Kubernetes？", "有多少 PR 谈到了 Kubernetes"])
def test_a_capitalised_word_after_a_chinese_topic_cue_with_le_is_the_topic(catalog, question):
    """提到了 X: X is what the records say (read as a person nobody is named before)."""
    p = plan(catalog, question)
    assert p.not_understood == [] and any("kubernetes" in str(f.value).lower() for f in p.ir.filters), p.ir
