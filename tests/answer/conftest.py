"""The ACME demo corpus (examples/acme) as a session-wide fixture for the answer-engine suite,
plus the leak detectors the invariant and end-to-end tests share.

The corpus is ingested once per session with the real ``clearance`` commands
(``directory sync`` and ``ingest --manifest``), lexical only (``[embedding] provider = "none"``)
for speed. A second index, built only when a test asks for it, holds the same corpus *without*
a few documents (``HIDDEN``), for the "refusal identical whether the hidden source exists or
not" invariant (docs/design.md §6, §10.8).

``personas.json`` is written by ``examples/acme/check_personas.py``, an oracle that shares no
code with Clearance: ``expected_docs`` is what each persona may retrieve, ``canaries`` the
unique strings planted in every RESTRICTED document and customer record.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.intent import IntentParser
from clearance.answer.orchestrator import Orchestrator
from clearance.answer.routes.restricted import RESTRICTED_FLAG, RESTRICTED_NAMED
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.llm.base import Provider
from clearance.llm.extractive import split_sentences
from clearance.model import Chunk, Document, Fact
from clitools import cli

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
ORACLE: dict[str, Any] = json.loads((ACME / "personas.json").read_text(encoding="utf-8"))
PERSONAS: dict[str, dict[str, Any]] = ORACLE["personas"]
CANARIES: dict[str, list[str]] = ORACLE["canaries"]
PERSONA_NAMES: tuple[str, ...] = tuple(sorted(PERSONAS))
#: Documents whose canaries mark them RESTRICTED (cross-checked against the store in a test).
RESTRICTED_CANARY_DOCS: frozenset[str] = frozenset(
    doc for doc, marks in CANARIES.items() if all("-RESTRICTED-" in m for m in marks)
)
RESTRICTED_CANARIES: tuple[str, ...] = tuple(
    m for doc in sorted(RESTRICTED_CANARY_DOCS) for m in CANARIES[doc]
)

#: Documents left out of the second index: doc_id → manifest path.
HIDDEN: dict[str, str] = {
    "sharepoint:board-2025-03-minutes": "sensitive/board/board-minutes-2025-03.docx",
    "sharepoint:cust-eu-0058": "customers/eu/cust-eu-0058-bergmann-automotive.txt",
    "sharepoint:hr-comp-2026": "sensitive/hr/compensation-bands-2026.xlsx",
}


def staff_handbook(
    root: Path, pages: Mapping[str, str], settings: Any, store: Any, directory: Path
) -> Clearance:
    """An engine over one folder of ``pages`` (name → text) that group ``staff`` may read,
    ingested, with ``directory`` synced: a handbook as a company publishes one."""
    folder = root / "handbook"
    folder.mkdir(parents=True)
    (folder / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = Clearance(settings, store)
    assert engine.ingest([folder]).failed == []
    engine.sync_directory(directory)
    return engine


#: ``handbook(pages, user)`` (the fixture below).
Handbook = Callable[[Mapping[str, str], str], Clearance]


@pytest.fixture
def handbook(tmp_path: Path, settings_factory: Any, store: Any, write_directory: Any) -> Handbook:
    """``handbook(pages, user)``: an engine over ``pages`` (name → text), which ``user``, a
    member of group ``staff``, may read (:func:`staff_handbook`, default settings)."""

    def build(pages: Mapping[str, str], user: str) -> Clearance:
        root = tmp_path / "corpus"
        root.mkdir()
        directory = write_directory(root / "directory.json", {user: ["staff"]})
        return staff_handbook(root, pages, settings_factory(), store, directory)

    return build


def readable(persona: str) -> frozenset[str]:
    """What the oracle says ``persona`` may retrieve."""
    return frozenset(PERSONAS[persona]["expected_docs"])


def nameable(persona: str) -> frozenset[str]:
    """What the oracle says ``persona`` may be *named*: readable, plus RESTRICTED documents
    in their ACL (title, link and locator only, never content)."""
    return readable(persona) | frozenset(PERSONAS[persona]["expected_docs_including_restricted"])


def citable(persona: str, answer: str, flags: Sequence[str]) -> frozenset[str]:
    """What an answer to ``persona`` may cite: what they may retrieve and — only in an
    answer that names RESTRICTED sources under the fixed text and says nothing else — what
    they may be named. The content checks stay on :func:`readable`."""
    named_only = RESTRICTED_FLAG in flags and answer.startswith(RESTRICTED_NAMED)
    return nameable(persona) if named_only else readable(persona)


def forbidden_canaries(persona: str) -> dict[str, list[str]]:
    """Canaries of every document ``persona`` may not retrieve (RESTRICTED ones included)."""
    allowed = readable(persona)
    return {doc: marks for doc, marks in CANARIES.items() if doc not in allowed}


# --------------------------------------------------------------------------- the CLI


@contextlib.contextmanager
def clean_env() -> Iterator[None]:
    """Session scope: the autouse per-test environment fixture is not active yet."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("CLEARANCE_HOME", raising=False)
        mp.delenv("CLEARANCE_TRACE_KEY", raising=False)
        yield


