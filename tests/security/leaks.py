"""What the security tests look for in a result: hidden keys at any depth, and the refs and texts
of records the asker may not read (other tenants', private channels')."""

from __future__ import annotations

from context_engine.config import HIDDEN_FIELDS, Settings
from context_engine.resources import store_for


def forbidden_markers(settings: Settings, principals: list[str]) -> list[str]:
    """Refs and texts the asker must never see: other tenants' records and private ones."""
    store = store_for(settings)
    readable = {"*", *principals}
    refs, texts, allowed_texts = [], set(), set()
    for name in ("pull_requests", "messages", "issues", "documents"):
        for doc in store.collection(name).find({}, {"ref": 1, "text": 1, "tenant_id": 1, "acl": 1}):
            text = (doc.get("text") or "")[:60]
            if doc["tenant_id"] != settings.tenant or not readable & set(doc.get("acl") or []):
                refs.append(doc["ref"])
                texts.add(text)
            else:
                allowed_texts.add(text)
    # A forbidden text that a readable record also says (a repeated "LGTM") proves nothing.
    return refs + sorted(t for t in texts - allowed_texts if len(t) > 30)


def hidden_keys(row, grouped: bool) -> list[str]:
    """Hidden keys anywhere in a row; a top-level `_id` is a group key after a `$group`."""
    found, stack = [], [(row, True)]
    while stack:
        node, is_top = stack.pop()
        if isinstance(node, dict):
            found += [k for k in node if k in HIDDEN_FIELDS and not (is_top and grouped and k == "_id")]
            stack += [(v, False) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, False) for v in node]
    return found
