"""Follow-up questions resolved offline against the turns before (the rules alone; the graph-level
conversation is in test_conversation.py)."""

from datetime import datetime

import pytest

from context_engine.answering.followup import resolve_offline, thanks_left_out, those_said_plainly
from context_engine.query.identity import PeopleDirectory

NOW = datetime(2026, 11, 30, 12)
PEOPLE = PeopleDirectory(
    [
        {"login": "rsh-dev", "name": "Rashid Khan"},
        {"login": "priyar", "name": "Priya Raman"},
        {"login": "larsn", "name": "Lars Nielsen"},
        {"login": "nli", "name": "李娜"},
    ]
)
MERGED = {
    "standalone": "PRs Rashid merged last week",
    "people": ["Rashid Khan"],
    "people_text": ["Rashid"],
    "times": ["last week"],
    "refs": ["acme/infra#882", "acme/web#2126"],
    "answer_people": ["Lars Nielsen"],
    "time_ranges": [{"text": "last week", "start": "2026-11-23T00:00:00", "end": "2026-11-30T00:00:00"}],
}


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("and in October?", "PRs Rashid merged in October 2026"),  # the year of the window before
        ("What about last month?", "PRs Rashid merged last month"),
        ("那上个月呢？", "PRs Rashid merged 上个月"),
        ("what about Priya?", "PRs Priya merged last week"),
        ("And Priya?", "PRs Priya merged last week"),
        ("how about for Lars?", "PRs Lars merged last week"),
        ("李娜呢？", "PRs 李娜 merged last week"),
        ("Rashid 2025 年呢", "PRs Rashid merged 2025 年"),  # the same person named again: only the time moves
        ("and Rashid Khan in May?", "PRs Rashid merged in May 2026"),
        ("他呢？", "PRs Lars Nielsen merged last week"),  # the person the answer named, not the one asked about
        ("which of those are still open?", "PRs Rashid merged last week open"),
        ("only the ones in payments", "PRs Rashid merged last week in payments"),
        ("just the open ones", "PRs Rashid merged last week open ones"),
        ("who reviewed it?", "who reviewed acme/infra#882?"),
        ("who reviewed them?", "who reviewed acme/infra#882, acme/web#2126?"),
        ("how many PRs did Lars open in 2025?", "how many PRs did Lars open in 2025?"),  # stands alone
        # the time window shifted in other words
        ("the week before", "PRs Rashid merged between 2026-11-16 and 2026-11-22"),
        ("and the month before?", "PRs Rashid merged between 2026-10-23 and 2026-11-22"),  # the month before that week
        ("what about earlier?", "PRs Rashid merged before 2026-11-23"),
        ("anything later?", "PRs Rashid merged since 2026-11-30"),
        ("a week later", "PRs Rashid merged between 2026-11-30 and 2026-12-06"),
        ("the previous week", "PRs Rashid merged between 2026-11-16 and 2026-11-22"),
        ("再往前一周", "PRs Rashid merged between 2026-11-16 and 2026-11-22"),
        ("那再往前一个月呢？", "PRs Rashid merged between 2026-10-23 and 2026-10-29"),  # that week, a month back
        ("更早的呢？", "PRs Rashid merged before 2026-11-23"),
        ("same for 2020", "PRs Rashid merged 2020"),
        ("the same but for October", "PRs Rashid merged October 2026"),
        # another person, other phrasing
        ("and for Priya?", "PRs Priya merged last week"),
        ("what about larsn", "PRs larsn merged last week"),
        ("same for Priya", "PRs Priya merged last week"),
        ("换成李娜呢", "PRs 李娜 merged last week"),
        # narrowing
        ("only the open ones", "PRs Rashid merged last week open ones"),
        ("just the merged ones", "PRs Rashid merged last week merged ones"),
    ],
)
def test_follow_up_forms(asked, standalone):
    assert resolve_offline(asked, [MERGED], PEOPLE, NOW).standalone == standalone


def test_a_new_thread_has_nothing_to_resolve_against():
    assert resolve_offline("and in October?", [], PEOPLE, NOW).how == ""


def test_a_pronoun_prefers_the_person_asked_about_before():
    earlier = {
        **MERGED,
        "standalone": "PRs Priya merged last week",
        "people": ["Priya Raman"],
        "people_text": ["Priya"],
    }
    first = {**MERGED, "answer_people": []}
    assert resolve_offline("他呢？", [first, earlier], PEOPLE, NOW).standalone == "PRs Rashid Khan merged last week"


def test_a_shifted_window_of_one_calendar_month_is_the_month_before_by_name():
    october = {
        **MERGED,
        "standalone": "PRs Rashid merged in October",
        "times": ["in October"],
        "time_ranges": [{"text": "in October", "start": "2026-10-01T00:00:00", "end": "2026-11-01T00:00:00"}],
    }
    assert (
        resolve_offline("the month before", [october], PEOPLE, NOW).standalone == "PRs Rashid merged in September 2026"
    )
    assert resolve_offline("a year earlier", [october], PEOPLE, NOW).standalone == "PRs Rashid merged in October 2025"
    january = {
        **october,
        "time_ranges": [{"text": "in October", "start": "2026-01-01T00:00:00", "end": "2026-02-01T00:00:00"}],
    }
    assert (
        resolve_offline("the month before", [january], PEOPLE, NOW).standalone == "PRs Rashid merged in December 2025"
    )


def test_a_shift_needs_a_window_to_shift():
    no_time = {**MERGED, "standalone": "open PRs by Rashid", "times": [], "time_ranges": []}
    assert resolve_offline("the week before", [no_time], PEOPLE, NOW).how == ""


def test_a_shifted_window_in_a_chinese_question_is_set_apart_by_spaces():
    zhang = {**MERGED, "standalone": "上周张伟合并了哪些PR？", "times": ["上周"], "people_text": ["张伟"]}
    assert (
        resolve_offline("再往前一周", [zhang], PEOPLE, NOW).standalone
        == "between 2026-11-16 and 2026-11-22 张伟合并了哪些PR？"
    )


DECLINED = {
    "standalone": "PRs Alex merged last week",
    "people": [],
    "people_text": [],
    "times": ["last week"],
    "refs": [],
    "answer_people": [],
    "unresolved": "Alex",
    "candidates": [
        {"key": "achen42", "name": "Alex Chen", "github": "achen42"},
        {"key": "amorgan-dev", "name": "Alex Morgan", "github": "amorgan-dev"},
    ],
}


@pytest.mark.parametrize(
    "asked,name",
    [
        ("the first one", "Alex Chen"),
        ("the second", "Alex Morgan"),
        ("2", "Alex Morgan"),
        ("第二个", "Alex Morgan"),
        ("第一个", "Alex Chen"),
        ("the last one", "Alex Morgan"),
        ("I meant amorgan-dev", "Alex Morgan"),
        ("Alex Morgan", "Alex Morgan"),
        ("alex chen", "Alex Chen"),
        ("我说的是Alex Chen", "Alex Chen"),
        ("no, I meant achen42", "Alex Chen"),
        ("Morgan", "Alex Morgan"),
        ("his handle here is achen42", "Alex Chen"),
    ],
)
def test_picking_a_candidate_re_asks_the_declined_question_with_that_person(asked, name):
    out = resolve_offline(asked, [DECLINED], PEOPLE, NOW)
    assert out.standalone == f"PRs {name} merged last week" and "of the candidates offered" in out.how


@pytest.mark.parametrize("asked", ["the third one", "第三个", "Alex", "I meant Priya Raman", "0"])
def test_a_pick_that_names_no_offered_candidate_picks_none(asked):
    assert "of the candidates offered" not in resolve_offline(asked, [DECLINED], PEOPLE, NOW).how


def test_the_first_one_without_candidates_picks_no_person_but_the_first_record():
    out = resolve_offline("the first one", [MERGED], PEOPLE, NOW)
    assert "candidates" not in out.how and out.standalone == "acme/infra#882"


# A turn whose answer was a query's records: what the elliptical follow-ups narrow, count, list or rank.
QUERIED = {
    **MERGED,
    "collection": "pull_requests",
    "standalone": "Which PRs did Rashid merge in March 2026?",
    "times": ["in March 2026"],
    "time_ranges": [{"text": "in March 2026", "start": "2026-03-01T00:00:00", "end": "2026-04-01T00:00:00"}],
}
COUNTED = {**QUERIED, "standalone": "How many PRs did Rashid open in March 2026?"}
RANKED = {
    "standalone": "Who merged the most PRs in 2025?",
    "collection": "pull_requests",
    "people": [],
    "people_text": [],
    "times": ["in 2025"],
    "refs": [],
    "answer_people": ["Lars Nielsen"],
    "time_ranges": [{"text": "in 2025", "start": "2025-01-01T00:00:00", "end": "2026-01-01T00:00:00"}],
}
DECLINED_SLACK = {
    "standalone": "How many messages did Rosa write in May 2026?",
    "collection": "",
    "people": [],
    "people_text": [],
    "times": ["in May 2026"],
    "refs": [],
    "answer_people": [],
    "time_ranges": [],
    "unresolved": "Rosa",
    "candidates": [
        {"key": "U1", "name": "Rosa", "places": ["racket"]},
        {"key": "U2", "name": "Rosa", "places": ["elmlang"]},
    ],
}


