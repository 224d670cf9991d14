"""A misspelt word of a question is read as a word of the caller's readable chunks, and
only of those (clearance.retrieval.spelling).

The unit tests drive :class:`Speller` with statistics written by hand (the seam: what the
store would count under the caller's filter). The end-to-end tests ask a real engine on
both backends: the answer says how the question was read, and it is the same before and
after documents the caller may not read, or a RESTRICTED one the caller may view, are
added. The reverse proof reads the vocabulary of every document instead, and the same
comparison must catch it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clearance.access.realtime import FakePermissionChecker
from clearance.answer import orchestrator
from clearance.answer.result import AnswerResult, Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.model import Sensitivity
from clearance.retrieval.spelling import Correction, Speller, corrected, statement
from clearance.store.base import TermStatistics
from clearance.store.sqlite import SQLiteStore

# --------------------------------------------------------------------------- unit


def held(df: Mapping[str, int], chunks: int = 100) -> Callable[[Sequence[str]], TermStatistics]:
    """Statistics of a caller whose readable chunks hold the index terms of ``df``."""

    def statistics(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(chunks, {t: df[t] for t in terms if t in df})

    return statistics


def readings(question: str, df: Mapping[str, int], **kw: Any) -> list[tuple[str, str]]:
    speller = Speller(kw.pop("keep", ()))
    return [(c.written, c.read_as) for c in speller.corrections(question, held(df, **kw))]


def test_a_misspelt_word_is_read_as_the_word_the_readable_chunks_hold() -> None:
    df = {"telework": 4, "agreement": 3, "approv": 2}
    assert readings("Who approves teleworck agreemnts?", df) == [
        ("teleworck", "telework"),
        ("agreemnts", "agreements"),
    ]


def test_a_british_spelling_is_read_as_the_american_one_the_documents_use() -> None:
    """The English word list is American: "behaviour" and "organisation" are not in it, and
    one edit away are the words an American handbook uses."""
    df = {"behavior": 3, "organiz": 2, "defens": 1}
    assert readings("Code of behaviour for the organisation's defence team", df) == [
        ("behaviour", "behavior"),
        ("organisation", "organization"),
        ("defence", "defense"),
    ]


def test_a_word_some_readable_chunk_holds_is_never_read_as_another() -> None:
    # "telework" is no English word, but the documents hold it.
    assert readings("telework agreements", {"telework": 1, "teleworks": 9}) == []


def test_an_english_word_the_documents_lack_stays_as_asked() -> None:
    """ "pets" is one edit from "pens" and "apple" from "apply": the question asks about
    something the caller's documents do not hold, and the refusal must stay honest."""
    assert readings("What is our policy on pets?", {"pen": 5}) == []
    assert readings("What was Apple's revenue?", {"appli": 9, "revenu": 3}) == []


def test_no_reading_without_a_readable_word_one_edit_away() -> None:
    assert readings("What is the zephyrion plan?", {"plan": 3}) == []
    # two edits away ("tlewrk"), and nothing readable at all
    assert readings("the tlewrk rules", {"telework": 3, "rule": 1}) == []
    assert readings("teleworck", {}, chunks=0) == []


@pytest.mark.parametrize(
    "question",
    [
        "Is TELWORK allowed?",  # capitals: an acronym or a code, meant as written
        "What about wfhh?",  # four letters: too many words are one edit from it
        "Why couldn't I?",  # a contraction, not "could" misspelt
        "the abc123teleworck code",  # part of a code
        "mail jsmith@acme.com or tsmith",  # an address
        "mail jsmithh+hr@acme.com",  # ... and a part of one
        "see hr/teleworck.md and teleworck_v2",  # a path and a name
        "see https://intranet/teleworck-polcy now",  # a link
        "https://x/search?q=teleworck",
        "teleworck.pdf",  # a file
    ],
)
def test_words_meant_as_written_are_not_read_as_others(question: str) -> None:
    df = {"telework": 4, "wfh": 2, "could": 9, "smith": 3}
    assert readings(question, df) == []


@pytest.mark.parametrize(
    "question",
    ["...teleworck", "(teleworck)", "Is it teleworck?", "“teleworck”, then", "x-teleworck"],
)
def test_a_word_in_a_sentence_s_punctuation_is_read(question: str) -> None:
    assert readings(question, {"telework": 4}) == [("teleworck", "telework")]


