"""Parallel ingest and queries from threads, on one handle and on several handles to the
same data: no errors, every write lands, and a reader never sees half a document (a replace
is all old chunks or all new ones, never a mix and never a part).

Nothing here depends on timing: the threads run a fixed number of writes, readers loop
until the writers are done, and every read is checked. The reverse proof is deterministic:
a replace written in two commits is read between them, and the same check rejects it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import factories
from clearance.model import Chunk, Document
from clearance.store.base import SearchFilter, Store
from conformance.backends import Stores
from conformance.leaks import TwoStepUpsert
from conformance.world import NOW, Entry, World, check_lexical_top_k, fill

WORDS = ("alpha", "bravo", "charlie", "delta")
VERSIONS = 24
DIM = 8
EVERYONE = SearchFilter(principals=frozenset({"everyone"}), now=NOW)


def size(version: int) -> int:
    """Chunks in a version: 1, 2, 3, 1, … so a half-written replace has a wrong count."""
    return version % 3 + 1


def version_of(n: int, version: int) -> tuple[Document, list[Chunk], list[np.ndarray]]:
    """Document ``c:<n>`` at ``version``: its chunks' ids name the version, every chunk says
    the document's word and points along the document's axis."""
    doc = factories.document(f"c:{n}", content_hash=f"v{version}", version=version)
    chunks = [
        Chunk(
            f"c:{n}#v{version}-{i}",
            doc.doc_id,
            i,
            f"{WORDS[n]} part {i}",
            f"part={i}",
            doc.sensitivity,
            doc.origin,
        )
        for i in range(size(version))
    ]
    axis = np.zeros(DIM, dtype=np.float32)
    axis[n] = 1.0
    return doc, chunks, [axis] * len(chunks)


def whole(ids: list[str]) -> None:
    """Chunk ids of one document, as one read returned them: all of one version, and all of it."""
    versions = {cid.split("#v")[1].split("-")[0] for cid in ids}
    assert len(versions) <= 1, ids
    if versions:
        assert len(ids) == size(int(versions.pop())), ids


def check_every_document_whole(store: Store) -> None:
    """Read each document three ways (lexical, vector, its chunk list); each is whole."""
    for n, word in enumerate(WORDS):
        only = SearchFilter(principals=EVERYONE.principals, doc_ids=frozenset({f"c:{n}"}), now=NOW)
        whole([cid for cid, _ in store.lexical_search(word, only, 10)])
        axis = np.zeros(DIM, dtype=np.float32)
        axis[n] = 1.0
        whole([cid for cid, _ in store.vector_search(axis, only, 10)])
        whole([c.chunk_id for c in store.get_chunks(f"c:{n}")])


def run_threads(work: list[Callable[[], None]]) -> list[BaseException]:
    """Run each callable in its own thread, all released at once; the errors they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def run(job: Callable[[], None]) -> None:
        try:
            start.wait()
            job()
        except BaseException as exc:  # handed to the test, which asserts on it
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_readers_never_see_half_a_document_while_writers_replace_it(stores: Stores) -> None:
    shared = stores.new()
    own_writer, own_reader = stores.reopen(shared), stores.reopen(shared)
    for n in range(len(WORDS)):
        doc, chunks, vecs = version_of(n, 0)
        shared.upsert(doc, chunks, vecs)
    writers_done = threading.Event()
    lock = threading.Lock()
    stopped = [0]

    def writer(store: Store, docs: list[int], deletes: bool = False) -> Callable[[], None]:
        def write() -> None:
            try:
                for version in range(1, VERSIONS + 1):
                    for n in docs:
                        if deletes and version % 7 == 0:
                            store.delete(f"c:{n}")
                        else:
                            doc, chunks, vecs = version_of(n, version)
                            store.upsert(doc, chunks, vecs)
            finally:  # a failing writer must not leave the readers looping
                with lock:
                    stopped[0] += 1
                    if stopped[0] == 3:
                        writers_done.set()

        return write

    def reader(store: Store) -> Callable[[], None]:
        def read() -> None:
            while not writers_done.is_set():
                check_every_document_whole(store)
            check_every_document_whole(store)

        return read

    errors = run_threads(
        [
            writer(shared, [0, 1]),
            writer(shared, [2]),
            writer(own_writer, [3], deletes=True),
            reader(shared),
            reader(shared),
            reader(own_reader),
        ]
    )

    assert errors == []
    for n in range(3):
        assert [c.chunk_id for c in shared.get_chunks(f"c:{n}")] == [
            c.chunk_id for c in version_of(n, VERSIONS)[1]
        ]
    stats = own_reader.stats()
    assert (stats.documents, stats.chunks) == (4, 3 * size(VERSIONS) + size(VERSIONS))