QUARTER = {
    "standalone": "Which issues did Priya file between April and June 2026?",
    "collection": "issues",
    "people": ["Priya Raman"],
    "people_text": ["Priya"],
    "times": ["between April and June 2026"],
    "refs": [],
    "answer_people": [],
    "time_ranges": [
        {"text": "between April and June 2026", "start": "2026-04-01T00:00:00", "end": "2026-07-01T00:00:00"}
    ],
}
HALF = {
    **QUARTER,
    "standalone": "Which issues did Priya file in the first half of 2025?",
    "times": ["in the first half of 2025"],
    "time_ranges": [
        {"text": "in the first half of 2025", "start": "2025-01-01T00:00:00", "end": "2025-07-01T00:00:00"}
    ],
}
# a name it could not tell apart, as a possessive: "same question for Priya" replaces it
DECLINED_THREADS = {
    **DECLINED_SLACK,
    "standalone": "Who replied the most in Rosa's threads during 2025?",
    "unresolved": "Rosa's",
    "times": ["during 2025"],
}
# the busiest month: the answer's groups are months, and "that month" is the one it named first
BUSIEST = {
    "standalone": "busiest month in racket in 2026",
    "collection": "messages",
    "people": [],
    "people_text": [],
    "times": ["in 2026"],
    "refs": [],
    "answer_people": [],
    "answer_periods": ["2026-02"],
    "time_ranges": [{"text": "in 2026", "start": "2026-01-01T00:00:00", "end": "2026-11-30T12:00:00"}],
}


@pytest.mark.parametrize(
    "previous,asked,standalone",
    [
        (QUERIED, "how many is that", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "一共多少个？", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "and about streaming?", "Which PRs did Rashid merge in March 2026 about streaming"),
        (QUERIED, "any of them about caching?", "Which PRs did Rashid merge in March 2026 about caching"),
        (QUERIED, "哪些是 bug", "Which PRs did Rashid merge in March 2026 哪些是 bug"),
        (
            QUERIED,
            "which of those has the most comments?",
            "PRs did Rashid merge in March 2026 which one of them the most comments",
        ),
        (QUERIED, "and in July?", "Which PRs did Rashid merge in July 2026?"),  # the month of the year asked about
        (QUERIED, "and the ones in 2025?", "Which PRs did Rashid merge in 2025?"),
        (QUERIED, "shift that to the month before", "Which PRs did Rashid merge in February 2026?"),
        (QUERIED, "who reviewed it?", "who reviewed PR acme/infra#882?"),  # the record, with its kind
        (RANKED, "how many did they merge?", "merged PRs in 2025 how many did Lars Nielsen merge"),
        (RANKED, "list them", "list merged PRs in 2025"),
        (DECLINED_SLACK, "the racket one", "How many messages did U1 write in May 2026?"),  # by where they post
        (DECLINED_SLACK, "elmlang 那个", "How many messages did U2 write in May 2026?"),
        (
            DECLINED_SLACK,
            "I meant Priya",
            "How many messages did Priya write in May 2026?",
        ),  # someone the candidates missed
    ],
)
def test_elliptical_follow_ups_and_picks(previous, asked, standalone):
    assert resolve_offline(asked, [previous], PEOPLE, NOW).standalone == standalone


def test_a_question_that_names_its_own_records_stands_alone():
    assert (
        resolve_offline("how many issues did Lars open in 2025?", [QUERIED], PEOPLE, NOW).standalone
        == "how many issues did Lars open in 2025?"
    )


@pytest.mark.parametrize(
    "previous,asked,standalone",
    [
        (QUERIED, "same quarter a year earlier?", "Which PRs did Rashid merge in March 2025?"),
        (
            QUERIED,
            "separate question: how many issues are open?",
            "how many issues are open?",
        ),  # a new question, said so
        (
            QUERIED,
            "totally different question: which issue has the most comments of all time?",
            "which issue has the most comments of all time?",
        ),
        (QUERIED, "side question: how many issues are open?", "how many issues are open?"),
        (QUERIED, "题外话，现在有多少个 issue 还开着？", "现在有多少个 issue 还开着？"),
        (QUERIED, "what about April?", "Which PRs did Rashid merge April 2026?"),
        (QUERIED, "how many is it?", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "narrow it to the webdataset ones", "Which PRs did Rashid merge in March 2026 the webdataset ones"),
        (QUERIED, "which of those are still open?", "PRs did Rashid merge in March 2026 open"),  # "which": the records
        # "which ones" without "of those" narrows the last answer too; a negated verb is kept whole
        (
            QUERIED,
            "which ones haven't been labelled yet?",
            "PRs did Rashid merge in March 2026 not labelled yet",
        ),
        (QUERIED, "what ones were reverted", "PRs did Rashid merge in March 2026 reverted"),
        (RANKED, "how many PRs did that person open that year?", "how many PRs did Lars Nielsen open in 2025"),
        (QUERIED, "who's the author?", "who opened PR acme/infra#882"),
        (DECLINED_SLACK, "sorry, I mean the login priyar", "How many messages did priyar write in May 2026?"),
        (DECLINED_SLACK, "the Rosa in racket", "How many messages did U1 write in May 2026?"),
        (DECLINED_THREADS, "same question for Priya", "Who replied the most in Priya's threads during 2025?"),
        (
            BUSIEST,
            "who posted the most that month?",
            "in racket in February 2026 who posted the most",
        ),  # the month answered
        # a pick said in other words
        (DECLINED_SLACK, "oh right, her handle is U2", "How many messages did U2 write in May 2026?"),
        (DECLINED_SLACK, "U1, the one who posts in racket", "How many messages did U1 write in May 2026?"),
        (DECLINED_SLACK, "the rack one", "How many messages did U1 write in May 2026?"),  # a place it begins
        # counted in other words
        (QUERIED, "give me a number for that", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "so what does that come to, in number?", "how many PRs did Rashid merge in March 2026"),
        # the window moved in other words
        (QUERIED, "go back one month", "Which PRs did Rashid merge in February 2026?"),
        (QUERIED, "跟前一个月比呢？", "Which PRs did Rashid merge in February 2026?"),
        (QUARTER, "and over the next three months?", "Which issues did Priya file between 2026-07-01 and 2026-09-30?"),
        (HALF, "and in the second half of the year?", "Which issues did Priya file the second half of 2025?"),
        (QUERIED, "whose PR was that?", "who opened PR acme/infra#882"),
        (QUERIED, "数一下", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "how many's that", "how many PRs did Rashid merge in March 2026"),
        (DECLINED_SLACK, "U2 is who I had in mind", "How many messages did U2 write in May 2026?"),
        (DECLINED_SLACK, "oh, sorry: U1 on slack", "How many messages did U1 write in May 2026?"),
        (QUERIED, "他前一个月呢", "Which PRs did Rashid merge in February 2026?"),  # the same person, the month before
        (HALF, "and in the second half?", "Which issues did Priya file the second half of 2025?"),
    ],
)
def test_more_follow_up_wordings(previous, asked, standalone):
    assert resolve_offline(asked, [previous], PEOPLE, NOW).standalone == standalone


def test_those_months_are_the_window_asked_about_and_her_is_the_person():
    ranked = {
        **QUARTER,
        "standalone": "Who filed the most issues between April and June 2026?",
        "people": [],
        "people_text": [],
        "answer_people": ["Lars Nielsen"],
    }
    assert (
        resolve_offline("how many did that person open in those three months?", [ranked], PEOPLE, NOW).standalone
        == "filed issues between April and June 2026 how many did Lars Nielsen open"
    )
    threads = {
        **QUARTER,
        "standalone": "Who replied the most in Priya's threads in 2025?",
        "collection": "messages",
        "times": ["in 2025"],
    }
    assert (
        resolve_offline("how many replies did her threads get altogether?", [threads], PEOPLE, NOW).standalone
        == "how many replies did Priya Raman's threads get altogether"
    )


OPEN_BUGS = {
    **QUERIED,
    "standalone": "how many open issues labelled bug",
    "collection": "issues",
    "people": [],
    "people_text": [],
    "times": [],
    "time_ranges": [],
}


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("ok now the closed ones", "how many closed issues labelled bug"),  # the other state, not both at once
        ("and the closed ones?", "how many closed issues labelled bug"),
        ("what about open ones?", "how many open issues labelled bug"),  # the state it already has: a narrowing
    ],
)
def test_a_follow_up_naming_another_state_switches_to_it(asked, standalone):
    assert resolve_offline(asked, [OPEN_BUGS], PEOPLE, NOW).standalone.startswith(standalone)


LAST_MONTH = {
    **QUERIED,
    "standalone": "How many issues came in last month?",
    "collection": "issues",
    "people": [],
    "people_text": [],
    "times": ["last month"],
    "time_ranges": [{"text": "last month", "start": "2026-10-01T00:00:00", "end": "2026-11-01T00:00:00"}],
}
RANKED_WHOSE = {**RANKED, "standalone": "PRs merged in 2025 whose name is on most"}
THREADS = {**QUERIED, "standalone": "Rashid's PRs with at least five comments", "times": [], "time_ranges": []}


@pytest.mark.parametrize(
    "previous,asked,standalone",
    [
        (QUERIED, "let me see them", "list PRs did Rashid merge in March 2026"),
        (QUERIED, "count those up for me", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "how many flaky ones is that, then?", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "给我数一下有几个", "how many PRs did Rashid merge in March 2026"),
        (QUERIED, "and the July figure?", "Which PRs did Rashid merge July 2026?"),
        (QUERIED, "and from the month before?", "Which PRs did Rashid merge in February 2026?"),
        (LAST_MONTH, "what about December?", "How many issues came in December 2025?"),  # December not yet come in 2026
        (
            RANKED_WHOSE,
            "how many did they get merged?",
            "PRs merged in 2025 whose name is on how many did Lars Nielsen get merged",
        ),
        (THREADS, "so how many does Rashid have", "how many Rashid's PRs with at least five comments"),
        (QUERIED, "which of Rashid's are still open", "PRs did Rashid merge in March 2026 still open"),
        # "didn't" is the words' own, not the auxiliary of "which of X's did ..."
        (COUNTED, "which of Rashid's didn't get merged?", "PRs did Rashid open in March 2026 didn't get merged"),
        # a question of its own once its person and time are said; "him" is no owner
        (QUERIED, "who reviewed him most that month?", "who reviewed Rashid Khan most in March 2026"),
    ],
)
def test_follow_ups_worded_freely(previous, asked, standalone):
    assert resolve_offline(asked, [previous], PEOPLE, NOW).standalone == standalone


