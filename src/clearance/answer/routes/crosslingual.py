"""Questions across languages: a question nothing answers as asked, asked again in the words
of the other languages (:mod:`clearance.bilingual`).

"年次休暇は最大何時間まで繰り越せますか？" over an English handbook shares no word with the page
that answers it; read in English, "annual holiday maximum carry forward", with each word's
other renderings as its equivalents (休暇: *day off, furlough, absence*), it is a search
the handbook answers. An English question over Japanese pages is read in Japanese, then in
Chinese.

The reading goes through the narrative route like any question: retrieved inside the
caller's filter, judged by the relevance gate (a snippet holding a rendering holds the
word it renders), quoted in the passage's own language and cited. It runs only where the
routes before it found nothing, so a question the documents answer in its own language
is answered as before, and a refusal stays the same fixed text whether or not a reading
was tried. The language model, where one is configured, is still given the question as
asked. The answer carries the flag :data:`ACROSS_LANGUAGES`.
"""

from __future__ import annotations

from dataclasses import replace

from clearance.analysis import cjk_share
from clearance.answer.context import AnswerContext
from clearance.answer.request import AnswerRequest
from clearance.answer.result import AnswerResult
from clearance.answer.routes.narrative import NarrativeRoute
from clearance.bilingual import Reading, readings
from clearance.store.base import SearchFilter, Store

__all__ = ["ACROSS_LANGUAGES", "CrossLingualRoute", "read_across"]

#: The flag of an answer found by reading the question in another language.
ACROSS_LANGUAGES = "across_languages"


#: The trace stage the passes in other languages are timed as.
STAGE = "across_languages"


class CrossLingualRoute:
    def __init__(self, ctx: AnswerContext, narrative: NarrativeRoute) -> None:
        self.ctx = ctx
        self.narrative = narrative

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        if not self.ctx.settings.answer.across_languages:
            return None
        assert request.flt is not None
        trace = request.trace
        # The passes in other languages are one stage of the trace ("across_languages"),
        # the dictionaries' work included; the stages of the pass as asked keep its times.
        first = dict(trace.latency_ms)
        trace.start(STAGE)
        try:
            return self._read_across(request)
        finally:
            trace.latency_ms = first
            trace.stop(STAGE)

    def _read_across(self, request: AnswerRequest) -> AnswerResult | None:
        assert request.flt is not None
        trace = request.trace
        for reading in read_across(self.ctx.runtime.store, request.flt, request.masked):
            retrieved, dropped = set(trace.retrieved), dict(trace.realtime_dropped)
            asked = replace(request, masked=reading.text, renderings=reading.groups())
            try:
                found = self.narrative.answer(asked)
            finally:
                # The trace holds what every pass retrieved, not the last pass's alone.
                trace.retrieved = sorted(retrieved | set(trace.retrieved))
                trace.realtime_dropped = {**dropped, **trace.realtime_dropped}
                trace.denied_retrieved = self.ctx.count_denied(request, trace.retrieved)
            if found is not None:
                return replace(found, flags=(*found.flags, ACROSS_LANGUAGES))
        return None


# Characters a page written in Japanese or Chinese all but surely holds one of: the
# particles and the commonest Han of running text (simplified and traditional), the Han of
# tables and headings (amounts, units, dates, departments, rules, leave), and the
# commonest katakana. Each is an index term of its own (CJK text is indexed by characters
# too), so one statistics call says whether the caller reads any such page: one holding
# :data:`_PROBE_HELD` of them. A page holding fewer (a table of names alone, or an English
# PDF whose bullet extracts as a stray "ｲ") is not read across for, which loses a reading
# but never shows anything.
_CJK_PROBE = tuple(
    dict.fromkeys(
        "のはにをがでてとたしもなる"
        "的是在有和了不一人中大上为会业公这个们来说时国对于发经"
        "爲會業們這個來說時國對於發經"
        "年月日期间第季度半前后末初"
        "元円百千万萬億亿金额額费費价價率数數量计計合总總收入支出利润潤益资資产產本"
        "表号號名称稱单單位部门門员員工职職务務级級规規定则則制"
        "假休病婚丧喪产産育请請申报報销銷差旅住宿餐补補"
        "社会議议事项項目容内容管理人事営营業売卖高株式"
        "ーンストルイクリアラッシカテ"
    )
)

#: How many characters of :data:`_CJK_PROBE` the caller's chunks must hold: one may be a
#: stray glyph of an English page; a Japanese or Chinese page of any length holds many.
_PROBE_HELD = 3


def read_across(store: Store, flt: SearchFilter, question: str) -> list[Reading]:
    """``question``'s readings in the other languages, each word as the documents ``flt``
    admits put it (:meth:`Reading.in_words_used`, from their own statistics only, so no
    hidden document chooses a word), without those left with no word of their language.
    A question in Latin script is read in Japanese and Chinese only for a caller whose
    chunks hold :data:`_PROBE_HELD` characters of :data:`_CJK_PROBE`: the Chinese dictionary's English index
    alone takes about a second to build in each process, spent on every refusal over
    English pages."""
    if cjk_share(question) <= 0.5:
        held = store.term_statistics(_CJK_PROBE, flt).df
        if sum(1 for n in held.values() if n > 0) < _PROBE_HELD:
            return []
    out = []
    for reading in readings(question):
        df = store.term_statistics(sorted(reading.terms()), flt).df
        chosen = reading.in_words_used({term for term, n in df.items() if n > 0})
        if chosen.crosses():
            out.append(chosen)
    return out