def test_configured_names_are_kept_as_written() -> None:
    df = {"nimbus": 4}
    assert readings("What is Nimbuss?", df) == [("nimbuss", "nimbus")]
    assert readings("What is Nimbuss?", df, keep=["Nimbuss Cloud"]) == []


def test_the_candidate_most_readable_chunks_hold_wins_then_the_commoner_word() -> None:
    # "banfs" is one edit from "bands" and from "banks": the documents decide first ...
    assert readings("the banfs rate", {"band": 2, "bank": 7}) == [("banfs", "banks")]
    assert readings("the banfs rate", {"band": 7, "bank": 2}) == [("banfs", "bands")]
    # ... and English frequency breaks a tie: "house" is commoner than "horse"
    assert readings("the hoyse rules", {"hous": 2, "hors": 2}) == [("hoyse", "house")]


def test_the_first_letter_is_kept() -> None:
    """People rarely slip on a word's first letter: "anual" is "annual", even where the
    documents say "manual" more often, and "unvested" is never "invested"."""
    assert readings("Who approves anual leave?", {"annual": 3, "manual": 10}) == [
        ("anual", "annual")
    ]
    assert readings("the unvested shares", {"invest": 5, "share": 2}) == []


def test_two_common_words_written_as_one_are_meant_as_written() -> None:
    """A caller whose documents never say "frontend" must not see it read as "fronted"
    (an "n" taken out as a stray letter); a slip that splits into rare words ("subnit":
    "sub", "nit"), or into common ones by a letter left out ("agreemet"), is still read."""
    df = {"front": 4, "codebas": 1, "submit": 3, "time": 2, "agreement": 2}
    assert readings("Which frontend codebase or timesheet?", df) == []
    assert readings("How do I subnit it?", df) == [("subnit", "submit")]
    # two common words too ("agree", "met"), but a letter left out, not one added
    assert readings("the agreemet", df) == [("agreemet", "agreement")]


def test_a_contraction_without_its_apostrophe_is_not_read() -> None:
    df = {"want": 9, "there": 9, "haven": 9, "approv": 2}
    for question in ("It wasnt approved", "theyre approved", "havent approved"):
        assert readings(question, df) == [], question


def test_the_word_shown_is_one_a_readable_chunk_writes() -> None:
    """ "teleworke" and "telework" share an index term; a chunk holding it writes the one
    shown. Without such a chunk, an English word, else the likelier slip."""

    def texts(word: str) -> list[str]:
        return ["Telework agreements and Kubernetes clusters are approved."]

    df = {"telework": 3, "kubernet": 2}
    found = Speller().corrections("teleworkx and kubernetex", held(df), texts)
    assert [(c.written, c.read_as) for c in found] == [
        ("teleworkx", "telework"),
        ("kubernetex", "kubernetes"),
    ]
    # No chunk writing one of them ("teleworking" only): the term itself where it is one,
    # not the likelier slip ("teleworke", "teleworks").
    only_inflected = Speller().corrections(
        "teleworkx", held(df), lambda word: ["Teleworking agreements"]
    )
    assert only_inflected == (Correction("teleworkx", "telework"),)
    assert readings("teleworkx", df) == [("teleworkx", "telework")]


def test_a_reading_is_a_word_not_an_index_term_another_word_shares() -> None:
    """ "ince" is one edit from "incme" and shares the index term "inc" with "Netflix,
    Inc.", which far more chunks hold than "income": it is no word, so "income" is read,
    and with no word one edit away nothing is."""
    df = {"inc": 40, "incom": 6}
    texts = {"inc": ["Netflix, Inc. reported revenues."], "incom": ["Operating income rose."]}
    found = Speller().corrections(
        "What was the operating incme?", held(df), lambda word: texts[word[:3]]
    )
    assert found == (Correction("incme", "income"),)
    assert readings("What was the operating incme?", {"inc": 40}) == []


@pytest.mark.parametrize(
    "question",
    [
        "Est-ce que le SNC offre une prime aux bogues ?",
        "¿Cómo solicito las vacaciones para la próxima semana?",
        "Wie beantrage ich Urlaub für die nächste Woche?",
    ],
)
def test_a_question_in_another_language_is_read_as_written(question: str) -> None:
    df = {"offer": 3, "solicit": 2, "vacat": 2, "beantragt": 1, "urlaub": 1, "woch": 1}
    assert readings(question, df) == []


