"""Input bounds: every question (and search query) is at most ``[answer] max_question_chars``
characters, and the work done on a question within the bound grows linearly.

* One character over the limit raises ``QuestionError`` (exit code 2, ``bad_question``)
  from ``Clearance.ask``, ``Clearance.search`` and ``Orchestrator.ask`` alike, before any
  stage runs; exactly at the limit the question is answered. The CLI turns the error into
  one line on stderr and exit code 2.
* The scope gate masks to a fixpoint in linear work (it used to re-read the whole question
  once per round: quadratic for "g g g … lobex lobex …"), with exactly the old results.
* A metric question naming many metrics, entities, periods and channels asks for the
  product of them; past ``MAX_PARTS`` figures it is answered with ``clarify`` and no
  look-up at all.

No assertion is about wall time: work is counted (normalisation calls, fact look-ups).
Each bound has a reverse proof that removes it and watches the same assertion fail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clearance.answer.routes.figures as figures_route
from clearance.answer import intent as intent_module
from clearance.answer import scope as scope_module
from clearance.answer.intent import MAX_PARTS, RuleIntentParser
from clearance.answer.orchestrator import Orchestrator
from clearance.answer.result import AnswerResult, Route, Status
from clearance.answer.scope import ScopeGate, ScopeResult
from clearance.app import Clearance, SearchResult
from clearance.config import ScopeSettings, Settings, settings_from_dict
from clearance.errors import ClearanceError, QuestionError
from clearance.llm.mock import MockProvider
from clearance.store.sqlite import SQLiteStore
from clitools import cli

KEY = b"input-bounds-test-key-0123456789"
#: Planted in every over-long question: it must never appear in an error message.
CANARY = "QUESTION-TEXT-CANARY-7Q"
FACTS: dict[str, Any] = {
    "metrics": {"revenue": ["revenue"], "headcount": ["headcount"]},
    "entities": {"ACME Japan": ["Japan"], "ACME US": ["US"]},
    "channels": {"budget": ["budget"]},
}


def question_of(length: int) -> str:
    """A plausible question of exactly ``length`` characters that contains the canary."""
    text = f"What is the hotel budget per night? {CANARY} "
    return (text * (length // len(text) + 1))[:length]


@pytest.fixture
def provider() -> MockProvider:
    return MockProvider()


@pytest.fixture
def make_app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    provider: MockProvider,
) -> Callable[..., Clearance]:
    """``make_app(limit=None)`` → a small ingested index, lexical only, scripted model."""

    def factory(limit: int | None = None) -> Clearance:
        # The canary's words are in no document and weigh against every snippet in the
        # relevance gate; these tests are about the length limit, so the gate is lenient.
        data: dict[str, Any] = {"facts": FACTS, "answer": {"relevance": {"min_coverage": 0.3}}}
        if limit is not None:
            data["answer"]["max_question_chars"] = limit
        app = Clearance(settings_factory(data), store, provider=provider, trace_key=KEY)
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        (corpus / "travel.md").write_text(
            "Hotel budget: up to 200 EUR per night on business trips.", encoding="utf-8"
        )
        (corpus / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
        assert app.ingest([corpus]).failed == []
        app.sync_directory(write_directory(tmp_path / "directory.json", {"ann": []}))
        return app

    return factory


Entry = Callable[[Clearance, str], AnswerResult | SearchResult]

ENTRIES: dict[str, Entry] = {
    "Clearance.ask": lambda app, q: app.ask(q, "ann"),
    "Clearance.search": lambda app, q: app.search("ann", q),
    "Orchestrator.ask": lambda app, q: app.orchestrator().ask(q, "ann"),
}
LIMITS = [None, 64]  # the default (2000) and a configured one


def limit_of(app: Clearance) -> int:
    return app.settings.answer.max_question_chars


def assert_refused(app: Clearance, entry: Entry, question: str) -> QuestionError:
    with pytest.raises(QuestionError) as info:
        entry(app, question)
    error = info.value
    assert isinstance(error, ClearanceError)
    assert (error.exit_code, error.code) == (2, "bad_question")
    assert error.to_dict() == {"error": "bad_question", "message": error.message}
    return error


# --------------------------------------------------------------------------- the limit


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_one_character_over_the_limit_is_refused(
    make_app: Callable[..., Clearance], name: str, limit: int | None
) -> None:
    app = make_app(limit)
    assert_refused(app, ENTRIES[name], question_of(limit_of(app) + 1))


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_exactly_at_the_limit_is_accepted(
    make_app: Callable[..., Clearance], name: str, limit: int | None
) -> None:
    app = make_app(limit)
    result = ENTRIES[name](app, question_of(limit_of(app)))
    if isinstance(result, SearchResult):
        assert [h.document.doc_id for h in result.hits] == ["files:travel.md"]
    else:
        assert result.status is Status.ANSWERED
        assert [c.doc_id for c in result.citations] == ["files:travel.md"]


def test_the_default_limit_is_2000_characters(make_app: Callable[..., Clearance]) -> None:
    assert limit_of(make_app()) == 2000


def test_the_message_gives_length_limit_and_key_but_never_the_text(
    make_app: Callable[..., Clearance],
) -> None:
    app = make_app()
    error = assert_refused(app, ENTRIES["Clearance.ask"], question_of(1_000_000))
    assert "1,000,000 characters" in error.message
    assert "2,000" in error.message
    assert "[answer] max_question_chars" in error.message
    assert CANARY not in error.message and "hotel" not in error.message


def test_a_question_that_is_not_text_is_refused(make_app: Callable[..., Clearance]) -> None:
    app = make_app()
    error = assert_refused(app, lambda a, q: a.ask(q.encode(), "ann"), "hotel")  # type: ignore[arg-type]
    assert "str" in error.message


def test_a_refused_question_runs_no_stage_and_writes_no_trace(
    make_app: Callable[..., Clearance], provider: MockProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decided: the request never started, so there is nothing to trace; the caller holds
    the error. No stage may see the text either (identity, scope, routing, retrieval)."""
    app = make_app()
    seen: list[str] = []

    def scope_check(self: ScopeGate, question: str) -> ScopeResult:
        seen.append(question)
        return ScopeResult((), question)

    monkeypatch.setattr(ScopeGate, "check", scope_check)
    monkeypatch.setattr(app, "access", lambda: pytest.fail("a stage ran"))
    for entry in ENTRIES.values():
        assert_refused(app, entry, question_of(limit_of(app) + 1))
    assert seen == []
    assert provider.calls == 0
    assert app.trace_log().entries() == []


