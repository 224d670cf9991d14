"""``authorize``: the rule table of docs/access.md, pair by pair, from ``data/policy_cases.json``.

Each case states everything the decision depends on and the exact reasons expected, in rule
order. The same table then checks the two other places the rules live: ``AccessControl.decide``
(wired from settings, sync state and a real-time checker) and the compiled search filter, run
in a real SQLite store (rules 1–8 are part of the query, so filter and decision must agree).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import factories
from clearance.access.directory import Directory
from clearance.access.policy import (
    AccessControl,
    Action,
    CorpusFreshness,
    Decision,
    Principal,
    Reason,
    authorize,
    ensure_authorized,
)
from clearance.access.realtime import FakePermissionChecker, RealtimeOutcome, RealtimeResult
from clearance.config import AssistantSettings, settings_from_dict
from clearance.errors import AccessDenied, ClearanceError, ConfigError
from clearance.model import Document, Sensitivity
from clearance.store.sqlite import SQLiteStore

DATA = Path(__file__).parent / "data" / "policy_cases.json"
TABLE: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
NOW = datetime.fromisoformat(TABLE["now"])
CASES: list[dict[str, Any]] = TABLE["cases"]
CASE_KEYS = {
    "id",
    "why",
    "principal",
    "action",
    "document",
    "assistant",
    "corpus_ceiling",
    "freshness",
    "realtime",
    "expect",
}
REALTIME = {None, "allowed", "denied", "error", "no_answer", "raises"}
DOC_ID = "wiki:case"


def by_id(cases: Sequence[dict[str, Any]]) -> Any:
    return pytest.mark.parametrize("case", cases, ids=[c["id"] for c in cases])


# --------------------------------------------------------------------------- building inputs


def principal_of(case: Mapping[str, Any]) -> Principal:
    p = case["principal"]
    return Principal(p["user_id"], p["known"], p["active"], frozenset(p["principals"]))


def document_of(case: Mapping[str, Any]) -> Document:
    d = case["document"]
    return factories.document(
        DOC_ID,
        corpus=d["corpus"],
        title="case",
        uri="https://wiki.example/case",
        acl=frozenset(d["acl"]),
        sensitivity=Sensitivity.parse(d["sensitivity"]),
        expires_at=None if d["expires_at"] is None else datetime.fromisoformat(d["expires_at"]),
        ai_allowed=d["ai_allowed"],
        content_hash="h",
    )


def assistant_of(case: Mapping[str, Any]) -> AssistantSettings | None:
    a = case["assistant"]
    if a is None:
        return None
    return AssistantSettings(
        a["name"], tuple(a["corpora"]), Sensitivity.parse(a["max_sensitivity"])
    )


def last_sync_of(case: Mapping[str, Any]) -> datetime | None:
    age = case["freshness"]["last_sync_age_s"]
    return None if age is None else NOW - timedelta(seconds=age)


class Realtime:
    """The rule-9 callable of one case; records whether it was asked."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.calls = 0

    def __call__(self) -> RealtimeOutcome | None:
        self.calls += 1
        if self.behaviour == "raises":
            raise ConnectionError("source system unreachable")
        if self.behaviour == "no_answer":
            return None
        return RealtimeOutcome(self.behaviour)


def decide_case(case: Mapping[str, Any]) -> tuple[Decision, Realtime | None]:
    realtime = None if case["realtime"] is None else Realtime(case["realtime"])
    decision = authorize(
        principal_of(case),
        Action(case["action"]),
        document_of(case),
        assistant=assistant_of(case),
        corpus_ceiling=Sensitivity.parse(case["corpus_ceiling"]),
        freshness=CorpusFreshness(
            case["document"]["corpus"], last_sync_of(case), case["freshness"]["sla_s"]
        ),
        now=NOW,
        realtime=realtime,
    )
    return decision, realtime


def expected(case: Mapping[str, Any]) -> tuple[bool, list[str]]:
    return case["expect"]["allow"], case["expect"]["reasons"]


