"""The ACME persona matrix through the real CLI and search path (examples/acme, docs/design.md §6–7).

``personas.json`` is computed by ``examples/acme/check_personas.py``, an oracle that shares no
code with Clearance. Here the demo corpus is ingested once per module with the real
``clearance`` commands (lexical only, for speed), and for every persona the set of documents
the product lets them retrieve must equal the oracle's set exactly — through the compiled
filter, through ``Clearance.search`` and through ``clearance search --json``; the same with the
SCIM directory.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clearance.access.policy import Action
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.model import Sensitivity
from clitools import cli, lexical_only

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
ORACLE: dict[str, Any] = json.loads((ACME / "personas.json").read_text(encoding="utf-8"))
PERSONAS: dict[str, dict[str, Any]] = ORACLE["personas"]
CANARIES: dict[str, list[str]] = ORACLE["canaries"]
NAMES = sorted(PERSONAS)


@dataclass
class Index:
    config: Path
    app: Clearance

    def allowed(self, user: str, action: Action = Action.RETRIEVE) -> set[str]:
        access = self.app.access()
        flt = access.search_filter(
            access.principal(user), None, self.app.store.corpora(), action=action
        )
        return self.app.store.allowed_doc_ids(flt)

    def searched(self, user: str, query: str, k: int = 50) -> list[str]:
        return [h.document.doc_id for h in self.app.search(user, query, k=k).hits]

    def cli_search(self, user: str, query: str) -> dict[str, Any]:
        rc, out, err = cli(
            "--config", self.config, "search", query, "--user", user, "-k", "50", "--json"
        )
        assert rc == 0, err
        result: dict[str, Any] = json.loads(out)
        return result


@contextlib.contextmanager
def clean_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:  # module scope: the autouse fixture is not active
        mp.delenv("CLEARANCE_HOME", raising=False)
        mp.delenv("CLEARANCE_TRACE_KEY", raising=False)
        yield


def setup_root(root: Path) -> Path:
    config = root / "clearance.toml"
    config.write_text(lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8")))
    return config


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """The demo corpus, ingested and synced with the real CLI, once for this module."""
    config = setup_root(tmp_path_factory.mktemp("acme"))
    with clean_env():
        rc, out, err = cli(
            "--config", config, "directory", "sync", ACME / "directory.json", "--json"
        )
        assert rc == 0, err
        assert json.loads(out)["users"] == 18
        rc, out, err = cli(
            "--config", config, "ingest", "--manifest", ACME / "manifest.jsonl", "--json"
        )
        assert rc == 0, err
        assert json.loads(out)["counts"] == {"added": 73, "absent": 1}
        app = Clearance.open(load_settings(config))
        try:
            yield Index(config, app)
        finally:
            app.close()


@pytest.fixture(scope="module")
def acme_scim(acme: Index, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """A copy of the same index whose directory came from ``directory.scim.json``."""
    config = setup_root(tmp_path_factory.mktemp("acme-scim"))
    settings = load_settings(config)
    settings.db_path.parent.mkdir(parents=True)
    with (
        contextlib.closing(sqlite3.connect(acme.app.store.path)) as src,
        contextlib.closing(sqlite3.connect(settings.db_path)) as dst,
    ):
        src.backup(dst)
    with clean_env():
        rc, _, err = cli(
            "--config", config, "directory", "sync", ACME / "directory.scim.json", "--json"
        )
        assert rc == 0, err
        app = Clearance.open(settings)
        try:
            yield Index(config, app)
        finally:
            app.close()


# --------------------------------------------------------------------------- exact sets


@pytest.mark.parametrize("name", NAMES)
def test_principal_set_matches_the_oracle(acme: Index, name: str) -> None:
    persona = PERSONAS[name]
    assert acme.app.principal(persona["user"]).principals == set(persona["principals"])


@pytest.mark.parametrize("name", NAMES)
def test_retrievable_set_is_exactly_the_expected_docs(acme: Index, name: str) -> None:
    persona = PERSONAS[name]
    assert acme.allowed(persona["user"]) == set(persona["expected_docs"])


@pytest.mark.parametrize("name", NAMES)
def test_view_set_is_the_expected_docs_including_restricted(acme: Index, name: str) -> None:
    """VIEW lifts rule 5 (restricted) and rule 7 (AI use). The oracle's
    ``expected_docs_including_restricted`` lifts only rule 5, so the documents marked
    ``ai_allowed: false`` are compared separately: nameable exactly to their ACL's readers."""
    persona = PERSONAS[name]
    view = acme.allowed(persona["user"], Action.VIEW)
    documents = {d.doc_id: d for d in acme.app.store.list_documents()}
    ai_off = {d for d, doc in documents.items() if not doc.ai_allowed}
    assert ai_off, "the demo corpus has an ai_allowed = false document"

    assert view - ai_off == set(persona["expected_docs_including_restricted"])
    principals = set(persona["principals"])
    assert view & ai_off == {d for d in ai_off if documents[d].acl & principals}
    # every extra document named is RESTRICTED or not for AI, never anything else
    for doc_id in view - set(persona["expected_docs"]):
        doc = documents[doc_id]
        assert doc.sensitivity is Sensitivity.RESTRICTED or not doc.ai_allowed


def test_the_matrix_is_not_trivial(acme: Index) -> None:
    """The personas see different things, someone sees nothing, someone is named more than
    they may retrieve — so the exact-set tests above compare something."""
    sets = {name: frozenset(PERSONAS[name]["expected_docs"]) for name in NAMES}
    assert len(set(sets.values())) == len(sets)
    assert sets["erin"] == frozenset()
    assert any(
        set(PERSONAS[n]["expected_docs_including_restricted"]) > set(PERSONAS[n]["expected_docs"])
        for n in NAMES
    )
    assert len(acme.app.store.list_documents()) == 73


