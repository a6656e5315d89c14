"""What the plan read and did not (query/planner/spans.py): words no element of the plan holds are said."""

from __future__ import annotations

from context_engine.query.engine import resolve
from context_engine.query.offline import OfflinePlanner
from tests.query.planner.test_conditions import NOW, world  # noqa: F401 (the fixture)
from tests.query.planner.test_linking import _plan, github  # noqa: F401 (the fixture)


def test_a_chinese_comparison_no_ranking_holds_is_unread(github):  # noqa: F811
    # the closer is read, the comparison of her count with something unsaid is no element of this plan (a list)
    plan = _plan(github, "rmoreau 关掉的 issue 是不是更多")
    assert plan.ir.shape.kind == "list", plan.ir.shape
    assert [s["text"] for s in plan.not_understood] == ["更多"], plan.not_understood


def test_a_chinese_superlative_a_ranking_holds_is_read(github):  # noqa: F811
    plan = _plan(github, "去年谁提的 issue 最多")
    assert plan.ir.shape.kind == "group" and plan.ir.shape.limit, plan.ir.shape
    assert not plan.not_understood, plan.not_understood


def test_a_topic_before_youguan_ended_by_a_pause_is_the_topic(github):  # noqa: F811
    # "跟 X 有关、…": the words before 有关 are the topic, whatever follows the pause
    plan = _plan(github, "跟 tokenizer 有关、还开着的 issue")
    assert plan.ir.text == ["tokenizer"] or any(
        f.value and "tokenizer" in f.value for f in plan.ir.filters if f.op in ("words", "exact_words")
    ), plan.ir
    assert not plan.not_understood, plan.not_understood


def test_people_compared_in_another_role_than_the_one_counted_are_unread(github):  # noqa: F811
    # the names listed as authors while the plan counts assignees: one of the two is misread
    plan = _plan(github, "who assigned more issues, thandeka or rmoreau?")
    if plan.ir.shape.field != "user.login" and any(f.field == "user.login" for f in plan.ir.filters):
        assert [s["text"] for s in plan.not_understood] == ["thandeka or rmoreau"], plan.not_understood
    else:
        assert not plan.not_understood, plan.ir  # read in one role: nothing to say


def test_chinese_words_beside_a_read_word_are_still_accounted_for(github):  # noqa: F811
    # 最多 is read (a ranking); 表情回应 (emoji reactions) beside it is no element of this plan
    plan = _plan(github, "哪一个 issue 得到的表情回应最多")
    assert "表情回应" in [s["text"] for s in plan.not_understood], plan.not_understood


def test_a_superlative_read_into_a_total_is_unread(world):  # noqa: F811
    # "the biggest thread" is one thread; a total over every thread's replies is not what was asked
    _, catalog = world
    ctx, _ = resolve("how many replies did the biggest thread get", NOW, catalog, None)
    plan = OfflinePlanner().plan(ctx)
    if plan.ir.shape.kind == "sum":
        assert "biggest" in [s["text"] for s in plan.not_understood], plan.not_understood
    else:
        assert plan.ir.shape.kind in ("top", "max", "argmax"), plan.ir.shape


def test_an_emoji_no_rule_reads_is_unread_not_dropped(github):  # noqa: F811
    # "🦄 issues": the emoji says something the plan does not hold, so the answer must say so
    plan = _plan(github, "open 🦄 issues from last year")
    assert [s["text"] for s in plan.not_understood] == ["🦄"], plan.not_understood
    plan = _plan(github, "how many issues got a ⭐️ last year")
    assert "⭐️" in [s["text"] for s in plan.not_understood], plan.not_understood