def test_which_of_someones_after_their_count_lists_them():
    out = resolve_offline("which of Rashid's didn't get merged?", [COUNTED], PEOPLE, NOW)
    assert out.reshape == "list" and out.added == "didn't get merged"


BUGS = {
    **QUERIED,
    "standalone": "issues Rashid closed in March 2026 how many were bugs",
    "collection": "issues",
    "narrowed": "how many were bugs",
}


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("and enhancements?", "issues Rashid closed in March 2026 how many were enhancements"),  # the other value
        ("what about docs?", "issues Rashid closed in March 2026 how many were docs"),
        ("and still open?", "issues Rashid closed in March 2026 how many were bugs still open"),  # a state: added
    ],
)
def test_a_value_said_after_a_narrowing_replaces_the_one_it_added(asked, standalone):
    out = resolve_offline(asked, [BUGS], PEOPLE, NOW)
    assert out.standalone == standalone
    assert resolve_offline("which of those are bugs?", [QUERIED], PEOPLE, NOW).added == "bugs"


@pytest.mark.parametrize(
    "asked,replacing",
    [
        ("and with the frontend label instead?", True),  # "instead", which the words added no longer say
        ("换成 frontend 标签", True),
        ("and for the frontend label?", True),  # the value the same question is for
        ("and with the frontend label?", False),  # a label said alone is one more
        ("only the ones with more than 3 comments", False),
    ],
)
def test_a_value_said_in_place_of_the_last_one_is_read_where_the_follow_up_is(asked, replacing):
    labelled = {**QUERIED, "standalone": "how many issues labelled backend are open", "collection": "issues"}
    out = resolve_offline(asked, [labelled], PEOPLE, NOW)
    assert out.added and out.replacing is replacing


def test_a_value_after_a_narrowing_that_said_only_a_shape_is_added():
    busiest = {
        "standalone": "messages in elmlang in March 2019 busiest day",
        "collection": "messages",
        "narrowed": "busiest day",
    }
    assert resolve_offline("那 clojurians 呢", [busiest], PEOPLE, NOW).added == "clojurians"


# A pick said by what the candidate list showed (name, key, workspace), in any order, with a few
# words around it; the declined question is asked again about that candidate.
@pytest.mark.parametrize(
    "asked,key",
    [
        ("the racket Rosa", "U1"),
        ("Rosa over in elmlang", "U2"),
        ("racket 那边那个 Rosa", "U1"),
        ("我找的是 elmlang 上的 Rosa", "U2"),
        ("no, Rosa from the elm workspace", "U2"),  # the start of a workspace
        ("oh, she goes by U2", "U2"),
    ],
)
def test_a_candidate_is_picked_by_the_attributes_the_list_showed(asked, key):
    out = resolve_offline(asked, [DECLINED_SLACK], PEOPLE, NOW)
    assert (
        out.standalone == f"How many messages did {key} write in May 2026?" and "of the candidates offered" in out.how
    )


@pytest.mark.parametrize(
    "asked",
    [
        "Rosa",  # both are
        "the clojurians Rosa",  # neither is
        "Rosa from racket and elmlang",  # both places: still both
        "Rosa's threads in racket last year",  # more than a pick: a question of its own
        "U1 U2",
    ],
)
def test_a_pick_by_shown_attributes_that_leaves_not_exactly_one_picks_none(asked):
    assert "of the candidates offered" not in resolve_offline(asked, [DECLINED_SLACK], PEOPLE, NOW).how


# A name declined with nobody close enough to offer: the next turn naming someone re-asks it.
DECLINED_NOBODY = {
    **DECLINED_SLACK,
    "standalone": "Which issues did Lisa Wong file?",
    "unresolved": "Lisa Wong",
    "candidates": [],
}


@pytest.mark.parametrize("asked", ["我说的是 priyar", "oh, she goes by priyar", "I meant priyar"])
def test_a_name_said_after_a_decline_without_candidates_re_asks_the_question(asked):
    assert resolve_offline(asked, [DECLINED_NOBODY], PEOPLE, NOW).standalone == "Which issues did priyar file?"


HALF_CN = {
    **QUARTER,
    "standalone": "2025 年上半年 Priya 提了几个 issue？",
    "times": ["2025 年上半年"],
    "time_ranges": [{"text": "2025 年上半年", "start": "2025-01-01T00:00:00", "end": "2025-07-01T00:00:00"}],
}
YEAR_CN = {**HALF_CN, "standalone": "Priya 2025 年提的 issue", "times": ["2025 年"]}


@pytest.mark.parametrize(
    "previous,asked,standalone",
    [
        (MERGED, "the week prior to this one", "PRs Rashid merged between 2026-11-16 and 2026-11-22"),
        (MERGED, "and the week after it?", "PRs Rashid merged between 2026-11-30 and 2026-12-06"),
        (HALF_CN, "那下半年呢", "2025 年下半年 Priya 提了几个 issue？"),  # the other half of the year asked about
        (YEAR_CN, "换成 2024 年试试", "Priya 2024 年提的 issue"),  # the year replaced, the trailing 试试 dropped
    ],
)
def test_a_week_or_half_shifted_and_a_year_replaced_in_other_words(previous, asked, standalone):
    assert resolve_offline(asked, [previous], PEOPLE, NOW).standalone == standalone


@pytest.mark.parametrize(
    "asked",
    ["add those up for me, just the count", "tally them", "what's the number, then", "count 'em up please"],
)
def test_a_count_asked_in_other_words_counts_the_last_question(asked):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == "how many PRs did Rashid merge in March 2026"


@pytest.mark.parametrize("asked", ["count the open ones", "number of comments on them", "the total of their comments"])
def test_a_count_with_words_of_its_own_is_not_a_bare_count(asked):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).how != "the last question, counted"


@pytest.mark.parametrize(
    "asked",
    [
        "and Priya, for that same month?",
        "does Priya have any like that?",
        "Priya 也有类似的吗",
        "same for Priya, that month too",
    ],
)
def test_another_person_with_only_words_of_the_same_question_asks_it_about_them(asked):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == "Which PRs did Priya merge in March 2026?"


def test_another_person_with_a_question_of_their_own_is_not_the_same_question():
    out = resolve_offline("did Priya review anything that month", [QUERIED], PEOPLE, NOW)
    assert out.standalone != "Which PRs did Priya merge in March 2026?"


# the author the last answer named ("who opened PR x"), then a question about "their" records
AUTHOR = {
    **RANKED,
    "standalone": "who opened PR acme/web#7",
    "times": [],
    "time_ranges": [],
    "answer_people": ["priyar"],
}


def test_their_records_after_a_who_answer_are_that_persons():
    out = resolve_offline("how many of their issues are closed", [RANKED, AUTHOR], PEOPLE, NOW)
    assert out.standalone == "how many of priyar's issues are closed"


def test_their_said_of_the_records_themselves_is_not_a_person():
    out = resolve_offline("which of those had their titles changed", [RANKED, AUTHOR], PEOPLE, NOW)
    assert "priyar" not in out.standalone


def test_which_of_someones_records_ranked_is_one_record():
    rosa = {**QUERIED, "standalone": "Rashid's threads in March 2026 with replies", "collection": "messages"}
    out = resolve_offline("which of Rashid's got the most replies", [rosa], PEOPLE, NOW)
    assert out.standalone == "Rashid's threads in March 2026 with replies which one got the most replies"


@pytest.mark.parametrize(
    "asked",
    ["顺便问下，有多少个 open issue？", "另外问一下，有多少个 open issue？", "btw, how many open issues are there?"],
)
def test_a_by_the_way_question_stands_alone_without_its_lead(asked):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.how == "a new question" and out.standalone == asked.split("，", 1)[-1].split(", ", 1)[-1]


# Session 20: narrowings with a negation, windows moved in free words, corrections, topics, "that person"
@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("which of those weren't reviewed", "PRs did Rashid merge in March 2026 not reviewed"),
        ("which of them hasn't been labelled", "PRs did Rashid merge in March 2026 not labelled"),
        ("of these, which did not get reverted", "PRs did Rashid merge in March 2026 not reverted"),
    ],
)
def test_a_negated_narrowing_is_said_as_not(asked, standalone):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == standalone


@pytest.mark.parametrize(
    "asked,month",
    [
        ("两年后呢"[1:], "March 2027"),  # 年后呢: not a shift (no number), checked below
        ("一年以后的呢", "March 2027"),
        ("往前挪一个月", "February 2026"),
        ("向后推一个月看看", "April 2026"),
        ("一个月之前的", "February 2026"),
        ("上一年同期呢", "March 2025"),
        ("the same span the previous year", "March 2025"),
        ("that period, a year on", "March 2027"),
        ("same dates in the following year", "March 2027"),
        ("and the same window of the prior year?", "March 2025"),
    ],
)
def test_the_window_moved_in_free_words(asked, month):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    if asked == "年后呢":
        assert month not in out.standalone
    else:
        assert out.standalone == f"Which PRs did Rashid merge in {month}?"