def test_an_english_question_with_a_foreign_name_in_it_is_still_read() -> None:
    assert readings("El Paso office parkng", {"park": 3}) == [("parkng", "parking")]


def test_an_english_question_quoting_another_language_is_still_read() -> None:
    df = {"offer": 3, "polici": 2}
    assert readings("What does the 'prime aux bogues' pollicy offer?", df) == [
        ("pollicy", "policy")
    ]


def test_at_most_three_words_are_read_and_candidates_stay_bounded() -> None:
    calls: list[int] = []
    statistics = held({"telework": 3, "agreement": 2, "approv": 1, "supervisor": 1, "form": 1})

    def counting(terms: Sequence[str]) -> TermStatistics:
        calls.append(len(terms))
        return statistics(terms)

    question = "teleworck agreemnts approvess supervisr formms " * 40
    found = Speller().corrections(question, counting)
    assert [c.written for c in found] == ["teleworck", "agreemnts", "approvess"]
    assert len(calls) == 2 and calls[1] < 3 * 60 * len("approvess")


def test_among_words_of_one_index_term_the_likelier_slip_is_shown() -> None:
    """ "zephyrion" and "zephyrione", "quillfeather" and "quillfeath" are one index term
    each: the reading shown is the one a likelier slip explains."""
    assert readings("the zephyrionn plan", {"zephyrion": 1}) == [("zephyrionn", "zephyrion")]
    found = Speller().corrections(
        "the quillfeathr deal", held({"quillfeath": 1}), lambda word: ["Quillfeather's deal."]
    )
    assert found == (Correction("quillfeathr", "quillfeather"),)
    assert readings("the telewokr rules", {"telework": 1}) == [("telewokr", "telework")]


def test_a_misspelt_stopword_counts_as_held_by_every_readable_chunk() -> None:
    assert readings("Whcih forms do I need?", {"form": 2}) == [("whcih", "which")]
    assert readings("Whcih forms do I need?", {"form": 2}, chunks=0) == []
    # only a stopword itself, not a word that stems to one: "beings" is no stopword
    assert readings("When does it beigns?", {"begin": 2}) == [("beigns", "begins")]


def test_each_misspelt_word_is_read_once_and_statistics_asked_twice_at_most() -> None:
    calls: list[list[str]] = []
    statistics = held({"telework": 3})

    def counting(terms: Sequence[str]) -> TermStatistics:
        calls.append(list(terms))
        return statistics(terms)

    found = Speller().corrections("teleworck, Teleworck and TELEWORK teleworck", counting)
    assert found == (Correction("teleworck", "telework"),)
    assert len(calls) == 2
    # A word the chunks hold is counted once; a question of English words asks nothing.
    calls.clear()
    assert Speller().corrections("telework rules", counting) == ()
    assert calls == [["telework"]]
    calls.clear()
    assert Speller().corrections("Who approves remote working agreements?", counting) == ()
    assert calls == []


def test_the_question_is_rewritten_in_the_case_it_was_written_in() -> None:
    found = (Correction("compyuting", "computing"), Correction("intellkgent", "intelligent"))
    assert (
        corrected("More Personal Compyuting and intellkgent cloud, compyuting.", found)
        == "More Personal Computing and intelligent cloud, computing."
    )
    assert corrected("unchanged", ()) == "unchanged"
    twin = (Correction("teleworck", "telework"),)
    assert corrected("Is TELEWORCK as teleworck?", twin) == "Is TELEWORCK as telework?"


def test_the_statement_names_every_reading() -> None:
    assert statement(()) == ""
    assert statement((Correction("anual", "annual"),)) == "Read “anual” as “annual”."
    three = (Correction("a1aaa", "b"), Correction("c1ccc", "d"), Correction("e1eee", "f"))
    assert statement(three) == "Read “a1aaa” as “b”, “c1ccc” as “d” and “e1eee” as “f”."


# --------------------------------------------------------------------------- end to end

