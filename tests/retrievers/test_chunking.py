import itertools
from datetime import datetime

import pytest

from context_engine.retrievers.chunking import (
    Chunk,
    chunk_collection,
    chunk_record,
    chunk_text,
    chunk_threads,
    count_tokens,
    split_sentences,
)
from context_engine.sources.normalize import normalize
from context_engine.sources.sample import STORIES, generate


@pytest.fixture(scope="module")
def corpus():
    """acme's records, normalized as the store holds them (plus tenant_id)."""
    data = generate()["acme"]
    return {c: [{**normalize(c, r), "tenant_id": "acme"} for r in recs] for c, recs in data.items()}


# ------------------------------------------------------------------------------------ sentences
@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "Use a cache, e.g. Redis or Memcached. It is fast! Is it? Yes.",
            ["Use a cache, e.g. Redis or Memcached.", "It is fast!", "Is it?", "Yes."],
        ),
        (
            "Mr. Smith upgraded to v2.3 today. Latency fell by 3.5 ms. See https://example.com/a.html for details.",
            [
                "Mr. Smith upgraded to v2.3 today.",
                "Latency fell by 3.5 ms.",
                "See https://example.com/a.html for details.",
            ],
        ),
        (
            "Dr. Kim, i.e. the on-call, paged J. Smith et al. about it. The U.S. team agreed.",
            ["Dr. Kim, i.e. the on-call, paged J. Smith et al. about it.", "The U.S. team agreed."],
        ),
        (
            "See Fig. 2 and No. 5 in the appendix. I said no. Then we left.",
            ["See Fig. 2 and No. 5 in the appendix.", "I said no.", "Then we left."],
        ),
        (
            "Wait... what happened? Apples, pears, etc. were fine. Done.",
            ["Wait... what happened?", "Apples, pears, etc. were fine.", "Done."],
        ),
        ('He said "Stop." Then he left (quietly.) Bye.', ['He said "Stop."', "Then he left (quietly.)", "Bye."]),
        ("Bump to 1.2.3.4 (see api.acme.io/v2.3/docs). Done", ["Bump to 1.2.3.4 (see api.acme.io/v2.3/docs).", "Done"]),
    ],
)
def test_western_sentences_and_tricky_periods(text, expected):
    assert split_sentences(text) == expected


def test_chinese_sentences_need_no_spaces():
    assert split_sentences("我们升级了缓存。效果很好！真的吗？是的；继续观察……明天再说。") == [
        "我们升级了缓存。",
        "效果很好！",
        "真的吗？",
        "是的；",
        "继续观察……",
        "明天再说。",
    ]
    assert split_sentences("他说：“好的。”然后走了。") == ["他说：“好的。”", "然后走了。"]


def test_mixed_chinese_and_english():
    assert split_sentences(
        "我们升级到 v2.3 了。Next we deploy, e.g. tonight. 然后观察 3.5 小时的指标。deploy.然后"
    ) == ["我们升级到 v2.3 了。", "Next we deploy, e.g. tonight.", "然后观察 3.5 小时的指标。", "deploy.", "然后"]


def test_markdown_blocks_and_code_fences_are_units():
    text = (
        "## Summary\nThis caches the thing. It is fast\n\n- Existing tests pass\n- Added tests\n"
        "1. First step.\n2. Second step.\n```\nrun x.py. Then y\n```\nAfter. Yes."
    )
    assert split_sentences(text) == [
        "## Summary",
        "This caches the thing.",
        "It is fast",
        "- Existing tests pass",
        "- Added tests",
        "1. First step.",
        "2. Second step.",
        "```\nrun x.py. Then y\n```",
        "After.",
        "Yes.",
    ]


def test_no_empty_sentences():
    assert split_sentences("") == [] and split_sentences("  \n\n ") == []
    assert split_sentences("... !!! 。。") == ["...", "!!!", "。。"]
    assert split_sentences("Hello.\r\nWorld. The file is config.yaml. Next.") == [
        "Hello.",
        "World.",
        "The file is config.yaml.",
        "Next.",
    ]