# --------------------------------------------------------------------------- the search path


@pytest.mark.parametrize("name", NAMES)
def test_search_by_every_title_stays_inside_the_expected_docs(acme: Index, name: str) -> None:
    """A query built from each document's title — the persona's own and everyone else's —
    returns only expected documents; each expected document is found by its own title."""
    persona = PERSONAS[name]
    expected = set(persona["expected_docs"])
    leaks: dict[str, set[str]] = {}
    missed: list[str] = []
    for doc in acme.app.store.list_documents():
        found = acme.searched(persona["user"], doc.title)
        if set(found) - expected:
            leaks[doc.title] = set(found) - expected
        if doc.doc_id in expected and doc.doc_id not in found:
            missed.append(doc.doc_id)
    assert leaks == {}
    assert missed == []


@pytest.mark.parametrize("name", NAMES)
def test_canary_queries_never_surface_a_forbidden_document(acme: Index, name: str) -> None:
    """Searching for the unique strings planted in RESTRICTED documents and customer records
    finds them only where the persona may retrieve the document — never a RESTRICTED one."""
    persona = PERSONAS[name]
    expected = set(persona["expected_docs"])
    owner = {c: doc_id for doc_id, canaries in CANARIES.items() for c in canaries}
    for canary in owner:
        for hit in acme.app.search(persona["user"], canary, k=50).hits:
            assert hit.document.doc_id in expected
            assert hit.document.sensitivity < Sensitivity.RESTRICTED
            for planted, doc_id in owner.items():
                if planted in hit.chunk.text:
                    assert doc_id in expected, (planted, hit.document.doc_id)


CLI_QUERIES = ("revenue FY2025 Japan", "board minutes investigation salary")


@pytest.mark.parametrize("name", NAMES)
def test_cli_search_stays_inside_the_expected_docs(acme: Index, name: str) -> None:
    persona = PERSONAS[name]
    expected = set(persona["expected_docs"])
    forbidden_title = next(
        d.title for d in acme.app.store.list_documents() if d.doc_id not in expected
    )
    for query in (*CLI_QUERIES, forbidden_title):
        result = acme.cli_search(persona["user"], query)
        ids = {row["doc_id"] for row in result["results"]}
        assert ids <= expected, query
        assert all(row["sensitivity"] != "RESTRICTED" for row in result["results"])
        if expected and query == CLI_QUERIES[0]:
            assert ids, f"{name} finds something for {query!r}"
    if not PERSONAS[name]["principals"]:
        assert result["refused"] == "account_disabled"
        assert result["results"] == []


# --------------------------------------------------------------------------- SCIM


@pytest.mark.parametrize("name", NAMES)
def test_scim_directory_gives_identical_sets(acme: Index, acme_scim: Index, name: str) -> None:
    user = PERSONAS[name]["user"]
    assert acme_scim.app.principal(user).principals == acme.app.principal(user).principals
    for action in Action:
        assert acme_scim.allowed(user, action) == acme.allowed(user, action)
    assert acme_scim.allowed(user) == set(PERSONAS[name]["expected_docs"])
    assert acme_scim.cli_search(user, CLI_QUERIES[0]) == acme.cli_search(user, CLI_QUERIES[0])


def test_scim_directory_has_every_user_and_group(acme: Index, acme_scim: Index) -> None:
    assert set(acme_scim.app.directory.users) == set(acme.app.directory.users)
    assert dict(acme_scim.app.directory.groups) == dict(acme.app.directory.groups)
    for user_id, user in acme.app.directory.users.items():
        assert acme_scim.app.directory.users[user_id].active is user.active


# --------------------------------------------------------------------------- explain


def test_cli_explain_grace_on_board_documents(acme: Index) -> None:
    board = [d for d in acme.app.store.list_documents() if d.doc_id.startswith("sharepoint:board")]
    assert len(board) == 3
    for doc in board:
        rc, out, err = cli(
            "--config", acme.config, "explain", "--user", "grace", "--doc", doc.doc_id, "--json"
        )
        assert rc == 0, err
        data = json.loads(out)
        assert data["principal"]["known"] is True
        assert data["principal"]["active"] is True
        assert data["matched_via"] == {}
        for action in ("retrieve", "view"):
            decision = data["decisions"][action]
            assert decision["allow"] is False
            assert "not_in_acl" in decision["reasons"]
        if doc.sensitivity is Sensitivity.RESTRICTED:
            assert "restricted" in data["decisions"]["retrieve"]["reasons"]
            assert "restricted" not in data["decisions"]["view"]["reasons"]


def test_cli_explain_shows_the_group_path_for_an_allowed_document(acme: Index) -> None:
    """The other side of explain: hiro reads the Japan pipeline through nested groups."""
    [doc] = [
        d for d in acme.app.store.list_documents() if d.path and "pipeline-fy2026-ja" in d.path
    ]
    rc, out, err = cli(
        "--config", acme.config, "explain", "--user", "hiro", "--doc", doc.doc_id, "--json"
    )
    assert rc == 0, err
    data = json.loads(out)
    assert data["decisions"]["retrieve"]["allow"] is True
    paths = data["matched_via"]
    assert paths, "an allowed document names the principal it matched"
    for principal, path in paths.items():
        assert path[0] == "user:hiro"
        assert path[-1] == principal
