"""Traditional Chinese characters read as their simplified forms: "標題裡有 arrow 的 issue 一共幾個" is
planned as "标题里有 arrow 的 issue 一共几个".

The planner's Chinese rules are written in simplified characters; a colleague typing traditional ones
asks the same question. Each character maps to one character, so every offset into the question stays
where it was. Only characters that are traditional forms and nothing else in simplified text are
mapped (not 乾, 著 or 徵, which simplified text also writes); the answer says how the question was read.
"""

from __future__ import annotations

# Pairs of (traditional, simplified): the words of questions about records, people, time and counts.
_PAIRS = (
    "開开過过併并還还沒没標标題题裡里裏里訊讯幾几則则討讨論论頻频個个發发條条關关閉闭們们嗎吗麼么"
    "誰谁這这數数與与為为從从對对時时間间週周號号會会員员項项單单際际處处請请問问說说話话區区別别"
    "聯联絡络籤签來来讓让應应該该將将審审經经變变動动並并於于報报錯错複复雜杂張张貼贴佈布負负責责"
    "紀纪錄录總总計计統统門门舊旧邊边後后達达遠远進进運运選选適适連连團团隊队參参戶户帳帐碼码庫库"
    "倉仓環环測测試试準准實实現现東东兩两萬万億亿歲岁種种類类結结轉转載载紅红綠绿藍蓝黃黄電电網网"
    "頁页檔档寫写讀读評评閱阅覽览傳传輸输設设誤误啟启給给當当歷历剛刚幫帮謝谢筆笔點点鐘钟頭头長长"
    "較较極极決决議议談谈講讲貢贡獻献壇坛鬆松瀏浏覽览帶带擁拥週周樣样麗丽區区題题歸归檢检"
)
_TO_SIMPLIFIED = str.maketrans({_PAIRS[i]: _PAIRS[i + 1] for i in range(0, len(_PAIRS), 2)})


def simplified(question: str) -> str:
    """`question` with its traditional characters written in simplified ones, one for one."""
    return question.translate(_TO_SIMPLIFIED)
