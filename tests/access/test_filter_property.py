"""The whole search path against a brute force, on random directories and documents.

Random users (some disabled), groups with random members (nesting, cycles, self-membership,
unknown users and groups), random documents (corpus, sensitivity, ACL — possibly empty or
naming unknown groups —, expiry, AI use) in three corpora, one of which may be stale, and
random queries. For a random user, ``Clearance.search`` (lexical only) must return

* only documents a brute-force oracle authorises — its own principal-set fixpoint, ACL
  intersection and the other rules of docs/access.md —, and
* exactly the top-k of an *unfiltered* lexical search restricted to those documents, in
  the same order (the filter is inside the search, never applied afterwards).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from clearance.access.policy import Action
from clearance.app import Clearance
from clearance.config import settings_from_dict
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
VOCAB = ("alpha", "beta", "gamma", "delta", "omega")
USERS = ("u0", "u1", "u2", "u3", "u4")
GROUPS = ("g0", "g1", "g2", "g3")
MEMBERS = (
    *(f"user:{u}" for u in USERS),
    "user:ghost",  # not in the directory
    *(f"group:{g}" for g in GROUPS),
    "group:nowhere",  # not in the directory
)
ACL_PRINCIPALS = (
    "everyone",
    *(f"user:{u}" for u in USERS),
    *(f"group:{g}" for g in (*GROUPS, "nowhere")),
)
LEVELS = tuple(s.name for s in Sensitivity)
# corpus → (ceiling, SLA in seconds); "c" is stale whenever the query runs 5 minutes later
CORPORA = {"a": ("CONFIDENTIAL", 3600), "b": ("INTERNAL", 3600), "c": ("RESTRICTED", 60)}


@dataclass(frozen=True)
class Doc:
    doc_id: str
    corpus: str
    sensitivity: str
    acl: frozenset[str]
    expires_in: int | None  # seconds after the query time; None = never
    ai_allowed: bool
    text: str


@dataclass(frozen=True)
class Case:
    active: dict[str, bool]
    groups: dict[str, frozenset[str]]
    docs: list[Doc]
    user: str
    query: str
    k: int
    later: bool  # query 5 minutes after the sync, so corpus "c" is stale

    @property
    def now(self) -> datetime:
        return T0 + timedelta(minutes=5 if self.later else 0)


words = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8).map(" ".join)


@st.composite
def acls(draw: st.DrawFn) -> frozenset[str]:
    """Mostly a readable ACL (often with 'everyone'); sometimes empty: visible to nobody."""
    if draw(st.integers(0, 7)) == 0:
        return frozenset()
    acl = draw(st.frozensets(st.sampled_from(ACL_PRINCIPALS), min_size=1, max_size=3))
    return acl | ({"everyone"} if draw(st.booleans()) else set())


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Most choices lean towards "allowed" so that most examples authorise something; every
    denying value still comes up."""
    active = {u: draw(st.sampled_from([True, True, True, True, False])) for u in USERS}
    groups = {g: draw(st.frozensets(st.sampled_from(MEMBERS), max_size=4)) for g in GROUPS}
    docs = [
        Doc(
            doc_id=f"src:{n}",
            corpus=draw(st.sampled_from(["a", "a", "b", "c"])),
            sensitivity=draw(st.sampled_from(["INTERNAL", "PUBLIC", "INTERNAL", *LEVELS])),
            acl=draw(acls()),
            expires_in=draw(st.sampled_from([None, None, None, None, 3600, 0, -3600])),
            ai_allowed=draw(st.sampled_from([True, True, True, True, False])),
            text=draw(words),
        )
        for n in range(draw(st.integers(2, 10)))
    ]
    return Case(
        active=active,
        groups=groups,
        docs=docs,
        user=draw(st.sampled_from([*USERS, "stranger"])),
        # words of the documents (so something matches), sometimes another one
        query=" ".join(
            draw(
                st.lists(
                    st.sampled_from(sorted({w for d in docs for w in d.text.split()}))
                    | st.sampled_from(VOCAB),
                    min_size=1,
                    max_size=3,
                )
            )
        ),
        k=draw(st.integers(1, 6)),
        later=draw(st.booleans()),
    )


# --------------------------------------------------------------------------- the oracle


def principal_set(case: Case, user: str) -> set[str]:
    if not case.active.get(user, False):
        return set()
    result = {f"user:{user}", "everyone"}
    while True:
        more = {f"group:{g}" for g, members in case.groups.items() if members & result}
        if more <= result:
            return result
        result |= more


