"""Text on the lowest floor: what every layer needs of Chinese and Western text and of dates.

Sentences (Chinese and Western terminators, abbreviations, code blocks), search tokens (jieba for
Chinese, lower-cased English words reduced to their Snowball stems), the CJK character classes,
traditional Chinese read as simplified, ISO dates. Nothing here imports from the rest of the package.
"""

from __future__ import annotations

import math
import re
import string
from datetime import UTC, datetime
from functools import lru_cache

_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")

# Case mapping of ASCII letters only. `str.lower()`/`upper()` map other letters too, some of them
# into ASCII (KELVIN SIGN "\u212a" -> "k"): account comparison and MongoDB's `$toLower`/`$toUpper`
# (which change ASCII letters only) both need exactly these tables.
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def to_utc_naive(value: datetime) -> datetime:
    """MongoDB stores UTC without a zone; pymongo returns naive datetimes by default."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.replace(microsecond=(value.microsecond // 1000) * 1000)


def parse_datetime(text: str) -> datetime | None:
    if not _ISO_DATETIME.match(text):
        return None
    try:
        return to_utc_naive(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC: not a date
        return None


# The times a question can be about, and be asked at. Far inside what `datetime` (years 1-9999) and
# MongoDB can hold, so that no calendar step from a time in range ("last year", "next month's
# start") can overflow, and a far-off `now` or "the last 99999999999 days" is refused in one line.
EARLIEST, LATEST = datetime(1900, 1, 1), datetime(3000, 1, 1)


class TimeRangeError(ValueError):
    """A time outside EARLIEST..LATEST (or no calendar date at all); the message is one line."""


def check_time_range(value: datetime, what: str) -> datetime:
    if not EARLIEST <= value < LATEST:
        raise TimeRangeError(f"{what} is out of range: times run from {EARLIEST.year} to {LATEST.year - 1}")
    return value


def parse_now(value: str | datetime | None) -> datetime:
    """`now` as naive UTC; an ISO string with or without zone, or the clock when absent. A time
    outside EARLIEST..LATEST is a TimeRangeError (a ValueError)."""
    if value is None or value == "":
        return datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"malformed time {str(value)[:64]!r}: use ISO 8601, e.g. 2026-11-30T12:00:00Z") from None
    try:
        if dt.tzinfo is not None:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise TimeRangeError(
            f"now {str(value)[:64]!r} is out of range: times run from {EARLIEST.year} to {LATEST.year - 1}"
        ) from None
    return check_time_range(dt, f"now {dt.isoformat()}")


# --------------------------------------------------------------------------------------------
# Search tokens
# --------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[\u4e00-\u9fff]+|[a-z0-9]+(?:[._\-][a-z0-9]+)*")
HAN = re.compile(r"[\u4e00-\u9fff]")  # Chinese ideographs: what jieba segments
ENGLISH_STOPWORDS = frozenset(
    """
