"""Misspelt question words read as the word meant: "numbr of unique isue authors", "mergd", "opend".

The planner's rules are written for the words people mean; a newcomer's typo in a rule word ("isue",
"repiles") would otherwise drop a condition or a shape. A word is corrected only when it is no word
the planner knows, no one's name or handle, no stored value, written in lower case (a capitalised
word may be a name), no known word with a regular ending ("sharding"), and exactly one known word is
one edit away (two for long words). The corrected question is what is planned, and the answer says how
it was read.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz import process
from rapidfuzz.distance import OSA

from context_engine.query.identity import COMMON_WORDS, ORDINARY_WORDS

# Words the planner's rules are written in, beyond the everyday ones identity already lists.
_RULE_WORDS = frozenset(
    """
pull pulls request requests issue issues ticket tickets message messages thread threads comment comments
reply replies replied merge merged merging close closed closing open opened opening create created
review reviewed reviews reviewer reviewers assign assigned assignee assignees label labels labelled
labeled number count total unique distinct different authors author people person users
between before after since during until through month months week weeks year years today yesterday
latest newest oldest earliest first last most least fewest busiest quietest longest biggest largest
without never still anymore nobody anyone anybody someone everyone workspace workspaces channel channels
mentioned mention mentions started posted wrote written filed reported submitted fixed resolved
which where what when whose how many much show list give find draft drafts completed planned reason
reasons repository repositories milestone milestones documentation discussion discussions answers
commented uncommented unassigned unlabeled unlabelled unmerged replied replying contributors contributor
""".split()
)
# Chat shorthand for rule words ("hw many msgs lst wk"): whole words only.
SHORTHAND = {
    "hw": "how",
    "lst": "last",
    "msgs": "messages",
    "msg": "message",
    "yr": "year",
    "yrs": "years",
    "cnt": "count",
    "num": "number",
    "thx": "thanks",
    "pls": "please",
    "plz": "please",
    # contractions written without the apostrophe
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "isnt": "isn't",
    "arent": "aren't",
    "wasnt": "wasn't",
    "werent": "weren't",
    "havent": "haven't",
    "hasnt": "hasn't",
    "hadnt": "hadn't",
    "whats": "what's",
    "wouldnt": "wouldn't",
}
# Emoji that name what the records call by a word: the reactions GitHub (`reactions.heart`, `reactions.+1`)
# and Slack (`reactions.name`: "heart", "+1") both name so — said as the words the planner reads for them;
# not 😄 or 🎉, which GitHub calls laugh and hooray and Slack smile and tada — and the bug (🐛, the bug
# report's sign). Said as a verb ("the most ❤️'d issue"), a reaction emoji is the reaction given: "heart-reacted".
EMOJI = {
    "👍": "thumbs up",
    "👎": "thumbs down",
    "❤": "heart",
    "♥": "heart",
    "😕": "confused",
    "🚀": "rocket",
    "👀": "eyes",
    "🐛": "bug",
}
_EMOJI = re.compile("(" + "|".join(EMOJI) + r")\uFE0F?(?P<verb>['’]?d\b|-?ed\b)?")


def _emoji_said(m: re.Match) -> str:
    word = EMOJI[m.group(1)]
    return f"{word.replace(' ', '-')}-reacted" if m.group("verb") and word != "bug" else word


_SHORT = re.compile(r"(?<![\w@#/.\-])(?:" + "|".join(SHORTHAND) + r")(?![\w/.\-@])")
KNOWN = frozenset(w for w in COMMON_WORDS | ORDINARY_WORDS | _RULE_WORDS if len(w) >= 4)
_KNOWN_LIST = sorted(KNOWN)
_WORD = re.compile(r"(?<![\w@#/.\-])[a-z]{4,}(?![\w/.\-@'’])")


@lru_cache(maxsize=1)
def english_words():
    from spellchecker import SpellChecker  # lazy: its word list loads in ~0.15 s

    return SpellChecker(language="en", distance=1)


# Regular endings a word takes: "shard" + "ing" is a word the dictionary may not list, not a typo.
_ENDINGS = ("ings", "ing", "ers", "er", "ed", "s")


def _inflected(word: str) -> bool:
    """A known English word with a regular ending ("sharding", "webhooks"): a word, not a misspelling.
    A final "e" is dropped before a vowel ending, so "closeing" is still a misspelling."""
    stems = (
        word[: -len(e)] for e in _ENDINGS if word.endswith(e) and not (e[0] in "ie" and word[: -len(e)].endswith("e"))
    )
    return any(len(stem) >= 4 and english_words().known([stem]) for stem in stems)


def correct(question: str, keep: frozenset[str] | set[str]) -> str:
    """`question` with its misspelt rule words replaced and the emoji of `EMOJI` said as words; `keep`
    (lower case) are never touched: the tenant's people's aliases and stored values."""

    def fix(m: re.Match) -> str:
        word = m.group(0)
        if word in KNOWN or word in keep or (word.endswith("s") and word[:-1] in KNOWN):
            return word
        edits = 1 if len(word) <= 7 else 2
        close = process.extract(word, _KNOWN_LIST, scorer=OSA.distance, score_cutoff=edits, limit=6)
        if not close or english_words().known([word]) or _inflected(word):
            return word
        best = min(d for _, d, _ in close)
        meant = [w for w, d, _ in close if d == best]
        if len(meant) > 1:  # "opend": opened, not open — the word that ends alike
            meant = [w for w in meant if w[-1] == word[-1]]
        return meant[0] if len(meant) == 1 else word

    question = _EMOJI.sub(_emoji_said, question)
    question = _SHORT.sub(lambda m: m.group(0) if m.group(0) in keep else SHORTHAND[m.group(0)], question)
    return _WORD.sub(fix, question)