# --------------------------------------------------------------------------- the table itself


def test_the_table_is_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    order = [r.value for r in Reason]
    for case in CASES:
        assert set(case) == CASE_KEYS, case["id"]
        assert case["action"] in ("retrieve", "view"), case["id"]
        assert case["realtime"] in REALTIME, case["id"]
        allow, reasons = expected(case)
        assert allow == (reasons == ["allowed"]), case["id"]
        # reasons are stated in rule order (rule_error sits where its rule is, so skip it)
        ranked = [order.index(r) for r in reasons if r != "rule_error"]
        assert ranked == sorted(ranked), case["id"]


def test_every_reason_is_covered_alone_and_combinations_exist() -> None:
    """Each rule denies on its own in at least one case, and at least one case expects
    every rule at once; view and retrieve both appear."""
    alone = {c["expect"]["reasons"][0] for c in CASES if len(c["expect"]["reasons"]) == 1}
    assert alone == {r.value for r in Reason}
    longest = max(len(c["expect"]["reasons"]) for c in CASES)
    assert longest == 9  # all nine rules deny together
    assert {c["action"] for c in CASES if c["expect"]["allow"]} == {"retrieve", "view"}


# --------------------------------------------------------------------------- authorize


@by_id(CASES)
def test_authorize(case: dict[str, Any]) -> None:
    decision, realtime = decide_case(case)

    allow, reasons = expected(case)
    assert decision.allow is allow
    assert [r.value for r in decision.reasons] == reasons
    if allow:
        assert decision.details == ()
    else:
        assert len(decision.details) == len(decision.reasons)
        assert all(isinstance(d, str) and d for d in decision.details)
    if realtime is not None:
        # the source system is asked for retrieve only, once
        assert realtime.calls == (1 if case["action"] == "retrieve" else 0)


@by_id(CASES)
def test_ensure_authorized(case: dict[str, Any]) -> None:
    decision, _ = decide_case(case)

    if decision.allow:
        ensure_authorized(decision)  # does not raise
        return
    with pytest.raises(AccessDenied) as raised:
        ensure_authorized(decision)
    assert raised.value.decision is decision
    assert isinstance(raised.value, ClearanceError)
    for reason in decision.reasons:
        assert reason.value in raised.value.message


def test_decision_to_dict_is_the_stable_json_shape() -> None:
    [case] = [c for c in CASES if c["id"] == "disabled-stale-expired"]
    decision, _ = decide_case(case)

    data = decision.to_dict()
    assert data["allow"] is False
    assert data["reasons"] == ["account_disabled", "corpus_stale", "expired", "not_in_acl"]
    assert len(data["details"]) == 4  # type: ignore[arg-type]
    json.dumps(data)  # serialisable as is


def test_a_rule_that_raises_on_its_inputs_denies_instead_of_raising() -> None:
    """The ceiling depends on the assistant; an assistant whose ceiling cannot be compared is
    an erroring rule 4, i.e. ``rule_error`` in rule 4's place — not an exception."""
    [case] = [c for c in CASES if c["id"] == "allow-retrieve"]
    broken = AssistantSettings("broken", ("ops",), None)  # type: ignore[arg-type]

    decision = authorize(
        principal_of(case),
        Action.RETRIEVE,
        document_of(case),
        assistant=broken,
        corpus_ceiling=Sensitivity.CONFIDENTIAL,
        freshness=CorpusFreshness("ops", NOW, 3600),
        now=NOW,
    )

    assert decision.allow is False
    assert decision.reasons == (Reason.RULE_ERROR,)


@pytest.mark.parametrize(
    ("sla", "age", "stale"),
    [
        (3600.0, 3600.0, False),
        (3600.0, 3600.001, True),
        (3600.0, -60.0, False),
        (3600.0, -60.001, True),
        (float("nan"), 0.0, True),  # not a number: fail closed
        (float("inf"), 10 * 365 * 86400.0, False),  # no overflow
        (1e30, 1.0, False),
    ],
)
def test_freshness_boundaries(sla: float, age: float, stale: bool) -> None:
    freshness = CorpusFreshness("ops", NOW - timedelta(seconds=age), sla)
    assert freshness.stale(NOW) is stale


