"""The identity directory: person fragments from every connector merged into people."""

from __future__ import annotations

import json
import random
import time
import unicodedata
import zipfile

import pytest

from context_engine.query.identity import AmbiguousPerson, PeopleDirectory
from context_engine.sources.normalize import normalize
from context_engine.sources.people import load_overrides, merge_people, normalize_name
from context_engine.sources.problems import SourceError
from context_engine.sources.sample import generate
from tests.conftest import EVAL_DATA, TEST_DATA_DIR

DATA = TEST_DATA_DIR / "connectors" / "people"
SLACK = EVAL_DATA / "slack"


@pytest.fixture(scope="module")
def fragments() -> list[dict]:
    return json.loads((DATA / "fragments.json").read_text(encoding="utf-8"))


def person(directory, **match) -> dict:
    hits = [p for p in directory.people if all(p.get(k) == v for k, v in match.items())]
    assert len(hits) == 1, f"{match}: {len(hits)} people"
    return hits[0]


def rules(p: dict) -> set[str]:
    return {e["rule"] for e in p["evidence"]}


def test_accounts_of_one_person_merge_with_evidence(fragments):
    rashid = person(merge_people(fragments), login="rsh-dev")
    assert (rashid["name"], rashid["slack_id"], rashid["slack_handle"], rashid["jira"]) == (
        "Rashid Khan",
        "U0RK12345",
        "rashid.k",
        "rkhan",
    )
    assert rashid["email"] == "rashid.khan@acme.io"  # three sources say so; the noreply address is secondary
    assert rashid["emails"] == ["4411823+rsh-dev@users.noreply.github.com", "rashid.khan@acme.io"]
    assert set(rashid["git_names"]) >= {"Rashid Khan", "Rashid K"}  # two git author spellings
    assert {"email", "noreply=login", "name"} <= rules(rashid)
    assert {i["source"] for i in rashid["identities"]} == {
        "github:acme/payments",
        "slack:acme",
        "jira:ENG",
        "git:payments",
    }
    # Access: Slack and Jira verify the same address, so their accounts are one group; the GitHub
    # account joined the person by name and by a noreply address without a stated numeric id: its own group.
    assert [g["principals"] for g in rashid["accounts"]] == [
        ["email:rashid.khan@acme.io", "jira:rkhan", "slack:U0RK12345"],
        ["github:rsh-dev"],
    ]
    granting = {e["rule"] for e in rashid["evidence"] if e["access"]}
    assert granting == {"verified-email"}


def test_slack_handle_equal_to_login_merges(fragments):
    grace = person(merge_people(fragments), login="gpark")
    assert grace["slack_id"] == "U0GP55501" and grace["name"] == "Grace Park"  # not the login-as-name
    # Changed: a handle equal to a login used to join accounts; it now only finds the person.
    assert {"rule": "handle=login", "detail": "gpark", "access": False} in grace["evidence"]
    assert [g["principals"] for g in grace["accounts"]] == [["github:gpark"], ["slack:U0GP55501"]]


def test_a_bare_name_joins_by_name_or_is_left_unmatched(fragments):
    directory = merge_people(fragments)
    grace = person(directory, login="gpark")
    assert {"source": "docs:handbook", "kind": "name", "value": "Grace Park"} in grace["identities"]
    assert directory.unmatched == [{"name": "Petra Unbekannt", "sources": ["docs:handbook"]}]
    assert not any(p["name"] == "Petra Unbekannt" for p in directory.people)  # a person needs a key


def test_accents_and_word_order_fuzzy_merge(fragments):
    hannah = person(merge_people(fragments), login="hmueller")
    assert hannah["name"] == "Hannah Müller" and "hannah@mueller.de" in hannah["emails"]
    assert "fuzzy-name" in rules(hannah)
    assert normalize_name("Müller, Hannah") == normalize_name("hannah  muller") == "hannah muller"


def test_same_first_name_different_surname_stays_apart(fragments):
    directory = merge_people(fragments)
    morgan = person(directory, login="amorgan-dev")
    chen = person(directory, login="achen42")
    assert morgan["slack_id"] is None and chen["slack_id"] == "U0AC77781"


def test_initials_and_spelling_variants_are_a_conflict_not_a_merge(fragments):
    directory = merge_people(fragments)
    j_smith = person(directory, slack_id="U0JS40021")
    assert j_smith["login"] is None
    assert person(directory, login="jonsmith")["jira"] is None
    assert person(directory, login="jsmith")["jira"] == "jsmith"  # the exact name beats "Jon Smith"
    conflict = next(c for c in directory.conflicts if c.name == "J. Smith")
    assert conflict.candidates == (
        "J. Smith (slack_id U0JS40021)",
        "John Smith (login jsmith)",
        "Jon Smith (login jonsmith)",
    )
    assert "initials" in conflict.reason