@pytest.mark.parametrize(
    "asked",
    ["oh wait, I meant the open ones", "hold on, make that the open ones", "sorry, what I meant was the open ones"],
)
def test_a_correction_asks_the_last_question_again_corrected(asked):
    closed = {**QUERIED, "standalone": "Rashid's closed PRs in March 2026"}
    assert resolve_offline(asked, [closed], PEOPLE, NOW).standalone == "Rashid's open PRs in March 2026"


@pytest.mark.parametrize(
    "asked,topic",
    [
        ("有没有和 caching 相关的", "caching"),
        ("有没有跟 tokenizer 有关的？", "tokenizer"),
        ("有没有提到 docker 的", "docker"),
    ],
)
def test_any_about_a_topic_in_chinese_narrows_the_last_records(asked, topic):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.standalone == f"Which PRs did Rashid merge in March 2026 about {topic}"


def test_that_person_after_a_who_answer_is_the_answers_person_not_the_one_asked_about():
    who = {**QUERIED, "standalone": "who reviewed Rashid's PRs the most", "answer_people": ["Lars Nielsen"]}
    out = resolve_offline("and how many PRs did that person open overall", [who], PEOPLE, NOW)
    assert out.standalone == "how many PRs did Lars Nielsen open overall"
    assert "Lars Nielsen" in resolve_offline("那个人一共开了几个 PR", [who], PEOPLE, NOW).standalone


@pytest.mark.parametrize(
    "asked", ["how many is that altogether", "how many is it overall", "how many are those combined"]
)
def test_a_count_in_all_counts_the_last_question(asked):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == "how many PRs did Rashid merge in March 2026"


def test_a_total_for_that_month_counts_the_ranked_records_in_the_month_the_answer_named():
    busiest = {
        **RANKED,
        "standalone": "PRs merged per month in 2025 which month was the busiest",
        "answer_people": [],
        "answer_periods": ["2025-06"],
    }
    out = resolve_offline("give me just the number for that month", [busiest], PEOPLE, NOW)
    assert out.standalone == "how many PRs merged in June 2025"
    ranked = resolve_offline("the total for that year, please", [RANKED], PEOPLE, NOW)
    assert ranked.standalone == "how many merged PRs in 2025"


def test_a_new_person_with_words_of_the_last_question_asks_it_about_them():
    reviewed = {**QUERIED, "standalone": "PRs reviewed by Rashid in March 2026"}
    out = resolve_offline("and the ones Priya reviewed?", [reviewed], PEOPLE, NOW)
    assert out.standalone == "PRs reviewed by Priya in March 2026"


def test_which_one_in_chinese_is_one_record():
    out = resolve_offline("哪一个改动的文件最多", [QUERIED], PEOPLE, NOW)
    assert out.standalone == "PRs did Rashid merge in March 2026 which one 改动的文件最多"


def test_it_after_a_question_about_one_record_is_still_that_record():
    record = {**QUERIED, "standalone": "who opened PR acme/infra#882", "refs": [], "answer_people": ["priyar"]}
    out = resolve_offline("when was it merged", [QUERIED, record], PEOPLE, NOW)
    assert out.standalone == "when was PR acme/infra#882 merged"


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("whoever opened the second one?", "who opened PR acme/web#2126"),
        ("第二条是谁提的", "who opened PR acme/web#2126"),
        ("how many files did the first PR touch", "how many files did PR acme/infra#882 touch"),
        ("最后一个的评论呢", "PR acme/web#2126 的评论"),
    ],
)
def test_an_ordinal_points_at_that_record_of_the_last_answer(asked, standalone):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == standalone


@pytest.mark.parametrize(
    "asked,end",
    [
        ("and the earliest of them?", "the oldest one"),
        ("which of these was the latest", "the newest one"),
        ("其中最早的那条", "the oldest one"),
        ("最近的是哪个", "the newest one"),
    ],
)
def test_an_extreme_of_the_last_records_is_one_record_at_that_end(asked, end):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.standalone.endswith(f"Rashid merge in March 2026 {end}")


# the answer was one group ("which repository had the most PRs merged in 2025": acme/web)
ONE_GROUP = {
    **RANKED,
    "standalone": "which repository had the most PRs merged in 2025",
    "answer_people": [],
    "answer_groups": {"field": "repo", "keys": ["acme/web"]},
}


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("and who merged the most of those?", "PRs merged in 2025 in acme/web who merged the most"),
        ("show me them", "list PRs merged in 2025 in acme/web"),
        ("how many is that", "how many PRs merged in 2025 in acme/web"),
    ],
)
def test_those_after_a_one_group_answer_are_that_groups_records(asked, standalone):
    assert resolve_offline(asked, [ONE_GROUP], PEOPLE, NOW).standalone == standalone


def test_those_after_several_groups_are_all_the_records():
    several = {
        **ONE_GROUP,
        "standalone": "PRs merged in 2025 per repository",
        "answer_groups": {"field": "repo", "keys": ["acme/web", "acme/infra"]},
    }
    assert "acme/web" not in resolve_offline("who merged the most of those?", [several], PEOPLE, NOW).standalone


def test_those_after_which_one_group_was_asked_are_the_first_groups_records():
    ranked = {
        **ONE_GROUP,
        "standalone": "PRs merged in 2025 by repository which repository is the largest",
        "answer_groups": {"field": "repo", "keys": ["acme/web", "acme/infra"]},
    }
    out = resolve_offline("how many of those are still open", [ranked], PEOPLE, NOW)
    assert out.standalone == "PRs merged in 2025 in acme/web how many are still open"


@pytest.mark.parametrize(
    "asked,month",
    [
        ("three months earlier", "December 2025"),
        ("the same stretch, 2 years back", "March 2024"),
        ("往后挪两个月", "May 2026"),
        ("两年前的呢", "March 2024"),
        ("the same period in 2023", "March 2023"),
        ("2024 年同期", "March 2024"),
    ],
)
def test_the_window_moved_by_several_units_or_to_another_year(asked, month):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == f"Which PRs did Rashid merge in {month}?"


@pytest.mark.parametrize(
    "asked,unit",
    [("break it down by quarter", "quarter"), ("week by week", "week"), ("按天拆开", "day"), ("每月分别多少", "month")],
)
def test_a_new_period_grouping_counts_the_last_records_per_period(asked, unit):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.standalone == f"PRs did Rashid merge in March 2026 per {unit}"


@pytest.mark.parametrize(
    "asked,rest",
    [("which of these did Priya review", "that Priya reviewed"), ("which ones did Lars close?", "that Lars closed")],
)
def test_which_of_those_someone_did_is_what_they_did_not_a_state(asked, rest):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.standalone == f"PRs did Rashid merge in March 2026 {rest}"


def test_who_did_them_ranks_the_people_over_the_last_records():
    out = resolve_offline("who reviewed those?", [QUERIED], PEOPLE, NOW)
    assert out.standalone == "PRs did Rashid merge in March 2026 who reviewed the most"


def test_whose_are_those_mostly_is_the_person_with_the_most_of_them():
    out = resolve_offline("whose are these, mainly?", [QUERIED], PEOPLE, NOW)
    assert out.standalone == "PRs did Rashid merge in March 2026 who opened the most"


def test_a_new_year_said_with_back_or_again_replaces_the_year_after_its_preposition():
    since = {**QUERIED, "standalone": "Rashid's PRs from 2025", "times": ["2025"]}
    assert resolve_offline("and back in 2024?", [since], PEOPLE, NOW).standalone == "Rashid's PRs from 2024"


@pytest.mark.parametrize(
    "asked,rest",
    [
        ("其中跟 caching 相关的", "about caching"),
        ("那谈到 tokenizer 的呢", "about tokenizer"),
        ("这些里面提到 docker 的有多少", "how many about docker"),
        ("只要和 Priya 一起的", "和 Priya 一起的"),  # no word of a topic: left as said
    ],
)
def test_a_topic_said_in_chinese_narrows_as_about(asked, rest):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.standalone.endswith(f"Rashid merge in March 2026 {rest}")


@pytest.mark.parametrize("asked", ["这种的一共有多少个", "这些加起来几个"])
def test_a_count_of_such_records_in_chinese_counts_the_last_question(asked):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == "how many PRs did Rashid merge in March 2026"


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("a month earlier, how many?", "how many PRs did Rashid merge in February 2026"),
        ("往后推一个月呢，有几个？", "how many PRs did Rashid merge in April 2026"),
        ("and the month after; list them", "list PRs did Rashid merge in April 2026"),
    ],
)
def test_a_window_moved_then_counted_or_listed_in_one_follow_up(asked, standalone):
    assert resolve_offline(asked, [QUERIED], PEOPLE, NOW).standalone == standalone


@pytest.mark.parametrize("asked", ["ok, which ones?", "right, which ones", "so which are they"])
def test_which_ones_after_a_count_lists_the_records(asked):
    counted = {**QUERIED, "standalone": "how many PRs did Rashid merge in March 2026"}
    assert resolve_offline(asked, [counted], PEOPLE, NOW).how == "the last question's records, listed"


def test_a_chinese_count_said_with_shi_counts_the_last_question():
    assert resolve_offline("加起来是几个", [QUERIED], PEOPLE, NOW).how == "the last question, counted"


@pytest.mark.parametrize("asked", ["how many of hers are still open?", "which of his are still open"])
def test_hers_or_his_are_the_records_of_the_person_asked_about(asked):
    filed = {**QUERIED, "standalone": "How many issues has Priya filed?", "people": ["Priya Raman"]}
    out = resolve_offline(asked, [filed], PEOPLE, NOW)
    assert out.how.startswith("of the last answer's records") and "Priya" in out.standalone, out


