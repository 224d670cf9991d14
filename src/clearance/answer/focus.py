"""The part of a long question that asks: what retrieval, routing and the relevance gate read.

People paste context before they ask ("I am preparing a briefing for a customer workshop
… So, plainly: how much does one Sentinel S4 gateway cost?"). Every word of the preamble
is a search term, and the relevance gate counts each term no readable passage holds
against every passage, so a question that is answered when asked plainly was refused
when asked with its context. :func:`question_focus` keeps the sentence that asks.

Rules (deterministic, no model):

* A question shorter than :data:`MIN_WORDS` words and :data:`MIN_CJK_CHARS` CJK
  characters is read whole: short questions are their own focus, and a
  two-sentence question ("We opened Osaka in 2025. What did it cost?") often needs both.
* Otherwise the focus is the last sentence that ends with a question mark (``?``, ``？``),
  else the last sentence. A lead-in closed by a colon ("So, plainly: …") is dropped
  when what follows has at least three words.
* A focus that names too little to search for (fewer than :data:`MIN_TERMS` index terms
  that are not frame words: "How much does it cost?") takes the sentences before it,
  one at a time, until it does.

The scope gate has already read the whole question, and the answer prompt of a
language model still carries it: only what is searched and judged is narrowed.
"""

from __future__ import annotations

import re

from clearance.analysis import search_terms

__all__ = ["MIN_CJK_CHARS", "MIN_TERMS", "MIN_WORDS", "question_focus"]

MIN_WORDS = 40
MIN_CJK_CHARS = 120
MIN_TERMS = 2

# A sentence ends at . ! ? followed by whitespace, or at a CJK full stop or mark (spaces
# optional); a decimal point or "e.g." is not followed by whitespace and a capital.
_END = re.compile(
    r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9\u3000-\u9fff\uac00-\ud7af])|(?<=[。！？])\s*"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_ASKS = re.compile(r"[?？]\s*[\"'”’)\]」』]*\s*$")
_LEAD_IN = re.compile(r"^[^:：?？]{1,40}[:：]\s+")
# Index terms that frame a question (search_terms already drops the commonest words such
# as "what", "how", "does", "it"); they do not make a focus searchable on their own.
_FRAME = frozenset(
    [
        *("whom", "whose", "much", "mani", "did", "were", "can", "could", "would", "should"),
        *("shall", "may", "might", "must", "they", "them", "these", "those", "here", "so"),
        *("then", "pleas", "tell", "me", "us", "know", "one", "plain", "exact", "actual"),
    ]
)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _END.split(text.strip()) if s and s.strip()]


def _long(text: str) -> bool:
    if len(text.split()) >= MIN_WORDS:
        return True
    return sum(1 for ch in text if _CJK.match(ch)) >= MIN_CJK_CHARS


def _terms(text: str) -> int:
    return len({t for t in search_terms(text) if t not in _FRAME})


def question_focus(question: str) -> str:
    """The sentence(s) of ``question`` that ask (see the module docstring); the question
    itself when it is short or a single sentence."""
    if not _long(question):
        return question
    sentences = _sentences(question)
    if len(sentences) < 2:
        return question
    asking = [i for i, s in enumerate(sentences) if _ASKS.search(s)]
    last = asking[-1] if asking else len(sentences) - 1
    focus = sentences[last]
    lead = _LEAD_IN.match(focus)
    if lead is not None and len(focus[lead.end() :].split()) >= 3:
        focus = focus[lead.end() :]
    start = last
    while _terms(focus) < MIN_TERMS and start > 0:
        start -= 1
        focus = f"{sentences[start]} {focus}"
    return focus
