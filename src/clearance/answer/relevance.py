"""Does a retrieved snippet bear on the question? The narrative path's relevance judgement.

Retrieval always returns *something*: the best of what the caller may read, however poor.
Before a model sees it, each snippet is judged on two signals, both computed only from
material the caller may read, so a hidden document can change neither:

* **coverage** — the share of the question's IDF mass that the snippet's document holds
  in the snippets retrieved from it (title, locator and text). The IDF is BM25's, from the lexical index's statistics over the caller's allowed
  chunks (:meth:`~clearance.store.base.Store.term_statistics`): matching "phishing" weighs
  far more than matching "documents", and a question term that no readable chunk holds
  ("freeze", when the release checklist is hidden) counts fully against every snippet.
  A pair of a Japanese question holding a hiragana character is grammar (a particle, an
  ending: "って", "んですか", "の健") and counts only as its other character, where no
  other pair of the question holds that (:func:`clearance.analysis.kana_free`).
  A CJK character pair that no readable chunk holds is judged as its two characters
  instead: questions are not segmented into words, and most such pairs straddle a word
  boundary ("处的", "址在") rather than name something.
  The word after "how" that names the form of the answer ("how long", "how far", "how
  often") is a frame word, as "much" and "many" are.
  A word written closed in one and open in the other is one word: "set up" in the
  question is held by a snippet saying "Setup", "login" by one saying "log in".
  What closes a question as the asker's own circumstance ("… on my laptop", "… from my
  phone") weighs half: it narrows the situation, where the rest names what is asked
  about. A word of it that no readable chunk holds still counts fully.
  Words of change are one word: "why did it grow?" is held by a passage saying the
  deficit widened, rose or fell, or that contracts "drove growth" (grow, increase, rise,
  widen, decline, fall … and their CJK counterparts), weighed as common as all of them
  together. A word the question writes in capitals is a name, never a frame word: "US"
  in "US operating profit" counts, where "tell us" does not; its plural is its singular
  ("CSVs"). "After" and "before" narrow a question where a readable chunk holds them and
  weigh nothing where none does.
* **cosine** — the embedding similarity of question and chunk, where the hybrid search
  computed one (:attr:`~clearance.model.SearchHit.cosine`) and neither the question nor
  the chunk is mostly CJK (the bundled model is English-only; on Japanese it ranks near
  chance). The cosine
  is the whole chunk's, which a long list dilutes: a snippet with one sentence or list
  item holding more than 70 % of the question's IDF mass is judged on that sentence's own
  cosine where higher (a sentence merely sharing the words, "it's up to you to keep abreast
  of those updates" for "How do I keep the company updated on what I'm working on?", is
  then refused), or on coverage alone where no embedder reads sentences.

A mostly-CJK question is relevant when its coverage reaches ``min_coverage_cjk`` (character
pairs match by chance more often than words), and so is a mostly-CJK snippet of any other
question; in doubt, both are read by the multilingual model. Otherwise, without a cosine, a
snippet is relevant when its coverage reaches ``min_coverage``. With
one, the two signals are weighed together: ``coverage + cosine_weight * cosine`` must reach
``min_score`` and the coverage ``min_coverage_with_cosine``. So a press release that shares
"release" and "window" with a question about release freeze windows (coverage 0.52, cosine
0.13) is dropped with the embedder although coverage alone is close. A cosine of
``near_cosine`` or more needs only ``min_coverage_near``: the embedder places the passage
that near a question asked in other words. The chunk's cosine is
diluted by what else the chunk says: where no snippet passes, the sentences of those that
fall short on the cosine alone are embedded too, and the best sentence's cosine stands for
the chunk's where it is higher (never a RESTRICTED snippet's). What neither signal
sees is an answer in entirely other words (a customer record that answers a question about
a litigation hold with "preserve all records"): that is refused.

A question joining two asks with ", and" ("What was the deficit in FY2024, and why did it
grow?") is judged on each where the whole is refused (:func:`asked_clauses`), and so is
each sentence that asks; a question telling a story first is judged on what it asks after
the story (:func:`told_then_asked`). An ask judged alone weighs the rest of the question
only for a passage: the story's words it holds ("the funeral") count for it, those it
lacks count against nothing. An ask pointing back at the first ("…, and which series does
that touch?") is not judged alone, but a phrase the question quotes ("'terminal annual
leave'") is. Interjections and hedges ("ugh", "I think") weigh nothing. The defaults were
calibrated on the labelled pairs of ``tests/answer/data/relevance_pairs.json`` by
``benchmarks/relevance_calibration.py``; the figures are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from clearance.analysis import (
    cjk_share,
    document_terms,
    file_name_words,
    is_cjk_frame,
    is_cjk_pair,
    kana_free,
    search_terms,
    word_pairs,
)
from clearance.config import RelevanceSettings
from clearance.errors import EmbeddingError
from clearance.llm.base import Snippet
from clearance.llm.extractive import ASK_WORDS, ASKING, split_sentences
from clearance.llm.multilingual import Similarity
from clearance.model import is_restricted
from clearance.retrieval.synonyms import NO_SYNONYMS, Synonyms, Used
from clearance.store.base import TermStatistics

__all__ = ["Judgement", "RelevanceGate", "asked_clauses", "option_terms", "question_weights"]

log = logging.getLogger(__name__)

#: ``terms -> statistics`` over the caller's allowed chunks.
StatisticsFor = Callable[[Sequence[str]], TermStatistics]


# The words that frame a question rather than name what it is about: they carry no
# evidence that a snippet answers it ("What do our documents say about …", "…是什么？"),
# or name the form an answer takes rather than its topic ("the escalation procedure").
# Index forms (stemmed English); single CJK characters are the function characters of
# Chinese questions and the Japanese 何 (what, how many: 何週間, 何時), and any lone hiragana
# (Japanese particles and endings) is one too.
_FRAME_WORDS = frozenset(
    [
        "about",
        "also",
        "any",
        "anyth",
        "can",
        "come",
        "could",
        "did",
        "document",
        "doe",
        "get",
        "give",
        "happen",
        "kind",
        "know",
        "let",
        "list",
        "mani",
        "may",
        "me",
        "mean",
        "much",
        "must",
        "my",
        "need",
        "pleas",
        "procedur",
        "process",
        "say",
        "shall",
        "should",
        "show",
        "step",
        "tell",
        "us",
        "want",
        "would",
    ]
)
# English function words: they hold a sentence together and name nothing, so a snippet
# that lacks them lacks no evidence ("What happens if I am off sick and don't tell my
# supervisor?" is about being off sick and telling a supervisor). Index forms; not
# "actually" nor "quite", whose index forms "actual" and "quit" name something ("the
# actuals file", "after I quit").
_FUNCTION_WORDS = frozenset(
    document_terms(
        """if am was were been being had having don't doesn't didn't isn't aren't wasn't
        weren't won't wouldn't can't cannot couldn't shouldn't haven't hasn't hadn't mustn't
        needn't shan't you're we're they're you've we've they've you'll we'll they'll he's
        she's i'm i've i'd i'll we our ours
        you your yours they them their theirs he him his she her hers its this that these
        those there here then than so not no just only very too else what which who whom
        whose when where why into onto again further once same other own such both each
        few more most some nor or but because while until whether even ever still yet
        already really rather perhaps maybe got gotten might go goes went gone going
        supposed ought gave given done anyway anyhow whole thing things something
        everything nothing think guess wonder ugh hey hi hello oh um uh hmm ok okay yeah
        thanks thank exactly someone somebody someone's anyone anybody everyone everybody
        nobody"""
    )
)


# A readable set smaller than this many chunks is weighed as if it had this many: in a set
# of three chunks every word they share would otherwise weigh next to nothing, and one
# unknown word of the question (an id, a typo) would outweigh all of them.
_MIN_CHUNKS = 50


# A year and the words of a fiscal calendar say when, not what: a results deck's title slide
# ("2025年度 決算説明資料 … 2026年5月14日") shares only "2026" and "年度" with a question
# about the 2026年度 domestic pipeline.
_WHEN = frozenset(["年度", "年间", "年間", "半期", "上期", "下期", "四半", "半年", "季度"])


def _names_what(terms: set[str]) -> bool:
    """Whether ``terms`` (those of a question a snippet holds) hold one that names what is
    asked about, not only when: a number or a calendar word (:data:`_WHEN`) is not one."""
    return any(not t.isdigit() and t not in _WHEN for t in terms)


def _embedder_reads(text: str) -> bool:
    """Whether the bundled (English-only) embedder can read ``text``: not when it is mostly
    CJK. Its cosine between an English question and a Japanese FAQ entry answering it
    (0.18) lies below that of unrelated English passages, so a snippet it cannot read is
    judged as a CJK question is: coverage ``min_coverage_cjk``, or the multilingual model
    in doubt."""
    return cjk_share(text) <= 0.5


def _frame(term: str) -> bool:
    return is_cjk_frame(term) or term in _FRAME_WORDS or term in _FUNCTION_WORDS


# "How does the sabbatical work?" asks how the sabbatical goes: its closing "work" frames
# the question like "say" or "mean" do, where "remote work" names a topic.
_HOW_DOES_IT_WORK = re.compile(
    r"^(\s*how\s+(?:do|does|did|will|would|can|could|should)\s.+?)\s+work(?:s|ed)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


# "How long must I …?", "how far in advance": the word after "how" names the form the
# answer takes (a duration, a distance), as "much" and "many" do, not what it is about.
_HOW_FORM = re.compile(
    r"\b(how)\s+(?:long|far(?:\s+back)?|often|soon|big|large|high|old)\b", re.IGNORECASE
)
# "What units …?", "what format": the word after "what" names the form of the answer, as
# the one after "how" does ("What units are the numbers in?" is about the numbers).
_WHAT_FORM = re.compile(r"\b(what)\s+(?:units?|formats?|types?)\b", re.IGNORECASE)
# The options a question closes with after a dash or colon: "What units are the numbers in
# — millions, billions, percent of GDP?". The asker guesses; a passage stating one of them
# holds them all.
_OPTIONS = re.compile(
    r"(?:\s[—–]|\s-(?=\s)|[:：])\s*([^—–:：?？-]*(?:,|\bor\b)[^—–:：?？-]*)[?.!？]*\s*$",
    re.IGNORECASE,
)
_OPTION_SEPARATORS = re.compile(r",|\bor\b", re.IGNORECASE)
#: The most words one option may have: "percent of GDP", not "2024 travel budget for Berlin".
_OPTION_WORDS = 3
#: The one term the options a question closes with are weighed and held as.
OPTIONS = "<options>"
# "i.e." and "e.g." introduce a restatement or an example: their letters name nothing.
_LATIN_ABBREVIATION = re.compile(r"\b(?:i\.\s?e|e\.\s?g)\.", re.IGNORECASE)


# The asker's own circumstance closing a question: "… on my laptop?", "… from my phone".
_OWN_CIRCUMSTANCE = re.compile(
    r"\s(?:on|from|at|in|with|using|via)\s+my\s+([^?!.,;:]+?)\s*[?!.]*\s*$", re.IGNORECASE
)
#: The weight of a readable word of the asker's circumstance, against one of the topic.
_CIRCUMSTANCE_WEIGHT = 0.5

# "After" and "before" say when: they narrow a question where a passage holds them ("12
# weeks after your final day" for "How long must I keep working after paid parental leave
# ends?"), and where no readable chunk holds either they are the asker's grammar ("how do I
# switch into it before running anything?") and weigh nothing. Index forms.
_WHEN_WORDS = frozenset(["after", "befor"])


# Words of change: "why did it grow?" is answered by a passage saying the deficit widened,
# rose or fell, or that new contracts drove growth. Index forms, so "growth" and "grew"
# are held as well as "grow"; CJK words as the character pairs the index holds.
_CHANGE_WORDS_TEXT = """grow grows grew grown growing growth increase increased increases
    increasing rise rises rose risen rising widen widened widening expand expanded
    expansion climb climbed jump jumped surge surged gain gained improve improved higher
    lower decline declined declines declining decrease decreased decreases fall falls fell
    fallen falling drop dropped shrink shrank shrunk narrow narrowed contract contracted
    reduce reduced reduction change changed changes alter altered alters modify modified
    modifies amend amended amends"""
_CHANGE_CJK = "伸び 増加 増収 増益 減少 減収 減益 拡大 縮小 上昇 低下 悪化 改善 増え 減っ 增长 增長 增加 下降 下滑 减少 上升 扩大 擴大 缩小 縮小 变化 變化"
_CHANGE_TERMS = frozenset(document_terms(_CHANGE_WORDS_TEXT)) | frozenset(_CHANGE_CJK.split())
#: The one term every word of change in a question is weighed and held as.
CHANGE = "<change>"
# A frame word written in capitals names something: "US" in "US operating profit".
_CAPITALS = re.compile(r"(?<![\w])[A-Z]{2,}(?![\w])")
# The plural of a word written in capitals: "CSVs", "PDFs", "KPIs".
_CAPITALS_PLURAL = re.compile(r"(?<![\w])([A-Z]{2,})s(?![\w])")


def _singular_capitals(text: str) -> str:
    """``text`` with each plural of a word written in capitals made singular ("How many
    CSVs?" → "How many CSV?"), as the stemmer does for words written in lower case: it
    leaves "csvs" as it is, and a question about the CSVs would hold no term of a passage
    about each CSV."""
    return _CAPITALS_PLURAL.sub(r"\1", text)


def option_terms(question: str) -> frozenset[str]:
    """The index terms of the options ``question`` closes with after a dash or colon
    (:data:`_OPTIONS`), those it names nowhere else; none where it closes with fewer than
    two such terms."""
    found = _OPTIONS.search(question)
    if found is None:
        return frozenset()
    items = [i.split() for i in _OPTION_SEPARATORS.split(found.group(1))]
    items = [i for i in items if i]
    if len(items) < 2 or any(len(i) > _OPTION_WORDS for i in items):
        return frozenset()  # no list of options, but a question going on after a dash
    before = set(search_terms(question[: found.start()]))
    terms = {
        t
        for t in search_terms(_singular_capitals(found.group(1)))
        if not _frame(t) and t not in before
    }
    return frozenset(terms) if len(terms) >= 2 else frozenset()


def question_weights(question: str, statistics: StatisticsFor) -> dict[str, float]:
    """The question's index terms with their IDF weights (see the module docstring for the
    CJK back-off, the asker's circumstance, words of change and closing options). Empty
    when the question has no term."""
    options = option_terms(question)
    question = _HOW_FORM.sub(r"\1", _HOW_DOES_IT_WORK.sub(r"\1", question))
    question = _WHAT_FORM.sub(r"\1", question)
    question = _singular_capitals(_LATIN_ABBREVIATION.sub(" ", question))
    names = {t for word in _CAPITALS.findall(question) for t in search_terms(word)}
    terms = [
        t
        for t in kana_free(search_terms(question))
        if (not _frame(t) or t in names) and t not in options
    ]
    own = _OWN_CIRCUMSTANCE.search(question)
    circumstance = set(search_terms(own.group(1))) if own else set()
    circumstance -= set(search_terms(question[: own.start()])) if own else set()
    change = sorted(_CHANGE_TERMS) if any(t in _CHANGE_TERMS for t in terms) else []
    pairs = (ch for t in terms if is_cjk_pair(t) for ch in t)
    found = statistics([*terms, *pairs, *change, *sorted(options)])
    stats = TermStatistics(max(found.chunks, _MIN_CHUNKS), found.df)
    weights: dict[str, float] = {}
    for group, members in ((CHANGE, change), (OPTIONS, options)):
        if members:
            # As common as all its words together: a passage holding any of them holds it.
            df = min(stats.chunks, sum(stats.df.get(t, 0) for t in members))
            weights[group] = TermStatistics(stats.chunks, {group: df}).idf(group)
    for term in terms:
        if term in _CHANGE_TERMS:
            continue
        if is_cjk_pair(term) and stats.df.get(term, 0) == 0:
            for ch in term:
                if not _frame(ch):
                    weights.setdefault(ch, stats.idf(ch))
        elif term in _WHEN_WORDS and stats.df.get(term, 0) == 0:
            continue
        elif term in circumstance and stats.df.get(term, 0) > 0:
            weights[term] = _CIRCUMSTANCE_WEIGHT * stats.idf(term)
        else:
            weights[term] = stats.idf(term)
    return weights


def _groups_held(held: set[str], options: frozenset[str]) -> set[str]:
    """``held`` with the terms standing for a group of the question's words (words of
    change, its closing options) where it holds one of them."""
    if held & _CHANGE_TERMS:
        held.add(CHANGE)
    if held & options:
        held.add(OPTIONS)
    return held


def _held(snippet: Snippet, compounds: Mapping[str, set[str]], options: frozenset[str]) -> set[str]:
    """The index terms a reader of the snippet sees: its title, file name, locator and
    text, with each of ``compounds`` (the question's words written as one → the two words)
    whose term it holds or writes open. The file name is the organisation's own name for
    the document ("konica-minolta-fy2023-overview.md" beside a title in Japanese)."""
    name = file_name_words(snippet.uri)
    text = _singular_capitals(f"{snippet.title}\n{name}\n{snippet.locator}\n{snippet.text}")
    held = _groups_held(set(document_terms(text)), options)
    held.update(joined for _, _, joined in word_pairs(text) if joined in compounds)
    for joined, parts in compounds.items():
        if joined in held:
            held |= parts
    return held


def _compounds(question: str, weights: Mapping[str, float]) -> dict[str, set[str]]:
    """Every term the question holds as one word or as two, with its parts as the weights
    count them: "set up" gives ``setup → {set, up}``, "login" gives ``login → {login}``."""
    out: dict[str, set[str]] = {t: {t} for t in weights}
    for first, second, joined in word_pairs(question):
        out.setdefault(joined, set()).update(t for t in (first, second) if t in weights)
    return out


def _stated(held: set[str], used: Sequence[Used]) -> set[str]:
    """``held`` with the terms of each question phrase whose equivalent it states in full:
    a snippet saying "preserve all records" holds "litigation hold" when the organisation
    says the two are one (``[retrieval.synonyms]``). A CJK phrase also lends its
    characters, which the weights use for pairs no readable chunk holds."""
    out = set(held)
    for use in used:
        if any(equivalent <= held for equivalent in use.equivalents):
            out |= use.terms
            out.update(ch for t in use.terms if is_cjk_pair(t) for ch in t)
    return out


def _in_one_sentence(
    text: str,
    weights: Mapping[str, float],
    total: float,
    used: Sequence[Used],
    options: frozenset[str] = frozenset(),
) -> list[str]:
    """The sentences of ``text`` that each hold most of the question's IDF mass (more than
    :data:`_TOGETHER`): "C. Mailing cost associated with filing travel vouchers …" for
    "Can I claim the cost of mailing my travel voucher?"."""
    out = []
    for sentence in split_sentences(text):
        terms = _groups_held(set(document_terms(_singular_capitals(sentence))), options)
        held = _stated(terms, used) & weights.keys()
        if _share(weights, total, held) > _TOGETHER:
            out.append(sentence)
    return out


#: The share of the question's IDF mass one sentence must hold for :func:`_in_one_sentence`.
_TOGETHER = 0.7


def _share(weights: Mapping[str, float], total: float, held: set[str]) -> float:
    return sum(weights[t] for t in held) / total if total > 0.0 else 0.0


#: A word by which an asking sentence points back at the story told before it ("Is that
#: allowed?", "Can I use it for this?").
_POINTS_BACK = re.compile(r"\b(?:that|this|it|these|those|they|them)\b", re.IGNORECASE)
# "…, and which series does that touch?": a second question joined to the first after a
# comma ("Which benefits are reimbursable and are taxed?" asks one thing).
# "…, and since I'm billable, is HR Links the only place …?": the same, after a clause
# saying why.
_AND_ASKS = re.compile(
    rf",\s+and\s+(?:(?:since|as|because|if|given)\s[^,?]{{1,60}},\s+)?(?=(?:{ASK_WORDS})\s)",
    re.IGNORECASE,
)
_ASKS = ASKING  # a sentence that asks, with its question mark or without


def _sentences(question: str) -> list[str]:
    return [p.strip() for p in split_sentences(question.strip()) if p.strip()]


# A phrase of two words or more the question quotes ("Someone brought up 'terminal annual
# leave' at my retirement meeting. What does that actually mean?"): what it asks about.
_QUOTED = re.compile(r"""(?:^|(?<=[\s(]))['‘"“]([^'‘’"“”]+?\s[^'‘’"“”]+?)['’"”](?=[\s.,;:?!)]|$)""")


def told_then_asked(question: str) -> str | None:
    """What ``question`` asks after the story it tells first, in sentences of their own
    ("My grandfather passed away last week and I'm helping plan the funeral. Can I charge
    that time to my sick leave, and how much of it can I use for this?" → from "Can I" on);
    ``None`` where it tells nothing first. Every sentence from the first that asks is the
    ask ("… I'm out of leave. how do I sign up for VLTP? what are the steps")."""
    parts = _sentences(question)
    first = next((i for i, p in enumerate(parts) if _ASKS.match(p)), None)
    if not first:  # none asks, or the first does: no story
        return None
    # what follows the ask without asking ("A list is fine.") is said about the answer
    return " ".join(p for p in parts[first:] if _ASKS.match(p))


#: The asks of one question judged alone at most (each is an embedder call).
_MOST_ASKS = 4


def asked_clauses(question: str) -> list[str]:
    """The questions ``question`` asks that can be judged on their own, each sentence that
    asks and each question it joins with ", and" ("Why did they strip Fannie Mae out of
    the outlays, and which series does that touch?" → the why), or none where it asks one
    thing. Each is judged alone where the whole is refused: the words of the second half
    ("series", "touch") are not the passage's, which answers the first in full. A later
    question pointing back at the first (:data:`_POINTS_BACK`) is not one of them: alone,
    "what command runs them?" after "Does the repo come with automated tests" asks about
    commands and running, which a README's install steps hold."""
    parts = [
        clause.strip(" ,;")
        for sentence in _sentences(question)
        if _ASKS.match(sentence)  # "My manager is in Denver." asks nothing
        for clause in _AND_ASKS.split(sentence)
    ]
    parts = list(dict.fromkeys(p for p in parts if any(ch.isalnum() for ch in p)))
    if len(parts) < 2:
        return []
    later = [p for p in parts[1:] if not _POINTS_BACK.search(p)]
    return (parts[:1] + later)[:_MOST_ASKS]


@dataclass(frozen=True, slots=True)
class Judgement:
    snippet: Snippet
    coverage: float  # of the snippet's document (see RelevanceGate.judge)
    cosine: float | None
    relevant: bool
    snippet_holds_terms: bool


#: Coverage at which a document holds every weighed word of the question.
_WHOLE = 0.999
#: The sentences of one snippet the gate reads at most (a chunk holds a dozen or so).
_SENTENCES_READ = 24
#: How far below the nearest snippet in doubt another may be and still be taken with it.
_NEAREST_MARGIN = 0.005


class RelevanceGate:
    """Judges snippets against one question under :class:`RelevanceSettings`."""

    def __init__(self, settings: RelevanceSettings, synonyms: Synonyms = NO_SYNONYMS) -> None:
        self.settings = settings
        self.synonyms = synonyms

    def judge(
        self,
        question: str,
        snippets: Sequence[Snippet],
        statistics: StatisticsFor,
        cosines: Mapping[str, float] | None = None,
        similarity: Similarity | None = None,
        sentences: Similarity | None = None,
        context: Mapping[str, float] | None = None,
        synonyms: Synonyms | None = None,
    ) -> list[Judgement]:
        """One judgement per snippet, in order. ``cosines`` maps chunk ids to the
        question's embedding cosine (ignored for a mostly-CJK question or snippet:
        :func:`_embedder_reads`). ``similarity`` (a multilingual model) reads, where none
        of the snippets passes, the mostly-CJK question's snippets (or any question's
        mostly-CJK ones) whose coverage falls short of ``min_coverage_cjk`` but
        reaches ``min_coverage_cjk_with_cosine`` and that hold a term naming what is asked,
        not only when (:func:`_names_what`); the nearest passes (:meth:`_read_in_doubt`). A
        RESTRICTED snippet is never shown to it.
        ``sentences`` (the embedder), for any other question none of whose snippets passes,
        reads the sentences of those that hold its terms, reach ``min_coverage_with_cosine``
        and fall short on the cosine: the best sentence's cosine stands for the chunk's where
        it is higher (see :meth:`_read_sentences`); never a RESTRICTED snippet's.

        Coverage is counted per document, over all of its snippets here: a question is
        often answered across two sections of one document (the escalation rule in one,
        the priority it applies to in another). A snippet that holds none of the
        question's terms is never relevant, whatever its document's coverage, and neither is
        one that holds no word of change when the question asks about a change.

        ``context``: the weights of the words around ``question`` where it is one ask of a
        longer question (the story told before it, the other asks). A snippet holding them
        holds that much more of the question, up to all of it; one lacking them lacks
        nothing: they tell the circumstances, not what is asked.

        ``synonyms`` stands for the gate's own equivalences in this judgement (a question
        read in another language brings its words' other renderings)."""
        weights = question_weights(question, statistics)
        around = {t: w for t, w in (context or {}).items() if t not in weights}
        total = sum(weights.values())
        cjk = cjk_share(question) > 0.5
        use_cosine = cosines is not None and not cjk
        used = (self.synonyms if synonyms is None else synonyms).used(question)
        compounds = _compounds(question, weights)
        options = option_terms(question)
        seen = [_stated(_held(s, compounds, options), used) for s in snippets]
        held = [terms & weights.keys() for terms in seen]
        by_document: dict[str, set[str]] = {}
        for snippet, terms in zip(snippets, seen, strict=True):
            by_document.setdefault(snippet.doc_id, set()).update(terms & (weights | around).keys())
        out: list[Judgement] = []
        doubt: list[int] = []  # a CJK question's snippets for the multilingual model
        diluted: list[int] = []  # the snippets whose cosine alone fell short
        floor = self.settings.min_coverage_cjk_with_cosine
        across = [not cjk and not _embedder_reads(s.text) for s in snippets]
        chunk = [
            cosines.get(s.chunk_id) if use_cosine and cosines and not a else None
            for s, a in zip(snippets, across, strict=True)
        ]
        near = self._with_sentences_together(
            question, snippets, chunk, weights, used, sentences, options
        )
        for snippet, terms, cosine, other in zip(snippets, held, near, across, strict=True):
            coverage = min(1.0, _share(weights | around, total, by_document[snippet.doc_id]))
            # A question about a change is answered by a passage that says one happened.
            says_change = CHANGE not in weights or CHANGE in terms
            relevant = (
                bool(terms) and says_change and self.decide(coverage, cosine, cjk=cjk or other)
            )
            out.append(Judgement(snippet, coverage, cosine, relevant, bool(terms)))
            if (
                (cjk or other)
                and _names_what(terms)
                and says_change
                and not relevant
                and coverage >= floor
            ):
                doubt.append(len(out) - 1)
            elif (
                cosine is not None
                and terms
                and says_change
                and not relevant
                and coverage >= self.settings.min_coverage_with_cosine
            ):
                diluted.append(len(out) - 1)
        if similarity is not None and doubt and not any(j.relevant for j in out):
            # Only against a refusal: where a passage holds the question's words, it is the
            # answer, and one merely near it in meaning (the October sales minutes beside
            # the pipeline sheet) would only add noise.
            out = self._read_in_doubt(question, out, doubt, similarity)
        if sentences is not None and diluted and not any(j.relevant for j in out):
            out = self._read_sentences(question, out, diluted, sentences)
        if sentences is not None and not cjk and not any(j.relevant for j in out) and not around:
            whole = {**weights, **(context or {})}
            ask = told_then_asked(question)
            if ask is not None:
                out = self._judge_the_ask(ask, out, statistics, similarity, sentences, whole)
            for clause in [*asked_clauses(ask or question), *_QUOTED.findall(question)]:
                if any(j.relevant for j in out):
                    break
                out = self._judge_the_ask(clause, out, statistics, similarity, sentences, whole)
        return out

    def _judge_the_ask(
        self,
        ask: str,
        judged: list[Judgement],
        statistics: StatisticsFor,
        similarity: Similarity | None,
        sentences: Similarity,
        whole: Mapping[str, float],
    ) -> list[Judgement]:
        """``judged``, or where a snippet bears on the question sentence ``ask`` alone, the
        judgement of ``ask``: its own weights and its own cosines, the rest of the question
        (``whole``'s other words) counting only where a snippet holds it (the embedder reads the
        snippets against it; never a RESTRICTED one, which is judged on coverage). Asked "I've
        been here two years and I'm resigning. Do I have to pay anything to keep my laptop?",
        the asker's years and resignation held half the weight, and the buy-back policy that
        answers ("one calendar year or more … keep their device at no cost") was refused.

        An ask that points back at the story and names one thing at most is not judged
        alone (:data:`_POINTS_BACK`): "Is that allowed?" after "I'd like to fly business
        class and pay the difference myself" asks about the story, and alone it is about
        "allowed", which a timekeeping passage on allowable costs holds whole."""
        own = question_weights(ask, statistics)
        if not own or (_POINTS_BACK.search(ask) and len(own) < 2):
            return judged
        snippets = [j.snippet for j in judged]
        # A snippet holding none of the question's terms holds none of the ask's either.
        shown = [
            i
            for i, (s, j) in enumerate(zip(snippets, judged, strict=True))
            if j.snippet_holds_terms
            and not is_restricted(s.sensitivity)
            and _embedder_reads(s.text)
        ]
        if not shown:
            return judged
        passages = [f"{snippets[i].title}\n{snippets[i].text}" for i in shown]
        try:
            near = sentences.similarity(ask, passages)
        except EmbeddingError as exc:  # the judgement of the whole question stands
            log.warning("embedder unavailable for the relevance gate: %s", exc.message)
            return judged
        cosines = {snippets[i].chunk_id: c for i, c in zip(shown, near, strict=True)}
        again = self.judge(ask, snippets, statistics, cosines, similarity, sentences, whole)
        return again if any(j.relevant for j in again) else judged

    @staticmethod
    def _with_sentences_together(
        question: str,
        snippets: Sequence[Snippet],
        cosines: Sequence[float | None],
        weights: Mapping[str, float],
        used: Sequence[Used],
        sentences: Similarity | None,
        options: frozenset[str] = frozenset(),
    ) -> list[float | None]:
        """Each snippet's cosine, but where one of its sentences holds most of the question's
        IDF mass (:func:`_in_one_sentence`). The question's words standing together in one
        sentence are the evidence a cosine over the whole chunk only approximates, and a
        long chunk (a list of a dozen expenses) dilutes; that sentence's own cosine, where
        higher, says whether it is about the question or merely shares its words. Every such
        sentence is embedded in one call. Judged on coverage alone (``None``) without an
        embedder, for a RESTRICTED snippet (never embedded), or when the embedder fails."""
        total = sum(weights.values())
        together = [
            _in_one_sentence(s.text, weights, total, used, options) if c is not None else []
            for s, c in zip(snippets, cosines, strict=True)
        ]
        out = [None if t else c for t, c in zip(together, cosines, strict=True)]
        read = [
            i
            for i, t in enumerate(together)
            if t and sentences is not None and not is_restricted(snippets[i].sensitivity)
        ]
        if not read or sentences is None:
            return out
        try:
            near = iter(sentences.similarity(question, [t for i in read for t in together[i]]))
        except EmbeddingError as exc:  # judged on coverage, as without an embedder
            log.warning("embedder unavailable for the relevance gate: %s", exc.message)
            return out
        for i in read:
            best = max(next(near) for _ in together[i])
            chunk = cosines[i]
            out[i] = best if chunk is None else max(chunk, best)
        return out

    def _read_sentences(
        self,
        question: str,
        judged: list[Judgement],
        diluted: Sequence[int],
        sentences: Similarity,
    ) -> list[Judgement]:
        """``judged`` with each snippet in ``diluted`` judged again on the cosine of its
        sentence closest to the question, where that is higher than the whole chunk's. A
        question worded as people ask it ("Am I allowed to move to another country and keep
        working for the company?") is near the one sentence answering it ("You can work from
        anywhere, but please be sure to inform your People Ops team when you move – especially
        across state or country borders."), and far from the paragraph about the distributed
        company that the hybrid search embedded with it (cosine 0.45, against 0.58).
        Only sentences of four words or more count, at most :data:`_SENTENCES_READ` of each
        snippet; a RESTRICTED snippet is never read, whatever ``diluted`` holds."""
        shown = [i for i in diluted if not is_restricted(judged[i].snippet.sensitivity)]
        parts = {
            i: [t for t in split_sentences(judged[i].snippet.text) if len(t.split()) >= 4][
                :_SENTENCES_READ
            ]
            for i in shown
        }
        passages = [t for i in shown for t in parts[i]]
        if not passages:
            return judged
        try:
            cosines = iter(sentences.similarity(question, passages))
        except EmbeddingError as exc:
            log.warning("embedder unavailable for the relevance gate: %s", exc.message)
            return judged
        out = list(judged)
        for i in shown:
            best = max((next(cosines) for _ in parts[i]), default=None)
            j = judged[i]
            if best is None or j.cosine is None or best <= j.cosine:
                continue
            out[i] = Judgement(
                j.snippet, j.coverage, best, self.decide(j.coverage, best), j.snippet_holds_terms
            )
        return out

    def _read_in_doubt(
        self,
        question: str,
        judged: list[Judgement],
        doubt: Sequence[int],
        similarity: Similarity,
    ) -> list[Judgement]:
        """``judged`` with each snippet in ``doubt`` (a CJK question's snippet, or any
        question's mostly-CJK one, that holds
        some of its terms naming what is asked (:func:`_names_what`), says a change where
        one is asked, and whose document's coverage
        reaches ``min_coverage_cjk_with_cosine`` but not ``min_coverage_cjk``) judged by
        ``similarity`` too: of those whose cosine reaches ``min_cosine_cjk``, the nearest the
        question is relevant (with any within :data:`_NEAREST_MARGIN` of it). The model
        ranks what the characters could not, and places every passage about the question's
        topic near it: asked when statutory annual leave starts, the leave overview (0.877),
        the jury-duty pay (0.865) and the maternity leave (0.869) all reach the threshold,
        and only the first answers. A RESTRICTED snippet is never read, whatever ``doubt``
        holds."""
        s = self.settings
        shown = [i for i in doubt if not is_restricted(judged[i].snippet.sensitivity)]
        if not shown:
            return judged
        passages = [f"{judged[i].snippet.title}\n{judged[i].snippet.text}" for i in shown]
        try:
            cosines = dict(zip(shown, similarity.similarity(question, passages), strict=True))
        except EmbeddingError as exc:
            # A model that cannot run adds nothing: the coverage judgement stands (closed).
            log.warning("multilingual relevance model unavailable: %s", exc.message)
            return judged
        top = max(cosines.values())
        out = list(judged)
        for i, cosine in cosines.items():
            j = judged[i]
            relevant = cosine >= s.min_cosine_cjk and cosine >= top - _NEAREST_MARGIN
            out[i] = Judgement(j.snippet, j.coverage, cosine, relevant, j.snippet_holds_terms)
        return out

    def decide(self, coverage: float, cosine: float | None, *, cjk: bool = False) -> bool:
        s = self.settings
        if cjk:
            # Character pairs match by chance more often than words: a sales meeting's
            # minutes mentioning the board meeting share 取締役会 and 議事録 with a
            # question for the board's minutes (coverage 0.65).
            return coverage >= s.min_coverage_cjk
        if cosine is None or coverage >= _WHOLE:
            # A document holding every word the question asks about is judged on that: the
            # cosine of a short question ("How much did outlays grow?") to a long passage
            # is low however well the passage answers it.
            return coverage >= s.min_coverage
        if cosine >= s.near_cosine:
            # The embedder places the passage this near the question: it says what is asked
            # in words of its own ("continue to accrue holiday" to "Do I keep earning
            # holiday while I'm on unpaid leave?", coverage 0.37, cosine 0.72).
            return coverage >= s.min_coverage_near
        return (
            coverage >= s.min_coverage_with_cosine
            and coverage + s.cosine_weight * cosine >= s.min_score
        )