@pytest.mark.parametrize(
    "asked", ["split that by open vs closed", "break them down by label", "and broken down by repo"]
)
def test_the_last_records_split_by_what_is_said(asked):
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.how.startswith("the last question's records, by ") and "Rashid" in out.standalone, out


RANKING = {
    **QUERIED,
    "standalone": "Who merged the most PRs in 2025?",
    "people": [],
    "answer_people": ["Priya Raman", "Lars Nielsen", "Rashid Khan"],
    "answer_groups": {"field": "user.login", "keys": ["priyar", "larsn", "rsh-dev"]},
    "times": ["in 2025"],
    "time_ranges": [{"text": "in 2025", "start": "2025-01-01T00:00:00", "end": "2026-01-01T00:00:00"}],
}


@pytest.mark.parametrize(
    "asked,person",
    [
        ("how many issues did the number two on that list open in 2025?", "Lars Nielsen"),
        ("那第一名 2025 年开了几个 issue？", "Priya Raman"),
        ("what did the third-placed one merge in 2025", "Rashid Khan"),
    ],
)
def test_a_place_in_the_last_ranking_is_that_person(asked, person):
    out = resolve_offline(asked, [RANKING], PEOPLE, NOW)
    assert person in out.standalone and "place" not in out.standalone and "第一名" not in out.standalone, out


def test_the_second_one_right_after_a_ranking_of_people_is_that_person():
    ranking = {**RANKING, "refs": []}  # a ranking lists people, no records
    out = resolve_offline("the second one — how many issues did they open that year?", [ranking], PEOPLE, NOW)
    assert "Lars Nielsen" in out.standalone and "second" not in out.standalone, out


def test_the_second_one_after_records_listed_is_a_record_not_a_person():
    listed = {**RANKING, "refs": ["acme/infra#882", "acme/web#2126"]}
    out = resolve_offline("the second one — who opened it?", [listed], PEOPLE, NOW)
    assert "Lars Nielsen" not in out.standalone and out.nth == 1, out


def test_a_place_past_the_ranking_is_no_person():
    out = resolve_offline("how many issues did the number five on that list open?", [RANKING], PEOPLE, NOW)
    assert "' = " not in out.how and not any(p in out.standalone for p in RANKING["answer_people"]), out


@pytest.mark.parametrize("asked", ["show me the top five instead", "ok, top 3", "前三名呢"])
def test_the_top_n_of_the_last_ranking(asked):
    out = resolve_offline(asked, [RANKING], PEOPLE, NOW)
    assert out.how.startswith("the last ranking, top") and "merged the most PRs in 2025" in out.standalone, out


# What a follow-up changes in the last plan, beside the rewritten words (`answering.plan_ops` applies it)
@pytest.mark.parametrize(
    "asked,new_time,reshape,added",
    [
        ("the week before", "between 2026-11-16 and 2026-11-22", "", ""),
        ("and in October?", "in October 2026", "", ""),
        ("往前推一个月，一共多少？", "between 2026-10-23 and 2026-10-29", "count", ""),
        ("给个总数就行", "", "count", ""),
        ("just the count", "", "count", ""),
        ("show me them", "", "list", ""),
        ("which of those were reviewed by Priya", "", "list", "reviewed by Priya"),
        ("only counting the ones in payments", "", "count", "in payments"),
        ("just listing the unreviewed ones", "", "list", "unreviewed"),
    ],
)
def test_the_change_to_the_last_plan_is_said_beside_the_words(asked, new_time, reshape, added):
    out = resolve_offline(asked, [{**MERGED, "collection": "pull_requests"}], PEOPLE, NOW)
    assert (out.new_time, out.reshape, out.added) == (new_time, reshape, added)


def test_which_of_the_x_ones_narrows_to_them_and_asks_for_one():
    out = resolve_offline("which of the closed ones got the most reviews?", [MERGED], PEOPLE, NOW)
    assert out.added == "which one of them are closed and got the most reviews"


def test_pointing_words_no_rule_resolved_are_said_unread():
    counted = {"standalone": "how many PRs were merged last week", "collection": "pull_requests", "refs": []}
    assert (
        resolve_offline("was it approved by anyone from payments before the freeze?", [counted], PEOPLE, NOW).unread
        == "it"
    )
    assert resolve_offline("how many issues were filed in 2025?", [counted], PEOPLE, NOW).unread == ""


@pytest.mark.parametrize("asked", ["and in the biggest one, which were merged?", "最大的那个里哪些合并了"])
def test_the_first_group_of_the_last_answer_is_its_records(asked):
    grouped = {
        "standalone": "PRs per repo in 2025",
        "collection": "pull_requests",
        "answer_groups": {"field": "repo", "keys": ["acme/web", "acme/infra"]},
    }
    out = resolve_offline(asked, [grouped], PEOPLE, NOW)
    assert out.within == ("repo", "acme/web") and "in acme/web" in out.standalone and "per repo" not in out.standalone


@pytest.mark.parametrize(
    "asked,key,added",
    [
        ("the runner-up: which of theirs got closed?", "priyar", "which got closed"),
        ("第一名的有几个还开着", "rsh-dev", "有几个还开着"),
    ],
)
def test_a_place_in_the_last_ranking_with_more_words_is_that_persons_records(asked, key, added):
    ranking = {
        "standalone": "who merged the most PRs in 2025",
        "collection": "pull_requests",
        "answer_people": ["Rashid Khan", "Priya Raman"],
        "answer_groups": {"field": "user.login", "keys": ["rsh-dev", "priyar"]},
    }
    out = resolve_offline(asked, [ranking], PEOPLE, NOW)
    assert (out.within, out.added) == (("user.login", key), added)


@pytest.mark.parametrize(
    "asked,added",
    [("how many of his are still open?", "how many are still open"), ("她的有几个还开着", "有几个还开着")],
)
def test_his_after_a_ranking_is_the_person_of_the_place_the_answer_named(asked, added):
    # "who came second?" answered one row of the ranking: "his" is that place's person, not the first one's
    second = {
        "standalone": "who merged the most PRs in 2025 who came second",
        "collection": "pull_requests",
        "answer_people": ["Priya Raman"],
        "answer_groups": {"field": "user.login", "keys": ["priyar"]},
    }
    out = resolve_offline(asked, [second], PEOPLE, NOW)
    assert (out.within, out.added) == (("user.login", "priyar"), added) and "Priya Raman" in out.standalone
    # after a question that named someone, "his" may be theirs: not read as the ranking's person
    named = {**second, "people": ["Lars Nielsen"], "standalone": "who replied most to Lars in 2025"}
    assert resolve_offline(asked, [named], PEOPLE, NOW).within is None


def test_a_question_said_whole_with_the_conversation_s_person_and_time_is_restated():
    ranking = {
        "standalone": "who merged the most PRs in 2025",
        "collection": "pull_requests",
        "times": ["in 2025"],
        "time_ranges": [{"text": "in 2025", "start": "2025-01-01T00:00:00", "end": "2026-01-01T00:00:00"}],
        "answer_people": ["Priya Raman"],
    }
    out = resolve_offline("how many PRs did that person open that year?", [ranking], PEOPLE, NOW)
    assert out.restated == out.standalone == "how many PRs did Priya Raman open in 2025"


def test_a_question_restated_about_everything_is_not_kept_to_the_thread():
    ranking = {
        "standalone": "who merged the most PRs in 2025",
        "collection": "pull_requests",
        "answer_people": ["Priya Raman"],
    }
    out = resolve_offline("how many PRs has that person opened all told?", [ranking], PEOPLE, NOW)
    assert out.standalone == "how many PRs has Priya Raman opened all told" and out.restated == ""
    assert resolve_offline("how many PRs has that person opened in total", [ranking], PEOPLE, NOW).restated == ""
    dated = {**ranking, "times": ["in 2025"]}
    kept = resolve_offline("how many PRs did that person open that year in total", [dated], PEOPLE, NOW)
    assert kept.restated == "how many PRs did Priya Raman open in 2025 in total"


OPENED = {
    **MERGED,
    "standalone": "how many issues did Priya open in 2025",
    "collection": "issues",
    "people": ["Priya Raman"],
}


@pytest.mark.parametrize(
    "asked,collection",
    [
        ("oops, I meant pull requests, not issues", "pull_requests"),
        ("what about PRs instead?", "pull_requests"),
        ("改成 PR 看看", "pull_requests"),
        ("換成 PR 呢", "pull_requests"),
        ("same for messages", "messages"),
        ("what about pull requests?", "pull_requests"),
        ("那 PR 呢？", "pull_requests"),  # 那 … 呢: "and … ?"
        ("PR 呢", "pull_requests"),
    ],
)
def test_a_follow_up_naming_only_another_kind_switches_the_last_question_to_it(asked, collection):
    out = resolve_offline(asked, [OPENED], PEOPLE, NOW)
    assert out.collection == collection
    assert "Priya" in out.standalone and "2025" in out.standalone and "issues" not in out.standalone


@pytest.mark.parametrize("asked", ["only the bugs", "just the tickets", "issues", "what about bugs?"])
def test_a_kind_said_without_a_switch_switches_nothing(asked):
    prs = {**OPENED, "collection": "pull_requests", "standalone": "how many PRs did Priya open in 2025"}
    assert resolve_offline(asked, [prs], PEOPLE, NOW).collection == ""


@pytest.mark.parametrize(
    "asked,unit",
    [("could you split it up week by week?", "week"), ("break those down by year please", "year"), ("按天统计", "day")],
)
def test_a_split_per_period_is_a_new_shape_of_the_last_records(asked, unit):
    out = resolve_offline(asked, [OPENED], PEOPLE, NOW)
    assert out.reshape == unit and out.standalone.endswith(f"per {unit}")


