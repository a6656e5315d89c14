import pytest

from context_engine.query.identity import AmbiguousPerson, PeopleDirectory, UnknownPerson, person_slots
from context_engine.sources.sample import generate


@pytest.fixture(scope="module")
def directory() -> PeopleDirectory:
    return PeopleDirectory(generate()["acme"]["people"])


def _resolved(directory, question, asker=None):
    return [
        (m.text, m.person.key if m.person else None, [p.key for p in m.candidates])
        for m in directory.find_mentions(question, asker)
    ]


@pytest.mark.parametrize(
    "question,key",
    [
        ("PRs Rashid merged last week", "rsh-dev"),
        ("open PRs by Rashid Khan", "rsh-dev"),
        ("what did rashid.k review", "rsh-dev"),  # Slack handle
        ("issues assigned to rkhan", "rsh-dev"),  # Jira user
        ("PRs by Rash", "rsh-dev"),  # nickname
        ("PRs by Rashed Khan", "rsh-dev"),  # a typo, fuzzy
        ("Priya's open PRs", "priyar"),  # possessive
        ("上周张伟合并了哪些PR？", "zwei-dev"),  # Chinese display name inside unsegmented text
        ("what did Zhang Wei merge", "zwei-dev"),  # pinyin alias
    ],
)
def test_names_resolve_to_logins(directory, question, key):
    found = _resolved(directory, question)
    assert [k for _, k, _ in found] == [key], found


def test_shared_first_name_is_ambiguous_not_guessed(directory):
    (mention,) = directory.find_mentions("PRs Alex merged")
    assert mention.ambiguous
    assert {p.key for p in mention.candidates} == {"achen42", "amorgan-dev"}


def test_full_name_breaks_the_tie(directory):
    assert _resolved(directory, "PRs Alex Morgan merged")[0][1] == "amorgan-dev"


@pytest.mark.parametrize("question", ["PRs I merged", "my open issues", "assigned to me", "我上周合并的PR"])
def test_pronouns_mean_the_asker(directory, question):
    asker = directory.lookup("rsh-dev")  # finding the person; who asks is `asker` (tests/security/test_asker_exact.py)
    (mention,) = directory.find_mentions(question, asker)
    assert mention.is_asker and mention.person == asker


@pytest.mark.parametrize(
    "question", ["张伟最后一次合并 PR 是啥时候？给我看那条", "告诉我张伟上周合并了几个 PR", "帮我查一下张伟的 PR"]
)
def test_me_as_whom_the_answer_is_for_is_no_one(directory, question):
    # "给我看", "告诉我", "帮我查": the asker is who is shown the answer, as in "show me"
    assert [m.person.key for m in directory.find_mentions(question, directory.by_key["larsn"])] == ["zwei-dev"]


def test_me_in_a_role_is_the_asker_after_give_too(directory):
    asker = directory.by_key["larsn"]
    assert [(m.text, m.is_asker) for m in directory.find_mentions("分配给我的 issue", asker)] == [("我", True)]


def test_common_words_are_not_people(directory):
    assert directory.find_mentions("how many merged PRs are open in the payments repo this week") == []


def test_lookup_by_any_alias(directory):
    assert directory.lookup("Rashid Khan").key == "rsh-dev"
    assert directory.lookup("@rashid.k").key == "rsh-dev"
    with pytest.raises(UnknownPerson):
        directory.lookup("nobody-at-all")
    with pytest.raises(AmbiguousPerson):
        directory.lookup("Alex")


@pytest.mark.parametrize(
    "question,key",
    [
        ("PRs by Rahsid", "rsh-dev"),  # two letters swapped: one edit, not two
        ("How many PRs did amorgandev open in May", "amorgan-dev"),  # a lower-case login typo among capitalised words
        ("what has ingridh merged", "ingrid-h"),
    ],
)
def test_typos_of_logins_resolve(directory, question, key):
    assert [k for _, k, _ in _resolved(directory, question)] == [key]


def test_a_short_lower_case_word_among_capitalised_ones_is_no_login_typo(directory):
    # "sokafo" is one edit from the login sokafor, but short lower-case words among capitalised ones
    # are more often names written small ("albert" is not albertz) than misspelt logins.
    assert _resolved(directory, "How many PRs did sokafo open in May") == []


