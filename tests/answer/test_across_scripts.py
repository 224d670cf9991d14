"""An English question over a handbook written in Japanese is judged as a Japanese one is.

The bundled embedder is English-only. Asked in English how long a former employee keeps
access to ADP, its cosine with the Japanese FAQ entry that answers ("退職後 3 年間 ADP への
アクセスを保持します") was 0.18, below the other entries', and with coverage 0.53 the entry
was refused. A passage mostly in CJK is now judged without that cosine: on coverage as a
Japanese question is, or, in doubt, by the multilingual model, which places the answering
entry nearest (0.863 here, the other entries 0.849 and below).
"""

from __future__ import annotations

import pytest

import clearance.answer.relevance as relevance_module
from clearance.answer.result import Status

from .conftest import Handbook

# The FAQ as the handbook publishes it (GitLab's offboarding FAQ in Japanese, abridged).
PAY_STUBS = (
    "元チームメンバーは、退職後 3 年間 ADP へのアクセスを保持し、給与明細と W-2 にアクセスできます。"
    "Okta はプロビジョニング解除されているため、元チームメンバーは ADP ポータルに直接アクセスする"
    "必要があります。ログインの問題が発生した場合は、チームが支援できるよう "
    "`uspayroll@example.com` にメールしてください。"
)
FAQ = f"""---
title: "GitLab オフボーディング FAQ"
---

## 報酬 - Payroll

### 最終給与はいつ受け取れますか？

これは所在地とエンティティによって異なります。Payroll Pay Date Handbook ページを参照してください。

### ノート PC は返却する必要がありますか？

最終日から 5 営業日以内に返送してください。

## USA

### 給与明細はどこで確認できますか？

{PAY_STUBS}

### HSA/FSA アカウントはどうなりますか？

GitLab を退職する際に Medical/Health または Dependent Care FSA がどのように扱われるかは、プランの規定によります。
"""

HANDBOOK = {
    "faq.md": FAQ,
    "sick-leave.md": """# 病気休暇

**病気休暇中の給与**

対象のチームメンバーは、最大 25 営業日にわたって週給の 100% を受け取ります。
""",
    "expenses.md": """# 経費

経費報告書は購入日から 90 日以内に提出してください。
""",
}

QUESTION = (
    "After I leave GitLab in the US, for how long can I still log in to ADP to get my pay "
    "stubs and W-2?"
)


def test_an_english_question_is_answered_from_the_japanese_entry(handbook: Handbook) -> None:
    engine = handbook(HANDBOOK, "ana")
    result = engine.ask(QUESTION, "ana")
    assert result.status is Status.ANSWERED, result.answer
    assert "3 年間" in result.answer
    assert "5 営業日" not in result.answer


def test_judged_on_the_english_embedder_s_cosine_the_entry_was_refused(
    handbook: Handbook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof: the embedder taken to read Japanese, as before, refuses the question."""
    monkeypatch.setattr(relevance_module, "_embedder_reads", lambda text: True)
    engine = handbook(HANDBOOK, "ana")
    result = engine.ask(QUESTION, "ana")
    assert "3 年間" not in result.answer
