"""The one rule for a topic word inside a structured question (`query/topic_words.py`): the words it
stands for, as whole words, whichever planner wrote the condition."""

from __future__ import annotations

import re

import pytest

from context_engine.query.compile import compile_plan
from context_engine.query.ir import Filter, PlanIR, Shape
from context_engine.query.llm_planner import topic_as_words
from context_engine.query.schema import schema_from_documents
from context_engine.query.topic_words import MAX_FORMS, family_roots, roots, verb_forms
from context_engine.query.validate import is_word_pattern, word_pattern
from context_engine.store.bounded import compile_re2


def matches(words: list[str], text: str) -> bool:
    return bool(re.search(word_pattern(words), text))


@pytest.mark.parametrize(
    "word,found,not_found",
    [
        # an activity: every form of it, from the start of a word to its end
        ("concatenating", ["concatenate", "concatenated", "concatenation", "Concatenating"], ["concat_x", "cat"]),
        ("parsing", ["parse", "parses", "parsed", "parser", "parsers"], ["sparse", "parsley"]),
        ("zipping", ["zip", "zips", "zipped"], ["unzip", "zipfile"]),
        # a concept: the verb it names, not a shorter word the stemmer would cut it to
        ("tokenization", ["tokenize", "tokenized", "tokenizer", "tokenization", "tokenisation"], ["token", "tokens"]),
        ("laziness", ["lazy", "laziness"], ["lazarus"]),
        ("streaming", ["stream", "streams", "streamed", "streamable"], ["mainstream", "streamline"]),
        # British and American spelling; a short form and its long one
        ("licences", ["license", "licensing", "licence", "licences"], ["licensee_x"]),
        ("docs", ["doc", "docs", "documentation", "documented"], ["docker", "doctor"]),
    ],
)
def test_a_word_said_as_an_activity_or_a_concept_stands_for_its_family(word, found, not_found):
    for text in found:
        assert matches([word], f"a title about {text} here"), text
    for text in not_found:
        assert not matches([word], f"a title about {text} here"), text


def test_the_family_is_literal_words_and_endings_the_validator_allows():
    for word in ("concatenating", "licences", "docs", "zipping", "tokenization", "re-frame", "缓存"):
        pattern = word_pattern([word])
        assert is_word_pattern(pattern), pattern
        compile_re2(pattern)  # what the store runs: RE2, linear in the text
    # bounded: many words keep at most MAX_FORMS roots, the first words' first
    many = [f"word{i}" for i in range(20)]
    assert len(family_roots(many)) == MAX_FORMS and is_word_pattern(word_pattern(many))


def test_roots_are_words_not_guesses():
    assert roots("tokenization") == ["tokeniz", "tokenis"]  # not "token"
    assert roots("zip") == ["zip", "zipp"]  # English doubles: zipped
    assert roots("doc") == ["doc", "document"]  # no "docced"
    assert roots("load_dataset") == ["load_dataset"]  # an identifier is its own root


def test_a_thing_is_inflected_only_as_english_does():
    assert verb_forms("zip") == ["zipped", "zipping"]  # not "ziped"
    assert verb_forms("cache") == ["cached", "caching"]
    assert verb_forms("audio") == [] and verb_forms("json") == []  # no "audioed"


def test_the_model_planners_topic_in_a_structured_plan_is_the_same_rule():
    issues = [{"ref": "i1", "title": "Streaming fails", "body": "x", "state": "open", "user": {"login": "q"}}]
    schema = schema_from_documents("issues", issues)
    ir = PlanIR("issues", filters=[Filter("state", "eq", "open")], text=["streaming"], shape=Shape("count"))
    topic_as_words(ir, schema)
    assert ir.text == [] and [(f.field, f.op, f.value) for f in ir.filters][-1] == ("title", "words", ["streaming"])
    match = compile_plan(ir, schema)[0]["$match"]
    assert "$text" not in match and re.search(match["title"]["$regex"], "Streamed datasets")
    # no structure: a keyword search, left to full text
    search = PlanIR("issues", text=["streaming"])
    topic_as_words(search, schema)
    assert search.text == ["streaming"] and search.filters == []
