"""Text on the lowest floor: traditional Chinese read as simplified at the same offsets, and quotes of
the question put back in the asker's characters."""

from __future__ import annotations

import pytest

from context_engine.text import as_asked, simplified


@pytest.mark.parametrize(
    ("asked", "read"),
    [
        ("去年合併了幾個 PR", "去年合并了几个 PR"),
        ("標題裡有 arrow 的 issue", "标题里有 arrow 的 issue"),
        ("racket 頻道的訊息", "racket 频道的讯息"),
        ("上個月關閉了幾個 issue", "上个月关闭了几个 issue"),
        ("誰開過最多討論串", "谁开过最多讨论串"),
        ("這週頻道裡發了多少則訊息？", "这周频道里发了多少则讯息？"),
        ("現在還開著的 PR 有多少", "现在还开着的 PR 有多少"),  # 著 after a verb is 着, in 著名 it stays
        ("著名的 issue", "著名的 issue"),
        ("already simplified: 开了几个", "already simplified: 开了几个"),
        ("Cy 第一次发消息是什么时候", "Cy 第一次发消息是什么时候"),  # Taiwan's tables alone would make 什么 什幺
        ("no Chinese at all", "no Chinese at all"),
    ],
)
def test_simplified_reads_traditional_characters_at_the_same_offsets(asked, read):
    assert simplified(asked) == read and len(simplified(asked)) == len(asked)


def test_as_asked_puts_quoted_chinese_back_in_the_askers_characters():
    asked = "歐陽靜怡開過哪些討論串"
    assert as_asked("No one is named '欧阳静怡'.", asked) == "No one is named '歐陽靜怡'."
    # Chinese that is not a quote of the question, and any text when nothing was converted, stay
    assert as_asked("找到 3 条消息", asked) == "找到 3 条消息"
    assert as_asked("'欧阳静怡'", "欧阳静怡开过哪些") == "'欧阳静怡'"