def test_a_lower_case_typo_is_read_as_a_login_never_as_a_display_name(directory):
    # "okafer" is one edit from Sam Okafor's last name but two from his login: the writer capitalises
    # names ("May"), so a lower-case word may only be a misspelt login.
    assert _resolved(directory, "PRs by okafer in May") == []


@pytest.mark.parametrize("question", ["how many PRs did i merge", "i merged what last week?", "what have i reviewed"])
def test_a_lower_case_i_is_the_asker_where_it_is_the_pronoun(directory, question):
    asker = directory.by_key["larsn"]
    assert [(k, a) for k, a in ((m.person.key, m.is_asker) for m in directory.find_mentions(question, asker))] == [
        ("larsn", True)
    ]


def test_a_lower_case_i_that_is_no_pronoun_is_no_one(directory):
    assert directory.find_mentions("what is in part i of the guide", directory.by_key["larsn"]) == []


def test_people_carry_the_slack_workspaces_they_were_seen_in():
    from context_engine.query.identity import places_of

    record = {
        "slack_id": "U1",
        "name": "Rosa",
        "identities": [
            {"source": "slack:racket", "kind": "slack_id", "value": "U1"},
            {"source": "slack:racket", "kind": "name", "value": "Rosa"},
            {"source": "github:acme", "kind": "login", "value": "rosa"},
        ],
    }
    assert places_of(record) == ["racket"]
    directory = PeopleDirectory([record, {"slack_id": "U2", "name": "Rosa", "places": ["elmlang"]}])
    assert [p.to_json().get("places") for p in directory.people] == [["racket"], ["elmlang"]]


def test_else_after_someone_is_no_one_called_else():
    from context_engine.query.identity import PeopleDirectory

    directory = PeopleDirectory([{"slack_id": "U1", "name": "Else"}, {"slack_id": "U2", "name": "Ruthe"}])
    assert [m.text for m in directory.find_mentions("Ruthe: replies in someone else's thread")] == ["Ruthe"]
    assert [m.text for m in directory.find_mentions("messages by Else in May")] == ["Else"]


@pytest.mark.parametrize("question", ["提到 Service Mesh 的消息有几条", "关于 Blue Green 的 issue"])
def test_a_capitalised_name_after_a_chinese_topic_cue_is_the_subject_not_a_person(question):
    assert person_slots(question) == []


@pytest.mark.parametrize(
    "question", ["her post count for June of 2024", "posts from june '24 by anyone", "list June's macro threads too"]
)
def test_a_month_before_of_and_a_year_is_a_date_not_someone_of_that_name(question):
    months = PeopleDirectory([{"login": "june-k", "name": "June", "accounts": []}])
    assert [m.text for m in months.find_mentions(question)] == []
    assert [m.text for m in months.find_mentions("what did June post")] == ["June"]


@pytest.mark.parametrize(
    "question,slots",
    [
        ("who mentions Wilhelmina Thorncastle most?", ["Wilhelmina Thorncastle"]),  # whom they mention: a person
        ("messages that @-mention Dann Okafor", ["Dann Okafor"]),
        ("PRs that mention SDKs", []),  # one word there may be a subject: found as a person only if someone has it
        ("issues that mention streaming", []),
        ("谁最常 @ 欧阳若曦？", ["欧阳若曦"]),  # a compound surname and two characters after "@"
        ("谁最常@张三的消息", ["张三"]),
        ("带 @ 的消息有多少", []),  # "@" alone, before a particle: no one
    ],
)
def test_whom_a_message_mentions_is_in_a_persons_place(question, slots):
    assert [text for text, _, _ in person_slots(question)] == slots


@pytest.mark.parametrize(
    "question,slots",
    [
        ("上官明哲 posted how many messages in elmlang", ["上官明哲"]),  # a whole compound-surname name
        ("messages by 王芳 in elmlang", ["王芳"]),
        ("issues about 数据集 opened in 2023", []),  # no surname first: a word, not a name
    ],
)
def test_a_chinese_name_in_an_english_sentence_is_in_a_persons_place(question, slots):
    assert [text for text, _, _ in person_slots(question)] == slots


def test_a_translation_in_brackets_after_a_chinese_word_is_no_one():
    macro = PeopleDirectory([{"login": "macro", "name": "Macro", "accounts": []}])
    assert [m.text for m in macro.find_mentions("racket 里讲宏（macro）的消息有几条？")] == []
    assert [m.text for m in macro.find_mentions("macro 的消息有几条？")] == ["macro"]