def test_two_logins_sharing_an_email_stay_apart():
    shared = [
        {"login": "alice", "name": "Alice Wong", "email": "team@acme.io", "source": "git:a"},
        {"login": "bob", "name": "Bob Stone", "email": "team@acme.io", "source": "git:a"},
    ]
    directory = merge_people(shared)
    assert len(directory.people) == 2
    assert [c.reason for c in directory.conflicts] == [
        "e-mail team@acme.io is shared by people with different accounts"
    ]


def test_ambiguous_handle_is_a_conflict():
    frags = [
        {"login": "sam", "name": "sam", "source": "github:x"},
        {"slack_id": "U01", "slack_handle": "sam", "name": "Sam Ode", "source": "slack:a"},
        {"slack_id": "U02", "slack_handle": "sam", "name": "Sam Ray", "source": "slack:b"},
    ]
    directory = merge_people(frags)
    assert len(directory.people) == 3
    assert len(directory.conflicts) == 1 and "login sam" in directory.conflicts[0].reason


def test_chinese_name_and_pinyin_alias(fragments):
    directory = merge_people(fragments)
    liu = person(directory, login="liuyang-ops")
    assert liu["name"] == "刘洋" and liu["slack_id"] == "U0LY90210"
    assert liu["git_names"] == ["Yang Liu"] and "yangliu.dev@gmail.com" in liu["emails"]
    assert {"cjk-name", "pinyin"} <= rules(liu)
    # "Liu Yan" is one letter from the pinyin alias but a different person: pinyin must match exactly.
    assert person(directory, email="liu.yan@acme.io")["login"] is None


@pytest.mark.parametrize("name", ["people.yaml", "people.csv"])
def test_override_merges_what_fuzzy_refused(fragments, name):
    overrides = load_overrides(DATA / name)
    directory = merge_people(fragments, overrides)
    john = person(directory, login="jsmith")
    assert john["slack_id"] == "U0JS40021" and john["team"] == "web" and john["name"] == "John Smith"
    assert "Johnny" in john["aliases"] and "john@smith.family" in john["emails"]
    assert "override" in rules(john)
    assert not any(c.name == "J. Smith" for c in directory.conflicts)
    assert person(directory, login="jonsmith")["slack_id"] is None


def test_override_forces_even_contradicting_accounts(fragments):
    forced = merge_people(fragments, [{"name": "Smith", "github": ["jsmith", "jonsmith"]}])
    assert sum(p["name"] == "Smith" for p in forced.people) == 1


@pytest.mark.parametrize(
    "content, suffix",
    [
        ("- name: x\n  githb: jsmith\n", ".yaml"),
        ("- [unclosed\n", ".yaml"),
        ("name: only a mapping\n", ".yaml"),
        ("- name: No Keys\n", ".yaml"),
        ("name,github\n", ".txt"),
    ],
)
def test_bad_override_file_is_a_source_error(tmp_path, content, suffix):
    path = tmp_path / f"people{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SourceError):
        load_overrides(path)
    with pytest.raises(SourceError):
        load_overrides(tmp_path / "missing.yaml")


def test_merging_a_merged_directory_again_changes_nothing(fragments):
    overrides = load_overrides(DATA / "people.yaml")
    first = merge_people(fragments, overrides)
    again = merge_people(first.people + fragments, overrides)
    assert again.people == first.people
    assert again.conflicts == first.conflicts and again.unmatched == first.unmatched
    assert merge_people(first.people, overrides).people == first.people
    # Changed: a stored record used to carry its overrides' power; what an override said now comes
    # only from the overrides given, so without them John's Slack account leaves his GitHub group.
    john = person(merge_people(first.people), login="jsmith")
    assert ["slack:U0JS40021"] in [g["principals"] for g in john["accounts"]]
    shuffled = fragments[::-1]
    assert merge_people(shuffled, overrides).people == first.people  # input order does not matter


def test_merged_people_normalize_and_feed_the_people_directory(fragments):
    merged = merge_people(fragments).people
    for record in merged:
        assert normalize("people", record)["ref"]
    directory = PeopleDirectory(merged)
    assert directory.lookup("rsh-dev").name == "Rashid Khan"
    assert directory.lookup("rashid.k").key == "rsh-dev"
    assert directory.lookup("Rashid Khan").key == "rsh-dev"
    assert directory.lookup("刘洋").key == "liuyang-ops"
    with pytest.raises(AmbiguousPerson):
        directory.lookup("Alex")


