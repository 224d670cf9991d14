"""A Japanese question that shortens a word the documents spell out is answered from them.

Japanese shortens compound words by their first characters: 育休 is 育児休業 (childcare
leave), 産休 is 産前産後休業. A handbook spells the word out, so its index holds the
pairs 育児, 児休 and 休業 but never 育休; searched by its pairs, the question finds the
maternity section, which holds the pairs 産休 and 給与, and quotes its pay (two thirds)
for a question about childcare leave (67 %). The lexical search now gives a pair that none
of the caller's chunks holds way to its characters (``unseen_pairs_as_characters``), as
the relevance gate already weighed it.
"""

from __future__ import annotations

from typing import Any

import pytest

import clearance.store.rows as rows_module
from clearance.answer.result import Status

from .conftest import Handbook

HANDBOOK = {
    "japan-benefits.md": """# 日本の福利厚生

## 家族と人生の転機サポート

**育児休業 — 概要**

実質的な政府の経済的サポートで、最大 1 年間の保護された休暇を取得できます。

**育児休業 — 主な機能**

給与の 67% を受け取る（最初の 6 ヶ月）、その後 50%。両親が休暇を取得できます。

**産休と給付 — 概要**

政府の手当を通じて基本給与の 3 分の 2 で 14 週間の保護された産休を取得できます。

## 経済的セキュリティ

**雇用保険 — 主な機能**

失業給付、育児休業給付、介護休業給付、教育/研修サポートをカバーします。
""",
    "sick-leave.md": """# 病気休暇

**病気休暇中の給与**

対象のチームメンバーは、最大 25 営業日にわたって週給の 100% を受け取ります。
休暇が 25 営業日を超えて延長される場合、GitLab からは無給となります。
""",
    "faq.md": """# 退職に関するよくある質問

## 最終給与はいつ受け取れますか？

最終給与は通常の給与日に支払われます。

## ストックオプションはどのように扱われますか？

すべての情報は Stock Options ハンドブックページを参照してください。
""",
}

# Payroll pages that share the question's other words (日本, 給料) and rank above the
# childcare section when 育休 finds nothing.
PAYROLL = {
    "日本の給料日": "日本の給料は毎月 25 日に支払われます。",
    "給料明細": "日本の給料明細は毎月 Workday で確認できます。",
    "給料の振込口座": "給料の振込口座は日本国内の銀行口座に限ります。",
    "給料の締め日": "日本の給料の締め日は毎月末日です。",
    "賞与": "日本の賞与は給料とは別に年 2 回支払われます。",
    "住民税": "日本の住民税は給料から毎月天引きされます。",
    "昇給": "日本の昇給は、そのあいだの評価をもとに年 1 回決まります。",
    "残業代": "残業代は日本の労働基準法に従い、給料とあわせて支払われます。",
    "通貨": "日本の給料は円で支払われ、そのほかの通貨は選べません。",
}
HANDBOOK |= {
    f"payroll-{n}.md": f"# {title}\n\n{text}\n" for n, (title, text) in enumerate(PAYROLL.items())
}

QUESTION = "日本で育休を取ったら、そのあいだ給料はどのくらい出るんですか?"


def test_the_short_form_of_childcare_leave_finds_the_childcare_leave_pay(
    handbook: Handbook,
) -> None:
    engine = handbook(HANDBOOK, "kenji")
    result = engine.ask(QUESTION, "kenji")
    assert result.status is Status.ANSWERED, result.answer
    assert "67%" in result.answer
    assert "3 分の 2" not in result.answer


def test_searched_by_its_pairs_alone_the_question_got_the_maternity_pay(
    handbook: Handbook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof: without the back-off the same engine misses the childcare section.
    The grammar beside 育休 is searched as the characters it leaves ("で育" → 育, "休を" →
    休: :func:`clearance.analysis.kana_free`), which back off the same way, so it is
    searched as written here too."""
    monkeypatch.setattr(rows_module, "unseen_pairs_as_characters", lambda terms, df: list(terms))
    monkeypatch.setattr(rows_module, "kana_free", lambda terms: list(terms))
    engine = handbook(HANDBOOK, "kenji")
    result = engine.ask(QUESTION, "kenji")
    assert "67%" not in result.answer


# 育休 beside no hiragana that would lend its characters (kana_free): only the back-off
# finds the childcare section.
QUESTION_WITHOUT_GRAMMAR_BESIDE = "日本の給料、育休中はどのくらい出ますか?"


def test_the_back_off_alone_finds_the_childcare_section(
    handbook: Handbook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof of the back-off on its own, with the grammar left out as the search
    leaves it: with the back-off the childcare section is found first; without it, the
    payroll pages sharing 日本 and 給料 are."""

    def first(engine: Any) -> str:
        hits = engine.search("kenji", QUESTION_WITHOUT_GRAMMAR_BESIDE, k=3).hits
        return hits[0].chunk.text

    engine = handbook(HANDBOOK, "kenji")
    assert "育児休業" in first(engine)
    monkeypatch.setattr(rows_module, "unseen_pairs_as_characters", lambda terms, df: list(terms))
    assert "育児休業" not in first(engine)
