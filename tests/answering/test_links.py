"""Cross-links over the real sample corpus: references, both directions, tenant and ACL scope."""

import pytest

from context_engine.answering.links import follow_links, references
from context_engine.query.engine import principals_of
from context_engine.query.identity import PeopleDirectory
from context_engine.resources import catalog_for, store_for
from context_engine.sources.sample import STORIES

REDIS = STORIES["redis_session_cache"]
THREAD = f"{REDIS['thread']['permalink'].split('/')[-2]}:{REDIS['thread']['ts']}"  # the thread's stored ref
STORY = {REDIS["issue"], REDIS["pr"], THREAD, REDIS["doc"]}
STRIPE = STORIES["leaked_stripe_key"]


def _record(settings, collection, ref):
    return store_for(settings).collection(collection).find_one({"tenant_id": settings.tenant, "ref": ref})


def _principals(settings, login):
    return principals_of(PeopleDirectory(catalog_for(settings).people).asker(login))


def test_references_read_keys_urls_and_closing_words(settings):
    pr = {r.target: r for r in references(_record(settings, "pull_requests", REDIS["pr"]))}
    assert pr[REDIS["issue"]].cue == "fixes"  # "Fixes ENG-231"
    assert "ADR-007" in pr  # "See ADR-007"
    thread = {r.target for r in references(_record(settings, "messages", THREAD))}
    assert {REDIS["issue"], REDIS["pr"]} <= thread  # from the Jira and GitHub URLs of Slack links
    doc = {r.target: r for r in references(_record(settings, "documents", REDIS["doc"]))}
    assert {REDIS["issue"], REDIS["pr"], THREAD} <= set(doc)  # the permalink is read as the message ref
    assert doc[REDIS["pr"]].cue == "implemented in"
    assert REDIS["doc"] not in doc  # nor itself


def test_references_in_chinese_text_and_bare_numbers():
    refs = references(
        {
            "ref": "acme/infra#900",
            "repo": "acme/infra",
            "body": "修复见OPS-142的讨论，另见 acme/web#2093和#812。Fixes PAY-88",
        }
    )
    found = {r.target: r.cue for r in refs}
    assert found == {"OPS-142": None, "acme/web#2093": None, "acme/infra#812": None, "PAY-88": "fixes"}
    # A Slack message has no repository: a bare "#812" there is not a reference.
    assert references({"ref": "C1:1.000001", "text": "our #812 support ticket"}) == []


@pytest.mark.parametrize("start", [REDIS["issue"], REDIS["pr"], THREAD, REDIS["thread"]["permalink"], REDIS["doc"]])
def test_the_redis_chain_is_found_from_any_of_its_records(settings, start):
    chain = follow_links(store_for(settings), "acme", [], [start])
    assert len(chain.start) == 1 and chain.start[0] in STORY
    assert {r.ref for r in chain.records} >= STORY
    links = {(link.source, link.relation, link.target) for link in chain.links}
    assert (REDIS["pr"], "fixes", REDIS["issue"]) in links
    assert (REDIS["issue"], "discussed in", THREAD) in links
    assert (REDIS["pr"], "discussed in", THREAD) in links
    assert (REDIS["pr"], "implements", REDIS["doc"]) in links
    assert (THREAD, "documented in", REDIS["doc"]) in links
    story = {r.ref: r for r in chain.records if r.ref in STORY}
    assert story[REDIS["pr"]].url == REDIS["pr_url"] and story[THREAD].url == REDIS["thread"]["permalink"]
    assert all(story[ref].hop <= 1 for ref in STORY)


def test_hops_and_limit_bound_the_walk(settings):
    store = store_for(settings)
    one_hop = follow_links(store, "acme", [], [REDIS["issue"]], max_hops=1)
    assert {r.hop for r in one_hop.records} == {0, 1}
    two_hops = follow_links(store, "acme", [], [REDIS["issue"]], max_hops=2)
    assert max(r.hop for r in two_hops.records) == 2  # e.g. the merge commit of #812
    capped = follow_links(store, "acme", [], [REDIS["issue"]], limit=3)
    assert len(capped.records) == 3
    assert all(link.source in {r.ref for r in capped.records} for link in capped.links)


def test_a_private_thread_is_followed_for_members_only(settings):
    store = store_for(settings)
    outsider = _principals(settings, "tbecker")
    member = _principals(settings, "sokafor")
    assert "sokafor" in STRIPE["members"] and "tbecker" not in STRIPE["members"]

    def channels(chain):
        return {r.ref.split(":")[0] for r in chain.records if r.collection == "messages"}

    private_channel = STRIPE["thread"]["permalink"].split("/")[-2]
    seen_by_outsider = follow_links(store, "acme", outsider, [STRIPE["pr"]])
    seen_by_member = follow_links(store, "acme", member, [STRIPE["pr"]])
    assert channels(seen_by_outsider) and private_channel not in channels(seen_by_outsider)
    assert private_channel in channels(seen_by_member)
    private_thread = f"{private_channel}:{STRIPE['thread']['ts']}"
    assert (STRIPE["pr"], "discussed in", private_thread) in {
        (link.source, link.relation, link.target) for link in seen_by_member.links
    }
    # Starting from the private thread itself gives an outsider nothing at all.
    assert follow_links(store, "acme", outsider, [STRIPE["thread"]["permalink"]]).records == []
    assert follow_links(store, "acme", member, [STRIPE["thread"]["permalink"]]).start == [private_thread]