def test_sample_corpus_people_pass_through():
    for tenant, collections in generate().items():
        people = collections["people"]
        merged = merge_people(people)
        assert len(merged.people) == len(people) and not merged.conflicts, tenant
        before = {p["login"]: p for p in people}
        for p in merged.people:
            source = before[p["login"]]
            for kind in ("name", "email", "slack_id", "slack_handle", "jira", "team"):
                assert p[kind] == source[kind], (tenant, kind)
            assert sorted(p["aliases"]) == sorted(source["aliases"])
        directory = PeopleDirectory(merged.people)
        for source in people:
            assert directory.lookup(source["login"]).key == source["login"]
            assert directory.lookup(source["slack_handle"]).key == source["login"]
            assert directory.lookup(source["name"]).key == source["login"]


def slack_users() -> list[dict]:
    fragments = []
    for path in sorted(SLACK.glob("*-slack-export.zip")):
        workspace = path.name.removesuffix("-slack-export.zip")
        with zipfile.ZipFile(path) as archive:
            for user in json.loads(archive.read("users.json")):
                fragments.append(
                    {
                        "slack_id": user["id"],
                        "slack_handle": user["name"],
                        "name": user.get("real_name"),
                        "acl": ["*"],
                        "source": f"slack:{workspace}",
                    }
                )
    return fragments


@pytest.mark.skipif(not SLACK.is_dir(), reason="the real Slack exports are not here")
def test_real_slack_users_are_not_collapsed():
    users = slack_users()
    assert len(users) == 1563
    started = time.perf_counter()
    directory = merge_people(users)
    elapsed = time.perf_counter() - started
    assert len(directory.people) == len(users)  # 143 handles recur across workspaces: still different people
    assert directory.conflicts == []  # every user has a Slack id, and different ids never merge
    assert elapsed < 5, elapsed


FIRST = [
    "Anna",
    "Ben",
    "Carla",
    "David",
    "Elif",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jakob",
    "Kemal",
    "Lena",
    "Marta",
    "Nikolai",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Stefan",
    "Tariq",
    "Ursula",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoë",
    "José",
    "Søren",
    "Łukasz",
    "Ayşe",
]
LAST = [
    "Almeida",
    "Brandt",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fischer",
    "García",
    "Horvath",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Lindgren",
    "Moreau",
    "Nakamura",
    "Okonkwo",
    "Petrov",
    "Quintero",
    "Rossi",
    "Schäfer",
    "Takahashi",
    "Urbanek",
    "Vasquez",
    "Weiß",
    "Xu",
    "Yamada",
    "Zielinski",
]


def synthetic(n_people: int, seed: int = 3) -> tuple[list[dict], dict[str, str]]:
    """~3 fragments a person: GitHub, Slack, and a git author whose name is sometimes unaccented."""
    rng = random.Random(seed)
    fragments, owner = [], {}
    for i in range(n_people):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        login, slack_id = f"user{i}", f"U{i:08d}"
        owner[login] = owner[slack_id] = name
        fragments.append({"login": login, "name": name, "source": "github:org"})
        fragments.append({"slack_id": slack_id, "slack_handle": f"h{i}", "name": name, "source": "slack:org"})
        unaccented = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
        git_name = unaccented if rng.random() < 0.5 else name
        fragments.append({"name": git_name, "email": f"u{i}@mail.example", "source": "git:org"})
    return fragments, owner


def test_two_thousand_fragments_merge_fast_and_never_mix_accounts():
    fragments, owner = synthetic(667)
    assert len(fragments) == 2001
    started = time.perf_counter()
    directory = merge_people(fragments)
    elapsed = time.perf_counter() - started
    assert elapsed < 10, elapsed
    for p in directory.people:
        logins = {i["value"] for i in p["identities"] if i["kind"] == "login"}
        slack_ids = {i["value"] for i in p["identities"] if i["kind"] == "slack_id"}
        assert len(logins) <= 1 and len(slack_ids) <= 1
        if p["login"] and p["slack_id"]:
            assert owner[p["login"]] == owner[p["slack_id"]]
    # 30 x 26 names for 667 people: many share a name. A unique name reunites its three fragments;
    # a shared one is listed as a conflict instead.
    names = [owner[f"user{i}"] for i in range(667)]
    unique = {f"user{i}" for i, name in enumerate(names) if names.count(name) == 1}
    complete = {p["login"] for p in directory.people if p["login"] and p["slack_id"] and p["emails"]}
    assert complete == unique
    shared = {normalize_name(name) for name in names if names.count(name) > 1}
    assert {normalize_name(c.name) for c in directory.conflicts} == shared
