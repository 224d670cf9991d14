"""The FAQ short-circuit (docs/design.md §1 stage 5, §5): exact matching, conservative exclusions,
storage and JSONL import.

Every exclusion is tested against a baseline that *does* hit, changing one thing at a time,
so each test proves that exclusion is what refuses. The ACL and RESTRICTED checks also have
reverse proofs: a leaky matcher that skips the check must fail the same assertion helper.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.faq import (
    FaqEntry,
    FaqMatcher,
    FaqRepository,
    citation_from_dict,
    normalise_question,
    parse_datetime,
)
from clearance.answer.result import Citation
from clearance.errors import MetadataError, StoreError
from clearance.model import Sensitivity
from clearance.store.sqlite import SQLiteStore

JST = timezone(timedelta(hours=9))
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
START = datetime(2025, 1, 1, tzinfo=UTC)
END = datetime(2026, 1, 1, tzinfo=UTC)
STAFF = frozenset({"user:alice", "group:staff", "everyone"})
OUTSIDER = frozenset({"user:mallory", "group:contractors", "everyone"})
CITATION = Citation("wiki:vpn", "VPN guide", "section=2", "https://wiki.example/vpn")


def entry(**changes: Any) -> FaqEntry:
    """A baseline entry that the baseline question below matches for ``STAFF`` at ``NOW``."""
    base = FaqEntry(
        id="vpn",
        question="How do I connect to the VPN?",
        aliases=("VPN setup", "VPNの接続方法は？"),
        answer="Install the client from the portal and sign in with your badge.",
        citations=(CITATION,),
        acl=frozenset({"group:staff"}),
        sensitivity=Sensitivity.INTERNAL,
        valid_from=START,
        valid_until=END,
    )
    return dataclasses.replace(base, **changes)


def ask(
    matcher: FaqMatcher,
    question: str = "How do I connect to the VPN?",
    principals: frozenset[str] = STAFF,
    now: datetime = NOW,
    *,
    out_of_scope: bool = False,
    has_slots: bool = False,
    ceiling: Sensitivity = Sensitivity.CONFIDENTIAL,
) -> FaqEntry | None:
    return matcher.match(
        question, principals, now, out_of_scope=out_of_scope, has_slots=has_slots, ceiling=ceiling
    )


def test_baseline_hits() -> None:
    hit = ask(FaqMatcher([entry()]))
    assert hit == entry()
    assert hit is not None and hit.citations == (CITATION,)


# ------------------------------------------------------------------------------------------------
# Matching
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "How do I connect to the VPN?",
        "how do i connect to the vpn",
        "HOW DO I CONNECT TO THE VPN？",
        "  How  do I\tconnect to the\nVPN ?! ",
        "ＨＯＷ ｄｏ Ｉ ｃｏｎｎｅｃｔ ｔｏ ｔｈｅ ＶＰＮ？",
        "How do I connect to the VPN.",
        "How do I con\u200bnect to the VPN?",
        "vpn setup",
        "ＶＰＮ　ＳＥＴＵＰ！",
        "VPN Setup.",
        "VPNの接続方法は",
        "ＶＰＮの接続方法は。",
    ],
)
def test_question_and_alias_variants_match(question: str) -> None:
    assert ask(FaqMatcher([entry()]), question) == entry()


@pytest.mark.parametrize(
    "question",
    [
        "How do I connect to the VPN from home?",
        "How do I connect to VPN?",
        "vpn",
        "VPN, setup",
        "¿How do I connect to the VPN",
        "How do I connect to the VPN?!x",
    ],
)
def test_near_misses_do_not_match(question: str) -> None:
    assert ask(FaqMatcher([entry()]), question) is None


@pytest.mark.parametrize("question", ["", "   ", "\n\t", "？", "?!.", "\u200b"])
def test_empty_questions_never_match(question: str) -> None:
    assert ask(FaqMatcher([entry()]), question) is None


def test_normalise_question() -> None:
    assert normalise_question("  What  is the ＶＰＮ？ ") == "what is the vpn"
    assert normalise_question("Straße!!") == "strasse"
    assert normalise_question("経費精算の締め日は？。") == "経費精算の締め日は"
    assert normalise_question("a\u200bb") == "ab"
    assert normalise_question(" ?？ ") == ""


def test_question_matches_win_over_alias_matches_then_id_order() -> None:
    by_alias = entry(id="a-alias", question="Something else?", aliases=("VPN setup",))
    by_question = entry(id="z-question", question="VPN setup", aliases=())
    twin = entry(id="b-question", question="VPN setup", aliases=())
    matcher = FaqMatcher([by_alias, by_question, twin])
    assert ask(matcher, "vpn setup") == twin


def test_one_phrasing_with_entries_per_audience() -> None:
    """The first admissible entry in id order wins, so operators order audiences by id."""
    hr = entry(id="leave-1-hr", answer="Use the HR portal.", acl=frozenset({"group:hr"}))
    general = entry(id="leave-2-all", answer="See the handbook.", acl=frozenset({"everyone"}))
    matcher = FaqMatcher([general, hr])
    assert ask(matcher, principals=frozenset({"group:hr", "everyone"})) == hr
    assert ask(matcher, principals=OUTSIDER) == general


# ------------------------------------------------------------------------------------------------
# Conservative exclusions, one at a time
# ------------------------------------------------------------------------------------------------


def test_out_of_scope_questions_never_match() -> None:
    matcher = FaqMatcher([entry()])
    assert ask(matcher, out_of_scope=False) is not None
    assert ask(matcher, out_of_scope=True) is None


def test_questions_with_slots_never_match() -> None:
    matcher = FaqMatcher([entry()])
    assert ask(matcher, has_slots=False) is not None
    assert ask(matcher, has_slots=True) is None


@pytest.mark.parametrize(
    ("now", "served"),
    [
        (START - timedelta(microseconds=1), False),
        (START, True),  # valid_from is inclusive
        (START.astimezone(JST), True),  # the same instant in another zone
        (END - timedelta(microseconds=1), True),
        (END, False),  # valid_until is exclusive
        (END + timedelta(days=1), False),
    ],
)
def test_validity_window_boundaries(now: datetime, served: bool) -> None:
    assert (ask(FaqMatcher([entry()]), now=now) is not None) is served


def test_open_ended_windows() -> None:
    assert ask(FaqMatcher([entry(valid_from=None)]), now=START - timedelta(days=9999)) is not None
    assert ask(FaqMatcher([entry(valid_until=None)]), now=END + timedelta(days=9999)) is not None
    assert ask(FaqMatcher([entry(valid_from=None, valid_until=None)])) is not None


def test_naive_now_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ask(FaqMatcher([entry()]), now=datetime(2025, 6, 1))


def assert_acl_enforced(make: Callable[[Iterable[FaqEntry]], FaqMatcher]) -> None:
    """The ACL rule as one assertion, usable against any matcher implementation."""
    hr_only = entry(acl=frozenset({"group:hr"}))
    nobody = entry(id="nobody", acl=frozenset())
    everyone = entry(id="everyone", acl=frozenset({"everyone"}))
    assert ask(make([hr_only]), principals=frozenset({"group:hr"})) == hr_only
    assert ask(make([hr_only]), principals=STAFF) is None, "served outside its ACL"
    assert ask(make([hr_only]), principals=frozenset()) is None, "served to an empty set"
    assert ask(make([nobody]), principals=STAFF | {"group:hr"}) is None, "empty ACL served"
    # A disabled or unknown user resolves to an empty principal set: not even "everyone".
    assert ask(make([everyone]), principals=frozenset()) is None, "served to a disabled user"
    assert ask(make([everyone]), principals=OUTSIDER) == everyone


def test_acl_must_intersect_the_principal_set() -> None:
    assert_acl_enforced(FaqMatcher)


class _AclSkippingMatcher(FaqMatcher):
    """A deliberately leaky matcher: it never checks the ACL."""

    @staticmethod
    def _acl_admits(entry: FaqEntry, principal_set: frozenset[str]) -> bool:
        return True


def test_reverse_proof_acl_check_has_teeth() -> None:
    with pytest.raises(AssertionError, match="served outside its ACL"):
        assert_acl_enforced(_AclSkippingMatcher)


def assert_restricted_never_served(make: Callable[[Iterable[FaqEntry]], FaqMatcher]) -> None:
    restricted = entry(sensitivity=Sensitivity.RESTRICTED)
    for ceiling in Sensitivity:
        assert ask(make([restricted]), ceiling=ceiling) is None, "RESTRICTED served"


def test_restricted_entries_are_never_served() -> None:
    assert_restricted_never_served(FaqMatcher)


class _CeilingOnlyMatcher(FaqMatcher):
    """A deliberately leaky matcher: it compares with the ceiling but forgets RESTRICTED."""

    @staticmethod
    def _sensitivity_admits(entry: FaqEntry, ceiling: Sensitivity) -> bool:
        return entry.sensitivity <= ceiling


def test_reverse_proof_restricted_check_has_teeth() -> None:
    with pytest.raises(AssertionError, match="RESTRICTED served"):
        assert_restricted_never_served(_CeilingOnlyMatcher)


@pytest.mark.parametrize(
    ("sensitivity", "ceiling", "served"),
    [
        (Sensitivity.PUBLIC, Sensitivity.PUBLIC, True),
        (Sensitivity.INTERNAL, Sensitivity.PUBLIC, False),
        (Sensitivity.INTERNAL, Sensitivity.INTERNAL, True),
        (Sensitivity.CONFIDENTIAL, Sensitivity.INTERNAL, False),
        (Sensitivity.CONFIDENTIAL, Sensitivity.CONFIDENTIAL, True),
        (Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED, True),
    ],
)
def test_sensitivity_above_the_ceiling_is_not_served(
    sensitivity: Sensitivity, ceiling: Sensitivity, served: bool
) -> None:
    matcher = FaqMatcher([entry(sensitivity=sensitivity)])
    assert (ask(matcher, ceiling=ceiling) is not None) is served


def test_a_refused_entry_falls_through_to_an_admissible_twin() -> None:
    secret = entry(id="a", sensitivity=Sensitivity.CONFIDENTIAL, answer="secret")
    public = entry(id="b", sensitivity=Sensitivity.PUBLIC, answer="public")
    matcher = FaqMatcher([secret, public])
    assert ask(matcher, ceiling=Sensitivity.PUBLIC) == public
    assert ask(matcher, ceiling=Sensitivity.CONFIDENTIAL) == secret


# ------------------------------------------------------------------------------------------------
# Entry validation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": ""}, "'id'"),
        ({"id": "has space"}, "'id'"),
        ({"question": "  ？ "}, "'question'"),
        ({"answer": " "}, "'answer'"),
        ({"aliases": ("ok", "?")}, "alias"),
        ({"acl": frozenset({"staff"})}, "bad principal 'staff'"),
        ({"valid_from": datetime(2025, 1, 1)}, "timezone-aware"),
        ({"valid_from": END, "valid_until": START}, "before 'valid_until'"),
        ({"valid_from": START, "valid_until": START}, "before 'valid_until'"),
        ({"citations": (Citation(" ", "t", "l", "u"),)}, "doc_id"),
    ],
)
def test_invalid_entries_are_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError, match=re.escape(message)):
        entry(**changes)


def test_dict_round_trip() -> None:
    original = entry(valid_from=datetime(2025, 1, 2, 3, 4, 5, 6789, tzinfo=JST))
    assert FaqEntry.from_dict(json.loads(json.dumps(original.to_dict())), "x") == original


def test_citation_from_dict() -> None:
    assert citation_from_dict({"doc_id": "wiki:a"}, "x") == Citation("wiki:a", "", "", "")
    with pytest.raises(MetadataError, match="unknown key 'trust'"):
        citation_from_dict({"doc_id": "wiki:a", "trust": "trusted"}, "x")


def test_parse_datetime() -> None:
    assert parse_datetime("2025-01-01", "k") == START
    assert parse_datetime("2025-01-01T09:00:00+09:00", "k") == START
    with pytest.raises(MetadataError, match="k: not an ISO 8601"):
        parse_datetime("tomorrow", "k")
    with pytest.raises(MetadataError, match="k: expected an ISO 8601 string"):
        parse_datetime(20250101, "k")


# ------------------------------------------------------------------------------------------------
# Repository
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def repo(store: SQLiteStore) -> FaqRepository:
    return FaqRepository(store)


def test_add_get_list_remove(repo: FaqRepository) -> None:
    precise = entry(
        valid_from=datetime(2025, 1, 2, 3, 4, 5, 123457, tzinfo=JST),
        valid_until=datetime(2099, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    )
    other = entry(id="another", sensitivity=Sensitivity.PUBLIC, citations=(), aliases=())
    assert repo.add(precise) is False
    assert repo.add(other) is False
    assert repo.get("vpn") == precise  # microseconds and zones round-trip exactly
    assert repo.get("missing") is None
    assert [e.id for e in repo.list()] == ["another", "vpn"]
    assert repo.remove("vpn") is True
    assert repo.remove("vpn") is False
    assert [e.id for e in repo.list()] == ["another"]


def test_duplicate_id_needs_replace(repo: FaqRepository) -> None:
    repo.add(entry())
    with pytest.raises(MetadataError, match="already exists"):
        repo.add(entry(answer="changed"))
    assert repo.get("vpn") == entry()
    assert repo.add(entry(answer="changed"), replace=True) is True
    got = repo.get("vpn")
    assert got is not None and got.answer == "changed"


def test_entries_persist_across_reopening(tmp_path: Path) -> None:
    path = tmp_path / "faq.db"
    with SQLiteStore(path) as first:
        FaqRepository(first).add(entry())
    with SQLiteStore(path) as second:
        assert FaqRepository(second).list() == [entry()]


def test_generation_counts_committed_changes_only(repo: FaqRepository, store: SQLiteStore) -> None:
    start = repo.generation()
    repo.add(entry())
    assert repo.generation() == start + 1
    repo.list()
    repo.get("vpn")
    repo.remove("missing")
    FaqRepository(store)  # the tables exist: nothing is written
    with pytest.raises(MetadataError):
        repo.add(entry())  # rolled back
    assert repo.generation() == start + 1
    repo.remove("vpn")
    assert repo.generation() == start + 2


def test_live_matcher_follows_the_store(repo: FaqRepository) -> None:
    matcher = repo.matcher()
    assert ask(matcher) is None
    repo.add(entry())
    assert ask(matcher) == entry()
    repo.add(entry(acl=frozenset({"group:hr"})), replace=True)  # narrowed
    assert ask(matcher) is None
    repo.add(entry(), replace=True)
    assert ask(FaqMatcher(repo)) == entry()
    repo.remove("vpn")
    assert ask(matcher) is None


def test_live_matcher_sees_writes_from_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SQLiteStore(path) as server, SQLiteStore(path) as operator:
        matcher = FaqRepository(server).matcher()
        FaqRepository(operator).add(entry())
        assert ask(matcher) == entry()
        FaqRepository(operator).remove("vpn")
        assert ask(matcher) is None


# ------------------------------------------------------------------------------------------------
# JSONL import
# ------------------------------------------------------------------------------------------------


def line(**changes: Any) -> str:
    data = entry().to_dict() | changes
    return json.dumps({k: v for k, v in data.items() if v is not ...}, ensure_ascii=False)


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "faq.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_adds_then_replaces(repo: FaqRepository, tmp_path: Path) -> None:
    minimal = json.dumps({"id": "min", "question": "Where is the canteen?", "answer": "Floor 2."})
    path = write(tmp_path, line(), "", minimal)
    report = repo.import_jsonl(path)
    assert report.added == ("vpn", "min")
    assert report.replaced == ()
    assert repo.get("vpn") == entry()
    got = repo.get("min")
    assert got is not None
    assert (got.acl, got.sensitivity, got.aliases, got.citations) == (
        frozenset(),
        Sensitivity.INTERNAL,
        (),
        (),
    )
    again = repo.import_jsonl(path)
    assert (again.added, again.replaced) == ((), ("vpn", "min"))


def test_import_accepts_nulls_and_naive_times(repo: FaqRepository, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        line(aliases=None, citations=None, valid_from="2025-01-01T00:00:00", valid_until=None),
    )
    repo.import_jsonl(path)
    assert repo.get("vpn") == entry(aliases=(), citations=(), valid_until=None)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (line(colour="blue"), "unknown key 'colour'"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (line(id=...), "missing key 'id'"),
        (line(answer=""), "key 'answer': expected a non-empty string"),
        (line(aliases="VPN setup"), "key 'aliases': expected a list"),
        (line(acl=["staff"]), "key 'acl': bad principal 'staff'"),
        (line(acl="group:staff"), "key 'acl': expected a list of principals"),
        (line(sensitivity="SECRET"), "key 'sensitivity': bad sensitivity 'SECRET'"),
        (line(valid_from="soon"), "key 'valid_from': not an ISO 8601"),
        (line(valid_from="2026-01-01", valid_until="2025-01-01"), "before 'valid_until'"),
        (
            line(citations=[{"doc_id": "a", "page": 3}]),
            "key 'citations'\\[0\\]: unknown key 'page'",
        ),
        (line(citations=[{"title": "no id"}]), "key 'doc_id' is required"),
        (line(citations=[{"doc_id": 7}]), "key 'doc_id': expected a string"),
        (line(id="first"), r"duplicate id 'first' \(first on line 1\)"),
    ],
)
def test_import_errors_name_line_and_key_and_change_nothing(
    repo: FaqRepository, tmp_path: Path, bad: str, message: str
) -> None:
    repo.add(entry(id="existing"))
    path = write(tmp_path, line(id="first"), line(id="second"), bad)
    with pytest.raises(MetadataError, match=message) as caught:
        repo.import_jsonl(path)
    assert f"{path}:3: " in caught.value.message
    assert "\n" not in caught.value.message
    assert [e.id for e in repo.list()] == ["existing"]


def test_import_is_one_transaction(repo: FaqRepository, store: SQLiteStore, tmp_path: Path) -> None:
    """A failure while writing (here: a trigger rejecting the third row) rolls back the
    rows already written by this import, and leaves earlier entries as they were."""
    repo.add(entry(id="existing", answer="old"))
    with store.transaction() as db:
        db.execute(
            "CREATE TRIGGER faq_boom BEFORE INSERT ON faq_entries WHEN NEW.id = 'boom' "
            "BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
    path = write(tmp_path, line(id="existing", answer="new"), line(id="first"), line(id="boom"))
    with pytest.raises(StoreError, match="boom"):
        repo.import_jsonl(path)
    assert [(e.id, e.answer) for e in repo.list()] == [("existing", "old")]


def test_import_of_an_unreadable_file(repo: FaqRepository, tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="cannot read"):
        repo.import_jsonl(tmp_path / "missing.jsonl")
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"id": "é"}'.encode("latin-1"))
    with pytest.raises(MetadataError, match="cannot read"):
        repo.import_jsonl(latin1)