# ------------------------------------------------------------------------------------ chunks
def test_count_tokens_is_words_plus_cjk_over_1_5():
    assert count_tokens("hello big world") == 3
    assert count_tokens("你好世界") == 3  # ceil(4 / 1.5)
    assert count_tokens("Redis 缓存") == 1 + 2


def _sentences(n, lang="en"):
    if lang == "en":
        return [f"Sentence number {i} talks about the session cache." for i in range(n)]  # 8 words each
    return [f"第{i}句讨论会话缓存的问题。" for i in range(n)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chunks_respect_the_budget_and_overlap_one_sentence(lang):
    sentences = _sentences(40, lang)
    text = (" " if lang == "en" else "").join(sentences)
    chunks = chunk_text(text, max_tokens=40, overlap_sentences=1)
    assert len(chunks) > 3
    assert all(count_tokens(c) <= 40 for c in chunks)
    split = [split_sentences(c) for c in chunks]
    for prev, nxt in itertools.pairwise(split):
        assert nxt[0] == prev[-1]  # one sentence of overlap
    seen = [s for part in split for s in part]
    assert list(dict.fromkeys(seen)) == sentences  # every sentence, in order


def test_no_overlap_partitions_the_sentences():
    sentences = _sentences(30)
    chunks = chunk_text(" ".join(sentences), max_tokens=30, overlap_sentences=0)
    assert [s for c in chunks for s in split_sentences(c)] == sentences
    assert all(count_tokens(c) <= 30 for c in chunks)


def test_overlap_of_two_sentences_and_short_text():
    sentences = _sentences(12)
    chunks = chunk_text(" ".join(sentences), max_tokens=32, overlap_sentences=2)
    split = [split_sentences(c) for c in chunks]
    assert all(nxt[:2] == prev[-2:] for prev, nxt in itertools.pairwise(split))
    assert chunk_text("One short text. Two.") == ["One short text. Two."]
    assert chunk_text("") == [] and chunk_text("   ") == []


@pytest.mark.parametrize("long_sentence", [" ".join(f"word{i}" for i in range(250)) + ".", "缓存" * 200 + "。"])
def test_an_over_long_sentence_is_split_hard(long_sentence):
    text = f"Short intro. {long_sentence} Short outro."
    chunks = chunk_text(text, max_tokens=50, overlap_sentences=1)
    assert all(count_tokens(c) <= 50 for c in chunks)
    assert len(chunks) >= 5
    joined = "".join("".join(c.split()) for c in chunks)
    assert "".join(long_sentence.split()) in joined  # nothing lost


def test_chunk_text_rejects_bad_budgets():
    with pytest.raises(ValueError):
        chunk_text("x", max_tokens=0)


# ------------------------------------------------------------------------------------ records
def _check_meta(chunk: Chunk, record: dict, collection: str):
    assert chunk.doc_ref == record["ref"] and chunk.collection == collection and chunk.tenant_id == "acme"
    assert chunk.id == f"acme:{collection}:{record['ref']}:{chunk.position}"
    assert chunk.acl == record["acl"] and isinstance(chunk.date, datetime) and chunk.text.strip()


def test_pull_request_chunks_body_then_reviews(corpus):
    pr = next(r for r in corpus["pull_requests"] if r["ref"] == STORIES["redis_session_cache"]["pr"])
    chunks = chunk_record("pull_requests", pr)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        _check_meta(c, pr, "pull_requests")
        assert c.title == pr["title"] and c.url == pr["html_url"] and c.author == "rsh-dev"
        assert c.date == pr["created_at"]
    assert chunks[0].text.startswith(pr["title"]) and "Memcached evicts session keys" in chunks[0].text
    reviews = chunks[-1].text
    assert "ingrid-h (changes requested): What happens if the Redis primary fails" in reviews
    assert "ingrid-h on k8s/charts/api/values.yaml: Add a readiness probe for Redis." in reviews
    assert reviews.index("Redis primary fails") < reviews.index("Failover test passed")  # time order
    assert not any("Redis primary fails" in c.text for c in chunks[:-1] if "Memcached evicts" in c.text)


def test_jira_issue_chunks_summary_description_and_comments(corpus):
    issue = next(r for r in corpus["issues"] if r["fields"]["comment"]["comments"])
    chunks = chunk_record("issues", issue)
    for c in chunks:
        _check_meta(c, issue, "issues")
        assert c.title == issue["fields"]["summary"] and c.url == issue["url"]
        assert c.author == issue["fields"]["reporter"]["name"]
    assert chunks[0].text.startswith(issue["fields"]["summary"])
    comment = issue["fields"]["comment"]["comments"][0]
    assert f"{comment['author']['displayName']}: {comment['body']}" in chunks[-1].text


def test_github_issue_uses_title_body_and_html_url():
    record = normalize(
        "issues",
        {
            "number": 7,
            "title": "Loader crashes on empty files",
            "body": "Steps: load an empty file. It crashes.",
            "html_url": "https://github.com/o/r/issues/7",
            "url": "https://api.github.com/repos/o/r/issues/7",
            "repository_url": "https://api.github.com/repos/o/r",
            "user": {"login": "octo"},
            "comments": 2,
            "created_at": "2024-01-02T03:04:05Z",
        },
    )
    [chunk] = chunk_record("issues", record, tenant="hf")
    assert chunk.id == "hf:issues:o/r#7:0" and chunk.url == "https://github.com/o/r/issues/7"
    assert chunk.author == "octo" and chunk.date == datetime(2024, 1, 2, 3, 4, 5)
    assert chunk.acl == []  # no access list stated: readable by nobody, never by everyone
    assert chunk.text == "Loader crashes on empty files\n\nSteps: load an empty file. It crashes."


def test_documents_and_commits(corpus):
    doc = next(r for r in corpus["documents"] if r["ref"] == STORIES["redis_session_cache"]["doc"])
    chunks = chunk_record("documents", doc)
    for c in chunks:
        _check_meta(c, doc, "documents")
        assert c.title == doc["title"] and c.url == doc["url"] and c.author == doc["author"]["login"]
    assert chunks[0].text.count(doc["title"]) == 1  # a body that starts with its title is not doubled
    commit = corpus["commits"][0]
    [c] = chunk_record("commits", commit)
    _check_meta(c, commit, "commits")
    assert c.text == commit["message"] and c.url == commit["html_url"] and c.author == commit["author"]["name"]
    assert chunk_record("people", corpus["people"][0]) == []


def test_chunk_ids_are_stable_and_unique(corpus):
    first = chunk_collection("pull_requests", corpus["pull_requests"])
    again = chunk_collection("pull_requests", corpus["pull_requests"])
    assert [c.id for c in first] == [c.id for c in again]
    everything = [
        c.id
        for coll in ("pull_requests", "issues", "messages", "documents", "commits")
        for c in chunk_collection(coll, corpus[coll])
    ]
    assert len(everything) == len(set(everything))


def test_a_record_needs_a_tenant():
    record = normalize("commits", {"sha": "abc", "message": "Fix it"})
    with pytest.raises(ValueError):
        chunk_record("commits", record)
    assert chunk_record("commits", {"sha": "abc", "message": "Fix it"}, tenant="t")[0].id == "t:commits:abc:0"


# ------------------------------------------------------------------------------------ threads
def test_a_slack_thread_is_one_unit(corpus):
    story = STORIES["redis_session_cache"]["thread"]
    messages = corpus["messages"]
    thread = [m for m in messages if m.get("thread_ts") == story["ts"]]
    assert len(thread) == 8
    chunks = [c for c in chunk_threads(messages) if c.doc_ref.endswith(story["ts"])]
    assert len(chunks) == 1  # the parent and its seven replies, together
    [chunk] = chunks
    parent = next(m for m in thread if m["ts"] == story["ts"])
    assert chunk.doc_ref == parent["ref"] and chunk.url == story["permalink"] and chunk.author == parent["user"]
    assert chunk.id == f"acme:messages:{parent['ref']}:0" and chunk.date == parent["date"]
    text = chunk.text
    assert text.startswith("Rashid Khan: Proposal: move the session cache")
    assert text.index("Why not just give Memcached") < text.index("建议 maxmemory-policy") < text.index("convinced")
    assert "ENG-231 (https://acme.atlassian.net/browse/ENG-231)" in text and "@Rashid Khan please" in text
    assert chunk.title.startswith("#infra: Proposal")


def test_thread_acl_is_the_parents_and_threads_do_not_mix(corpus):
    private = [m for m in corpus["messages"] if m["acl"] != ["*"]]
    assert private
    for chunk in chunk_threads(private):
        assert chunk.acl == STORIES["leaked_stripe_key"]["members"] or chunk.acl == private[0]["acl"]
    base = {"tenant_id": "t", "channel_id": "C1", "channel": "ops"}
    messages = [
        {
            **base,
            "ts": "100.000001",
            "thread_ts": "100.000001",
            "text": "Parent asks. Who knows?",
            "user": "U1",
            "acl": ["alice", "bob"],
        },
        {**base, "ts": "100.000003", "thread_ts": "100.000001", "text": "Second reply.", "user": "U3", "acl": ["*"]},
        {
            **base,
            "ts": "100.000002",
            "thread_ts": "100.000001",
            "text": "First reply <@U1>.",
            "user": "U2",
            "acl": ["*"],
        },
        {**base, "ts": "200.000000", "text": "A message without a thread.", "user": "U1", "acl": ["*"]},
        {
            **base,
            "channel_id": "C2",
            "ts": "100.000004",
            "thread_ts": "100.000001",
            "text": "Other channel.",
            "user": "U4",
            "acl": ["*"],
        },
        {
            **base,
            "ts": "300.000002",
            "thread_ts": "300.000001",
            "text": "Orphan reply A.",
            "user": "U2",
            "acl": ["alice", "carol"],
        },
        {
            **base,
            "ts": "300.000003",
            "thread_ts": "300.000001",
            "text": "Orphan reply B.",
            "user": "U3",
            "acl": ["alice", "bob"],
        },
    ]
    chunks = {c.doc_ref: c for c in chunk_threads(messages)}
    assert set(chunks) == {"C1:100.000001", "C1:200.000000", "C2:100.000001", "C1:300.000001"}
    thread = chunks["C1:100.000001"]
    assert thread.acl == ["alice", "bob"]  # the parent's, even though the replies are public
    assert thread.text == "U1: Parent asks. Who knows?\n\nU2: First reply @U1.\n\nU3: Second reply."
    assert chunks["C1:300.000001"].acl == ["alice"]  # no parent: only who may see every reply
    assert chunks["C1:300.000001"].date == datetime(1970, 1, 1, 0, 5, 0, 1)
    assert all(c.tenant_id == "t" for c in chunks.values())


def test_a_long_thread_is_chunked_with_the_same_metadata():
    base = {"tenant_id": "t", "channel_id": "C1", "thread_ts": "1.000000", "acl": ["*"]}
    messages = [
        {
            **base,
            "ts": f"{1 + i}.000000",
            "user": f"U{i}",
            "text": f"Reply {i} says the rollout of the cache is going well so far.",
        }
        for i in range(60)
    ]
    chunks = chunk_threads(messages, max_tokens=60)
    assert len(chunks) > 5 and all(count_tokens(c.text) <= 60 for c in chunks)
    assert {c.doc_ref for c in chunks} == {"C1:1.000000"} and [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].text.startswith("U0: Reply 0") and "Reply 59" in chunks[-1].text
