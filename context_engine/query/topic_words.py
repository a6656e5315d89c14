"""The one rule for a topic word inside a structured question ("2022 issues about multiprocessing",
"messages that mention decoders"): the words it stands for, matched as whole words in the records'
subject (a title, a message's text).

A word said as an action or a concept ("caching", "tokenization", "licences") stands for its family:
its root (Snowball's English stem, as the full-text index keeps it; an "-ization" noun cut to its verb,
"tokeniz", not to "token") followed by one of a fixed group of endings, from the start of a word to its
end ("pars": parse, parses, parsed, parsing, parser). A word that names a thing is matched in its
forms, each a real word (`inflections`). Both compile to literal words and word boundaries only
(`validate.is_word_pattern`), so the regex is linear in the text and bounded in size.
"""

from __future__ import annotations

import re
from functools import lru_cache

from context_engine.text import tokenize

# The endings a root takes within its family: plural and verb forms, agent nouns, the nouns of an action
# ("concaten": concatenation), "-ize" verbs, "-able" ("streamable") and "-ness" ("lazi": laziness).
WORD_ENDINGS = r"(?:e?s|e|ed|ings?|ers?|ors?|(?:at)?ions?|at(?:e[sd]?|ing)|iz\w*|y|ies|abl[ey]|ness)?"
_ENDING = re.compile(WORD_ENDINGS + "$")
MAX_FORMS = 12  # words (or roots) in one condition: the validator's bound on a word pattern

# Short forms engineers write for the same subject ("docs" PRs are documentation PRs): a topic word
# matches its other forms too. Whole words each side; no stemmer guesses them.
SHORT_FORMS = {
    "doc": "documentation",
    "docs": "documentation",
    "config": "configuration",
    "configs": "configuration",
    "repo": "repository",
    "repos": "repositories",
    "perf": "performance",
    "dep": "dependency",
    "deps": "dependencies",
    "auth": "authentication",
    "env": "environment",
    "impl": "implementation",
    "db": "database",
    "param": "parameter",
    "params": "parameters",
    "arg": "argument",
    "args": "arguments",
    "async": "asynchronous",
    "k8s": "kubernetes",
}

# One word in British and American spelling: a topic said in one is about records written in either.
# A word is spelled the other way where it begins with one of these ("colours": "colors").
SPELLINGS = (
    *(("colour", "color"), ("behaviour", "behavior"), ("favour", "favor"), ("flavour", "flavor")),
    *(("honour", "honor"), ("labour", "labor"), ("neighbour", "neighbor"), ("humour", "humor")),
    *(("licence", "license"), ("catalogue", "catalog"), ("dialogue", "dialog"), ("analyse", "analyze")),
    *(("grey", "gray"), ("defence", "defense"), ("cancelled", "canceled"), ("cancelling", "canceling")),
    *(("modelling", "modeling"), ("labelled", "labeled"), ("labelling", "labeling"), ("travelled", "traveled")),
    *(("signalling", "signaling"), ("serialis", "serializ"), ("tokenis", "tokeniz"), ("normalis", "normaliz")),
    *(("initialis", "initializ"), ("optimis", "optimiz"), ("organis", "organiz"), ("customis", "customiz")),
    *(("recognis", "recogniz"), ("parallelis", "paralleliz"), ("synchronis", "synchroniz"), ("visualis", "visualiz")),
    *(("authoris", "authoriz"), ("prioritis", "prioritiz"), ("summaris", "summariz"), ("standardis", "standardiz")),
)


def spelling_variants(word: str) -> list[str]:
    """The word in the other spelling (British or American), if it has one: "licences" -> "licenses"."""
    for british, american in SPELLINGS:
        for said, other in ((british, american), (american, british)):
            if word.startswith(said):
                return [other + word[len(said) :]]
    return []


# One syllable ending in one vowel and one consonant: the consonant doubles before an ending ("zip": zipped).
_DOUBLES = re.compile(r"[^aeiou]*[aeiou][b-df-hj-np-tvz]")


def roots(word: str) -> list[str]:
    """The roots of a word's family, each matched with `WORD_ENDINGS`: its stem ("licenc"), in the other
    spelling too ("licens"), its short or long form too ("docs": "document"), the stem of an "-ization" noun kept to its verb ("tokeniz"), a final "i"
    as the "y" it was ("lazi": lazy), a one-syllable root with its last consonant doubled ("zipp":
    zipped, zipping, where English doubles it); the word as written where no root and ending make it. A word that is not plain
    letters (an identifier, Chinese) is its own root."""
    word = word.lower()
    if not re.fullmatch(r"[a-z]+", word):
        return [word]
    found: list[str] = []
    short_or_long = [SHORT_FORMS.get(word, ""), *(short for short, full in SHORT_FORMS.items() if full == word)]
    for said in (word, *spelling_variants(word), *filter(None, short_or_long)):
        stem = tokenize(said)[0]
        if re.search(r"i[sz]ations?$", said):
            stem = re.sub(r"ations?$", "", said)  # "tokenization": the verb, not "token"
        found += [stem, said]
        if stem.endswith("i") and re.search(r"(?:y|ies|ied|iness|ily)$", said):
            found.append(stem[:-1] + "y")
        if _DOUBLES.fullmatch(stem) and _english().known([stem + stem[-1] + "ed", stem + stem[-1] + "ing"]):
            found.append(stem + stem[-1])
    found = list(dict.fromkeys(found))
    # a root another root and an ending already make ("streaming": "stream" + "ing") is no item of its own
    return [r for r in found if not any(o != r and r.startswith(o) and _ENDING.fullmatch(r[len(o) :]) for o in found)]


def family_roots(words: list[str]) -> list[str]:
    """The roots of several words, each once, at most `MAX_FORMS` (the words said first keep theirs)."""
    return list(dict.fromkeys(r for w in words for r in roots(w)))[:MAX_FORMS]


@lru_cache(maxsize=1)
def _english():
    from context_engine.query.spelling import english_words

    return english_words()


def verb_forms(word: str) -> list[str]:
    """The past and -ing forms of a word that is a verb ("cache": cached, caching; "zip": zipped,
    zipping; "copy": copied, copying), spelled as English does; none for a word English does not use as
    a verb ("audio", "json": no "audioed")."""
    if word.endswith("e") and not word.endswith("ee"):
        forms = [word + "d", word[:-1] + "ing"]
    elif re.search(r"[^aeiou]y$", word):
        forms = [word[:-1] + "ied", word + "ing"]
    elif _DOUBLES.fullmatch(word):
        forms = [word + word[-1] + "ed", word + word[-1] + "ing"]
    else:
        forms = [word + "ed", word + "ing"]
    return [f for f in forms if _english().known([f])]
