"""Approximate vector search by permission class, for the embedded store.

Exact ranking reads every vector a caller may read; at a million chunks that is most of the
time a query takes. One approximate graph over all chunks would be fast but gives up
non-interference: hidden chunks shape the graph a caller's search walks, so what someone
else may read could change a caller's results. This module keeps both (docs/search.md):

* A **permission class** is the set of chunks the permission filter decides alike: the
  same document ACL (principal set), document and chunk sensitivity, corpus and
  ``ai_allowed``. A filter admits every chunk of a class or none of it, except for the
  checks made per document (freshness deadlines, a search scoped to named documents).
* Where a caller may read ``exact_below`` chunks or more of a class, a search asks an HNSW
  graph (``usearch``) built from exactly those chunks for candidates: the class's own graph
  when the caller reads it whole, else a graph of the part they read, built once and kept
  while that part recurs. Graphs are built in chunk-id order on one thread, so the same
  rows always give the same graph.
* A class of ``scan_above`` chunks or more gets no graph (a graph over a very large, dense
  class misses neighbours) but a scan of every row: of one bit per dimension, the sign of
  each, whose nearest ``scan_rescore`` rows by Hamming distance are candidates (or, with
  ``scan_rescore`` 0, of the float vectors, exactly).
* Every other chunk the caller may read is a candidate as it stands. All candidates are
  scored exactly and ranked as the exact search ranks them.
* A graph that is missing (a class a write changed, or a part not seen before) is built on
  a worker thread, and so is the ordering and fingerprinting of a class not seen before;
  until both are there, that class's rows are ranked exactly, so no search waits for a
  large class. :meth:`ClassIndexes.prepare` (the store's ``warm``) builds every class's
  graph before the first search instead.

So a caller's results are a function of the query and of the rows the caller may read:
a chunk hidden from them is in no graph they search and in no candidate set, and a store
holding only their rows ranks exactly alike. A class's graph is rebuilt when its rows change
(a permission-only change moves a chunk to another class's graph without re-embedding it)
and dropped when no search used it since the last change.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from clearance.store.memory import AccessIndex, BoolArray, ContentIndex, IntArray
from clearance.store.signs import hamming, nearest_by_signs, sign_words

__all__ = ["ClassIndexes", "ClassPlan", "permission_classes"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClassPlan:
    """How classes are searched: a class of ``exact_below`` chunks or more has a graph of
    ``connectivity`` neighbours per node, built with ``expansion_add`` and searched with
    ``expansion_search`` candidates (at least ``k``), unless it is ``scan_above`` chunks or
    more."""

    exact_below: int = 1000
    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 100
    #: Build a missing graph on a worker thread and rank its rows exactly meanwhile (a
    #: class changed by a write is searched at exact speed until its graph is rebuilt),
    #: rather than in the search that needs it.
    background: bool = True
    #: A class of this many chunks or more gets no graph but a scan of every row (a graph
    #: over a very large, dense class misses neighbours). ``0``: graphs only.
    scan_above: int = 0
    #: How a scan reads: the ``scan_rescore`` rows nearest the query by the signs of their
    #: vectors (Hamming distance over one bit per dimension), and every row tied with the
    #: last of them, are handed on to be scored exactly. ``0``: the float vectors are
    #: scanned whole, exactly (four times the memory traffic of the codes, and 32 times
    #: their size).
    scan_rescore: int = 8000


class _Scan:
    """The exact stand-in for a graph: a class's vectors in one block, scanned whole."""

    def __init__(self, vectors: npt.NDArray[np.float32]) -> None:
        self.vectors = np.ascontiguousarray(vectors)

    @property
    def serialized_length(self) -> int:
        return int(self.vectors.nbytes)

    def search(self, query: npt.NDArray[np.float32], count: int, threads: int = 1) -> Any:
        """The ``count`` best rows, and every row tied with the last of them (so the cut
        at ``count`` never decides between equal scores)."""
        scores = np.einsum("ij,j->i", self.vectors, query)
        if count >= scores.size:
            return _Found(np.arange(scores.size, dtype=np.int64))
        kth = np.partition(-scores, count - 1)[count - 1]
        return _Found(np.flatnonzero(-scores <= kth).astype(np.int64))