def test_reverse_proof_a_replace_in_two_commits_is_seen_half_written(store: Store) -> None:
    for n in range(len(WORDS)):
        doc, chunks, vecs = version_of(n, 0)
        store.upsert(doc, chunks, vecs)
    check_every_document_whole(store)
    leaky = TwoStepUpsert(store, between=lambda: check_every_document_whole(store))
    doc, chunks, vecs = version_of(0, 2)  # three chunks, written one then three

    with pytest.raises(AssertionError):
        leaky.upsert(doc, chunks, vecs)  # type: ignore[arg-type]


def test_parallel_ingest_through_several_handles_stores_everything(stores: Stores) -> None:
    shared = stores.new()
    handles = [shared, shared, stores.reopen(shared), stores.reopen(shared)]
    batches: list[list[Entry]] = [[] for _ in handles]
    for n in range(80):
        doc = factories.document(f"p:{n:02d}", acl={"everyone"} if n % 3 else {"user:ann"})
        text = " ".join(WORDS[(n + i) % 4] for i in range(n % 4 + 1))
        batches[n % len(handles)].append(Entry(doc, [factories.chunk(doc, text)], [None]))
    queries = ["alpha", "bravo charlie", "delta"]

    def ingest(store: Store, entries: list[Entry]) -> Callable[[], None]:
        def run() -> None:
            for e in entries:
                store.upsert(e.document, e.chunks, e.vectors)
                store.lexical_search(queries[len(e.chunks[0].text) % 3], EVERYONE, 5)

        return run

    errors = run_threads([ingest(s, b) for s, b in zip(handles, batches, strict=True)])

    assert errors == []
    assert [d.doc_id for d in shared.list_documents()] == [f"p:{n:02d}" for n in range(80)]
    everything = World([e for batch in batches for e in batch])
    for query in queries:  # BM25 scores do not depend on the order the threads wrote in
        check_lexical_top_k(shared, everything, query, EVERYONE, 100)


def test_concurrent_acl_changes_and_searches_agree_at_the_end(stores: Stores) -> None:
    shared = stores.new()
    world = World(
        [
            Entry(doc, [factories.chunk(doc, "alpha report")], [None])
            for doc in (factories.document(f"a:{n}", acl={"user:ann"}) for n in range(12))
        ]
    )
    fill(shared, world)
    other = stores.reopen(shared)
    ann = SearchFilter(principals=frozenset({"user:ann"}), now=NOW)

    def flip(store: Store, ids: range) -> Callable[[], None]:
        def run() -> None:
            for round_ in range(10):
                for n in ids:
                    acl = {"user:ann"} if round_ % 2 else {"user:bo"}
                    store.set_acl(f"a:{n}", frozenset(acl))
                    found = {c for c, _ in store.lexical_search("alpha", ann, 20)}
                    assert found <= {f"a:{m}#0" for m in range(12)}

        return run

    errors = run_threads([flip(shared, range(0, 6)), flip(other, range(6, 12))])

    assert errors == []
    # the last round (9, odd) gave everything back to ann
    assert {c for c, _ in shared.lexical_search("alpha", ann, 20)} == {
        f"a:{n}#0" for n in range(12)
    }