# --------------------------------------------------------------------------- configuration


def demo_config(llm: Mapping[str, Any] | None = None) -> str:
    """The demo's clearance.toml, lexical only, optionally with another ``[llm]`` table."""
    toml = (ACME / "clearance.toml").read_text(encoding="utf-8")
    toml, n = re.subn(
        r'(?m)^(\[embedding\]\n(?:[^\[\n].*\n|\n)*?provider\s*=\s*)"[^"]*"', r'\1"none"', toml
    )
    assert n == 1, "examples/acme/clearance.toml: no [embedding] provider to override"
    if llm is not None:
        block = "[llm]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in llm.items()) + "\n"
        toml, n = re.subn(r"(?ms)^\[llm\]\n.*?(?=^\[)", lambda _: block, toml)
        assert n == 1, "examples/acme/clearance.toml: no [llm] table to replace"
    return toml


def filtered_manifest(dest: Path, leave_out: Iterable[str]) -> Path:
    """A copy of the demo manifest without the lines for ``leave_out`` (manifest paths);
    the other paths are made absolute so the copy can live anywhere inside the index's
    configured ``[ingest] roots`` (see :func:`build_index`)."""
    skip = set(leave_out)
    lines: list[str] = []
    found: set[str] = set()
    for line in (ACME / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        if entry.get("path") in skip:
            found.add(entry["path"])
            continue
        if "path" in entry:
            entry["path"] = str(ACME / entry["path"])
        lines.append(json.dumps(entry, ensure_ascii=False))
    assert found == skip, f"not in the manifest: {sorted(skip - found)}"
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


# --------------------------------------------------------------------------- the index


@dataclass
class AcmeIndex:
    """One ingested copy of the demo corpus and an open :class:`Clearance` over it."""

    root: Path
    config: Path
    app: Clearance
    _chunks: dict[str, list[Chunk]] = field(default_factory=dict)
    _facts: dict[str, list[Fact]] = field(default_factory=dict)
    _fingerprints: dict[str, tuple[str, ...]] | None = None

    def orchestrator(
        self,
        provider: Provider,
        *,
        judge: Provider | None = None,
        intent_parser: IntentParser | None = None,
    ) -> Orchestrator:
        return Orchestrator(self.app, provider=provider, judge=judge, intent_parser=intent_parser)

    def document(self, doc_id: str) -> Document | None:
        return self.app.store.get_document(doc_id)

    def doc_ids(self) -> list[str]:
        return sorted(d.doc_id for d in self.app.store.list_documents())

    def chunks(self, doc_id: str) -> list[Chunk]:
        if doc_id not in self._chunks:
            self._chunks[doc_id] = self.app.store.get_chunks(doc_id)
        return self._chunks[doc_id]

    def facts(self, doc_id: str) -> list[Fact]:
        if doc_id not in self._facts:
            self._facts[doc_id] = self.app.store.list_facts(doc_id)
        return self._facts[doc_id]

    def fingerprints(self) -> dict[str, tuple[str, ...]]:
        """Per document, sentences (≥ 25 characters) that occur in no other document: if
        one shows up in a prompt or an answer, that document's text got there."""
        if self._fingerprints is None:
            texts = {d: "\n".join(c.text for c in self.chunks(d)) for d in self.doc_ids()}
            out: dict[str, tuple[str, ...]] = {}
            for doc_id in texts:
                others = [t for d, t in texts.items() if d != doc_id]
                unique = [
                    s
                    for s in dict.fromkeys(
                        s.strip() for c in self.chunks(doc_id) for s in split_sentences(c.text)
                    )
                    if len(s) >= 25 and not any(s in t for t in others)
                ]
                out[doc_id] = tuple(unique)
            self._fingerprints = out
        return self._fingerprints


def build_index(root: Path, manifest: Path) -> AcmeIndex:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "clearance.toml"
    # A manifest copied elsewhere names the demo's files by absolute path: they are inside
    # the configured root, so ingestion may read them.
    roots = f"\n[ingest]\nroots = [{json.dumps(str(ACME))}]\n"
    config.write_text(demo_config() + roots, encoding="utf-8")
    rc, _, err = cli("--config", config, "directory", "sync", ACME / "directory.json", "--json")
    assert rc == 0, err
    rc, out, err = cli("--config", config, "ingest", "--manifest", manifest, "--json")
    assert rc == 0, err
    counts = json.loads(out)["counts"]
    assert counts.get("failed", 0) == 0, out
    return AcmeIndex(root, config, Clearance.open(load_settings(config)))


@pytest.fixture(scope="session")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    """The whole demo corpus, ingested and synced with the real CLI, once per session."""
    with clean_env():
        index = build_index(tmp_path_factory.mktemp("acme"), ACME / "manifest.jsonl")
        try:
            assert len(index.doc_ids()) == 73
            yield index
        finally:
            index.app.close()


@pytest.fixture(scope="session")
def acme_without_hidden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    """The same corpus without the documents of ``HIDDEN``: they do not exist at all."""
    root = tmp_path_factory.mktemp("acme-without-hidden")
    manifest = filtered_manifest(root / "manifest.jsonl", HIDDEN.values())
    with clean_env():
        index = build_index(root / "index", manifest)
        try:
            assert not set(HIDDEN) & set(index.doc_ids())
            assert len(index.doc_ids()) == 73 - len(HIDDEN)
            yield index
        finally:
            index.app.close()


# --------------------------------------------------------------------------- leak detection


def find_all(text: str, needles: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """``(doc_id, needle)`` for every needle that occurs in ``text``."""
    return [(doc, n) for doc, ns in needles.items() for n in ns if n and n in text]


_SOURCE = re.compile(r"^\[(S\d+)\] [^\n]*\n", re.MULTILINE)


def parrot(body: dict[str, Any]) -> str:
    """A worst-case model for the loopback server: it ranks by reversing the labels and
    answers by quoting every source it was given back under its label, so anything that
    reached the prompt also reaches the answer."""
    messages = body.get("messages") or [{}]
    system = str(messages[0].get("content", ""))
    user = str(messages[-1].get("content", ""))
    refs = _SOURCE.findall(user)
    if system.startswith("Rank"):
        return " > ".join(reversed(refs)) or "S1"
    quoted: list[str] = []
    starts = list(_SOURCE.finditer(user))
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(user)
        text = user[match.end() : end].split("<<<")[0].split("\nQuestion:")[0].strip()
        if text:
            quoted.append(f"{text} [{match.group(1)}]")
    return " ".join(quoted) or "I found nothing. [S1]"