a an and are as at be but by for from has have in is it its of on or that the this to was were
will with we our you your they their i me my what which who why how when where did do does
""".split()
)


@lru_cache(maxsize=1)
def _jieba():
    import jieba  # lazy: the dictionary load costs about a second

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba


@lru_cache(maxsize=1)
def _t2s():
    from opencc import OpenCC  # lazy: OpenCC's dictionaries load in about a tenth of a second

    # Taiwan's characters read in their phrases: 開著 is 开着 (the aspect particle), while 著名 stays 著名 — a
    # character alone cannot say which
    return OpenCC("tw2s")


@lru_cache(maxsize=1)
def _t2s_plain():
    from opencc import OpenCC

    return OpenCC("t2s")


@lru_cache(maxsize=8192)
def _simplified_char(char: str) -> str:
    converted = _t2s().convert(char)
    return converted if len(converted) == 1 else char


@lru_cache(maxsize=8192)
def _simplified_run(run: str) -> str:
    if _t2s_plain().convert(run) == run:
        # already simplified: Taiwan's tables would still "correct" it (什么 is 什幺 there, 么 being 幺's variant)
        return run
    converted = _t2s().convert(run)
    # a phrase read as one of another length would move every offset after it: then character by character
    return converted if len(converted) == len(run) else "".join(map(_simplified_char, run))


_HAN = re.compile(r"[\u4e00-\u9fff]+")


def simplified(text: str) -> str:
    """Traditional Chinese characters as simplified ones, at the same offsets so every offset still points
    at the same words: the rules read 「開了幾個」 as 开了几个. Other text is left as it is."""
    return _HAN.sub(lambda m: _simplified_run(m.group(0)), text)


def as_asked(text: str, asked: str) -> str:
    """`text` with each run of Chinese it quotes from the question read as simplified put back in the
    characters the asker typed ("no one named '欧阳静怡'" for a question that wrote 歐陽靜怡)."""
    read = simplified(asked)
    if read == asked:
        return text

    def back(m: re.Match) -> str:
        at = read.find(m.group(0))
        return asked[at : at + len(m.group(0))] if at >= 0 else m.group(0)

    return _HAN.sub(back, text)


# What `tokenize` produces, written beside every persisted BM25 index: an index whose tokens were made
# another way (an older release's light suffix strip) is refit from its texts rather than searched
# with tokens that no longer meet its vocabulary.
TOKENIZATION = "jieba+snowball-english"


@lru_cache(maxsize=1)
def _english_stemmer():
    import Stemmer  # PyStemmer: the Snowball project's English (Porter2) stemmer, in C

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    """The Snowball English stem of an alphabetic word, so "caches"/"caching"/"cached" meet at "cach"
    and "studies"/"study" at "studi". Identifiers and numbers ("v1.2", "payment_service") stay whole.
    Chosen on SciFact train over the hand-written suffix strip it replaced: BM25 nDCG@10 0.647 ->
    0.668, the engine's default run 0.714 -> 0.725 (`context-engine eval retrieval --split train`)."""
    if not token.isalpha():
        return token
    return _english_stemmer().stemWord(token)


def tokenize(text: str, drop_stopwords: bool = False) -> list[str]:
    tokens: list[str] = []
    for piece in _TOKEN.findall(text.lower()):
        if HAN.match(piece):
            tokens.extend(t for t in _jieba().lcut(piece) if t.strip())
        elif not (drop_stopwords and piece in ENGLISH_STOPWORDS):
            tokens.append(_stem(piece))
    return tokens


# --------------------------------------------------------------------------------------------
# Characters and sentences
# --------------------------------------------------------------------------------------------
# CJK ideographs (incl. extension A and compatibility), kana and Hangul count as "characters".
CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
CJK_CHAR = re.compile(f"[{CJK_CLASS}]")
_CLOSERS = "\"'”’」』）》】〕〉)\\]"
# Chinese terminators end a sentence wherever they are; closing quotes/brackets stay with it.
_CJK_END = re.compile(f"(?:[。！？；｡．]|…{{2}})+[{_CLOSERS}]*")
# Western terminators: followed by whitespace/end, or (mixed text) directly by a CJK character.
_WEST_END = re.compile(f"[.!?]+[{_CLOSERS}]*(?=\\s|$|[{CJK_CLASS}])")

# Never end a sentence: the next word always follows ("e.g. Redis", "Dr. Kim", "cf. the RFC").
_ABBREV = frozenset(
    """
mr mrs dr prof st mt vs cf approx appx ca e.g i.e eg ie viz resp dept gen col lt sgt capt hon pres gov sen
""".split()
)
# End a sentence unless a number follows ("Fig. 2", "No. 5", "Jan. 3", "pp. 10" vs "I said no. Then").
_ABBREV_NUM = frozenset(
    """
no nos fig figs eq eqs ref refs vol vols pp p ch sec sect rev est ft jan feb mar apr jun jul aug sep sept
oct nov dec
""".split()
)
# End a sentence only when the next word is capitalised ("... and so on, etc. The next").
_ABBREV_SOFT = frozenset("etc al inc ltd co corp jr sr a.m p.m u.s u.k".split())

_FENCE = re.compile(r"^\s*(```|~~~)")
_BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|>|\||[-=]{3,}\s*$)")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_LIST_NUMBER = re.compile(r"^\s*\d{1,3}[.)]$")
WORD_UNIT = re.compile(f"[{CJK_CLASS}]|[^\\s{CJK_CLASS}]+")