def test_a_chinese_narrowing_asking_which_ones_lists_them():
    assert resolve_offline("这些里面带 enhancement 标签的有哪几个", [OPENED], PEOPLE, NOW).reshape == "list"
    assert resolve_offline("其中有几个带 enhancement 标签", [OPENED], PEOPLE, NOW).reshape != "list"


@pytest.mark.parametrize(
    "asked", ["how many threads is that altogether, across the entire year", "how many is that overall"]
)
def test_a_count_over_the_whole_of_the_last_records(asked):
    ranked = {**OPENED, "standalone": "top 3 posters in 2025", "collection": "messages", "people": []}
    assert resolve_offline(asked, [ranked], PEOPLE, NOW).reshape == "count"


@pytest.mark.parametrize(
    "asked", ["ok, back to Priya: which of hers are still open?", "回到 Priya，其中还开着的有几个"]
)
def test_back_to_an_earlier_turn_resumes_it(asked):
    other = {"standalone": "how many PRs are drafts", "collection": "pull_requests", "people": [], "times": []}
    out = resolve_offline(asked, [OPENED, other], PEOPLE, NOW)
    assert out.resumed is not None and out.resumed[0] == 1  # the thread as it was after the turn about Priya
    assert "Priya" in out.standalone and "issues" in out.standalone and "drafts" not in out.standalone


def test_back_to_something_never_asked_about_is_not_understood():
    out = resolve_offline("back to the parquet bugs — who opened them?", [OPENED], PEOPLE, NOW)
    assert out.resumed is None and out.unread


@pytest.mark.parametrize(
    "asked,standalone",
    [
        ("the same for Lars, but a week earlier", "PRs Lars merged between 2026-11-16 and 2026-11-22"),
        ("in October, and for Priya", "PRs Priya merged in October 2026"),
        ("Priya，上个月呢", "PRs Priya merged 上个月"),
    ],
)
def test_a_new_person_and_a_new_time_in_one_follow_up(asked, standalone):
    assert resolve_offline(asked, [MERGED], PEOPLE, NOW).standalone == standalone


def test_two_changes_of_which_one_is_no_person_or_time_are_not_read_as_two():
    out = resolve_offline("the same for Lars, but only the big ones", [MERGED], PEOPLE, NOW)
    assert "big" in out.standalone  # not Lars's PRs with the rest of the words dropped


def test_her_after_a_picked_namesake_is_said_by_what_picked_her():
    namesakes = PeopleDirectory([{"login": "nat-a", "name": "Natalia"}, {"login": "nat-b", "name": "Natalia"}])
    picked = {
        "standalone": "what did nat-b open in 2025",
        "collection": "pull_requests",
        "people": ["Natalia"],
        "people_text": ["nat-b"],
        "times": ["in 2025"],
    }
    out = resolve_offline("which of her PRs got merged?", [picked], namesakes, NOW)
    assert "nat-b" in out.standalone and "Natalia" not in out.standalone


@pytest.mark.parametrize(
    "asked,person",
    [
        ("how about for Lars?", "Lars"),
        ("换成李娜", "李娜"),
        ("她呢？", "Lars Nielsen"),
        ("and Priya Raman", "Priya Raman"),
    ],
)
def test_a_new_person_is_said_for_the_plan_to_take(asked, person):
    out = resolve_offline(asked, [MERGED], PEOPLE, NOW)
    assert out.person == person and person in out.standalone, out


@pytest.mark.parametrize("asked", ["and for Ottoline?", "what about Bartholomew Quince"])
def test_a_name_nobody_has_replaces_the_person_asked_about(asked):
    out = resolve_offline(asked, [MERGED], PEOPLE, NOW)
    # the question asked again about that name: declined as a first question naming them is
    assert out.person and out.person in out.standalone and "Rashid" not in out.standalone, out


def test_a_name_nobody_has_is_no_new_person_when_no_one_was_asked_about():
    out = resolve_offline("and for Ottoline?", [{**MERGED, "people": [], "people_text": []}], PEOPLE, NOW)
    assert not out.person, out


@pytest.mark.parametrize("asked,nth", [("who opened the second one?", 1), ("最后一条是谁开的", -1)])
def test_a_record_named_by_its_place_is_said_for_the_plan_to_take(asked, nth):
    out = resolve_offline(asked, [MERGED], PEOPLE, NOW)
    assert out.nth == nth, out


@pytest.mark.parametrize(
    "asked,word",
    [
        ("any of those about retries?", "retries"),
        ("are there any among them about flaky tests", "flaky"),
        ("其中有讲 webhook 的吗", "webhook"),
        ("这些里面有没有提到 retry 的", "retry"),
        ("其中跟部署有關的是哪幾個", "部署"),
    ],
)
def test_whether_some_of_the_records_are_about_a_topic_lists_them(asked, word):
    counted = {**MERGED, "standalone": "how many PRs did Rashid merge last week", "collection": "pull_requests"}
    out = resolve_offline(asked, [counted], PEOPLE, NOW)
    assert out.reshape == "list" and word in out.added and "how many" not in out.standalone, out


@pytest.mark.parametrize("asked", ["and if we only count merged ones?", "what if you only consider the open ones"])
def test_only_counting_some_is_a_narrowing_not_a_count(asked):
    out = resolve_offline(asked, [RANKING], PEOPLE, NOW)
    assert out.added and out.reshape != "count" and "how many" not in out.standalone, out


def test_a_place_in_the_last_ranking_with_the_window_moved():
    out = resolve_offline("how many did the one in second place open the year before?", [RANKING], PEOPLE, NOW)
    assert "Lars Nielsen" in out.standalone and "2024" in out.standalone and not out.within, out


def test_the_most_said_bare_of_another_kind_is_the_last_ranking_over_it():
    # the issue with the most reactions, then its author; "which PR that year had the most?" ranks PRs the same way
    ranking = {"kind": "top", "field": "reactions.total_count", "limit": 1}
    top = {
        "standalone": "which issue from 2026 got the most reactions?",
        "collection": "issues",
        "times": ["2026"],
        "plan": {"ir": {"collection": "issues", "shape": ranking}},
    }
    author = {**top, "standalone": "who opened issue acme/web#2210", "base": top["plan"]["ir"]}
    out = resolve_offline("and which PR that year had the most?", [top, author], PEOPLE, NOW)
    assert out.collection == "pull_requests"
    # after a count there is no measure to carry over: the words are planned as they are
    counted = {**top, "plan": {"ir": {"collection": "issues", "shape": {"kind": "count"}}}}
    assert resolve_offline("and which PR that year had the most?", [counted], PEOPLE, NOW).collection == ""


def test_number_one_a_window_earlier_is_the_last_ranking_moved_not_the_count_after_it():
    counted = {**RANKING, "standalone": "how many PRs were merged in 2025", "answer_groups": {}, "answer_people": []}
    out = resolve_offline("and who was number one the year before?", [RANKING, counted], PEOPLE, NOW)
    assert out.resumed == (1, "the year before") and out.new_time, out
    assert "merged the most PRs" in out.standalone and "2024" in out.standalone


@pytest.mark.parametrize(
    "asked,plainly",
    [
        ("how many of that bunch are closed by now?", "how many of those are closed by now?"),
        ("which of this lot got merged", "which of those got merged"),
        ("list those ones", "list those"),
        ("这样的帖子一共有几个？", "这些帖子一共有几个？"),
        ("这种 PR 有多少", "这些 PR 有多少"),
        ("which labels are in that set of labels", "which labels are in that set of labels"),  # a set of something
    ],
)
def test_other_words_for_the_last_records_are_said_as_those(asked, plainly):
    assert those_said_plainly(asked) == plainly


COUNTED_2023 = {
    "standalone": "how many issues did Priya open in 2023?",
    "collection": "issues",
    "people": ["Priya Raman"],
    "people_text": ["Priya"],
    "times": ["in 2023"],
    "time_ranges": [{"text": "in 2023", "start": "2023-01-01T00:00:00", "end": "2024-01-01T00:00:00"}],
}
APRIL = {
    **COUNTED_2023,
    "standalone": "how many issues did Priya open in April 2023?",
    "times": ["in April 2023"],
    "time_ranges": [{"text": "in April 2023", "start": "2023-04-01T00:00:00", "end": "2023-05-01T00:00:00"}],
}


@pytest.mark.parametrize(
    "previous,asked,standalone",
    [
        (COUNTED_2023, "just the first quarter", "how many issues did Priya open the first quarter of 2023?"),
        (COUNTED_2023, "only the second half then", "how many issues did Priya open the second half of 2023?"),
        (APRIL, "the whole year then", "how many issues did Priya open in 2023?"),
        (
            APRIL,
            "just the first half of the month",
            "how many issues did Priya open between 2023-04-01 and 2023-04-15?",
        ),
        (APRIL, "just the first week", "how many issues did Priya open between 2023-04-01 and 2023-04-07?"),
        (APRIL, "April and May together then", "how many issues did Priya open between 2023-04-01 and 2023-05-31?"),
        (
            COUNTED_2023,
            "widen it to 2022 and 2023",
            "how many issues did Priya open between 2022-01-01 and 2023-12-31?",
        ),
        (APRIL, "more or fewer than in March?", "how many issues did Priya open in March 2023?"),
        (COUNTED_2023, "is that more than Lars managed?", "how many issues did Lars open in 2023?"),
        (COUNTED_2023, "比 Lars 同年多吗？", "how many issues did Lars open in 2023?"),
        (APRIL, "跟三月比是多还是少", "how many issues did Priya open 2023 年 三月?"),
    ],
)
def test_a_window_said_against_the_last_one_and_a_comparison(previous, asked, standalone):
    out = resolve_offline(asked, [previous], PEOPLE, NOW)
    assert out.standalone == standalone
    assert out.new_time or out.person