@pytest.mark.parametrize("value", [float("inf"), float("nan"), float("-inf")])
def test_a_revocation_sla_must_be_a_finite_duration(value: float) -> None:
    with pytest.raises(ConfigError, match=r"^corpora\.ops\.revocation_sla: "):
        settings_from_dict({"corpora": {"ops": {"revocation_sla": value}}}, root=Path.cwd())


# --------------------------------------------------------------------------- AccessControl


def _settings(case: Mapping[str, Any]) -> Any:
    corpus = case["document"]["corpus"]
    corpora: dict[str, Any] = {name: {} for name in ("ops", "public", "sensitive")}
    corpora[corpus] = {
        "max_sensitivity": case["corpus_ceiling"],
        "revocation_sla": case["freshness"]["sla_s"],
    }
    data: dict[str, Any] = {"embedding": {"provider": "none"}, "corpora": corpora}
    assistant = case["assistant"]
    if assistant is not None:
        data["assistants"] = {
            assistant["name"]: {
                "corpora": assistant["corpora"],
                "max_sensitivity": assistant["max_sensitivity"],
            }
        }
    return settings_from_dict(data, root=Path.cwd())


class _RaisingChecker:
    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
        raise ConnectionError("source system unreachable")


class _SilentChecker:
    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
        return {}


def _checker(case: Mapping[str, Any]) -> Any:
    user = case["principal"]["user_id"]
    behaviour = case["realtime"]
    if behaviour == "raises":
        return _RaisingChecker()
    if behaviour == "no_answer":
        return _SilentChecker()
    if behaviour == "error":
        return FakePermissionChecker(errors=[DOC_ID])
    return FakePermissionChecker({(user, DOC_ID): behaviour == "allowed"})


def access_for(case: Mapping[str, Any]) -> AccessControl:
    corpus = case["document"]["corpus"]
    last = last_sync_of(case)
    checkers = {} if case["realtime"] is None else {corpus: _checker(case)}
    return AccessControl(
        _settings(case),
        Directory.empty(),
        {} if last is None else {corpus: last},
        checkers=checkers,
        clock=lambda: NOW,
    )


@by_id(CASES)
def test_access_control_decide_agrees(case: dict[str, Any]) -> None:
    """The same case wired the way the service wires it: ceilings and SLA from settings,
    the last sync from the store's sync state, rule 9 from the corpus's checker."""
    access = access_for(case)
    assistant = None if case["assistant"] is None else access.assistant(case["assistant"]["name"])

    decision = access.decide(
        principal_of(case), Action(case["action"]), document_of(case), assistant
    )

    allow, reasons = expected(case)
    assert (decision.allow, [r.value for r in decision.reasons]) == (allow, reasons)


FILTERABLE = [
    c for c in CASES if c["realtime"] is None and "rule_error" not in c["expect"]["reasons"]
]


@by_id(FILTERABLE)
def test_search_filter_agrees_in_the_store(case: dict[str, Any]) -> None:
    """Rules 1–8 compiled into the filter admit the document exactly when authorize allows,
    both in the reference semantics and in the SQL the store runs."""
    access = access_for(case)
    assistant = None if case["assistant"] is None else access.assistant(case["assistant"]["name"])
    document = document_of(case)
    flt = access.search_filter(
        principal_of(case), assistant, [document.corpus], action=Action(case["action"])
    )
    chunk = factories.chunk(document, "text")

    allow, _ = expected(case)
    assert flt.admits(document, chunk) is allow
    with SQLiteStore(":memory:") as store:
        store.upsert(document, [chunk])
        assert store.allowed_doc_ids(flt) == ({DOC_ID} if allow else set())