# --------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------
def count_tokens(text: str) -> int:
    """A cheap token estimate: whitespace-separated words, plus CJK characters / 1.5."""
    cjk = len(CJK_CHAR.findall(text))
    if not cjk:
        return len(text.split())
    words = len(CJK_CHAR.sub(" ", text).split())
    return words + math.ceil(cjk / 1.5)


def _blocks(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_code) spans of paragraphs, headings, list items and fenced code blocks."""
    blocks: list[tuple[int, int, bool]] = []
    start: int | None = None
    end = 0
    in_code = False
    prev_heading = False
    pos = 0
    for line in text.splitlines(keepends=True):
        line_start, pos = pos, pos + len(line)
        body = line.rstrip("\r\n")
        line_end = line_start + len(body)
        if in_code:
            end = line_end
            if _FENCE.match(body):
                blocks.append((start, end, True))
                start, in_code = None, False
            continue
        if _FENCE.match(body):
            if start is not None:
                blocks.append((start, end, False))
            start, end, in_code, prev_heading = line_start, line_end, True, False
            continue
        if not body.strip():
            if start is not None:
                blocks.append((start, end, False))
            start, prev_heading = None, False
            continue
        if start is not None and (prev_heading or _BLOCK_START.match(body)):
            blocks.append((start, end, False))
            start = None
        if start is None:
            start = line_start + (len(body) - len(body.lstrip()))
        end = line_end
        prev_heading = bool(_HEADING.match(body))
    if start is not None:
        blocks.append((start, end, in_code))
    return blocks


def _is_boundary(text: str, block_start: int, dot: int, end: int, after: int) -> bool:
    """Whether the Western terminator run text[dot:end] (it contains a '.', closing quotes or
    brackets run on to `after`) ends a sentence."""
    run = text[dot:end]
    if "!" in run or "?" in run:
        return True
    next_char = text[after : after + 80].lstrip()[:1]
    if run.startswith(".."):  # an ellipsis: "wait... what" goes on
        return not next_char.islower()
    word_start = dot
    while word_start > block_start and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lstrip("([{\"'“‘")
    if not word:
        return True
    lowered = word.lower()
    if lowered in _ABBREV or word == "Ms":  # "Ms." but "took 5 ms. Then"
        return False
    if lowered in _ABBREV_NUM:
        return not next_char.isdigit()
    if lowered in _ABBREV_SOFT:
        return not next_char or next_char.isupper() or bool(CJK_CHAR.match(next_char))
    if len(word) == 1 and word.isalpha() and word.isupper():
        return False  # an initial: "J. Smith"
    if "." in word and all(len(part) == 1 and part.isalpha() for part in lowered.split(".")):
        return False  # "U.S.A.", "e.g"-like dotted abbreviations
    line_start = text.rfind("\n", block_start, dot) + 1
    if _LIST_NUMBER.match(text[max(line_start, block_start) : dot + 1]):
        return False  # "1. First step"
    return True


def _split_block(text: str, start: int, end: int) -> list[tuple[int, int]]:
    cuts: set[int] = set()
    for match in _CJK_END.finditer(text, start, end):
        cuts.add(match.end())
    for match in _WEST_END.finditer(text, start, end):
        dot = match.start()
        stop = dot + len(match.group().rstrip(_CLOSERS.replace("\\", "")))
        if "." not in match.group() or _is_boundary(text, start, dot, stop, match.end()):
            cuts.add(match.end())
    spans: list[tuple[int, int]] = []
    prev = start
    for cut in sorted(cuts) + [end]:
        if cut <= prev:
            continue
        piece = text[prev:cut]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            spans.append((prev + lead, prev + trail))
        prev = cut
    return spans


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of `text`; `text[start:end]` is stripped."""
    spans: list[tuple[int, int]] = []
    for start, end, is_code in _blocks(text):
        if is_code:
            spans.append((start, end))
        else:
            spans.extend(_split_block(text, start, end))
    return spans


def split_sentences(text: str) -> list[str]:
    """Sentences of Chinese, Western or mixed text, in order, stripped; never empty strings."""
    return [text[s:e] for s, e in sentence_spans(text or "")]
