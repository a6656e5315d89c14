"""Class 3, a Slack thread is one unit of index text: the parent's text and every reply's, indexed
under the parent's ref. A reply whose stored list is narrower than its parent's (a webhook in a
channel made private, an export, an ingest with `--no-index`) must not reach anyone who may read the
parent only: not through the chunk's own list, and not through the store check of the hit, which
looked at the parent's record alone (attacked: the reply's text was served to everyone)."""

from __future__ import annotations

import pytest

from context_engine.config import Settings

CHANNEL = "C0PUBLIC77"
PARENT = {
    "type": "message",
    "channel_id": CHANNEL,
    "user": "U0DCC75DEF",
    "ts": "1796600000.000100",
    "thread_ts": "1796600000.000100",
    "text": "who owns the larkspur migration",
    "acl": ["*"],
}
REPLY = {
    "type": "message",
    "channel_id": CHANNEL,
    "user": "U0DCC75DEF",
    "ts": "1796600001.000100",
    "thread_ts": "1796600000.000100",
    "text": "the zanzibarite vault password is in the basement safe",
}
OTHER = {
    "type": "message",
    "channel_id": CHANNEL,
    "user": "U0DCC75DEF",
    "ts": "1796600100.000100",
    "text": "zanzibarite dashboards are green again",
    "acl": ["*"],
}


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("CONTEXT_ENGINE_USER", raising=False)


def _served(settings: Settings, question: str, principals: tuple[str, ...] = ()) -> str:
    """What the graph's retriever serves (`make_retriever`), as an asker holding `principals`."""
    from unittest import mock

    from context_engine.assistant import retriever

    with mock.patch.object(retriever, "principals_for", return_value=list(principals)):
        docs = retriever.make_retriever(settings, fused=False).invoke(question, k=20)
    return "\n".join(d.page_content for d in docs)


def _settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, mongodb_uri=None, tenant="acme", asker=None, use_llm=False)


def test_a_reply_narrower_than_its_parent_is_never_served_through_the_thread(tmp_path):
    from context_engine.ingest import ingest

    settings = _settings(tmp_path)
    ingest(settings, {"acme": {"messages": [PARENT, OTHER]}})
    ingest(settings, {"acme": {"messages": [{**REPLY, "acl": ["slack:U0DCC75DEF"]}]}})  # indexed with it
    served = _served(settings, "zanzibarite vault password")
    assert "basement safe" not in served and "larkspur" not in served
    assert "dashboards are green" in served  # the rest of the channel answers as before
    assert "basement safe" in _served(settings, "zanzibarite vault password", ("slack:U0DCC75DEF",))


def test_a_reply_narrowed_after_the_index_was_built_closes_its_thread(tmp_path):
    from context_engine.ingest import ingest

    settings = _settings(tmp_path)
    ingest(settings, {"acme": {"messages": [PARENT, OTHER, {**REPLY, "acl": ["*"]}]}})
    assert "basement safe" in _served(settings, "zanzibarite vault password")
    # The reply alone is closed, the index untouched: its text sits in the parent's public chunk.
    ingest(settings, {"acme": {"messages": [{**REPLY, "acl": []}]}}, index=False)
    served = _served(settings, "zanzibarite vault password")
    assert "basement safe" not in served
    assert "dashboards are green" in served