def authorised(case: Case) -> set[str]:
    """Rules 1–8 by brute force (no assistant, action retrieve)."""
    principals = principal_set(case, case.user)
    out = set()
    for doc in case.docs:
        ceiling, sla = CORPORA[doc.corpus]
        fresh = (case.now - T0).total_seconds() <= sla
        level = Sensitivity[doc.sensitivity]
        if (
            fresh
            and doc.acl & principals
            and level <= min(Sensitivity[ceiling], Sensitivity.CONFIDENTIAL)
            and (doc.expires_in is None or doc.expires_in > 0)
            and doc.ai_allowed
        ):
            out.add(doc.doc_id)
    return out


# --------------------------------------------------------------------------- the system


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def build(root: Path, case: Case) -> tuple[Clearance, Clock]:
    settings = settings_from_dict(
        {
            "corpora": {
                name: {"max_sensitivity": ceiling, "revocation_sla": sla}
                for name, (ceiling, sla) in CORPORA.items()
            },
            "embedding": {"provider": "none"},
        },
        root=root,
    )
    manifest = root / "manifest.jsonl"
    lines = []
    for doc in case.docs:
        meta: dict[str, Any] = {
            "doc_id": doc.doc_id,
            "corpus": doc.corpus,
            "title": "doc",
            "text": doc.text,
            "acl": sorted(doc.acl),
            "sensitivity": doc.sensitivity,
            "ai_allowed": doc.ai_allowed,
        }
        if doc.expires_in is not None:
            meta["expires_at"] = (case.now + timedelta(seconds=doc.expires_in)).isoformat()
        lines.append(json.dumps(meta))
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    directory = root / "directory.json"
    directory.write_text(
        json.dumps(
            {
                "users": [{"id": u, "active": a} for u, a in case.active.items()],
                "groups": [{"id": g, "members": sorted(m)} for g, m in case.groups.items()],
            }
        ),
        encoding="utf-8",
    )
    clock = Clock(T0)
    app = Clearance(settings, SQLiteStore(settings.db_path), clock=clock)
    report = app.ingest([], manifest=manifest)
    assert not report.failed, report.failed
    app.sync_directory(directory)
    clock.now = case.now
    return app, clock


ADMIT_ALL = SearchFilter(
    principals=frozenset(ACL_PRINCIPALS),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=T0 - timedelta(days=365),
    require_ai_allowed=False,
)


def brute_force_top_k(app: Clearance, case: Case, allowed: set[str]) -> list[str]:
    """The top k (chunk ids, best first) of an index that holds only the authorised
    documents, copied in their original order: BM25 statistics are the allowed set's, so
    this is what a permission-filtered search must return."""
    with app.store.reading() as db:
        order = [str(r[0]) for r in db.execute("SELECT doc_id FROM documents ORDER BY key")]
    with SQLiteStore(":memory:") as only_allowed:
        for doc_id in order:
            document = app.store.get_document(doc_id)
            if doc_id in allowed and document is not None:
                only_allowed.upsert(document, app.store.get_chunks(doc_id))
        return [c for c, _ in only_allowed.lexical_search(case.query, ADMIT_ALL, case.k)]


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_search_returns_the_top_k_of_what_the_user_may_retrieve(case: Case) -> None:
    # one index per example: function-scoped fixtures are not reset between examples
    with tempfile.TemporaryDirectory() as tmp:
        app, _ = build(Path(tmp), case)
        with app:
            allowed = authorised(case)
            result = app.search(case.user, case.query, k=case.k)
            got = [h.chunk.chunk_id for h in result.hits]

            # (a) everything returned is authorised by the brute force
            assert {h.document.doc_id for h in result.hits} <= allowed
            # (b) and it is exactly the top-k of the authorised documents, in order
            assert got == brute_force_top_k(app, case, allowed)
            # (c) the compiled filter admits exactly the authorised documents
            access = app.access()
            flt = access.search_filter(
                access.principal(case.user), None, app.store.corpora(), action=Action.RETRIEVE
            )
            assert app.store.allowed_doc_ids(flt) == allowed
            if not principal_set(case, case.user):
                assert result.hits == []
                assert result.refused in ("account_disabled", "unknown_user")

            event(f"authorised docs: {min(len(allowed), 3)}")
            event(f"hits: {min(len(got), 3)}")
