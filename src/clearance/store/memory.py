"""In-memory search structures of the embedded store, rebuilt from the SQLite file.

The file is the source of truth; these are caches keyed by write generations that SQLite
triggers maintain, so a change committed by *any* writer (another process, a raw SQL
statement) is seen by the next search:

* :class:`ContentIndex` — every chunk (in key order) with its document, sensitivity and
  id, an inverted index of term frequencies for BM25 and, loaded on first use, the vector
  matrix. Rebuilt when chunks change (``content_generation``).
* :class:`AccessIndex` — per-document sensitivity, corpus, expiry, ``ai_allowed`` and the
  principal → documents postings of the ACLs. Rebuilt when a document row or an ACL row
  changes (``access_generation``), so a revocation is never served from a stale copy.

:meth:`AccessIndex.chunk_mask` turns a :class:`SearchFilter` into a boolean mask over the
chunks; both retrievers rank *inside* that mask. :func:`bm25_top_k` computes BM25 with
statistics (N, average length, document frequencies) over the **allowed chunks only**, so a
caller's ranking is exactly the ranking an index holding only what they may read would
give: a document they cannot read cannot move their results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from clearance.store.base import SearchFilter

__all__ = ["BM25", "AccessIndex", "ContentIndex", "bm25_top_k", "top_k"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

_NO_ACCESS = np.int8(-1)  # a ceiling below every sensitivity level


@dataclass(frozen=True, slots=True)
class BM25:
    """Okapi BM25 parameters (the usual defaults, as in Lucene and FTS5)."""

    k1: float = 1.2
    b: float = 0.75


class ContentIndex:
    """Chunks in key order with their BM25 postings; vectors are attached separately."""

    def __init__(
        self,
        generation: int,
        rows: Sequence[tuple[int, int, int, str, int, bytes, bytes]],
    ) -> None:
        """``rows``: ``(chunk key, doc key, sensitivity, chunk id, length, term ids, tfs)``
        ordered by chunk key; term ids and frequencies are packed little-endian int32."""
        n = len(rows)
        self.generation = generation
        self.keys: IntArray = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.doc_keys: IntArray = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
        self.sensitivity = np.fromiter((r[2] for r in rows), dtype=np.int8, count=n)
        self.chunk_ids: list[str] = [r[3] for r in rows]
        self.lengths = np.fromiter((r[4] for r in rows), dtype=np.float64, count=n)
        term_ids = np.frombuffer(b"".join(r[5] for r in rows), dtype="<i4")
        tfs = np.frombuffer(b"".join(r[6] for r in rows), dtype="<i4")
        per_chunk = np.fromiter((len(r[5]) // 4 for r in rows), dtype=np.int64, count=n)
        owner = np.repeat(np.arange(n, dtype=np.int32), per_chunk)
        # Inverted index (CSR by term id): a stable sort keeps each posting list in chunk
        # order, which is also the tie order of the ranking.
        order = np.argsort(term_ids, kind="stable")
        self.postings = owner[order]
        self.frequencies = tfs[order].astype(np.float64)
        size = int(term_ids.max()) + 2 if term_ids.size else 1
        self.offsets = np.zeros(size, dtype=np.int64)
        np.cumsum(np.bincount(term_ids, minlength=size - 1), out=self.offsets[1:])
        self.vectors: VectorRows | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def posting(self, term_id: int) -> tuple[npt.NDArray[np.int32], FloatArray]:
        """The chunks (positions, ascending) holding a term, with its frequency in each. A
        term this copy has never seen (added after it was built) has none."""
        if term_id < 0 or term_id + 1 >= self.offsets.size:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float64)
        lo, hi = self.offsets[term_id], self.offsets[term_id + 1]
        return self.postings[lo:hi], self.frequencies[lo:hi]


@dataclass(frozen=True, slots=True)
class VectorRows:
    """The vectors of the chunks that have one: ``positions`` index :class:`ContentIndex`."""

    positions: IntArray
    matrix: npt.NDArray[np.float32]

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


class AccessIndex:
    """What the permission filter needs about every document, as arrays indexed by doc key."""

    def __init__(
        self,
        generation: int,
        documents: Sequence[tuple[int, str, str, int, float | None, int]],
        acl: Sequence[tuple[str, int]],
    ) -> None:
        """``documents``: ``(key, doc_id, corpus, sensitivity, expires_at, ai_allowed)``;
        ``acl``: ``(principal, doc key)``."""
        self.generation = generation
        size = max((d[0] for d in documents), default=0) + 1
        self.size = size
        self.sensitivity = np.full(size, np.iinfo(np.int8).max, dtype=np.int8)
        self.exists = np.zeros(size, dtype=np.bool_)
        self.expires = np.full(size, np.inf, dtype=np.float64)
        self.ai_allowed = np.zeros(size, dtype=np.bool_)
        self.corpus = np.full(size, -1, dtype=np.int32)
        self.corpus_codes: dict[str, int] = {}
        self.keys_by_doc_id: dict[str, int] = {}
        for key, doc_id, corpus, sensitivity, expires_at, ai_allowed in documents:
            self.exists[key] = True
            self.sensitivity[key] = sensitivity
            if expires_at is not None:
                self.expires[key] = expires_at
            self.ai_allowed[key] = bool(ai_allowed)
            self.corpus[key] = self.corpus_codes.setdefault(corpus, len(self.corpus_codes))
            self.keys_by_doc_id[doc_id] = key
        grouped: dict[str, list[int]] = {}
        for principal, key in acl:
            # An ACL row of a missing document (a writer with foreign keys off deleted it)
            # grants nothing.
            if key < size and self.exists[key]:
                grouped.setdefault(principal, []).append(key)
        self.readers: dict[str, IntArray] = {
            p: np.asarray(keys, dtype=np.int64) for p, keys in grouped.items()
        }

    def ceilings(self, flt: SearchFilter) -> npt.NDArray[np.int8]:
        """Per doc key, the highest chunk sensitivity the filter admits, or -1 if the
        document is not admitted at all. Mirrors :meth:`SearchFilter.admits` exactly."""
        admitted = np.zeros(self.size, dtype=np.bool_)
        for principal in flt.principals:
            keys = self.readers.get(principal)
            if keys is not None:
                admitted[keys] = True
        admitted &= self.exists
        if flt.corpora is None:
            ceiling = np.full(self.size, int(flt.max_sensitivity), dtype=np.int8)
        else:
            by_code = np.full(len(self.corpus_codes) + 1, _NO_ACCESS, dtype=np.int8)
            for name, level in flt.corpora.items():
                code = self.corpus_codes.get(name)
                if code is not None:
                    by_code[code] = min(int(level), int(flt.max_sensitivity))
            ceiling = by_code[self.corpus]  # corpus -1 (no document) reads the last slot: -1
        admitted &= self.sensitivity <= ceiling
        admitted &= self.expires > flt.now.timestamp()
        if flt.require_ai_allowed:
            admitted &= self.ai_allowed
        if flt.doc_ids is not None:
            only = np.zeros(self.size, dtype=np.bool_)
            only[self._keys(flt.doc_ids)] = True
            admitted &= only
        if flt.exclude_doc_ids:
            admitted[self._keys(flt.exclude_doc_ids)] = False
        return np.where(admitted, ceiling, _NO_ACCESS).astype(np.int8)

    def _keys(self, doc_ids: frozenset[str]) -> IntArray:
        return np.fromiter(
            (k for d in doc_ids if (k := self.keys_by_doc_id.get(d)) is not None), dtype=np.int64
        )

    def chunk_mask(self, flt: SearchFilter, content: ContentIndex) -> BoolArray:
        """Which chunks of ``content`` the filter admits: the document is admitted and the
        chunk is within its ceiling. A chunk whose document this snapshot does not know
        is never admitted."""
        if not flt.principals or len(content) == 0:
            return np.zeros(len(content), dtype=np.bool_)
        ceilings = self.ceilings(flt)
        known = content.doc_keys < self.size
        doc_ceiling = np.full(len(content), _NO_ACCESS, dtype=np.int8)
        doc_ceiling[known] = ceilings[content.doc_keys[known]]
        mask: BoolArray = content.sensitivity <= doc_ceiling
        return mask


def top_k(scores: npt.NDArray[np.floating[Any]], candidates: IntArray, k: int) -> IntArray:
    """The ``k`` best of ``candidates`` (positions, ascending) by ``scores[candidates]``,
    best first; equal scores in position order, also across the cut at ``k``."""
    take = min(k, candidates.size)
    if take <= 0:
        return np.empty(0, dtype=np.int64)
    values = scores[candidates]
    kth = np.partition(-values, take - 1)[take - 1]
    keep = np.flatnonzero(-values <= kth)
    order = keep[np.lexsort((candidates[keep], -values[keep]))][:take]
    result: IntArray = candidates[order].astype(np.int64)
    return result


def bm25_top_k(
    index: ContentIndex, term_ids: Sequence[int], mask: BoolArray, k: int, params: BM25 = BM25()
) -> list[tuple[int, float]]:
    """``(position, score)`` of the ``k`` best chunks inside ``mask``, best first.

    Statistics come from the masked chunks alone: ``N`` is their count, the average length
    is theirs, and a term's document frequency counts only masked chunks containing it.
    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive, as in Lucene)."""
    if k <= 0 or not term_ids:
        return []
    allowed = int(np.count_nonzero(mask))
    if allowed == 0:
        return []
    average = float(index.lengths[mask].mean()) or 1.0
    positions: list[npt.NDArray[np.int32]] = []
    weights: list[FloatArray] = []
    for term_id in dict.fromkeys(term_ids):
        chunks, tf = index.posting(term_id)
        inside = mask[chunks]
        chunks, tf = chunks[inside], tf[inside]
        df = chunks.size
        if df == 0:
            continue
        idf = math.log(1.0 + (allowed - df + 0.5) / (df + 0.5))
        norm = params.k1 * (1.0 - params.b + params.b * index.lengths[chunks] / average)
        positions.append(chunks)
        weights.append(idf * tf * (params.k1 + 1.0) / (tf + norm))
    if not positions:
        return []
    matched = np.concatenate(positions)
    scores: FloatArray = np.bincount(
        matched, weights=np.concatenate(weights), minlength=len(index)
    ).astype(np.float64, copy=False)
    best = top_k(scores, np.unique(matched).astype(np.int64), k)
    return [(int(p), float(scores[p])) for p in best]