def test_reverse_proof_without_the_check_the_long_question_is_run(
    make_app: Callable[..., Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(64)
    for module in ("clearance.app", "clearance.runtime", "clearance.answer.orchestrator"):
        monkeypatch.setattr(f"{module}.check_question", lambda question, *a, **k: question)
    for entry in ENTRIES.values():
        with pytest.raises(pytest.fail.Exception):
            assert_refused(app, entry, question_of(65))


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("command", ["ask", "search"])
def test_the_cli_exits_2_with_one_line(tmp_path: Path, command: str) -> None:
    config = tmp_path / "clearance.toml"
    config.write_text(
        '[embedding]\nprovider = "none"\n\n[answer]\nmax_question_chars = 64\n', encoding="utf-8"
    )
    rc, out, err = cli("--config", config, command, question_of(65), "--user", "ann")
    assert rc == 2
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "max_question_chars" in err and CANARY not in err

    rc, out, _ = cli("--config", config, command, question_of(65), "--user", "ann", "--json")
    assert rc == 2
    assert json.loads(out)["error"] == "bad_question"


# --------------------------------------------------------------------------- scope gate


def round_based_check(gate: ScopeGate, question: str) -> ScopeResult:
    """The gate as it was: re-read the whole masked question every round (the oracle for
    the results, and the reverse proof for the work)."""
    aliases = gate._aliases
    if not aliases:
        return ScopeResult((), question)
    masked = question
    found: list[tuple[int, int, tuple[str, ...]]] = []
    while True:
        stream = scope_module._stream(masked)
        candidates = []
        for alias in aliases:
            pos = stream.chars.find(alias.chars)
            while pos != -1:
                end = pos + len(alias.chars)
                if _old_on_boundaries(stream, pos, end, alias):
                    candidates.append((pos, end, alias))
                pos = stream.chars.find(alias.chars, pos + 1)
        candidates.sort(key=lambda c: (c[0] - c[1], c[0]))
        taken = [False] * len(stream.chars)
        rounds = []
        for start, end, alias in candidates:
            if any(taken[start:end]):
                continue
            taken[start:end] = [True] * (end - start)
            first, last = stream.unit[start], stream.unit[end - 1]
            rounds.append((stream.bounds[first][0], stream.bounds[last][1], alias.entities))
        if not rounds:
            break
        found.extend(rounds)
        chars = list(masked)
        for start, end, _ in rounds:
            chars[start:end] = " " * (end - start)
        masked = "".join(chars)
    found.sort(key=lambda f: (f[0], f[1]))
    entities = tuple(dict.fromkeys(name for _, _, names in found for name in names))
    return ScopeResult(entities, masked, scope_module._merge_spans((s, e) for s, e, _ in found))


def _old_on_boundaries(stream: Any, start: int, end: int, alias: Any) -> bool:
    word = scope_module._spaced_word_char
    if alias.left_boundary and start > 0:
        gap = stream.unit[start] - stream.unit[start - 1] > 1
        if not gap and word(stream.chars[start - 1]):
            return False
    if alias.right_boundary and end < len(stream.chars):
        gap = stream.unit[end] - stream.unit[end - 1] > 1
        if not gap and word(stream.chars[end]):
            return False
    return True


SCOPE = ScopeGate(
    ScopeSettings(
        {
            "Globex": ("Globex", "GBX", "Globex Japan"),
            "Osaka": ("大阪",),
            "Tokyo": ("東京",),
            "AB": ("ab",),
            "Fi": ("fi", "ffi"),
            "Café": ("café",),
            "XY": ("x y",),
        }
    )
)
PIECES = [
    *"globexaGBXyfic東大阪京",
    "lobex",
    "glo",
    "bex",
    "Ｇ",
    "ﬁ",
    "ﬃ",
    "é",
    "e\u0301",
    "\u0301",
    " ",
    "  ",
    "\u200b",
    "\u00ad",
    "-",
    "'",
    "の",
    " Japan",
]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_linear_gate_gives_exactly_the_round_based_results(question: str) -> None:
    assert SCOPE.check(question) == round_based_check(SCOPE, question)


@pytest.mark.parametrize(
    "question",
    ["東大阪京", "g g lobex lobex", "a a a b b b", "x ab y", "ﬃ", "caf e\u0301 Globexa Globex"],
)
def test_the_linear_gate_examples(question: str) -> None:
    assert SCOPE.check(question) == round_based_check(SCOPE, question)


def count_normalisations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    fold = scope_module._fold

    def counting(text: str) -> str:
        calls[0] += 1
        return fold(text)

    monkeypatch.setattr(scope_module, "_fold", counting)
    return calls


# Every round of masking joins one more "g" to one more "lobex": 500 rounds at 2000 chars.
CHAIN = "g " * 250 + "lobex " * 250


def assert_linear_scope_work(check: Callable[[str], ScopeResult], calls: list[int]) -> None:
    result = check(CHAIN)
    assert result.entities == ("Globex",) and not result.masked.strip()
    assert calls[0] <= len(CHAIN), f"{calls[0]} normalisations for {len(CHAIN)} characters"


def test_the_scope_gate_normalises_each_character_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(CHAIN) == 2000
    assert_linear_scope_work(SCOPE.check, count_normalisations(monkeypatch))


def test_reverse_proof_the_round_based_gate_is_quadratic(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_normalisations(monkeypatch)
    with pytest.raises(AssertionError):
        assert_linear_scope_work(lambda q: round_based_check(SCOPE, q), calls)


# --------------------------------------------------------------------------- multi parts


def periods(n: int) -> str:
    return " ".join(f"FY{2000 + i}" for i in range(n))


@pytest.fixture
def lookups(make_app: Callable[..., Clearance], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``(app, calls)``: the app with its fact look-ups counted."""
    app = make_app()
    calls: list[dict[str, Any]] = []
    query_facts = app.store.query_facts

    def counting(*args: Any, **kwargs: Any) -> Any:
        if any(kwargs.get(slot) is not None for slot in ("metric", "entity", "period")):
            calls.append(kwargs)  # not the one read of the caller's readable names
        return query_facts(*args, **kwargs)

    monkeypatch.setattr(app.store, "query_facts", counting)
    yield app, calls


def ask_many(app: Clearance, question: str) -> AnswerResult:
    orchestrator = Orchestrator(app, provider=MockProvider())
    return orchestrator.ask(question, "ann")


def test_max_parts_figures_are_looked_up(lookups: Any) -> None:
    app, calls = lookups
    question = f"revenue headcount Japan {periods(MAX_PARTS // 2)}"
    result = ask_many(app, question)
    assert (result.status, result.route) == (Status.NOT_FOUND, Route.MULTI)
    assert len(calls) == MAX_PARTS


def assert_too_many_refused(app: Clearance, calls: Sequence[Any], question: str) -> None:
    assert len(question) <= limit_of(app)
    result = ask_many(app, question)
    assert (result.status, result.route) == (Status.CLARIFY, Route.MULTI)
    assert f"more than {MAX_PARTS} figures" in result.answer
    assert app.trace_log().get(result.trace_id)["reason"] == "too_many_parts"  # type: ignore[index]
    assert len(calls) == 0


def test_more_than_max_parts_figures_ask_for_fewer_without_any_look_up(lookups: Any) -> None:
    app, calls = lookups
    assert_too_many_refused(app, calls, f"revenue headcount Japan {periods(MAX_PARTS // 2 + 1)}")
    # 2 metrics × 2 entities × 120 periods × 2 channels: 960 parts within 2000 characters
    assert_too_many_refused(app, calls, f"revenue headcount Japan US budget {periods(120)}")


def test_the_parser_never_builds_more_than_one_part_too_many() -> None:
    parser = RuleIntentParser(settings_from_dict({"facts": FACTS}).facts)
    intent = parser.parse(f"revenue headcount Japan US budget {periods(250)}")
    assert intent.kind == "multi"
    assert len(intent.parts) == MAX_PARTS + 1


def test_reverse_proof_without_the_cap_every_part_is_looked_up(
    lookups: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, calls = lookups
    monkeypatch.setattr(intent_module, "MAX_PARTS", 10**9)
    monkeypatch.setattr(figures_route, "MAX_PARTS", 10**9)
    with pytest.raises(AssertionError):
        assert_too_many_refused(app, calls, f"revenue headcount Japan {periods(MAX_PARTS)}")
    assert len(calls) == 2 * MAX_PARTS