def test_a_window_said_alone_keeps_its_usual_reading():
    assert resolve_offline("and in May?", [APRIL], PEOPLE, NOW).new_time == "in May 2023"


def test_back_to_a_question_by_its_place_its_kind_or_its_words():
    first = {**COUNTED_2023, "standalone": "how many PRs did Priya open in 2023?", "collection": "pull_requests"}
    second = {**COUNTED_2023, "standalone": "Priya's issues labelled bug in 2023"}
    third = {**COUNTED_2023, "standalone": "the threads Priya started in 2023", "collection": "messages"}
    turns = [first, second, third]
    assert resolve_offline("回到第一个问题，换成 Lars", turns, PEOPLE, NOW).resumed == (1, "换成 Lars")
    assert resolve_offline("back to the PRs — list the merged ones", turns, PEOPLE, NOW).resumed[0] == 1
    assert resolve_offline("never mind — back to the bug ones, 2022 instead", turns, PEOPLE, NOW).resumed[0] == 2
    # the words as they were asked win over each word said by a later turn
    assert resolve_offline("back to Priya's issues labelled bug — 2022?", turns, PEOPLE, NOW).resumed[0] == 2


def test_a_pronoun_after_a_turn_that_named_nobody_is_the_thread_s_person():
    about_one = {"standalone": "how many comments has issue acme/web#12 got?", "collection": "issues", "people": []}
    out = resolve_offline("and all his PRs that year?", [COUNTED_2023, about_one], PEOPLE, NOW)
    assert "Priya" in out.standalone


@pytest.mark.parametrize(
    "asked,dropped",
    [
        ("drop that — which of them are still open?", "that"),
        ("forget the year: how many of all his PRs never got merged?", "the year"),
        ("now drop the label — every issue from those two years", "the label"),
        ("那不管评论数呢，他 2020 年一共开了几个？", "评论数"),
        ("不限月份的话，她一共开过几个？", "月份"),
        ("and all his PRs that year, open or not?", "open or not"),
        ("back to all years — how many are open?", "all years"),
    ],
)
def test_a_condition_taken_away_is_said_and_the_rest_read_on(asked, dropped):
    out = resolve_offline(asked, [COUNTED_2023], PEOPLE, NOW)
    assert out.dropped == dropped
    assert out.resumed is not None and out.resumed[1] and dropped not in out.resumed[1]


def test_a_month_said_alone_in_a_continuing_question_is_of_the_year_asked_about_and_counted_as_before():
    merged = {**COUNTED_2023, "standalone": "How many PRs were merged in December 2023?", "collection": "pull_requests"}
    merged["time_ranges"] = [{"text": "in December 2023", "start": "2023-12-01T00:00:00", "end": "2024-01-01T00:00:00"}]
    out = resolve_offline("and issues closed in December?", [merged], PEOPLE, NOW)
    assert out.standalone == "how many issues closed in December 2023?"


# A list of records with their subjects, as a turn leaves it (`Turn.titles`)
LISTED = {
    "standalone": "issues Rashid opened in 2026",
    "people": ["Rashid Khan"],
    "people_text": ["Rashid"],
    "times": ["in 2026"],
    "collection": "issues",
    "refs": ["acme/web#7243", "acme/web#6595", "acme/web#329", "acme/web#5701", "acme/web#5702", "acme/web#12"],
    "titles": [
        "ArrayXD with None as leading dim incompatible with DatasetCardData",
        "Loading big dataset raises pyarrow.lib.ArrowNotImplementedError",
        "[Bug] FileLock dependency incompatible with filesystem",
        "Add Dataset.from_spark",
        "Add IterableDataset.from_spark",
        "Add graph NN datasets",
    ],
}


@pytest.mark.parametrize(
    "asked,ref,of_record",
    [
        ("the ArrayXD one — how many comments has it got?", "acme/web#7243", "how many comments has it got"),
        ("the graph one — how many comments?", "acme/web#12", "how many comments"),
        ("and who closed the FileLock one?", "acme/web#329", "who closed it"),
        ("is that ArrayXD issue still open?", "acme/web#7243", "is it still open"),
        ("the one about Arrow errors: who opened it?", "acme/web#6595", "who opened it"),
        ("FileLock 那个现在是开着还是关了？", "acme/web#329", "现在是开着还是关了"),
        ("加载大数据集报 ArrowNotImplementedError 的那个，有几条评论？", "acme/web#6595", "有几条评论"),
        # a title said whole: that record, not the one whose title holds it
        ("how many comments did Add Dataset.from_spark get?", "acme/web#5701", "how many comments did it get"),
        ("how many comments did add iterabledataset.from_spark get?", "acme/web#5702", "how many comments did it get"),
    ],
)
def test_one_record_of_the_last_answer_named_by_words_of_its_subject(asked, ref, of_record):
    out = resolve_offline(asked, [LISTED], PEOPLE, NOW)
    assert (out.record, out.of_record) == (ref, of_record), out
    assert f"issue {ref}" in out.standalone  # the record said by its key


@pytest.mark.parametrize(
    "asked",
    [
        "the from_spark one — how many comments?",  # two subjects say it: which one is not said
        "the parquet one — how many comments?",  # none says it
        "the first one — how many comments?",  # a place, not a subject
        "the most commented one — who opened it?",  # a measure
        "the open one?",  # a state
    ],
)
def test_words_naming_no_one_record_name_none(asked):
    assert resolve_offline(asked, [LISTED], PEOPLE, NOW).record == ""


@pytest.mark.parametrize(
    "asked,words,several",
    [
        ("the from_spark one — how many comments?", "from_spark", True),
        ("the parquet one: who opened it?", "parquet", False),
    ],
)
def test_words_opening_a_question_that_name_no_one_listed_record_are_said_so(asked, words, several):
    out = resolve_offline(asked, [LISTED], PEOPLE, NOW)
    assert out.unnamed is not None and out.unnamed[0] == words, out
    assert ("acme/web#5701" in out.unnamed[1]) == several and "which one" in out.unnamed[1]
    # a list cut at the records a turn keeps may hold it further down: no decline
    long = {**LISTED, "refs": LISTED["refs"] * 4, "titles": LISTED["titles"] * 4}
    assert (resolve_offline(asked, [long], PEOPLE, NOW).unnamed is None) != several


@pytest.mark.parametrize("asked", ["the 2025 one — how many comments?", "the Priya one — how many comments?"])
def test_a_time_or_a_person_said_as_the_one_is_no_subject_to_decline(asked):
    assert resolve_offline(asked, [LISTED], PEOPLE, NOW).unnamed is None


@pytest.mark.parametrize(
    "asked,ref,of_record",
    [
        ("#329 有几条评论？", "acme/web#329", "有几条评论"),
        ("#4530 的评论数", "acme/web#4530", "的评论数"),  # not listed: that number of the records' repository
        ("how many comments does #12 have?", "acme/web#12", "how many comments does it have"),
        ("who opened acme/api#7?", "acme/api#7", "who opened it"),
    ],
)
def test_a_number_said_is_that_record_listed_or_not(asked, ref, of_record):
    out = resolve_offline(asked, [LISTED], PEOPLE, NOW)
    assert (out.record, out.of_record) == (ref, of_record), out


def test_after_one_record_of_a_list_words_said_of_the_records_are_said_of_the_list():
    picked = {
        **LISTED,
        "standalone": "how many comments has issue acme/web#7243 got",
        "people": [],
        "people_text": [],
        "times": [],
        "refs": ["acme/web#7243"],
        "titles": [LISTED["titles"][0]],
        "listed": {k: LISTED[k] for k in ("standalone", "times", "people", "people_text")},
    }
    for asked in ("and his 2025 ones?", "what about Priya?", "which of those are about arrow?"):
        out = resolve_offline(asked, [LISTED, picked], PEOPLE, NOW)
        assert out.standalone == resolve_offline(asked, [LISTED], PEOPLE, NOW).standalone, out
        assert "7243" not in out.standalone and ("Rashid" in out.standalone or "Priya" in out.standalone)


def test_what_the_records_add_is_their_topic():
    out = resolve_offline("which of those add video support?", [{**LISTED, "collection": "pull_requests"}], PEOPLE, NOW)
    assert out.added == "about video" and out.reshape == "list", out


def test_a_chinese_question_naming_its_person_and_time_stands_alone():
    ranking = {
        **RANKING,
        "standalone": "2026 年 10 月开了最多讨论串的是谁？",
        "times": ["2026 年 10 月"],
        "collection": "messages",
    }
    out = resolve_offline("这个人那个月一共发了几条？", [ranking], PEOPLE, NOW)
    assert out.restated and RANKING["answer_people"][0] in out.standalone and "2026 年 10 月" in out.standalone, out


@pytest.mark.parametrize(
    "asked,month",
    [
        ("and for April that year?", "April 2026"),
        ("what about June of the same year?", "June 2026"),
        ("那年 4 月呢？", "2026 年 4 月"),
    ],
)
def test_a_month_of_that_year_is_the_month_of_the_year_asked_about(asked, month):
    # "that year" is March 2026's year; the window moves to the month, not to "that year" read as 2026 whole
    out = resolve_offline(asked, [QUERIED], PEOPLE, NOW)
    assert out.new_time == month and out.standalone.startswith("Which PRs did Rashid merge"), out
    assert "that year" not in out.standalone and "March" not in out.standalone