READABLE = {
    "telework.md": "# Telework\n\nTelework agreements are approved by the second-level "
    "supervisor and sent to the regional coordinator.",
    "leave.md": "# Annual leave\n\nAnnual leave is approved by the immediate supervisor.",
}
# Words only documents the asker may not retrieve hold: a team's own, and a RESTRICTED
# board note the asker may view (RESTRICTED text is never retrieved for an answer).
HIDDEN = {
    "launch.md": ("group:launch", "INTERNAL", "The Zephyrion launch is approved for March."),
    "board.md": ("group:staff", "RESTRICTED", "The Quillfeather acquisition was approved."),
}
QUESTIONS = [
    "Who approves teleworck agreemnts?",
    "When is the Zephyrionn launch?",  # one edit from a word only the hidden team doc holds
    "Who approved the Quillfeathr acquisition?",  # ... and only the RESTRICTED one
    "Who approves anual leave?",
]


def write(root: Path, files: Mapping[str, str], meta: Mapping[str, Any]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "_meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return root


@pytest.fixture
def engine(
    tmp_path: Path,
    settings: Settings,
    backend_store: Any,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    app = Clearance(settings, backend_store, embedder=None)
    corpus = write(tmp_path / "handbook", READABLE, {"acl": ["group:staff"]})
    assert app.ingest([corpus]).failed == []
    app.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
    yield app


def add_hidden(app: Clearance, root: Path) -> None:
    for name, (acl, sensitivity, text) in HIDDEN.items():
        folder = write(root / name.removesuffix(".md"), {name: text}, {"acl": [acl]})
        meta = {"sensitivity": sensitivity}
        (folder / f"{name}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
        assert app.ingest([folder]).failed == []


def shown(result: AnswerResult) -> dict[str, Any]:
    out = result.to_dict()
    out.pop("trace_id")
    return out


def test_the_answer_says_how_the_question_was_read(engine: Clearance) -> None:
    result = engine.ask("Who approves teleworck agreemnts?", "ana")

    assert result.status is Status.ANSWERED
    assert result.answer.startswith(
        "Read “teleworck” as “telework” and “agreemnts” as “agreements”."
    )
    assert [c.to_dict() for c in result.corrections] == [
        {"written": "teleworck", "read_as": "telework"},
        {"written": "agreemnts", "read_as": "agreements"},
    ]
    assert [c.doc_id for c in result.citations] == ["files:telework.md"]
    assert AnswerResult.from_dict(result.to_dict()).corrections == result.corrections
    trace = engine.trace_log().entries(limit=1)[0]
    assert trace["filter_counts"]["spelling_read"] == 2


def test_a_question_spelt_right_is_answered_as_before(engine: Clearance) -> None:
    result = engine.ask("Who approves telework agreements?", "ana")
    assert result.status is Status.ANSWERED
    assert result.corrections == ()
    assert not result.answer.startswith("Read")


def test_readings_are_the_same_whether_or_not_hidden_documents_exist(
    engine: Clearance, tmp_path: Path
) -> None:
    before = [shown(engine.ask(q, "ana")) for q in QUESTIONS]
    add_hidden(engine, tmp_path / "hidden")
    after = [shown(engine.ask(q, "ana")) for q in QUESTIONS]

    assert after == before
    # The hidden words were never offered: neither question was read as another.
    assert before[1]["corrections"] == [] and before[2]["corrections"] == []
    assert before[3]["corrections"] == [{"written": "anual", "read_as": "annual"}]


@pytest.fixture
def every_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leaky speller: the vocabulary of every document, whoever may read it."""
    original = orchestrator.Orchestrator._read_spelling

    def leaky(self: orchestrator.Orchestrator, request: Any, entities: Sequence[str]) -> None:
        flt = request.flt
        assert flt is not None
        request.flt = replace(
            flt,
            principals=flt.principals | {"group:launch"},
            corpora=None,
            max_sensitivity=Sensitivity.RESTRICTED,
            require_ai_allowed=False,
        )
        try:
            original(self, request, entities)
        finally:
            request.flt = flt  # only the reading is leaky: retrieval keeps the caller's filter

    monkeypatch.setattr(orchestrator.Orchestrator, "_read_spelling", leaky)


def test_reverse_proof_a_speller_reading_every_document_is_caught(
    engine: Clearance, tmp_path: Path, every_document: None
) -> None:
    before = [shown(engine.ask(q, "ana")) for q in QUESTIONS]
    add_hidden(engine, tmp_path / "hidden")
    after = [shown(engine.ask(q, "ana")) for q in QUESTIONS]

    assert after != before
    assert after[1]["corrections"] == [{"written": "zephyrionn", "read_as": "zephyrion"}]
    assert after[2]["corrections"] == [{"written": "quillfeathr", "read_as": "quillfeather"}]


def test_a_reading_never_names_an_entity_the_scope_gate_did_not_see(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    backend_store: Any,
    write_directory: Callable[..., Path],
) -> None:
    settings = settings_factory({"scope": {"entities": {"Globex": []}}})
    app = Clearance(settings, backend_store, embedder=None)
    text = {"rivals.md": "Globex lowered its prices; our supervisor approves every discount."}
    assert app.ingest([write(tmp_path / "c", text, {"acl": ["group:staff"]})]).failed == []
    app.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))

    result = app.ask("What did Globexx charge for the disscount?", "ana")
    assert result.corrections == (Correction("disscount", "discount"),)
    assert "Globex " not in result.answer.replace("Globexx", "")


NIMBUS = "Nimbus is a rival of ours. Our revenue grew in FY2025, as the sales report says."


@pytest.fixture
def nimbus(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    backend_store: Any,
    write_directory: Callable[..., Path],
) -> Clearance:
    """Nimbus is out of scope, but ana's own notes name it: a narrative question about it
    may go on, a figure question may not (docs/answers.md)."""
    scope = {"entities": {"Nimbus": []}}
    settings = settings_factory({"scope": scope, "facts": {"metrics": {"revenue": []}}})
    app = Clearance(settings, backend_store, embedder=None)
    notes = write(tmp_path / "notes", {"rivals.md": NIMBUS}, {"acl": ["group:staff"]})
    assert app.ingest([notes]).failed == []
    app.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
    return app


def test_a_question_naming_an_entity_the_gate_let_through_is_read_as_asked(
    nimbus: Clearance,
) -> None:
    """Read as "revenue", the question would be a figure question about an out-of-scope
    entity, which the gate refuses when it is spelt right."""
    spelt = nimbus.ask("What was Nimbus revenue in FY2025?", "ana")
    assert spelt.status is Status.OUT_OF_SCOPE_ENTITY
    slipped = nimbus.ask("What was Nimbus revnue in FY2025?", "ana")
    assert slipped.corrections == ()
    assert slipped.route.value != "structured"


def test_reverse_proof_reading_past_the_gate_asks_a_figure_of_an_entity(
    nimbus: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = orchestrator.Orchestrator._read_spelling
    monkeypatch.setattr(
        orchestrator.Orchestrator,
        "_read_spelling",
        lambda self, request, entities: original(self, request, ()),
    )
    slipped = nimbus.ask("What was Nimbus revnue in FY2025?", "ana")
    assert slipped.corrections == (Correction("revnue", "revenue"),)
    assert slipped.route.value == "structured"


def realtime_engine(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: Any,
    write_directory: Callable[..., Path],
    secret: bool,
) -> Clearance:
    """A wiki ana reads, and an HR corpus checked with its source at query time, whose one
    document's source now denies ana (revoked there, not yet synced here); only with
    ``secret`` does that document hold the words "Zephyrion" and "Teleworks" (the wiki
    writes "Teleworking" only)."""
    realtime = {"realtime_check": True, "revocation_sla": "15m"}
    realtime["realtime"] = {"url": "http://127.0.0.1:9/never-called"}
    settings = settings_factory({"corpora": {"wiki": {}, "hr": realtime}})
    hr = "The Zephyrion layoffs and Teleworks pilot are planned." if secret else "Lunch is at noon."
    docs = {
        "wiki:1": ("wiki", "Teleworking agreements are approved by the supervisor."),
        "hr:1": ("hr", hr),
    }
    manifest = tmp_path / "manifest.jsonl"
    lines = [
        {"doc_id": d, "corpus": c, "title": "doc", "text": t, "acl": ["group:staff"]}
        for d, (c, t) in docs.items()
    ]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    setup = Clearance(settings, store, checkers={})
    assert setup.ingest([], manifest=manifest).failed == []
    setup.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
    denied = FakePermissionChecker({("ana", "hr:1"): False})
    return Clearance(settings, store, checkers={"hr": denied})


REALTIME_QUESTIONS = ["What about the Zephyrionn layoffs?", "Who approves teleworkx agreements?"]


def test_a_word_only_a_denied_realtime_document_holds_is_never_offered(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    write_directory: Callable[..., Path],
) -> None:
    answers = []
    for secret in (False, True):
        root = tmp_path / str(secret)
        root.mkdir()
        store = SQLiteStore(root / "index.db")
        try:
            app = realtime_engine(root, settings_factory, store, write_directory, secret)
            answers.append([shown(app.ask(q, "ana")) for q in REALTIME_QUESTIONS])
        finally:
            store.close()
    assert answers[0] == answers[1]
    assert answers[1][0]["corrections"] == []
    # the word shown is chosen from readable chunks only, not the denied "Teleworks"
    assert answers[1][1]["corrections"] == [{"written": "teleworkx", "read_as": "telework"}]


def test_reverse_proof_reading_unconfirmed_realtime_documents_offers_their_words(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        orchestrator.Orchestrator, "_confirmed_without_asking", lambda self, flt: flt
    )
    app = realtime_engine(tmp_path, settings_factory, store, write_directory, secret=True)
    result = app.ask(REALTIME_QUESTIONS[0], "ana")
    assert result.corrections == (Correction("zephyrionn", "zephyrion"),)
    assert result.status is not Status.ANSWERED  # retrieval itself still asked the source


def test_an_evaluation_does_not_take_a_reading_for_a_document_named() -> None:
    """A suite's ``not_cite`` document counts as named when its title is in the answer;
    the sentence saying how the question was read holds the asker's words, not a title."""
    from types import SimpleNamespace

    from clearance.answer.result import Route
    from clearance.evaluation import runner

    titled = SimpleNamespace(title="Telework")
    app = SimpleNamespace(store=SimpleNamespace(get_document=lambda doc_id: titled))
    case = SimpleNamespace(not_cite=("wiki:telework",))
    read = (Correction("teleworck", "telework"),)
    refusal = "I have no approved source I can use to answer that."
    result = AnswerResult(
        Status.NO_AUTHORIZED_SOURCE, f"{statement(read)} {refusal}", Route.NONE, corrections=read
    )
    assert runner._forbidden(case, result, app) == ()  # type: ignore[arg-type]
    # reverse proof: the same words as part of the answer proper name the document
    named = AnswerResult(Status.ANSWERED, f"{refusal} See Telework.", Route.NARRATIVE)
    assert runner._forbidden(case, named, app) == ("wiki:telework",)  # type: ignore[arg-type]


def test_readings_that_name_an_entity_only_together_are_not_taken(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    backend_store: Any,
    write_directory: Callable[..., Path],
) -> None:
    scope = {"entities": {"Nimbus Cloud": []}}
    settings = settings_factory({"scope": scope, "facts": {"metrics": {"revenue": []}}})
    app = Clearance(settings, backend_store, embedder=None)
    text = {"notes.md": "Nimbus pricing notes. Our cloud revenue grew in FY2025."}
    assert app.ingest([write(tmp_path / "n", text, {"acl": ["group:staff"]})]).failed == []
    app.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
    question = "What was Nimbuss Clowd revenue in FY2025?"

    # the premise: each word alone is read, and together they name the entity ...
    df = {"nimbus": 1, "cloud": 1, "revenu": 1}
    assert readings(question, df) == [("nimbuss", "nimbus"), ("clowd", "cloud")]
    spelt = app.ask("What was Nimbus Cloud revenue in FY2025?", "ana")
    assert spelt.status is Status.OUT_OF_SCOPE_ENTITY
    # ... so neither is taken, and the figure is not asked of it
    result = app.ask(question, "ana")
    assert result.corrections == ()
    assert "Nimbus Cloud" not in result.answer


def test_the_trace_keeps_the_question_as_written(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    settings = settings_factory({"trace": {"question_text_corpora": ["default"]}})
    app = Clearance(settings, store, embedder=None)
    corpus = write(tmp_path / "handbook", READABLE, {"acl": ["group:staff"]})
    assert app.ingest([corpus]).failed == []
    app.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))

    result = app.ask("Who approves teleworck agreemnts?", "ana")
    assert result.status is Status.ANSWERED and result.corrections
    trace = app.trace_log().entries(limit=1)[0]
    assert trace["question_text"] == "Who approves teleworck agreemnts?"
