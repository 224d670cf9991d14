"""docs/design.md §10 invariants 2–5, each with a reverse proof that the check has teeth.

Every invariant has one assertion helper that *returns the list of violations*. The test runs
it against the real system and expects none; the reverse proof runs the very same helper
against a deliberately leaky variant (monkeypatched on the class or instance) and expects it to
find some. Invariants 2–4 run on the ACME demo corpus (lexical only); invariant 5 on a small
corpus whose ``hr`` corpus demands real-time checks, against a fake checker and a real HTTP
server on loopback.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.access.directory import Directory
from clearance.access.policy import AccessControl, Action, CorpusFreshness, Principal
from clearance.access.realtime import (
    FakePermissionChecker,
    HttpPermissionChecker,
    PermissionChecker,
    RealtimeOutcome,
    RealtimeResult,
)
from clearance.app import Clearance
from clearance.config import Settings, load_settings
from clearance.model import Document, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from clitools import cli, lexical_only

from .loopback import LoopbackServer

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
DIRECTORY: dict[str, Any] = json.loads((ACME / "directory.json").read_text(encoding="utf-8"))
ORACLE: dict[str, Any] = json.loads((ACME / "personas.json").read_text(encoding="utf-8"))
CANARIES = sorted(c for canaries in ORACLE["canaries"].values() for c in canaries)
USERS = [*sorted(u["id"] for u in DIRECTORY["users"]), "mallory"]  # mallory: not in the directory


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


# --------------------------------------------------------------------------- the demo index


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus ingested once (lexical only); returns the index file to copy."""
    config = tmp_path_factory.mktemp("acme-base") / "clearance.toml"
    config.write_text(lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8")))
    settings = load_settings(config)
    with Clearance.open(settings) as app:
        assert app.ingest([], manifest=ACME / "manifest.jsonl").counts == {
            "added": 73,
            "absent": 1,
        }
        app.sync_directory(ACME / "directory.json")
    return settings.db_path


@dataclass
class Demo:
    root: Path
    config: Path
    app: Clearance
    clock: Clock

    def documents(self) -> list[Document]:
        return self.app.store.list_documents()

    def queries(self) -> list[str]:
        """A title of every document, every canary, and a few plain questions."""
        titles = sorted({d.title for d in self.documents()})
        return [*titles, *CANARIES, "revenue FY2025", "salary", "incident", "customer"]

    def write(self, name: str, data: Any) -> Path:
        path = self.root / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def acl_snapshot(self, corpus: str) -> Path:
        """An ACL snapshot of ``corpus`` that restates the current ACLs (permissions unchanged)."""
        path = self.root / f"{corpus}-acl.jsonl"
        path.write_text(
            "".join(
                json.dumps({"doc_id": d.doc_id, "acl": sorted(d.acl)}) + "\n"
                for d in self.app.store.list_documents(corpus)
            ),
            encoding="utf-8",
        )
        return path


@pytest.fixture
def demo(base: Path, tmp_path: Path) -> Iterator[Demo]:
    """A private copy of the demo index, opened with an injectable clock (starting now)."""
    config = tmp_path / "clearance.toml"
    config.write_text(lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8")))
    settings = load_settings(config)
    settings.db_path.parent.mkdir(parents=True)
    with (
        contextlib.closing(sqlite3.connect(base)) as src,
        contextlib.closing(sqlite3.connect(settings.db_path)) as dst,
    ):
        src.backup(dst)
    clock = Clock(datetime.now(UTC))
    with Clearance(settings, SQLiteStore(settings.db_path), clock=clock) as app:
        yield Demo(tmp_path, config, app, clock)


# --------------------------------------------------------------------------- invariant 2


def principal_set(directory: Mapping[str, Any], user_id: str) -> set[str]:
    """Brute-force fixpoint over the raw directory JSON; disabled/unknown → empty."""
    users = {u["id"]: u for u in directory["users"]}
    if user_id not in users or not users[user_id]["active"]:
        return set()
    result = {f"user:{user_id}", "everyone"}
    grew = True
    while grew:
        grew = False
        for group in directory["groups"]:
            if f"group:{group['id']}" not in result and result & set(group.get("members", [])):
                result.add(f"group:{group['id']}")
                grew = True
    return result


def may_retrieve(app: Clearance, directory: Mapping[str, Any], user_id: str) -> set[str]:
    """Rules 1–8 by brute force, from the raw directory and the stored document metadata."""
    principals = principal_set(directory, user_id)
    now = app.clock()
    syncs = app.store.last_acl_syncs()
    out = set()
    for doc in app.store.list_documents():
        corpus = app.settings.corpus(doc.corpus)
        synced = syncs.get(doc.corpus)
        fresh = synced is not None and timedelta(0) <= now - synced <= timedelta(
            seconds=corpus.revocation_sla_s
        )
        if (
            fresh
            and doc.acl & principals
            and doc.sensitivity <= min(corpus.max_sensitivity, Sensitivity.CONFIDENTIAL)
            and (doc.expires_at is None or doc.expires_at > now)
            and doc.ai_allowed
        ):
            out.add(doc.doc_id)
    return out


def principal_set_leaks(app: Clearance, users: Iterable[str], queries: Sequence[str]) -> list[str]:
    """Invariant 2: every document a search returns — and every one the compiled filter
    admits — is one the brute force lets the user retrieve. Returns the violations."""
    violations = []
    for user in users:
        may = may_retrieve(app, DIRECTORY, user)
        access = app.access()
        flt = access.search_filter(access.principal(user), None, app.store.corpora())
        violations += [
            f"{user}: filter admits {d}" for d in sorted(app.store.allowed_doc_ids(flt) - may)
        ]
        for query in queries:
            for hit in app.search(user, query, k=10).hits:
                if hit.document.doc_id not in may:
                    violations.append(f"{user}: {query!r} returned {hit.document.doc_id}")
                elif hit.chunk.sensitivity >= Sensitivity.RESTRICTED:
                    violations.append(f"{user}: {query!r} returned a RESTRICTED chunk")
    return violations


def test_invariant_2_nothing_outside_principal_set_reaches_results(demo: Demo) -> None:
    # every user (and one unknown) × half the titles, every canary, a few plain questions
    # (test_personas runs every title for the personas)
    assert principal_set_leaks(demo.app, USERS, demo.queries()[::2]) == []
    # not vacuous: most users may retrieve something, and searches do return it
    assert sum(bool(may_retrieve(demo.app, DIRECTORY, u)) for u in USERS) >= 15
    assert all(demo.app.search(u, "revenue FY2025").hits for u in ("alice", "bob", "frank"))


def _every_principal(app: Clearance) -> frozenset[str]:
    return frozenset(p for d in app.store.list_documents() for p in d.acl)


def test_invariant_2_reverse_proof_a_filter_that_ignores_group_membership(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leak: any ``group:`` in an ACL matches, whether or not the user is a member."""
    groups = frozenset(p for p in _every_principal(demo.app) if p.startswith("group:"))
    real = AccessControl.search_filter

    def ignores_groups(
        self: AccessControl, principal: Principal, *args: Any, **kw: Any
    ) -> SearchFilter:
        flt = real(self, principal, *args, **kw)
        return replace(flt, principals=flt.principals | groups) if flt.principals else flt

    monkeypatch.setattr(AccessControl, "search_filter", ignores_groups)

    violations = principal_set_leaks(demo.app, ["grace", "dave"], demo.queries()[::7])
    assert violations
    assert any(v.startswith("grace: filter admits sharepoint:board") for v in violations)


def test_invariant_2_reverse_proof_a_search_with_an_all_admitting_filter(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leak: retrieval ignores the principal (and every other rule)."""
    everyone = _every_principal(demo.app)

    def admit_all(self: AccessControl, *args: Any, **kw: Any) -> SearchFilter:
        return SearchFilter(
            principals=everyone,
            corpora=None,
            max_sensitivity=Sensitivity.RESTRICTED,
            now=datetime(2000, 1, 1, tzinfo=UTC),
            require_ai_allowed=False,
        )

    monkeypatch.setattr(AccessControl, "search_filter", admit_all)

    planted = {c: d for d, canaries in ORACLE["canaries"].items() for c in canaries}
    queries = CANARIES[:3]
    violations = principal_set_leaks(demo.app, ["dave"], queries)
    for canary in queries:  # dave, a contractor, is shown the documents holding the canaries
        assert f"dave: {canary!r} returned {planted[canary]}" in violations


# --------------------------------------------------------------------------- invariant 3


def disabled_leaks(app: Clearance, users: Iterable[str], queries: Sequence[str]) -> list[str]:
    """Invariant 3: a disabled (or unknown) account gets nothing — no search hit, no document
    admitted by either filter, no allowing decision. Returns the violations."""
    violations = []
    documents = app.store.list_documents()
    for user in users:
        access = app.access()
        principal = access.principal(user)
        for action in Action:
            flt = access.search_filter(principal, None, app.store.corpora(), action=action)
            admitted = app.store.allowed_doc_ids(flt)
            violations += [f"{user}: {action.value} filter admits {d}" for d in sorted(admitted)]
        for query in queries:
            result = app.search(user, query, k=10)
            violations += [f"{user}: {query!r} returned {h.document.doc_id}" for h in result.hits]
        for doc in documents:
            for action in Action:
                if access.decide(principal, action, doc).allow:
                    violations.append(f"{user}: may {action.value} {doc.doc_id}")
    return violations


def disable(demo: Demo, user_id: str) -> None:
    record = next(u for u in DIRECTORY["users"] if u["id"] == user_id)
    demo.app.sync_directory(
        demo.write(f"disable-{user_id}.json", {"users": [{**record, "active": False}]}), delta=True
    )


def test_invariant_3_disabled_account_gets_nothing(demo: Demo) -> None:
    assert demo.app.search("bob", "sales playbook", k=10).hits  # bob reads before
    disable(demo, "bob")  # a delta: effective on the directory update, no re-sync

    # erin was disabled all along (and is named directly on a customer record)
    assert disabled_leaks(demo.app, ["erin", "bob", "mallory"], demo.queries()) == []
    assert demo.app.search("bob", "sales playbook").refused == "account_disabled"
    assert demo.app.search("mallory", "sales playbook").refused == "unknown_user"


def _resolve_keeping_everyone(*, active: bool) -> Callable[..., Principal]:
    real = Principal.resolve

    def resolve(cls: type[Principal], directory: Directory, user_id: str) -> Principal:
        user = directory.users.get(user_id)
        if user is None or user.active:
            return real(directory, user_id)
        # the bug: a disabled account keeps {user:<id>, everyone}
        return cls(user_id, True, active, frozenset({f"user:{user_id}", "everyone"}))

    return resolve


def test_invariant_3_reverse_proof_resolve_keeps_everyone_for_disabled_users(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    disable(demo, "bob")
    monkeypatch.setattr(Principal, "resolve", classmethod(_resolve_keeping_everyone(active=True)))

    violations = disabled_leaks(demo.app, ["erin", "bob"], ["press release", "pricing"])
    assert any(v.startswith("bob: retrieve filter admits sharepoint:pub") for v in violations)
    assert any(v.startswith("erin: 'press release' returned") for v in violations)
    # erin is named on a customer record: with the leak she reads it
    assert any(v.startswith("erin: may retrieve sharepoint:cust-us-0107") for v in violations)


def test_invariant_3_defence_in_depth_when_only_the_principal_set_leaks(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolver that keeps 'everyone' but still reports the account inactive is caught by
    the other layers (search refuses, the filter drops the set, rule 1 denies)."""
    monkeypatch.setattr(Principal, "resolve", classmethod(_resolve_keeping_everyone(active=False)))
    assert demo.app.principal("erin").principals  # the leak is in place

    assert disabled_leaks(demo.app, ["erin"], ["press release", "pricing"]) == []


# --------------------------------------------------------------------------- invariant 4


def stale_leaks(app: Clearance, users: Iterable[str], queries: Sequence[str]) -> list[str]:
    """Invariant 4: nothing from a corpus whose last ACL sync is older than its SLA (judged
    here from the raw sync times and SLAs) reaches a search or a filter. Returns violations."""
    now = app.clock()
    syncs = app.store.last_acl_syncs()
    stale = {
        name
        for name in app.store.corpora()
        if name not in syncs
        or now - syncs[name] > timedelta(seconds=app.settings.corpus(name).revocation_sla_s)
    }
    documents = {d.doc_id: d for d in app.store.list_documents()}
    violations = []
    for user in users:
        access = app.access()
        principal = access.principal(user)
        for action in Action:
            flt = access.search_filter(principal, None, app.store.corpora(), action=action)
            violations += [
                f"{user}: {action.value} filter admits {d} of stale {documents[d].corpus}"
                for d in sorted(app.store.allowed_doc_ids(flt))
                if documents[d].corpus in stale
            ]
        for query in queries:
            for hit in app.search(user, query, k=10).hits:
                if hit.document.corpus in stale:
                    violations.append(f"{user}: {query!r} returned {hit.document.doc_id}")
    return violations


def corpora_hit(app: Clearance, user: str, queries: Sequence[str]) -> set[str]:
    return {h.document.corpus for q in queries for h in app.search(user, q, k=10).hits}


def test_invariant_4_stale_corpus_serves_nobody(demo: Demo) -> None:
    app, queries = demo.app, demo.queries()[::2]
    [synced] = set(app.store.last_acl_syncs().values())  # one ingest, one time for all
    readers = ["frank", "ines", "jun"]  # customers, sensitive (nameable), board
    assert corpora_hit(app, "frank", queries) >= {"customers", "dept", "ops", "public"}
    assert "sensitive" in corpora_hit(app, "jun", queries)  # the board pack

    # 31 minutes later: customers (SLA 30m) and sensitive (15m) fail closed, the rest serve
    demo.clock.now = synced + timedelta(minutes=31)
    assert stale_leaks(app, readers, queries) == []
    assert corpora_hit(app, "frank", queries) == {"dept", "ops", "public"}

    # a day later every corpus is stale: nobody gets anything
    demo.clock.now = synced + timedelta(hours=25)
    assert stale_leaks(app, readers, queries) == []
    assert all(not app.search(u, q).hits for u in readers for q in queries[::3])

    # a successful ACL sync (same permissions) makes customers serve again, and only it
    report = app.sync_acls(
        demo.acl_snapshot("customers"), "customers", read_at=demo.clock.now.isoformat()
    )
    assert report.changed == 0
    assert stale_leaks(app, readers, queries) == []
    assert corpora_hit(app, "frank", queries) == {"customers"}
    status = {c["corpus"]: c["failing_closed"] for c in app.corpus_status()}
    assert status == {
        "customers": False,
        "dept": True,
        "ops": True,
        "public": True,
        "sensitive": True,
    }


def test_invariant_4_status_and_acl_sync_through_the_cli(demo: Demo) -> None:
    """The CLI runs on the real clock: record the dept and customers syncs two hours ago
    (through the product, with the clock set back), then ask ``clearance status``."""
    now = datetime.now(UTC)
    demo.clock.now = now - timedelta(hours=2)
    for corpus in ("dept", "customers"):
        demo.app.sync_acls(demo.acl_snapshot(corpus), corpus)

    rc, out, err = cli("--config", demo.config, "status", "--json")
    assert rc == 0, err
    closed = {c["corpus"]: c["failing_closed"] for c in json.loads(out)["corpora"]}
    assert closed == {
        "customers": True,
        "dept": True,
        "ops": False,
        "public": False,
        "sensitive": False,
    }
    record = next(d for d in demo.documents() if d.corpus == "customers" and "user:erin" in d.acl)
    rc, out, _ = cli("--config", demo.config, "search", record.title, "--user", "frank", "--json")
    assert rc == 0
    assert {r["corpus"] for r in json.loads(out)["results"]} & {"customers", "dept"} == set()

    rc, _, err = cli(
        "--config", demo.config, "acl", "sync", demo.acl_snapshot("customers"),
        "--corpus", "customers", "--json",
    )  # fmt: skip
    assert rc == 0, err

    rc, out, _ = cli("--config", demo.config, "status", "--json")
    closed = {c["corpus"]: c["failing_closed"] for c in json.loads(out)["corpora"]}
    assert closed["customers"] is False
    assert closed["dept"] is True
    rc, out, _ = cli("--config", demo.config, "search", record.title, "--user", "frank", "--json")
    assert record.doc_id in {r["doc_id"] for r in json.loads(out)["results"]}


class _NoFreshness(AccessControl):
    """The leak: the revocation SLA is never checked."""

    def freshness(self, corpus: str) -> CorpusFreshness:
        return CorpusFreshness(corpus, self.clock(), 10 * 365 * 86400.0)


def test_invariant_4_reverse_proof_freshness_check_disabled(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo.app

    def leaky_access() -> AccessControl:
        return _NoFreshness(
            app.settings, app.directory, app.store.last_acl_syncs(), checkers={}, clock=app.clock
        )

    monkeypatch.setattr(app, "access", leaky_access)
    [synced] = set(app.store.last_acl_syncs().values())
    demo.clock.now = synced + timedelta(hours=25)

    violations = stale_leaks(app, ["frank"], demo.queries()[::5])
    assert any("returned" in v for v in violations)
    assert any("filter admits" in v for v in violations)


# --------------------------------------------------------------------------- invariant 5

RT_DOCS = {
    "hr:salaries": ("hr", "Salary bands for every grade, reviewed each April."),
    "hr:review": ("hr", "Salary review cycle and promotion calendar."),
    "hr:leave": ("hr", "Parental leave and salary continuation."),
    "wiki:travel": ("wiki", "Travel policy: salary advances for long trips."),
    "wiki:payroll": ("wiki", "Payroll calendar: salary paid on the 25th."),
}
RT_QUERIES = ("salary", "salary bands", "leave", "review calendar", "payroll")


class FailOpen:
    """The leak: a wrapper that treats anything but an explicit deny as an allow."""

    def __init__(self, inner: PermissionChecker) -> None:
        self.inner = inner

    def check(self, user_id: str, doc_ids: Sequence[str]) -> dict[str, RealtimeResult]:
        try:
            results = dict(self.inner.check(user_id, doc_ids))
        except Exception:
            results = {}
        denied = {d for d, r in results.items() if r.outcome is RealtimeOutcome.DENIED}
        return {
            d: RealtimeResult.deny() if d in denied else RealtimeResult.allow() for d in doc_ids
        }

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def realtime_settings(root: Path, url: str) -> Settings:
    config = root / "clearance.toml"
    config.write_text(
        f"""
[corpora.wiki]
[corpora.hr]
realtime_check = true
revocation_sla = "15m"
[corpora.hr.realtime]
url = "{url}"
timeout = "200ms"
cache_ttl = "30s"
[embedding]
provider = "none"
""",
        encoding="utf-8",
    )
    return load_settings(config)


def realtime_app(root: Path, url: str, **kwargs: Any) -> Clearance:
    """A fresh index of RT_DOCS (ann reads everything) opened with ``kwargs``."""
    settings = realtime_settings(root, url)
    manifest = root / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps({"doc_id": d, "corpus": c, "title": d, "text": t, "acl": ["group:staff"]})
            + "\n"
            for d, (c, t) in RT_DOCS.items()
        ),
        encoding="utf-8",
    )
    directory = root / "directory.json"
    directory.write_text(
        json.dumps(
            {
                "users": [{"id": "ann", "active": True}],
                "groups": [{"id": "staff", "members": ["user:ann"]}],
            }
        ),
        encoding="utf-8",
    )
    with Clearance.open(settings, checkers={}) as setup:
        assert setup.ingest([], manifest=manifest).counts == {"added": len(RT_DOCS)}
        setup.sync_directory(directory)
    return Clearance.open(settings, **kwargs)


def realtime_leaks(app: Clearance, user: str, confirmed: set[str]) -> list[str]:
    """Invariant 5: a document of a real-time corpus is served only if the source system
    confirmed it (``confirmed``: the doc ids it answered ``true`` for). Returns violations."""
    violations = []
    for query in RT_QUERIES:
        for hit in app.search(user, query, k=10).hits:
            doc = hit.document
            if app.settings.corpus(doc.corpus).realtime_check and doc.doc_id not in confirmed:
                violations.append(f"{query!r} returned unconfirmed {doc.doc_id}")
    return violations


HR = {d for d, (c, _) in RT_DOCS.items() if c == "hr"}
WIKI = set(RT_DOCS) - HR


def served(app: Clearance) -> set[str]:
    return {h.document.doc_id for q in RT_QUERIES for h in app.search("ann", q, k=10).hits}


def test_invariant_5_failed_realtime_check_serves_nothing(tmp_path: Path) -> None:
    # a fake source system that errors on every hr document
    failing = FakePermissionChecker({("ann", d): True for d in HR}, errors=HR)
    with realtime_app(tmp_path, "http://127.0.0.1:9/check", checkers={"hr": failing}) as app:
        assert realtime_leaks(app, "ann", confirmed=set()) == []
        assert served(app) == WIKI
        assert all(set(ids) <= HR for _, ids in failing.calls)  # it was asked, and said error
        assert failing.calls

        # not vacuous: once the source system answers, the hr documents are served
        failing.errors.clear()
        assert served(app) == HR | WIKI


@pytest.mark.parametrize("failure", ["http_500", "hangs"])
def test_invariant_5_failed_realtime_check_over_http_serves_nothing(
    tmp_path: Path, failure: str
) -> None:
    """The configured checker (HTTP + cache, built from ``[corpora.hr.realtime]``) against a
    real server that fails: nothing from hr, the rest still served, in bounded time."""
    with LoopbackServer() as server:
        if failure == "http_500":
            server.fail(500)
        else:
            server.hang(1.5)
        with realtime_app(tmp_path, server.url) as app:
            started = time.monotonic()
            assert realtime_leaks(app, "ann", confirmed=set()) == []
            assert served(app) == WIKI
            assert time.monotonic() - started < 10
            assert server.request_count > 0

            server.allow_all()
            assert served(app) == HR | WIKI


def test_invariant_5_reverse_proof_a_checker_that_fails_open(tmp_path: Path) -> None:
    failing = FakePermissionChecker(errors=HR)
    with realtime_app(
        tmp_path, "http://127.0.0.1:9/check", checkers={"hr": FailOpen(failing)}
    ) as app:
        violations = realtime_leaks(app, "ann", confirmed=set())
    assert violations
    assert all("unconfirmed hr:" in v for v in violations)


def test_invariant_5_reverse_proof_fail_open_over_http(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        server.fail(500)
        checker = FailOpen(HttpPermissionChecker(server.url, timeout_s=0.2))
        with realtime_app(tmp_path, server.url, checkers={"hr": checker}) as app:
            assert realtime_leaks(app, "ann", confirmed=set())