def test_a_count_over_all_years_is_a_question_of_its_own_about_the_person():
    # "in total, all years" after Rashid's March PRs about retries: every PR of his, not those narrowed
    narrowed = {
        **QUERIED,
        "standalone": "Which PRs did Rashid merge in March 2026 about retries",
        "narrowed": "about retries",
    }
    out = resolve_offline("and how many has he opened in total, all years?", [narrowed], PEOPLE, NOW)
    assert out.restated == out.standalone == "how many pull requests has Rashid Khan opened in total", out


def test_the_month_ones_is_the_month_though_someone_is_called_so():
    with_april = PeopleDirectory([{"login": "rsh-dev", "name": "Rashid Khan"}, {"login": "april", "name": "April"}])
    out = resolve_offline("and the April ones?", [QUERIED], with_april, NOW)
    assert out.new_time == "April 2026" and not out.person, out


@pytest.mark.parametrize(
    "asked,read",
    [
        ("thanks. back to Rashid — same thing for 2025?", "back to Rashid — same thing for 2025?"),
        ("Great, and Priya?", "and Priya?"),
        ("谢谢！那上个月呢", "那上个月呢"),
        ("good first issues from 2025?", "good first issues from 2025?"),  # "good" closed by no punctuation: words
        ("ok, and 2025?", "ok, and 2025?"),  # "ok" says the follow-up continues: kept
    ],
)
def test_an_acknowledgement_before_a_follow_up_is_left_out(asked, read):
    assert thanks_left_out(asked) == read


def test_back_to_a_turn_after_thanks_resumes_it():
    counted = {**MERGED, "standalone": "how many PRs did Rashid merge in 2026", "times": ["in 2026"]}
    other = {"standalone": "how many issues carry the docs label", "collection": "issues"}
    out = resolve_offline(
        thanks_left_out("thanks. back to Rashid — same thing for 2025?"), [counted, other], PEOPLE, NOW
    )
    assert out.resumed is not None and out.resumed[0] == 1 and out.new_time


@pytest.mark.parametrize(
    "asked,standalone",
    [
        (
            "and how many issues got completed the month after that February?",
            "how many issues got completed in March 2024",
        ),
        ("issues closed the week before that February", "issues closed between 2024-01-25 and 2024-01-31"),
        ("what was merged in that February?", "what was merged in February 2024"),
    ],
)
def test_that_month_is_the_month_of_that_name_the_conversation_was_about(asked, standalone):
    february = {
        "standalone": "issues closed as not planned in February 2024",
        "collection": "issues",
        "times": ["in February 2024"],
        "time_ranges": [{"text": "in February 2024", "start": "2024-02-01T00:00:00", "end": "2024-03-01T00:00:00"}],
    }
    other = {"standalone": "how many PRs has Lars ever opened", "collection": "pull_requests"}
    assert resolve_offline(asked, [february, other], PEOPLE, NOW).standalone == standalone
    # no month of that name in the conversation: not this rule's
    assert "2024" not in resolve_offline(asked, [other], PEOPLE, NOW).standalone


def test_the_other_candidate_of_an_earlier_decline_is_asked_the_last_question():
    candidates = [
        {"key": "U1ELM", "name": "Wren", "places": ["elmlang"]},
        {"key": "U2CLJ", "name": "Wren", "places": ["clojurians"]},
    ]
    first = {
        "standalone": "how many messages did Ida post in clojurians in April 2019?",
        "times": ["in April 2019"],
        "time_ranges": [{"text": "in April 2019", "start": "2019-04-01T00:00:00", "end": "2019-05-01T00:00:00"}],
        "collection": "messages",
    }
    declined = {"standalone": "how many messages did Wren post in clojurians in April 2019?", "candidates": candidates}
    declined["unresolved"] = "Wren"
    picked = {**first, "standalone": "how many messages did U2CLJ post in clojurians in April 2019?"}
    out = resolve_offline("另一个 Wren 呢，elmlang 上的，她三月发了几条？", [first, declined, picked], PEOPLE, NOW)
    assert out.standalone == "how many messages did U1ELM post in elmlang 2019 年 三月?" and not out.unread
    said = resolve_offline("the other Wren — list her threads about macros", [first, declined, picked], PEOPLE, NOW)
    assert "U1ELM" in said.standalone and "list" in said.unread and "macros" in said.unread  # said, not dropped


@pytest.mark.parametrize("asked", ["換成 elmlang 的 Wren 呢？", "what about Wren from elmlang?"])
def test_another_person_in_a_place_of_theirs_is_the_same_question_there(asked):
    people = PeopleDirectory(
        [
            {"slack_id": "U1", "name": "Ida", "places": ["clojurians"]},
            {"slack_id": "U2", "name": "Wren", "places": ["elmlang"]},
            {"slack_id": "U3", "name": "Wren", "places": ["clojurians"]},
        ]
    )
    replies = {
        "standalone": "how many replies did Ida get in clojurians in March 2019",
        "people": ["Ida"],
        "people_text": ["Ida"],
        "collection": "messages",
    }
    out = resolve_offline(asked, [replies], people, NOW)
    assert (out.person, out.added) == ("U2", "in elmlang")  # a name two share: by the key of the one there
    assert out.standalone == "how many replies did U2 get in elmlang in March 2019"
    assert resolve_offline("what about Wren from racket?", [replies], people, NOW).person != "U2"


def test_list_his_records_after_a_ranking_is_that_persons_records_of_it():
    ranking = {
        "standalone": "dataset request issues opened in 2020 who asked for the most",
        "collection": "issues",
        "answer_people": ["Priya Raman", "Lars Nielsen"],
        "answer_groups": {"field": "user.login", "keys": ["priyar", "larsn"]},
    }
    out = resolve_offline("list his requests from then", [ranking], PEOPLE, NOW)
    assert (out.within, out.added) == (("user.login", "priyar"), "list")


def test_back_to_a_list_is_the_turn_that_listed_not_the_count_after_it():
    listed = {
        "standalone": "bug issues opened in October 2025",
        "collection": "issues",
        "refs": ["acme/web#12", "acme/web#15"],
    }
    counted = {**listed, "standalone": "how many bug issues opened in October 2025", "refs": []}
    other = {"standalone": "how many PRs did Lars open", "collection": "pull_requests", "refs": []}
    out = resolve_offline("back to the October 2025 list — #15, who filed it?", [listed, counted, other], PEOPLE, NOW)
    assert out.resumed is not None and out.resumed[0] == 1 and out.record == "acme/web#15"


def test_back_to_the_ones_said_in_chinese_is_the_turn_that_said_them():
    listed = {"standalone": "Rashid 2025 年开的 issue 有哪些", "collection": "issues", "refs": ["acme/web#12"]}
    still_open = {**listed, "standalone": "Rashid 2025 年开的 issue 有哪些 哪些现在还开着"}
    other = {"standalone": "how many PRs did Lars open", "collection": "pull_requests", "refs": []}
    out = resolve_offline("回到还开着的那些：有几个？", [listed, still_open, other], PEOPLE, NOW)
    assert out.resumed is not None and out.resumed[0] == 2


def test_a_months_records_are_the_last_records_in_that_month():
    march = {
        "standalone": "threads about macros started on racket in March 2019",
        "collection": "messages",
        "times": ["in March 2019"],
        "time_ranges": [{"text": "in March 2019", "start": "2019-03-01T00:00:00", "end": "2019-04-01T00:00:00"}],
    }
    out = resolve_offline("list April's macro threads too", [march], PEOPLE, NOW)
    assert (out.standalone, out.new_time, out.reshape) == (
        "threads about macros started on racket in April 2019",
        "in April 2019",
        "list",
    )
    # words the last question did not say are not its records: not this rule's
    assert resolve_offline("list April's parquet threads", [march], PEOPLE, NOW).new_time == ""


def test_a_workspace_switched_to_replaces_the_latest_one_said():
    people = PeopleDirectory(
        [
            {"slack_id": "U1", "name": "Ida", "places": ["clojurians"]},
            {"slack_id": "U2", "name": "Wren", "places": ["elmlang"]},
        ]
    )
    ranking = {
        "standalone": "who started the most threads in clojurians in April 2019",
        "collection": "messages",
        "plan": {"ir": {"filters": [{"field": "workspace", "op": "eq", "value": "clojurians"}]}},
    }
    counted = {
        "standalone": "how many messages did Ida post in April 2019",
        "collection": "messages",
        "plan": {"ir": {"filters": [{"field": "user", "op": "eq", "value": "U1"}]}},
    }
    out = resolve_offline("换成 elmlang 呢", [ranking, counted], people, NOW)
    assert (out.resumed, out.added) == ((1, "elmlang"), "elmlang") and "elmlang" in out.standalone
    # the last question named a workspace: it is that one replaced, as a narrowing does
    assert resolve_offline("换成 elmlang 呢", [counted, ranking], people, NOW).resumed is None


@pytest.mark.parametrize("asked", ["回到那个标签：其中还开着的有几个？", "back to that label — how many are open?"])
def test_back_to_that_label_is_the_turn_whose_plan_is_about_a_label(asked):
    ranking = {
        "standalone": "which label was put on the most issues in 2025",
        "collection": "issues",
        "plan": {"ir": {"filters": [], "shape": {"kind": "group", "field": "labels.name"}}},
    }
    had_it = {
        "standalone": "how many 2025 issues had it",
        "collection": "issues",
        "plan": {"ir": {"filters": [{"field": "labels.name", "op": "eq", "value": "bug"}], "shape": {"kind": "count"}}},
    }
    other = {
        "standalone": "how many open PRs are there",
        "collection": "pull_requests",
        "plan": {"ir": {"filters": []}},
    }
    out = resolve_offline(asked, [ranking, had_it, other], PEOPLE, NOW)
    assert out.resumed is not None and out.resumed[0] == 2