def test_links_stay_inside_the_tenant(settings):
    store = store_for(settings)
    assert follow_links(store, "globex", [], [REDIS["issue"], REDIS["pr"]]).records == []
    story = STORIES["globex_dynamodb_sessions"]
    chain = follow_links(store, "globex", [], [story["issue"]])
    assert {story["issue"], story["pr"], story["doc"]} <= {r.ref for r in chain.records}
    assert (story["pr"], "fixes", story["issue"]) in {(link.source, link.relation, link.target) for link in chain.links}


def test_the_persisted_link_index_answers_as_the_in_memory_table(settings):
    """The embedded store's link index (SQLite, synced by write order) proposes exactly the records
    the in-memory table built from a scan of the store does, without loading a collection."""
    from context_engine.answering.links import IDENTITY, REFERRER, LinkIndex, _memory_table
    from context_engine.kinds import BUILTIN_NAMES as COLLECTIONS
    from context_engine.kinds import Registry
    from context_engine.store.documents import open_store

    fresh = open_store(settings)
    stored = LinkIndex.synced(fresh).for_tenant("acme")
    assert fresh._unread == set(COLLECTIONS)
    memory = _memory_table(open_store(settings), "acme", Registry())
    targets = {target for _, target in memory.by_target}
    assert len(targets) > 100
    for kind in (IDENTITY, REFERRER):
        for target in sorted(targets):
            assert stored.lookup(kind, [target]) == memory.lookup(kind, [target]), target
    for channel, ts in list(memory.threads)[:50]:
        assert stored.thread(channel, ts) == memory.thread(channel, ts)


def test_the_link_index_follows_writes_and_deletes(tmp_path):
    from context_engine.answering.links import REFERRER, LinkIndex
    from context_engine.config import Settings
    from context_engine.ingest import ingest
    from context_engine.store.documents import open_store

    settings = Settings(data_dir=tmp_path, mongodb_uri=None)

    def message(ts, text):
        return {
            "channel": "eng",
            "channel_id": "C1",
            "user": "U1",
            "ts": ts,
            "text": text,
            "acl": ["*"],
            "source": "slack:test",
        }

    ingest(settings, {"t1": {"messages": [message("1700000000.000100", "see ENG-1")]}}, index=False)
    links = LinkIndex.synced(open_store(settings)).for_tenant("t1")
    assert links.lookup(REFERRER, ["ENG-1"]) == {("messages", "C1:1700000000.000100")}
    ingest(
        settings,
        {"t1": {"messages": [message("1700000000.000100", "see ENG-2"), message("1700000001.000100", "and ENG-1")]}},
        index=False,
    )
    links = LinkIndex.synced(open_store(settings)).for_tenant("t1")
    assert links.lookup(REFERRER, ["ENG-1"]) == {("messages", "C1:1700000001.000100")}
    assert links.lookup(REFERRER, ["ENG-2"]) == {("messages", "C1:1700000000.000100")}
    ingest(settings, {"t1": {"messages": [message("1700000001.000100", "and ENG-1")]}}, index=False, prune=True)
    links = LinkIndex.synced(open_store(settings)).for_tenant("t1")
    assert links.lookup(REFERRER, ["ENG-2"]) == set()
    assert links.thread("C1", "1700000001.000100") == ["C1:1700000001.000100"]


def test_a_record_written_after_the_last_one_was_deleted_is_linked(tmp_path):
    """SQLite would hand a new row the number of a deleted last row; the store never reuses one, so
    the link index (synced by row number) sees the new record."""
    from context_engine.answering.links import REFERRER, LinkIndex
    from context_engine.config import Settings
    from context_engine.store.documents import open_store

    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    store = open_store(settings)
    store.upsert(
        "messages",
        "t1",
        [
            {"ref": "C1:1.1", "channel_id": "C1", "ts": "1.1", "text": "see ENG-1", "acl": ["*"]},
            {"ref": "C1:2.2", "channel_id": "C1", "ts": "2.2", "text": "see ENG-2", "acl": ["*"]},
        ],
    )
    store.commit()
    LinkIndex.synced(store)
    store.delete_missing("messages", "t1", {"C1:1.1"}, {})
    store.commit()
    store.upsert(
        "messages", "t1", [{"ref": "C1:3.3", "channel_id": "C1", "ts": "3.3", "text": "see ENG-3", "acl": ["*"]}]
    )
    store.commit()
    links = LinkIndex.synced(store).for_tenant("t1")
    assert links.lookup(REFERRER, ["ENG-3"]) == {("messages", "C1:3.3")}
    assert links.lookup(REFERRER, ["ENG-2"]) == set()


def test_a_read_only_data_dir_still_follows_links(sample_dir, tmp_path):
    """Without a writable place for links.sqlite the walk uses the table built in memory."""
    import shutil

    from context_engine.config import Settings
    from context_engine.store.documents import open_store

    data_dir = tmp_path / "ro"
    shutil.copytree(sample_dir, data_dir, ignore=shutil.ignore_patterns("links.sqlite*"))
    (data_dir / "links.sqlite").mkdir()  # cannot be opened as a database file
    store = open_store(Settings(data_dir=data_dir, mongodb_uri=None))
    chain = follow_links(store, "acme", ["*"], ["ENG-231"])
    assert chain.start == ["ENG-231"] and len(chain.records) > 1
