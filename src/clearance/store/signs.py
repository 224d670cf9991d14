"""Approximate vector search by sign codes, for the embedded store: fast at any
selectivity, and a function of the caller's own rows.

Exact ranking reads every vector a caller may read (1.5 GB at a million 384-dimensional
chunks for a caller who may read them all). ``vector_search = "signs"`` keeps one bit per
dimension of every vector, its sign: 48 bytes a chunk. A search whose caller may read
``exact_below`` chunks or more:

1. counts, for every chunk the caller may read, how many of its signs differ from the
   query's (the Hamming distance: XOR and popcount over 64 dimensions at a time);
2. keeps the ``rescore`` nearest of those chunks, and every chunk exactly as near as the
   last of them, so that no order among equals decides;
3. scores the kept chunks exactly and ranks them as the exact search ranks them.

A chunk's code depends on its own vector alone, and the cut in step 2 is taken over the
caller's chunks alone, after the permission mask. So the candidates, and therefore the
results, are a function of the query and of the chunks the caller may read: a store
holding only those chunks returns the same results, bit for bit, whatever else it holds.
Nothing is built per caller or per permission class, nothing waits on a worker, and a
permission change governs the very next search: the mask is the only thing it changes.

The search is approximate: a near neighbour whose signs differ from the query's more than
``rescore`` other chunks' do is missed. Recall against exact ranking, on real MiniLM
vectors at a million chunks, is in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clearance.store.memory import BoolArray, IntArray, VectorRows

__all__ = ["SignCodes", "SignPlan", "hamming", "nearest_by_signs", "sign_words"]

Words = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class SignPlan:
    """A caller who may read ``exact_below`` vectors or more is searched by signs, with the
    ``rescore`` nearest (and their ties) scored exactly; ``rescore`` 0 ranks exactly."""

    exact_below: int = 20_000
    rescore: int = 8000


def sign_words(vectors: npt.NDArray[np.float32]) -> Words:
    """The sign bits of each row (1: positive), packed 64 dimensions to a word and laid out
    a word column at a time: ``(words per row, rows)``, so that one word of every row is
    contiguous. A width that is not a multiple of 64 is padded with zero bits, which every
    code shares and which therefore add no distance."""
    bits = np.packbits(vectors > 0, axis=1)
    padded = np.zeros((bits.shape[0], -(-bits.shape[1] // 8) * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return np.ascontiguousarray(padded.view(np.uint64).T)


def hamming(words: Words, query: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """How many signs of each row differ from the query's."""
    code = sign_words(np.asarray(query, dtype=np.float32).reshape(1, -1))[:, 0]
    distance: npt.NDArray[np.uint16] = np.bitwise_count(words[0] ^ code[0]).astype(np.uint16)
    spare = np.empty_like(words[0])
    for word, bits in zip(words[1:], code[1:], strict=True):
        np.bitwise_xor(word, bits, out=spare)
        distance += np.bitwise_count(spare)
    return distance


def nearest_by_signs(distance: npt.NDArray[np.uint16], among: IntArray, want: int) -> IntArray:
    """The rows of ``among`` within the Hamming distance of the ``want``-th nearest of them
    (all of them when they are no more than ``want``), in ascending order. ``distance``
    holds one distance per row of ``among``."""
    if want >= among.size:
        return among
    # Distances are small integers: the cut is where the running count reaches ``want``.
    running = np.cumsum(np.bincount(distance))
    cut = int(np.searchsorted(running, want))
    kept: IntArray = among[distance <= cut]
    return kept


class SignCodes:
    """The sign words of one store's vector rows, kept while its rows only grow.

    The vector rows live in a buffer that writes only append to (:class:`VectorRows`):
    the codes of the rows already coded stay right, and a new copy of the rows over the
    same buffer is coded from where the last one ended. Any other copy (the store reloaded
    its vectors) is coded afresh."""

    def __init__(self, plan: SignPlan) -> None:
        self.plan = plan
        self._lock = threading.Lock()
        # the array the codes were made from: a reference that does not keep it alive
        self._source: weakref.ref[npt.NDArray[np.float32]] | None = None
        self._words: Words | None = None  # (words per row, capacity)
        self._coded = 0

    def words(self, rows: VectorRows) -> Words:
        """The codes of ``rows.matrix``: ``(words per row, rows)``."""
        n = rows.positions.size
        source = rows.source()
        with self._lock:
            words, coded = self._words, self._coded
            if words is None or self._source is None or self._source() is not source:
                words, coded = None, 0
            if words is not None and n <= coded:  # (an older copy reads a prefix)
                return words[:, :n]
            fresh = sign_words(rows.matrix[coded:n])
            if words is None or n > words.shape[1]:
                grown = np.empty((fresh.shape[0], n + max(1024, n // 10)), dtype=np.uint64)
                if words is not None:
                    grown[:, :coded] = words[:, :coded]
                words = grown
            words[:, coded:n] = fresh
            self._source, self._words, self._coded = weakref.ref(source), words, n
            return words[:, :n]

    def candidates(
        self, rows: VectorRows, admitted: BoolArray, query: npt.NDArray[np.float32], k: int
    ) -> IntArray:
        """The vector rows to score exactly for a caller whose admitted rows are
        ``admitted``: all of them below ``exact_below``, else the nearest by signs."""
        among = np.flatnonzero(admitted)
        if among.size < self.plan.exact_below or not self.plan.rescore:
            return among
        words = self.words(rows)
        # A few passes over every row's words, or a gather of the caller's first when they
        # are a small part of them.
        if among.size * 4 < admitted.size:
            distance = hamming(words[:, among], query)
        else:
            distance = hamming(words, query)[among]
        return nearest_by_signs(distance, among, max(k, self.plan.rescore))