class _SignScan:
    """A class's vectors as one bit per dimension (the sign), scanned whole: the rows
    nearest the query by Hamming distance are the candidates that are then scored exactly
    (:mod:`clearance.store.signs`). The codes and the cut are a function of the class's
    rows and the query alone, so the candidates are too."""

    def __init__(self, vectors: npt.NDArray[np.float32], rescore: int) -> None:
        self.rescore = rescore
        self.words = sign_words(vectors)

    @property
    def serialized_length(self) -> int:
        return int(self.words.nbytes)

    def search(self, query: npt.NDArray[np.float32], count: int, threads: int = 1) -> Any:
        """At least ``max(count, rescore)`` rows: all those within the Hamming distance of
        the one ranked there (ties are kept whole, so no order among equals decides)."""
        rows = np.arange(self.words.shape[1], dtype=np.int64)
        if max(count, self.rescore) >= rows.size:
            return _Found(rows)
        return _Found(nearest_by_signs(hamming(self.words, query), rows, max(count, self.rescore)))


@dataclass(frozen=True, slots=True)
class _Found:
    keys: IntArray


def permission_classes(content: ContentIndex, access: AccessIndex, rows: IntArray) -> IntArray:
    """A class label per vector row (``rows``: each row's position in ``content``): rows
    share a label when their chunks share document ACL, document and chunk sensitivity,
    corpus and ``ai_allowed``. A dead position or unknown document is ``-1``: in no class."""
    signature: dict[int, list[int]] = {}
    for code, keys in enumerate(access.readers.values()):
        for key in keys.tolist():
            signature.setdefault(key, []).append(code)
    acl_ids: dict[tuple[int, ...], int] = {}
    doc_acl = np.full(access.size, -1, dtype=np.int64)
    for key, codes in signature.items():
        doc_acl[key] = acl_ids.setdefault(tuple(sorted(codes)), len(acl_ids))
    docs = content.doc_keys[rows]
    known = (docs >= 0) & (docs < access.size)
    docs = np.where(known, docs, 0)
    # One integer per row from the five parts (each part's range known), so that one 1-D
    # unique labels them: a unique over rows of five columns sorts rows, far slower.
    key = doc_acl[docs] + 1  # -1 (no ACL) becomes 0
    for part, size in (
        (access.sensitivity[docs].astype(np.int64) + 128, 256),  # any int8 level
        (content.sensitivity[rows].astype(np.int64) + 128, 256),
        (access.corpus[docs].astype(np.int64) + 1, len(access.corpus_codes) + 1),
        (access.ai_allowed[docs].astype(np.int64), 2),
    ):
        key = key * size + part
    _, labels = np.unique(key, return_inverse=True)
    labels = labels.reshape(-1).astype(np.int64)
    valid = known & content.live[rows] & access.exists[docs]
    labelled: IntArray = np.where(valid, labels, -1)
    return labelled


@dataclass(frozen=True, slots=True)
class _Class:
    """One class of the current labels: its vector rows in a fixed order (by chunk id, the
    same in any store holding these chunks, whatever the row keys around them) and the
    fingerprint of those rows (their chunk ids and vectors)."""

    members: IntArray
    fingerprint: bytes


