"""Step 5: what is left of the question: topic words for full-text search, and the spans the plan
understood and did not."""

from __future__ import annotations

import itertools
import re

from context_engine.query.fields import field_for, people_paths, person_field_for
from context_engine.query.identity import CALENDAR_NAMES, COMMON_WORDS
from context_engine.query.ir import MAX_WORDS, WORD, WORD_OPERATORS, Filter, Shape
from context_engine.query.planner.draft import NUMBER_WORDS, STATE_FIELDS, Draft
from context_engine.query.timeexpr import timeish_spans
from context_engine.query.topic_words import SHORT_FORMS, spelling_variants, verb_forms
from context_engine.text import tokenize

# Words that carry no topic: never sent to full-text search.
STOP = COMMON_WORDS | frozenset(
    """
all any are ask asked been being both but could does doing find from get give got had has having
her him his how its just know let like list lot made make many more much need not now only other
our out over own same she should show some such tell than them then there they thing things those
through too very want was way we were what when where which while who why will would you your yet
did do does please recently lately recent new newest latest oldest first most top week month year
recent currently still yet also ones one two three four five six seven eight nine ten quarter
days weeks months years q1 q2 q3 q4 everyone everybody anyone someone us among amongst ever inside within
fewest least quietest
""".split()
)
# What introduces a topic: "about X", "mentioning X", "PRs on X", 关于 X.
_CUE_WORDS = (
    r"about|regarding|mention(?:s|ed|ing)?|related to|concerning|involving|on the topic of|titled|"
    r"containing|on|(?:having |that have |that has |which have |has |have )?to do with|deal(?:s|t|ing)? with|touch(?:es|ing)?|"
    r"(?:bring|brings|bringing|brought) up|"
    r"(?:that |which )?(?:fix|fixes|fixed|fixing|discuss|discusses|discussed|discussing|(?:talk|say)(?:s|ed|ing)? about|said about)"
)
# The forms of a topic word spelled out after it: "ports (port or ports)", "缓存（cache、cached 或 caching）",
# "the docs (doc or docs in the title)".
_FORMS = re.compile(
    r"\s*[(（]\s*(?P<alts>[\w.\-]+(?:\s*(?:,|、|，|/|\bor\b|或者?)\s*(?:or\s+)?[\w.\-]+)+)"
    r"(?:\s+(?:in|on)\s+(?:the\s+|its\s+|their\s+)?titles?)?\s*[)）]",
    re.I,
)
# A Chinese word's translation in brackets ("讲宏（macro）的消息"): the word the records, written in English, use.
_GLOSS = re.compile(r"\s*[(（]\s*(?P<alts>[A-Za-z][\w.\-]*(?:\s+[A-Za-z][\w.\-]*)?)\s*[)）]")


def _gloss(q: str, at: int) -> re.Match | None:
    return _GLOSS.match(q, at) if at and re.match(r"[\u4e00-\u9fff]", q[at - 1]) else None


# A negation right before a topic cue: "not about", "don't mention", "never talks about", "nothing".
_TOPIC_NEGATION = re.compile(
    r"(?:\bnot|n['’]?t|\bnever|\bwithout|\bnothing)\s+(?:(?:even|ever|once|really|say|talk|talking|anything)\s+)*$",
    re.I,
)
# ... and "with" before a quoted word or before "X in the title".
CUE = re.compile(
    rf"\b(?:{_CUE_WORDS}|with)\s+(?=['\"‘“])|\btitles?\s+(?:says?|reads?|includes?|contains?)\s+"
    r"|\bwith\s+(?=[\w.\-]+(?:\s+[\w.\-]+)?\s+in\s+(?:the\s+|its\s+|their\s+)?(?:\w+\s+)?titles?\b)"
    rf"|\b(?:{_CUE_WORDS})\s+|关于|有关|(?:提到|提及|涉及|谈到|说到)了?|讨论(?![串区组])|聊到?|讲到?|谈论"
    r"|(?<=标题)(?:里|中|上)?(?:有|含有?|包含|带有?|出现)",
    re.I,
)
# Words of a measure over the records ("on average", "what share of"): a shape, never a topic.
MEASURE_WORDS = frozenset(
    {"average", "averages", "mean", "median", "percentage", "percent", "share", "ratio", "proportion"}
)
# A count asked with its records too ("how many ..., and which are they"): the count alone answers half.
_ALSO_THE_RECORDS = re.compile(
    r"\b(?:and|&)\s+(?:which|what)\s+(?:ones\s+)?(?:are|were)\s+(?:they|those|these|them)\b"
    r"|\b(?:and|then)\s+(?:list|show|name)\s+(?:me\s+)?(?:them|those|these|which)\b",
    re.I,
)
# A superlative naming one record or group ("biggest thread", "longest-running", 最长的).
_SUPERLATIVE = re.compile(
    r"\b(?:biggest|largest|longest|shortest|highest|lowest|busiest|quietest|smallest|most-\w+|least-\w+)\b|最[大长高低短小]",
    re.I,
)
# A comparison said in Chinese ("谁…更多", "哪个最少"): its characters are function characters one by one.
_CJK_COMPARATIVE = re.compile(r"[更较最][多少]|多一些|少一些")
# Parts of the week and of the day: times, never a topic ("issues opened on weekends").
TIMES_OF_WEEK_AND_DAY = frozenset({"weekend", "weekday", "morning", "afternoon", "evening", "night", "midnight"})
# Nouns of an action or a quality ("tokenization", "laziness", "deprecation"): a concept said in any
# word of its family ("tokenize", "lazy"), unlike a thing ("decoders").
_CONCEPT_NOUN = re.compile(r"(?:tion|sion|ment|ness|ity|ance|ence|ism)s?$")
# A noun of the one who or the thing that does something ("decoder", "transducer", "tokenizer").
_AGENT_NOUN = re.compile(r"[^aeiou](?:er|or)$")
# What the records do, said of them: "PRs that deprecate something", "issues which break anything".
_DOES_SOMETHING = re.compile(r"\b(?:that|which)\s+([a-z]{3,})\s+(?:something|anything)\b", re.I)
# Verbs that name no action in particular: "that say something", "which change anything" is no subject.
_ANY_ACT = frozenset("say says said do does did mean means meant change changes changed touch touches touched".split())
# Words around a topic that say nothing of it ("transducer stuff", "deprecate something"): they end it,
# and `RELATED` reads them as part of how it was said.
_TOPIC_FILLER = frozenset({"stuff", "something", "anything"})
# What quotes a title's words: "whose title says map", "titled release".
_QUOTED = re.compile(r"\b(?:titles?\s+(?:says?|reads?)|titled)\s+$", re.I)
_HYPHENATED = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
# A word with its plural ending in parentheses: "split(s)", "crash(es)".
_PLURAL_IN_PARENS = re.compile(r"\b([A-Za-z][A-Za-z0-9_]+)\((e?s)\)", re.I)
# Words listed as alternatives: "fix, fixes or fixed", "fix、fixes 或 fixed".
_WORD_LIST = re.compile(r"[\w.\-]+(?:\s*[,、，]\s*[\w.\-]+)+\s*[,、，]?\s*(?:\bor\b|或者?)\s*[\w.\-]+", re.I)
# What ends a topic: "streaming-related", "streaming related", "macro discussion", "streaming 相关"; filler
# after it ("transducer stuff").
RELATED = re.compile(
    r"(?:-|\s+)related\b|\s+ones?\b(?=\W*$)|\s+(?:discussions?|conversations?|chatter|talk|mentions)\b|\s*相关|\s*有关(?=的|\s*[、，,。;；]|\s*$)"
    r"|\s+(?:come|came|comes|coming) up\b|\s+(?:in|on) (?:the|their|its) titles?\b|\s+\(?by title\)?"
    r"|\s+(?:stuff|things)\b",
    re.I,
)
DETERMINERS = frozenset("the a an this that these those our my your their its".split())
TITLE = re.compile(r"(?:\(|\b(?:in|on) (?:the|their|its) |\bwhose )?titles?\)?|标题", re.I)
_CJK_FUNCTION = "的了吗呢吧啊哪些哪个什么谁有是在和与及并把被给对从到关于里中上下个条次位请帮我们你他她它列出显示找查看所有一下多少几共涉跟而且"
# A word: an identifier-like token ("load_dataset", "audio-folder"), a number, or a run of Chinese
# content characters (split at function characters: "缓存的" is "缓存").
TOKEN = re.compile(rf"[A-Za-z][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*|\d+|(?:(?![{_CJK_FUNCTION}])[\u4e00-\u9fff])+")
CJK_STOP = re.compile(rf"[{_CJK_FUNCTION}]+")


