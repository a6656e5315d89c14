"""Traditional Chinese characters read as simplified ones (query/traditional.py), one for one."""

from __future__ import annotations

import pytest

from context_engine.query.traditional import simplified


@pytest.mark.parametrize(
    "asked,read",
    [
        ("上個月關閉了幾個 issue", "上个月关闭了几个 issue"),
        ("誰開過最多討論串", "谁开过最多讨论串"),
        ("這週頻道裡發了多少則訊息？", "这周频道里发了多少则讯息？"),
    ],
)
def test_traditional_characters_are_read_as_simplified(asked, read):
    assert simplified(asked) == read


def test_every_offset_stays_where_it_was_and_other_text_is_kept():
    asked = "Show 標題裡有 Arrow 的 PR, please (乾淨)"
    assert len(simplified(asked)) == len(asked)
    assert simplified(asked).startswith("Show 标题里有 Arrow 的 PR, please")
    assert "乾" in simplified(asked)  # also a simplified character: left as written