class ClassIndexes:
    """The graphs of one store's classes, reused while the rows they were built from stay
    the same.

    The graph a search uses is built from exactly the rows of one class that the caller
    may read: the whole class, or, when a per-document check (a freshness deadline, a
    search scoped to some documents) admits only part of it, that part, which is then
    built once and kept while it recurs. A store holding only the caller's rows would
    hold that part as a whole class, build the same graph, and rank alike.

    Graphs are keyed by a fingerprint of their rows, so a new in-memory copy of the store
    whose class did not change finds its graph again. A graph no search used since the
    copy before the current one is dropped, and at most ``_PARTS`` graphs of parts are
    kept."""

    _PARTS = 8

    def __init__(self, plan: ClassPlan) -> None:
        self.plan = plan
        self._lock = threading.Lock()
        self._labels: tuple[ContentIndex, AccessIndex, IntArray] | None = None
        self._classes: dict[int, _Class] = {}
        self._graphs: dict[bytes, Any] = {}  # used with the current labels
        self._previous: dict[bytes, Any] = {}  # used with the labels before them
        self._parts: dict[bytes, Any] = {}  # graphs of parts of classes, oldest first
        self._pending: dict[bytes, Callable[[], object]] = {}
        # (vectors' identity, rows' digest) -> (those vectors, their class), for the
        # current labels and those before them
        self._by_rows: dict[tuple[int, bytes], tuple[Any, _Class]] = {}
        self._by_rows_before: dict[tuple[int, bytes], tuple[Any, _Class]] = {}
        self._worker: threading.Thread | None = None

    def labels(self, content: ContentIndex, access: AccessIndex) -> IntArray:
        """The class label of every vector row of ``content`` under ``access``."""
        with self._lock:
            cached = self._labels
            if cached is not None and cached[0] is content and cached[1] is access:
                return cached[2]
            assert content.vectors is not None
            labels = permission_classes(content, access, content.vectors.positions)
            self._labels = (content, access, labels)
            self._classes = {}
            self._previous, self._graphs = self._graphs, {}
            self._by_rows_before, self._by_rows = self._by_rows, {}
            return labels

    def candidates(
        self,
        content: ContentIndex,
        access: AccessIndex,
        admitted: BoolArray,
        query: npt.NDArray[np.float32],
        k: int,
    ) -> IntArray:
        """The vector rows to score exactly for a caller whose admitted rows are
        ``admitted``: from each class of which the caller may read ``exact_below`` rows or
        more, the graph candidates of those rows; every other admitted row."""
        labels = self.labels(content, access)
        classes = int(labels.max()) + 1 if labels.size else 0
        in_class = labels >= 0
        taken = np.bincount(labels[in_class & admitted], minlength=classes)
        large = np.flatnonzero(taken >= self.plan.exact_below)
        if large.size == 0:
            return np.flatnonzero(admitted)
        ready = np.zeros(classes + 1, dtype=np.bool_)  # the last slot: no class (-1)
        found = []
        for label in large.tolist():
            known = self._class(content, labels, label, compute=not self.plan.background)
            if known is None:  # ordered and fingerprinted on the worker; exact meanwhile
                self._schedule_class(content, labels, label)
                continue
            ready[label] = True
            part = admitted[known.members]
            if part.all():
                rows, graph = known.members, self._whole(content, known)
            else:
                rows = known.members[part]
                graph = self._part(content, known, rows, part)
            found.append(rows if graph is None else self._search(graph, rows, query, k))
        found.append(np.flatnonzero(admitted & ~ready[labels]))
        return np.concatenate(found)

    def prepare(self, content: ContentIndex, access: AccessIndex) -> int:
        """Build the graph of every class of ``exact_below`` chunks or more now, rather than
        in the first search that reads it whole; the number of graphs."""
        labels = self.labels(content, access)
        size = np.bincount(labels[labels >= 0]) if labels.size else np.zeros(0, np.int64)
        large = np.flatnonzero(size >= self.plan.exact_below).tolist()
        for label in large:
            self._whole(content, self._class(content, labels, label), wait=True)
        return len(large)

    def _schedule_class(self, content: ContentIndex, labels: IntArray, label: int) -> None:
        def job() -> None:
            known = self._class(content, labels, label)
            assert known is not None
            self._whole(content, known, wait=True)

        # One job per class of these labels (held while current, so the id is theirs): the
        # job finds the rows, not each search that waits for it.
        self._schedule(f"class {id(labels)} {label}".encode(), job)

    @overload
    def _class(self, content: ContentIndex, labels: IntArray, label: int) -> _Class: ...

    @overload
    def _class(
        self, content: ContentIndex, labels: IntArray, label: int, *, compute: bool
    ) -> _Class | None: ...

    def _class(
        self, content: ContentIndex, labels: IntArray, label: int, *, compute: bool = True
    ) -> _Class | None:
        """The class's rows in order and fingerprint: known already, else computed (sorting
        its chunk ids and hashing its vectors: seconds for a class of 400,000), else, without
        ``compute``, ``None``."""
        with self._lock:
            known = self._classes.get(label)
            current = self._labels is not None and self._labels[2] is labels
        if known is not None and current:
            return known
        vectors = content.vectors
        assert vectors is not None
        rows = np.flatnonzero(labels == label)
        # The same rows of the same vectors as under the labels before (a permission change
        # elsewhere): the same class, without sorting and hashing it again.
        same = (id(vectors.matrix), hashlib.blake2b(rows.tobytes(), digest_size=16).digest())
        with self._lock:
            earlier = self._by_rows.get(same) or self._by_rows_before.get(same)
        if earlier is not None and earlier[0] is vectors.matrix:
            known = earlier[1]
            if current:
                with self._lock:
                    self._classes[label] = known
            return known
        if not compute:
            return None
        ids = [content.chunk_ids[p] for p in vectors.positions[rows].tolist()]
        order = sorted(range(rows.size), key=ids.__getitem__)
        members: IntArray = rows[np.asarray(order, dtype=np.int64)]
        digest = hashlib.blake2b(vectors.matrix[members].tobytes(), digest_size=16)
        for j in order:
            digest.update(ids[j].encode("utf-8") + b"\0")
        known = _Class(members, digest.digest())
        with self._lock:
            if current:
                self._classes[label] = known
            self._by_rows[same] = (vectors.matrix, known)
        return known

    def _whole(self, content: ContentIndex, known: _Class, *, wait: bool = False) -> Any | None:
        with self._lock:
            graph = self._graphs.get(known.fingerprint) or self._previous.get(known.fingerprint)
            if graph is not None:
                self._graphs[known.fingerprint] = graph
                return graph
        return self._missing(known.fingerprint, content, known.members, part=False, wait=wait)

    def _part(self, content: ContentIndex, known: _Class, rows: IntArray, part: BoolArray) -> Any:
        key = hashlib.blake2b(known.fingerprint + np.packbits(part).tobytes()).digest()
        with self._lock:
            graph = self._parts.pop(key, None)
            if graph is not None:
                self._parts[key] = graph  # the most recently used last
                return graph
        return self._missing(key, content, rows, part=True, wait=False)

    def _missing(
        self, key: bytes, content: ContentIndex, rows: IntArray, *, part: bool, wait: bool
    ) -> Any | None:
        """Build the graph of ``rows`` now (``wait``, or no background building), else have
        the worker build it and return ``None``: the caller ranks these rows exactly."""
        vectors = content.vectors
        assert vectors is not None

        def build() -> Any:
            graph = self._build(vectors.matrix[rows])  # a copy: later writes do not move it
            self._keep(key, graph, part=part)
            return graph

        if wait or not self.plan.background:
            return build()
        self._schedule(key, build)
        return None

    def _schedule(self, key: bytes, job: Callable[[], object]) -> None:
        """Have the worker run ``job`` once, unless a job of that key is waiting already."""
        with self._lock:
            if key in self._pending:
                return
            self._pending[key] = job
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._work, name="clearance-class-graphs", daemon=True
                )
                self._worker.start()

    def _keep(self, key: bytes, graph: Any, *, part: bool) -> None:
        with self._lock:
            if not part:
                self._graphs[key] = graph
                return
            self._parts[key] = graph
            while len(self._parts) > self._PARTS:
                del self._parts[next(iter(self._parts))]

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._worker = None
                    return
                key, job = next(iter(self._pending.items()))
            try:
                job()
            except Exception:  # the class stays ranked exactly; the next search asks again
                logger.exception("building a permission class's graph failed")
            finally:
                with self._lock:
                    self._pending.pop(key, None)

    def wait(self) -> None:
        """Until the worker has built every graph asked of it."""
        while True:
            with self._lock:
                worker = self._worker
            if worker is None:
                return
            worker.join()

    def _build(self, vectors: npt.NDArray[np.float32]) -> Any:
        if self.plan.scan_above and len(vectors) >= self.plan.scan_above:
            if self.plan.scan_rescore:
                return _SignScan(vectors, self.plan.scan_rescore)
            return _Scan(vectors)
        from usearch.index import Index

        graph = Index(
            ndim=int(vectors.shape[1]),
            metric="ip",
            dtype="f32",
            connectivity=self.plan.connectivity,
            expansion_add=self.plan.expansion_add,
            expansion_search=self.plan.expansion_search,
        )
        # One thread, rows in chunk-id order: the graph is a function of the rows alone.
        graph.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=1)
        return graph

    def _search(
        self, graph: Any, rows: IntArray, query: npt.NDArray[np.float32], k: int
    ) -> IntArray:
        count = min(max(k, self.plan.expansion_search), rows.size)
        found = graph.search(query, count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64).reshape(-1)
        picked: IntArray = rows[keys[(keys >= 0) & (keys < rows.size)]]
        return picked