class SpanStep(Draft):
    """Full-text words, understood and not understood spans."""

    def _leftover_text(self, structured: bool) -> str:
        """Topic words for `$text`. In a structured question: the words right after a topic cue ("about
        parquet", "mentioning typed racket", 关于缓存), the words before "-related" (streaming-related,
        streaming 相关), and the words that qualify the collection noun ("streaming PRs", "Windows
        issues") when nothing else read them (not a stored value, a person, a state or a field word).
        In a question with no structure at all, every content word (a keyword search, the best the
        structured half can do for "why did we ...")."""
        if not structured:
            return self._all_content_words()
        runs: list[list[tuple[int, int]]] = []
        self.values_as_topic: list[tuple[int, int]] = []
        self.verbs: set[tuple[int, int]] = set()  # topic words said as a verb ("deprecate something")
        self._words_with_their_plural()
        for cue in CUE.finditer(self.q):
            if self._is_used(cue.span()) or any(run[0][0] <= cue.start() < run[-1][1] for run in runs):
                continue  # read already, or a word of the topic before it ("fix, fixes or fixed")
            run = self._topic_run(cue.end(), forward=True, bridge=True)
            forms = (_FORMS.match(self.q, run[-1][1]) or _gloss(self.q, run[-1][1])) if run else None
            if forms:  # "mention contracts (contract or contracts)": the forms wanted, spelled out
                self.use((run[0][0], forms.end()), "topic")
                run = [
                    m.span()
                    for m in re.finditer(r"[\w.\-]+", self.q[: forms.end("alts")])
                    if m.start() >= forms.start("alts") and m.group(0).lower() not in ("or", "或", "或者")
                ]
            negation = _TOPIC_NEGATION.search(self.q[: cue.start()])
            if run and negation and self._not_about(run, negation.start()):
                continue
            if run:
                self.use((cue.start(), cue.start() + len(cue.group(0).rstrip())), "topic")
                runs.append(run)
        for done in _DOES_SOMETHING.finditer(self.q):
            verb = done.span(1)
            word = done.group(1).lower()
            if (
                not self._is_used(verb)
                and word not in _ANY_ACT
                and self._topic_word(word, verb, other_collections=False)
            ):
                self.verbs.add(verb)  # the action is the topic: its family ("deprecation" too)
                self.use((verb[1], done.end()), "topic")
                runs.append([verb])
        for related in RELATED.finditer(self.q):
            run = self._topic_run(related.start(), forward=False, bridge=True)
            if run:
                self.use(
                    (related.start() + len(related.group(0)) - len(related.group(0).lstrip(" -")), related.end()),
                    "topic",
                )
                runs.append(sorted(run))
        for a, _ in self._own_collection_spans():
            runs.append(sorted(self._topic_run(a, forward=False, bridge=False)))
        runs = [run for run in runs if run]
        runs = [self._first_alternative(run) for run in runs]
        self.filters = [f for f in self.filters if f.span not in self.values_as_topic]
        words = [span for run in runs for span in run]
        title = (
            TITLE.search(self.q) if words else None
        )  # "mentioning audio in the title": where the topic is looked for
        if title and not self._is_used(title.span()):
            self.use(title.span(), "topic")
        for span in sorted(set(words)):
            self.use(span, "topic")
        field = "title" if title else self.schema.text_fields[0] if self.schema.text_fields else None
        # A topic inside a structured question is a condition on the subject (the title; a message's
        # text): its words as whole words, each in its family (`_word_groups`), as the asker reads a
        # title — not `$text`, whose stemmer and tokens are the index's. A name of several words
        # ("Typed Racket", quoted or capitalised) stays a phrase search.
        names = any(self._search_terms(run).startswith('"') for run in runs)
        groups = (
            self._word_groups(runs)
            if field and self.schema.has_path(field) and (title or not names or any(map(self._alternatives, runs)))
            else None
        )
        if groups:
            for group, span, op in groups:
                self.filters.append(Filter(field, op, group, span=span))
            return ""
        return " ".join(dict.fromkeys(self._search_terms(run) for run in runs))

    def _words_with_their_plural(self) -> None:
        """ "split(s) in the title", "issues mentioning crash(es)": the word in either number, a condition
        on the title where it is named (else on the text), like the forms listed after a word."""
        field = "title" if TITLE.search(self.q) else self.schema.text_fields[0] if self.schema.text_fields else None
        if field is None or not self.schema.has_path(field):
            return
        for m in _PLURAL_IN_PARENS.finditer(self.q):
            word = m.group(1).lower()
            if self._is_used(m.span()) or word in STOP or word in FILLER:
                continue  # a word written with its plural ending is named as a word, whatever else it can be
            self.use(m.span(), "topic")
            title = TITLE.search(self.q)
            if field == "title" and title and not self._is_used(title.span()):
                self.use(title.span(), "topic")
            self.filters.append(Filter(field, "exact_words", [word, word + m.group(2).lower()], span=m.span()))

    def _not_about(self, run: list[tuple[int, int]], start: int) -> bool:
        """A topic said with a negation ("not about parquet", "that don't mention windows", "nothing to
        do with caching"): the records whose subject (the title; a message's text), where a topic is
        looked for, holds none of its words. Only a topic of one word or of alternatives ("json or
        jsonl"): "not about type aliases" has no one reading (neither word, or not both?), and is
        left unread."""
        field = self.schema.text_fields[0] if self.schema.text_fields else None
        groups = self._word_groups([run]) if field and self.schema.has_path(field) else None
        if not groups or len(groups) != 1:
            return False
        span = (start, run[-1][1])
        self.use(span, "value")
        words, _, op = groups[0]
        self.filters.append(Filter(field, op, words, negate=True, span=span))
        return True

    def _alternatives(self, run: list[tuple[int, int]]) -> bool:
        """Words said as alternatives ("card or cards", "json or jsonl", "lein / leiningen"): one word each."""
        gaps = [self.q[b:a] for (_, b), (a, _) in itertools.pairwise(run)]
        return bool(gaps) and all(
            re.fullmatch(r"\s+or\s+| +/ +|\s*或者?\s*|\s*[,、，]\s*(?:or\s+|或者?\s*)?", gap, re.I) for gap in gaps
        )

    def _first_alternative(self, run: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """A run with "or" between phrases ("lazy evaluation or lazy seqs") is no one search: its first
        phrase is the topic and the rest is left unread, so the answer says so."""
        run = sorted(run)
        if self._alternatives(run):
            return run
        cut = next(
            (
                i
                for i, ((_, b), (a, _)) in enumerate(itertools.pairwise(run), 1)
                if re.search(r"\bor\b|/", self.q[b:a], re.I)
            ),
            None,
        )
        return run[:cut] if cut else run

    def _word_groups(self, runs: list[list[tuple[int, int]]]) -> list[tuple[list[str], tuple[int, int], str]] | None:
        """The topic as word filters (words, span, operator), every group required and any word of a
        group enough ("CI in the title": [["ci"]], with endings); words given as alternatives are the
        forms wanted, exactly ("decoder or decoders": not "decode"); None when a word is not one plain word."""
        groups: dict[tuple[str, ...], tuple[list[str], tuple[int, int], str]] = {}
        for run in runs:
            # a hyphenated name ("re-frame") is one word as written, though the index splits it
            tokens = [[w] if _HYPHENATED.fullmatch(w := self.q[a:b].lower()) else tokenize(w) for a, b in run]
            if any(len(t) != 1 for t in tokens):
                return None  # a word the index splits ("audio-folder"): no one word
            # a word's stem and the word as written ("registri" and "registry"): the endings go on both
            forms = [
                list(dict.fromkeys(t + ([w, *spelling_variants(w)] if (w := self.q[a:b].lower()).isascii() else [])))
                for t, (a, b) in zip(tokens, run)
            ]
            if self._alternatives(run):
                words = list(dict.fromkeys(f[-1] for f in forms))  # as written (a Chinese word: its one token)
                stems = list(dict.fromkeys(t[0] for t in tokens))
                shortest = min(words, key=len)
                if len(stems) == 1 and not all(w.startswith(shortest) for w in words):
                    # two derivations of one stem ("deprecating or deprecation"): the family, every ending
                    groups.setdefault(tuple(stems), (stems, (run[0][0], run[-1][1]), "words"))
                    continue
                if not all(s.startswith(min(stems, key=len)) for s in stems) or any(w in SHORT_FORMS for w in words):
                    # different words ("pdf or video"; a short form beside its long one: "docs or
                    # documentation"), not forms of one ("slow or slower", "fix, fixes or fixed": those forms
                    # exactly): each is a subject, in the singular and the plural
                    words = list(dict.fromkeys(form for w in words for form in _in_either_number(w)))
                groups.setdefault(tuple(words), (words, (run[0][0], run[-1][1]), "exact_words"))
            else:
                for span, token in zip(run, tokens):
                    thing = None if span in self.verbs else self._thing_forms(span)
                    thing = thing and list(dict.fromkeys(v for f in thing for v in (f, *spelling_variants(f))))
                    # a word said as an action or a concept: its family (`topic_words.roots`, compiled)
                    said = [w] if (w := self.q[span[0] : span[1]].lower()).isascii() else token
                    groups.setdefault(tuple(thing or said), (thing or said, span, "exact_words" if thing else "words"))
        if not groups or any(
            len(g) > MAX_WORDS or not all(WORD.fullmatch(w) for w in g) for g, _, _ in groups.values()
        ):
            return None
        return list(groups.values())

    def _thing_forms(self, span: tuple[int, int]) -> list[str] | None:
        """The forms a topic word that names a thing is matched in, whole words: an identifier as
        written ("load_dataset", not "load_datasets"); a capitalised name as written and in its plural,
        never cut to a singular ("IterableDataset(s)"; "Windows", not "window"); a noun said in the
        plural or an agent noun in either number ("decoders", "transducer": not "decode",
        "transducing", which share its stem); another word with its inflections ("download":
        downloads, downloaded, downloading; not "downloader"). None for a word whose whole family is
        meant: a verb form ("caching"), a noun of an action or a quality ("tokenization", "laziness"),
        a short form with its long one ("docs")."""
        word = self.q[span[0] : span[1]].lower()
        if not WORD.fullmatch(word) or len(word) < 3 or word.isdigit():
            return None
        if not word.isalpha():
            return [word]  # an identifier ("push_to_hub", "s3"): no number
        if word.endswith(("ing", "ed")) or _CONCEPT_NOUN.search(word) or word in SHORT_FORMS:
            return None
        numbers = _in_either_number(word)
        written = self.q[span[0] : span[1]]
        if written.isupper():
            return numbers  # an acronym ("REPL", "CSV") names a thing
        if len(written) > 2 and written[:-1].isupper() and written[-1] == "s":
            return [word[:-1], word]  # an acronym's plural ("GUIs", "APIs"): the acronym in either number
        if written[1:] != written[1:].lower() or (
            written[0].isupper() and not re.search(r"(?:^|[.!?]\s+)[\W_]*$", self.q[: span[0]])
        ):
            # a name ("IterableDataset", "Windows" mid-sentence): as written, and its plural; never cut
            # to a singular ("Windows" is not "window")
            return [word] if word.endswith("s") else [word, word + "s"]
        if (numbers[-1] == word and word.endswith("s") and len(numbers) == 2) or _AGENT_NOUN.search(word):
            return numbers
        if re.search(r"['\"‘“]$", self.q[: span[0]]) or _QUOTED.search(self.q[: span[0]]):
            return numbers  # the word itself, quoted ("'map' in the title", "titles say map"): not "mapping"
        return numbers + verb_forms(word)

    def _search_terms(self, run: list[tuple[int, int]]) -> str:
        """A run's words; quoted as one phrase (MongoDB's `$text` syntax) when it is a name: every word
        capitalised ("Typed Racket") or one of them a value the question filters on ("typed racket" in
        the racket workspace). Other words each match in any order and form ("redis caching": "Cache
        sessions in Redis"). A name with a dot or a hyphen inside ("core.async", "syntax-parse") is one
        phrase too: its parts, side by side."""
        words = [self.q[a:b] for a, b in run]
        text = " ".join(w.lower() for w in words)
        values = {self.q[a:b].lower() for (a, b), how in zip(self.used, self.how) if how == "value"}
        if (len(words) > 1 and (all(w[0].isupper() for w in words) or any(w.lower() in values for w in words))) or (
            len(words) == 1 and re.search(r"\w[.\-]\w", text)
        ):
            return f'"{text}"'
        return text

    def _topic_run(self, at: int, *, forward: bool, bridge: bool) -> list[tuple[int, int]]:
        """The topic words next to `at`: a run of words no other step read, that are neither function
        words nor words of the plan's shape, states or fields; stopped by anything else (a comma, "by",
        "opened"). After a cue or before "related" (`bridge`), a stored value between topic words stays
        in the topic too ("typed racket discussion", where "racket" is also the workspace), and so does
        one ending a capitalised name ("about Typed Racket"); a bare word before the collection noun
        needs no value beside it ("globex platform team": "platform" is the team, "globex" no topic)."""
        tokens = list(TOKEN.finditer(self.q[at:] if forward else self.q[:at]))
        if not forward:
            tokens.reverse()
        run: list[tuple[int, int]] = []
        pending: list[tuple[int, int]] = []  # stored values, kept when a topic word follows
        edge = at
        alternative = False  # the word before was "or" (or " / "): this one is another form of the topic
        for m in tokens:
            a, b = (at + m.start(), at + m.end()) if forward else m.span()
            gap = self.q[edge:a] if forward else self.q[b:edge]
            slash = bool(run and re.fullmatch(r" +/ +", gap))  # " / " gives an alternative
            # "fix, fixes or fixed": a comma inside a list of alternatives gives one too
            slash = slash or bool(
                run
                and re.fullmatch(r"\s*[,、，]\s*", gap)
                and any(w.start() <= min(a, edge) and max(b, edge) <= w.end() for w in _WORD_LIST.finditer(self.q))
            )
            if gap.strip(" -'\"‘’“”") and not slash:
                break  # punctuation or a line break ends the topic (quotes enclose it)
            alternative = alternative or slash
            edge = b if forward else a
            word = m.group(0).lower()
            if self._is_used((a, b)):
                if (
                    bridge
                    and alternative
                    and not pending
                    and self._used_as((a, b)) == "value"
                    and not IMPLIED.fullmatch(word)
                ):
                    # "arrow or pyarrow in the title": a stored label said as one form of the topic is the topic
                    self.values_as_topic.append((a, b))
                    run.append((a, b))
                    alternative = False
                    continue
                if bridge and self._used_as((a, b)) == "value" and not IMPLIED.fullmatch(word):
                    pending.append((a, b))
                    continue
                break
            if forward and not run and not pending and word in DETERMINERS:
                continue  # "about the session cache"
            if run and word in ("or", "或", "或者"):
                alternative = True
                continue  # "card or cards in the title": `$text` matches any of its words
            if not self._topic_word(word, (a, b), other_collections=bridge) and not (
                forward
                and bridge
                and not run
                and IMPLIED.fullmatch(word)
                and word not in FILLER
                and not any(p.fullmatch(word) for p, _ in FIELD_WORDS)
            ):  # "mention split in the title"
                break
            run += pending + [(a, b)]
            pending = []
            alternative = False
        if forward and run and pending and self.q[pending[0][0]].isupper() and self.q[run[-1][0]].isupper():
            run.append(pending[0])
        return run

    def _topic_word(self, word: str, span: tuple[int, int], *, other_collections: bool) -> bool:
        """Not a function word, nor one of the plan's shape, states, fields, dates or collection; after a
        cue, another collection's noun is a topic ("PRs about docs")."""
        if any(a <= span[0] and span[1] <= b for a, b in self.collection_spans):
            return other_collections and self._names_other_collection(word)
        if "/" in self.q[max(span[0] - 1, 0) : span[0]] + self.q[span[1] : span[1] + 1]:
            return False  # one of alternatives or a path ("onboarding/process guides")
        if not other_collections and word in self._stored_words():
            return False  # part of a stored value: the organisation ("globex issues"), a repository's owner
        if word in MEASURE_WORDS:
            return False  # "on average", "what share of": a measure no plan here holds, never a subject
        if word in CALENDAR_NAMES or word.removesuffix("s") in CALENDAR_NAMES | TIMES_OF_WEEK_AND_DAY:
            return False  # "on Mondays", "on weekends": when, not what about (a condition no plan here can say)
        if word in FILLER or word in _TOPIC_FILLER or IMPLIED.fullmatch(word):
            return False
        if any(p.fullmatch(word) and field_for(self.schema, role) for p, role in FIELD_WORDS):
            return False  # "the bug label"; a field word these records do not have is a subject ("type aliases")
        if re.match(r"[\u4e00-\u9fff]", word):
            # a verb that says someone's part ("发起过讨论串的人"), not what the records are about
            return not CJK_STOP.fullmatch(word) and not re.fullmatch(
                r"(?:发起|开启|回复|提到|提及|合并|关闭|评审|创建)[过了]*", word
            )
        if word.isdigit() or TITLE.fullmatch(word):
            return False
        if len(word) < 3 and not re.fullmatch(r"[A-Z]{2}", self.q[span[0] : span[1]]):
            return False  # a two-letter word is a topic only as an acronym ("CI PRs", "UI issues")
        return word not in STOP or (other_collections and self._names_other_collection(word))

    def _stored_words(self) -> frozenset[str]:
        """The collection's stored values, and the words inside the tenant's compound values ("globex"
        of the repository "globex/api"): a word naming the organisation or a thing it stores, not a
        subject. (A label of another collection, "streaming" on issues, stays a subject of PRs.)"""
        if not hasattr(self, "_stored_word_set"):
            own = {str(v).lower() for info in self.schema.fields.values() for v in info.enum or []}
            parts = {
                part
                for schema in self.ctx.schemas.values()
                for info in schema.fields.values()
                for v in info.enum or []
                if isinstance(v, str)
                for part in re.split(r"[\s/@.:#]+", v.lower())
                if part != v.lower()
            }
            self._stored_word_set = frozenset(own | parts)
        return self._stored_word_set

    def _names_other_collection(self, word: str) -> bool:
        # collection imports STOP from here
        from context_engine.query.planner.collection import detect_collection, kinds_of

        named, spans = detect_collection(word, {self.collection: None}, kinds_of(self.ctx.schemas))
        return bool(spans) and named != self.collection

    def _own_collection_spans(self) -> list[tuple[int, int]]:
        from context_engine.query.planner.collection import detect_collection, kinds_of

        kinds = kinds_of(self.ctx.schemas)
        return [
            (a, b)
            for a, b in self.collection_spans
            if detect_collection(self.q[a:b], {self.collection: None}, kinds)[0] == self.collection
        ]

    def _all_content_words(self) -> str:
        chars = list(self.q)
        cue = CUE.search(self.q)
        if cue:  # "PRs mentioning schema registry": what follows the cue
            self.use((cue.start(), cue.start() + len(cue.group(0).rstrip())), "topic")
            chars[: cue.start()] = " " * cue.start()
        for a, b in self.used + self.collection_spans:
            for i in range(a, min(b, len(chars))):
                chars[i] = " "
        rest = "".join(chars)
        words: list[str] = []
        for token in re.findall(r"[A-Za-z][A-Za-z0-9_\-]+|[\u4e00-\u9fff]+|\d{3,}", rest):
            if CJK_STOP.fullmatch(token):
                continue
            if re.match(r"[\u4e00-\u9fff]", token):
                token = CJK_STOP.sub(" ", token).strip()
                words.extend(t for t in token.split() if len(t) >= 2)
                continue
            if token.lower() in STOP or len(token) < 3 or TITLE.fullmatch(token):
                continue
            words.append(token.lower())
        return " ".join(dict.fromkeys(words))

    def _implied_by_plan(self, word: str, shape: Shape, span: tuple[int, int]) -> bool:
        """An implied word is read only when the plan holds what it names: "assigned" a condition or
        grouping on the assignees, "most" a ranking, "people" a person field. "How many different people
        have open issues assigned to them" answered by counting authors must not count "assigned" or
        "different" as read: that answer would look right and be wrong."""
        need = next((need for pattern, need in IMPLIED_NEEDS if pattern.fullmatch(word)), None)
        if word == "open" and not self.schema.kind.builtin:
            need = "state|status"  # "open incidents": a state only a condition can say (the built-in kinds' rules do)
        if need is None:
            # the creation verbs ("filed", "posted", "opened"): every record was; not their nouns naming
            # part of a time ("at the beginning of 2022"), which the plan would read as the whole year
            return not _noun_before_of(self.q, span)
        paths = (
            {f.field for f in self.filters}
            | {t.field for t in self.times}
            | {shape.field}
            | {key.field for key in shape.sort}
        )
        if need == "fewest" and self.schema.kind.builtin:
            return (
                shape.kind in ("argmin", "min")
                or (shape.kind == "list" and bool(shape.sort) and shape.sort[0].direction == 1)
                or any(m.op == "min" for m in shape.measures)
            )
        if need == "fewest":
            need = "rank"  # a team's own kind: "the lowest price" is any extreme its rules read
        if need == "drawn" and paths & DRAWN_COUNTS:
            return True
        if need in ("rank", "drawn"):
            return (
                shape.kind in RANKED_SHAPES
                or (shape.kind == "measures" and bool(shape.sort))
                or (shape.kind == "group" and shape.limit is not None)
                or (shape.kind == "list" and shape.limit is not None and shape.limit <= 10)
            )
        if need == "measure":
            return shape.kind != "list"
        if need == "group":
            return shape.kind == "group"
        if need == "number":
            return any(str(getattr(x, "value", None)) == str(NUMBER_WORDS[word]) for x in self.filters) or (
                shape.limit == NUMBER_WORDS[word]
            )
        if need == "person":  # a person field, or who the authors are to the repository ("people who aren't members")
            return bool(paths & (self._person_paths() | {"author_association"})) or any(
                how == "person" for how in self.how
            )
        roles = need.split("|")
        return any(
            any(
                path is not None and (path in paths or any(p.startswith(path + ".") for p in paths if p))
                for path in (field_for(self.schema, role), (person_field_for(self.schema, role) or (None,))[0], role)
            )  # a role that is a stored field itself: merged, state_reason
            for role in roles
        )

    def _person_paths(self) -> set[str]:
        return people_paths(self.schema.kind)

    def _spans(self, text: str, *, structured: bool, shape: Shape) -> tuple[list[dict], list[dict]]:
        """Every content word of the question is consumed by the plan (a collection, person, time, value,
        shape), sent to full-text search (topic), or not understood; function words are neither."""
        understood: dict[tuple[int, int], str] = {}
        for span, how in [*zip(self.used, self.how), *((s, "collection") for s in self.collection_spans)]:
            understood.setdefault(span, how)
        topic = set(text.split())
        missed: list[tuple[int, int]] = []
        idioms = [m.span() for m in IDIOMS.finditer(self.q)] if structured else []
        label = field_for(self.schema, "label")
        # "feature requests" names issues of a kind: the kind word is read only by a condition on a label
        # or on a value that says it (a Jira type "Bug")
        qualifiers = {
            m.span(1)
            for m in KIND_QUALIFIER.finditer(self.q)
            if structured
            and not any(f.field == label or m.group(1).lower() in str(f.value).lower() for f in self.filters)
        }
        for m in re.finditer(rf"[A-Za-z][A-Za-z0-9_'’\-]*|\d+|[\u4e00-\u9fff]+|{_EMOJI}", self.q):
            for start, end in self._unread_parts(_content_pieces(m)):
                if (start, end) in qualifiers and not self._is_used((start, end)):
                    missed.append((start, end))
                    continue
                if self._is_used((start, end)) or any(a <= start and end <= b for a, b in self.collection_spans):
                    continue
                verb = self._verb_on_collection_word((start, end))
                if verb and self._implied_by_plan(verb, shape, (start, end)):
                    understood[(start, end)] = "implied"  # "发消息": the posting verb fused to the noun
                    continue
                if any(a <= start and end <= b for a, b in idioms):
                    understood[(start, end)] = "implied"
                    continue
                word = self.q[start:end].lower()
                if word in ("ed", "d") and re.search(r"@-?['’]?$", self.q[:start]):
                    word = "mentioned"  # "people who @-ed Isa": the verb made of the sign
                wise = re.fullmatch(r"(\w+)-wise", word)
                if wise and re.fullmatch(self.schema.kind.pattern(), wise.group(1), re.I | re.ASCII):
                    understood[(start, end)] = "collection"  # "message-wise": in terms of the records counted
                    continue
                if word in topic or (
                    topic and TITLE.fullmatch(word)
                ):  # "... in the title": where the topic is looked for
                    understood[(start, end)] = "topic"
                elif structured and IMPLIED.fullmatch(word) and self._implied_by_plan(word, shape, (start, end)):
                    understood[(start, end)] = "implied"
                elif self._field_used(word, shape.field):
                    understood[(start, end)] = "field"
                else:
                    missed.append((start, end))
        if structured and shape.kind in ("count", "distinct_count"):
            missed += [m.span() for m in _ALSO_THE_RECORDS.finditer(self.q) if not self._is_used(m.span())]
        if structured and shape.kind in ("sum", "avg", "count", "distinct_count"):
            # "how many replies did her biggest thread get" read as a total: the superlative a step read
            # for the shape says one record or group, which a total over all of them is not
            missed += [m.span() for m in _SUPERLATIVE.finditer(self.q) if self._used_as(m.span()) == "shape"]
        if structured:  # "谁关掉的更多": a comparison the plan must hold (a ranking), else it is unread
            missed += [
                m.span()
                for m in _CJK_COMPARATIVE.finditer(self.q)
                if not self._is_used(m.span()) and not self._implied_by_plan("most", shape, m.span())
            ]
        # a time said that no rule read is reported, never dropped (all time would be counted); in a keyword
        # search too, where it was only looked for as a word
        missed += [
            (a, b)
            for a, b in timeish_spans(self.q)
            # read only in part ("2019-2021" read as 2021) is not read either
            if not all(any(u <= i < v for u, v in self.used) for i in range(a, b))
            and not any(a < e and s < b for s, e in missed)
            and not any(s <= a and b <= e for s, e in self.collection_spans)
        ]
        undated = [span for span in self.undated if not self._is_used(span)]
        missed = sorted([m for m in missed if not any(a <= m[0] and m[1] <= b for a, b in undated)] + undated)
        unread = [{"text": self.q[a:b], "start": a, "end": b, "how": "unknown"} for a, b in _joined(self.q, missed)]
        unread += [
            {"text": self.q[a:b], "start": a, "end": b, "how": "negation"} for a, b in self._negation_read_as_positive()
        ]
        # a person in a role no field of these records holds, even where a wider span (the shape's "who
        # mentions Rashid the most") took in the name: unread, and said so (`engine.unplaced_person`)
        unread += [
            {"text": self.q[a:b], "start": a, "end": b, "how": "no_field", "role": role}
            for (a, b), role in self.unplaced
            if not any(a < s["end"] and s["start"] < b for s in unread)
        ]
        unread += [
            {"text": self.q[a:b], "start": a, "end": b, "how": "unknown"}
            for a, b in self._people_compared_in_another_role(shape)
            if not any(a < s["end"] and s["start"] < b for s in unread)
        ]
        return (
            [
                {"text": self.q[a:b], "start": a, "end": b, "how": how}
                for (a, b), how in sorted(understood.items())
                if not any(a < s["end"] and s["start"] < b for s in unread)
            ],
            unread,
        )

    def _verb_on_collection_word(self, span: tuple[int, int]) -> str | None:
        """The rest of a Chinese piece that holds a collection word ("发" of "发消息", "提" of "提 issue"),
        when that rest is a verb the plan may read implied; None otherwise."""
        if not re.match(r"[\u4e00-\u9fff]", self.q[span[0]]):
            return None
        inside = [(max(a, span[0]), min(b, span[1])) for a, b in self.collection_spans if a < span[1] and span[0] < b]
        rest = "".join(
            ch for i, ch in enumerate(self.q[span[0] : span[1]], span[0]) if not any(a <= i < b for a, b in inside)
        )
        return rest if inside and rest and IMPLIED.fullmatch(rest) else None

    def _unread_parts(self, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """A run of Chinese content characters a comparison word was read out of ("表情回应最" of "表情回应最多",
        where only 最多 said the ranking): the characters no span covers, two or more together, are a word
        of their own to account for. A piece read whole, one another rule read part of (those rules read
        the words around them: "不同的人回复过"), or a word of another script, as it is."""
        out: list[tuple[int, int]] = []
        for start, end in pieces:
            overlapping = [(a, b, how) for (a, b), how in zip(self.used, self.how) if a < end and start < b]
            overlapping += [(a, b, "collection") for a, b in self.collection_spans if a < end and start < b]
            covered = [(max(a, start), min(b, end)) for a, b, _ in overlapping]
            if (
                not covered
                or not re.match(r"[\u4e00-\u9fff]", self.q[start])
                or not any(how == "shape" and _CJK_COMPARATIVE.fullmatch(self.q[a:b]) for a, b, how in overlapping)
            ):
                out.append((start, end))
                continue
            free = [i for i in range(start, end) if not any(a <= i < b for a, b in covered)]
            runs: list[list[int]] = []
            for i in free:  # runs of characters side by side
                if runs and runs[-1][-1] == i - 1:
                    runs[-1].append(i)
                else:
                    runs.append([i])
            out += [(run[0], run[-1] + 1) for run in runs if len(run) >= 2]
            if not free:
                out.append((start, end))  # read whole: what the loop skips as used
        return out

    def _negation_read_as_positive(self) -> list[tuple[int, int]]:
        """The spans of conditions that hold a negation ("dont @-mention anybody", "not as bug") but
        ask for a value to be there: a rule consumed the words and dropped the "not". Said as not
        understood, so a reading that turned a question around never passes for an answer to it."""
        out: list[tuple[int, int]] = []
        for cue in NEGATION_CUE.finditer(self.q):
            holders = [f for f in self.filters if f.span and f.span[0] <= cue.start() < f.span[1]]
            if holders and not any(_reads_a_negation(f, cue.group(0)) for f in holders):
                out.append(holders[0].span)
        return list(dict.fromkeys(out))

    def _people_compared_in_another_role(self, shape: Shape) -> list[tuple[int, int]]:
        """The spans of people listed in one role while the plan counts another ("who has closed more,
        A or B" read as A's and B's issues counted per closer): the people compared are the people
        counted, so a plan that lists them in another role has misread one of the two."""
        people = self._person_paths()
        if (
            shape.kind not in ("group", "top", "argmax", "argmin")
            or shape.field not in people
            or not re.search(r"\b(?:who|whom|which)\b|谁|哪", self.q, re.I)
        ):
            return []
        return [
            f.span
            for f in self.filters
            if f.span and f.op == "in" and not f.negate and f.field in people and f.field != shape.field
        ]

    def _field_used(self, word: str, grouped: str | None) -> bool:
        paths = {f.field for f in self.filters} | {grouped}
        return any(pattern.fullmatch(word) and field_for(self.schema, role) in paths for pattern, role in FIELD_WORDS)


# Function words: neither understood nor not. Deliberately small: "without", "never", "milestone"
# carry meaning, and a plan that ignores them must say so.
FILLER = frozenset(
    """
a an the of in on at to for from by with and or is are was were be been being do does did done have has had
i me my mine we our us you your it its this that these those there here what which when where how
show list give find tell get see let know please can could would will should shall may might must just also
than then as into over any all some each every one ones thing things kind sort lot lots so such very among amongst
want need like ok okay hi hello hey thanks thank much many both but actually really carry carries carrying
still yet currently right now got get gets getting anything everything something he she him her his they them their ever
during throughout within roughly approximately approx exactly precisely overall whole entire since single
off if i'd i'm i've i'll we'd we're we've we'll you'd you're you've rn atm
""".split()
)

# Phrases that add nothing to a structured plan, said where they are: "of all time", "so far", "until
# now", "aren't open anymore", "which month saw the most", "which March saw more", "labels in use", "issues whose close reason
# is ...", "到目前为止", "已经". Only in these places: "saw" or "whose" elsewhere still need reading.
IDIOMS = re.compile(
    r"\b(?:of\s+)?all[- ]time\b|\bso far\b|\bin terms of\b|\b(?:until|up to|till|through) now\b|\bany ?more\b|\bto date\b"
    r"|(?:(?<=month )|(?<=year )|(?<=week )|(?<=day )|(?<=quarter )|(?<=january )|(?<=february )|(?<=march )"
    r"|(?<=april )|(?<=may )|(?<=june )|(?<=july )|(?<=august )|(?<=september )|(?<=october )|(?<=november )"
    r"|(?<=december ))saw\b|\bin use\b|\b(?:most|been|being|are|is|were)\s+used\b"
    r"|\bwhose\b(?=\s+(?:close|closing|state|titles?|labels?|status|milestone|repl(?:y|ies)|comments?|body|text|priority|author"
    r"|opening|first)\b)"
    r"|\b(?:someone|somebody|anyone|anybody|everyone|everybody)(?=\s+(?:other than|except|but|besides|apart from)\b)"
    r"|\b(?:sitting|sits|sat|lying|hanging|left)(?=\s+(?:there\s+|around\s+)?open\b)"  # "still sitting open"
    # "still open today": the state now (`timeexpr` reads no window there)
    r"|(?:(?<=open )|(?<=unmerged )|(?<=pending )|(?<=unresolved )|(?<=outstanding ))(?:as of )?today\b"
    # how often a value is met, said before the superlative the shape read ("which label shows up most")
    r"|\b(?:shows? up|showing up|appears?|appearing|occurs?|comes? up|turns? up|is used|gets used|used)(?=\s+(?:the\s+)?most\b)"
    r"|\bacross all\b|\bended up\b|\bwhatsoever\b|\btotally\b|\bcalendar(?= year\b)|\bI mean\b"
    r"|到?目前为止|截至目前|已经"
    # "最后一次发消息是啥时候": when, as English "when" is a function word (the records shown carry their dates)
    r"|(?:啥|什么)时候|何时",
    re.I,
)

# A collection's name that also says which of its records ("feature requests", "bug reports"): the
# first word is a condition (a label) the plan must hold, not part of the collection's name.
KIND_QUALIFIER = re.compile(r"\b(feature|enhancement|bug)\s+(?:requests?|reports?)\b", re.I)

# Words a structured plan has read without consuming them: the verbs whose dates or people the
# conditions use ("opened", "merged by"), the nouns naming the field of a stored value ("the bug
# label", "milestone v2.3"), who is asked for, and words of the shape ("busiest", "break down").
IMPLIED = re.compile(
    r"review\w*|approv\w*|assign\w*|put|merg\w*|clos\w*|resolv\w*|open\w*|creat\w*|fil(?:e|ed|es)|wr[io]te|written|"
    r"author\w*|report\w*|post\w*|repl[iy]\w*|jump\w*|chim\w*|start\w*|commit\w*|submit\w*|land\w*|went|ship\w*|updat\w*|sen[dt]s?|"
    r"new|newly|kick(?:s|ed|ing)?|began|begun|begin\w*|rais\w*|"
    r"mention\w*|tagg\w*|often|frequent\w*|respon\w*|answer\w*|times|dr[ae]w|draws|attract\w*|receiv\w*|garner\w*|"
    r"waiting|pending|awaiting|asked|requested|came|come|comes|coming|arriv\w*|"
    r"people|persons?|users?|engineers?|developers?|devs|folks|contributors?|committers?|maintainers?|posters?|members?|whom?|whose|"
    r"active|busiest|biggest|largest|most|top|common|used|applied|counts?|volume|traffic|chatter|activity|busy|break|broken|down|breakdown|split|spread|across|vs|total|numbers?|"
    r"altogether|overall|combined|"
    r"fewest|least|quietest|calmest|lowest|smallest|shortest|fewer|quieter|"
    r"two|three|four|five|six|seven|eight|nine|ten|"
    r"谁|哪些人|哪位|发过?|发了|发过?言|发起|新开|开过|各?开|提过?|提交|创建|合并|评审|审查|回复|回[得了过]?|讨论串|指派|分配"
)
# What an implied word needs in the plan to count as read (a role: a condition, time or grouping on
# its field). Words not listed (the creation verbs: "filed", "posted", "wrote") describe every record.
RANKED_SHAPES = frozenset({"top", "min", "max", "argmin", "argmax"})
# The counts of what a record drew (replies, repliers, comments, reactions): "drew at least five people" is read
# by a condition on one of them.
DRAWN_COUNTS = frozenset(
    {"reply_count", "reply_users_count", "comments", "reactions.total_count", "fields.comment.total"}
)
IMPLIED_NEEDS = [
    (re.compile(pattern), need)
    for pattern, need in (
        (r"review\w*|approv\w*|评审|审查", "reviewer|reviewed|requested_reviewer"),
        (r"assign\w*|put|指派|分配", "assignee"),  # "put": the issues someone "was put on"
        (r"merg\w*|land\w*|ship\w*|合并", "merged|merger|state"),
        (r"clos\w*|resolv\w*", "state|closed|resolved|closer|status|state_reason"),
        (
            r"repl[iy]\w*|respon\w*|answer\w*|jump\w*|chim\w*|回复|回[得了过]?|讨论串",
            "replies|reply_user|replied_to|thread_ts|reply_users_count|thread",
        ),
        (r"updat\w*", "updated"),
        (
            (
                r"people|persons?|users?|engineers?|developers?|devs|folks|contributors?|committers?|maintainers?|posters?|members?|"
                r"whom?|whose|谁|哪些人|哪位"
            ),
            "person",
        ),
        (r"active|busiest|biggest|largest|most|top|often|frequent\w*|common|used|applied|最常|最经常", "rank"),
        # "threads that drew at least five different people", "issues that received over 10 comments": a
        # ranking, or a condition on what was drawn
        (r"dr[ae]w|draws|attract\w*|receiv\w*|garner\w*", "drawn"),
        # "the quietest workspace", "the thread with the fewest replies": read by an ascending extreme only
        (r"fewest|least|quietest|calmest|lowest|smallest|shortest|fewer|quieter", "fewest"),
        (r"mention\w*|tagg\w*", "mentioned"),
        # "how many messages has she written altogether": a count or total says it
        (r"counts?|volume|total|numbers?|times|traffic|chatter|activity|busy|altogether|overall|combined", "measure"),
        (r"break|broken|down|breakdown|split|spread|across|vs", "group"),
        (r"two|three|four|five|six|seven|eight|nine|ten", "number"),
    )
]
# Nouns naming a field: understood only when the plan conditions or groups on that field ("the bug
# label"); "without a milestone" in a plan with no milestone condition is not.
FIELD_WORDS = [
    (re.compile(pattern), role)
    for pattern, role in (
        (r"labels?|labell?ed|tags?|tagged|标签", "label"),
        (r"milestones?", "milestone"),
        (r"projects?|项目", "project"),
        (r"spaces?|空间", "space"),
        (r"repos?|repositor(?:y|ies)|仓库", "repo"),
        (r"channels?|频道", "channel"),
        (r"priorit(?:y|ies)|优先级", "priority"),
        (r"status(?:es)?|状态", "status"),
        (r"sprints?", "sprint"),
        (r"components?", "component"),
        (r"teams?", "team"),
        (r"types?", "type"),
        (r"workspaces?|slacks?|communit(?:y|ies)|工作区", "workspace"),
    )
]


# The words that negate what follows them, in English (contractions with or without the apostrophe) and Chinese.
NEGATION_CUE = re.compile(
    r"\b(?:not|no|never|without|neither|nor|none|nobody|nothing|dont|didnt|doesnt|isnt|wasnt|werent|"
    r"arent|havent|hasnt|hadnt|wont|cannot|excluding|except|besides)\b|n['’]t\b|[不没未无非除]",
    re.I,
)


def _reads_a_negation(f: Filter, cue: str) -> bool:
    """Whether a condition can be what a negation inside its words says: an exclusion, an absence,
    a bound ("no more than three"), a false or zero value, a state, a stored value that says there is
    none ("no association": NONE), or a value that says the negation itself (the reason
    "not_planned", the label "won't fix")."""
    if f.negate or f.op in ("ne", "nin", "empty", "lt", "lte", "gt", "gte", "ne_field", *WORD_OPERATORS):
        return True
    if f.op in ("exists", "not_empty"):
        return f.value is False  # "exists: false" is an absence; "not empty", "exists" are presences
    values = f.value if isinstance(f.value, list) else [f.value]
    return (
        f.field.split(".")[0] in STATE_FIELDS
        or any(v is None or v is False or v == 0 or v == "" or str(v).lower() in ("none", "no") for v in values)
        or any(cue.lower().strip("'’") in str(v).lower() for v in values)
    )


# An emoji says something ("🐛 issues", "most ❤️'d"): a word no rule reads, so it is reported unread
# rather than dropped like punctuation.
_EMOJI = r"[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50]\uFE0F?"


def _content_pieces(m: re.Match) -> list[tuple[int, int]]:
    """The content-bearing pieces of one token: none for a function word, a number or a single letter;
    a CJK run split at its function characters (pieces of two characters or more); an emoji whole."""
    token = m.group(0)
    if re.fullmatch(_EMOJI, token):
        return [(m.start(), m.end())]
    if re.match(r"[\u4e00-\u9fff]", token):
        return [(m.start() + p.start(), m.start() + p.end()) for p in re.finditer(rf"[^{_CJK_FUNCTION}]{{2,}}", token)]
    word = token.lower().rstrip("'’").removesuffix("'s").removesuffix("’s")
    if word.isdigit() or len(word) < 2 or word in FILLER or word.replace("’", "'") in FILLER:
        return []
    return [(m.start(), m.start() + len(word))]


def _in_either_number(word: str) -> list[str]:
    """A noun as written and in its other number ("pdf": pdfs; "decoders": decoder); a word that is no
    plain noun (a verb form, a Chinese word, "redis", "status") as written only."""
    if not word.isascii() or word.endswith(("ing", "ed")) or len(word) < 3:
        return [word]
    if re.search(r"(?:ch|sh|[sxz])es$", word):
        return [word[:-2], word]
    if re.search(r"[^aeiou]ies$", word):
        return [word[:-3] + "y", word]
    if word.endswith("as"):
        return [word[:-1], word, word + "es"]  # "alias" may be one ("aliases") or many ("pandas")
    if re.search(r"[^siu]s$", word):
        return [word[:-1], word]
    if word.endswith("s"):
        return [word]
    if re.search(r"(?:ch|sh|[xz])$", word):
        return [word, word + "es"]
    if re.search(r"[^aeiou]y$", word):
        return [word, word[:-1] + "ies"]
    return [word, word + "s"]


def _noun_before_of(question: str, span: tuple[int, int]) -> bool:
    """A word after a determiner and before "of" is a noun naming part of what follows ("the start of
    the year", "a beginning of sorts"), not a verb said of the records."""
    return bool(
        re.search(r"\b(?:the|a|an|its|their)\s+$", question[: span[0]], re.I)
        and re.match(r"\s+of\b", question[span[1] :], re.I)
    )


def _joined(question: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans separated only by spaces and function words as one: "Nobody Atall", "without a milestone"."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and all(w.lower() in FILLER for w in question[out[-1][1] : start].split()):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
