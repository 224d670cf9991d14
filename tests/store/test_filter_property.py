"""The SQLite store's own two forms of the filter agree with ``SearchFilter.admits``: the
SQL predicate (``_allowed``: facts and ``allowed_doc_ids``) document by document, and the
in-memory mask both retrievers rank inside, chunk by chunk; and one ``retrieve`` (both
retrievers in one mask) returns what the two separate searches return.

That each search returns the top-k of the allowed set, on every backend, is the
conformance suite's (tests/conformance/test_search.py, test_non_interference.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from conformance.world import EMBEDDER, fill, filters, texts, worlds


def mask_admits(store: SQLiteStore, flt: SearchFilter) -> set[str]:
    """Chunk ids the store's own permission mask admits (its current in-memory copies)."""
    content, access = store._indexes(vectors=False)
    mask = access.chunk_mask(flt, content)
    return {cid for cid, ok in zip(content.chunk_ids, mask.tolist(), strict=True) if ok}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_sql_filter_and_the_mask_agree_with_admits(data: st.DataObject) -> None:
    world = data.draw(worlds(), label="world")
    flt = data.draw(filters(world), label="filter")
    query = data.draw(texts, label="query")
    k = data.draw(st.sampled_from([3, 1, 2, 6]), label="k")
    # one file per example: function-scoped fixtures are not reset between examples
    with tempfile.TemporaryDirectory() as tmp, SQLiteStore(Path(tmp) / "index.db") as store:
        fill(store, world)

        allowed = store.allowed_doc_ids(flt)
        assert allowed == {e.document.doc_id for e in world.entries if flt.admits(e.document)}
        assert mask_admits(store, flt) == {c.chunk_id for _, c, _ in world.admitted_chunks(flt)}
        probe = EMBEDDER.embed([query])[0]
        both = store.retrieve(query, probe, flt, k)
        assert (both.lexical, both.vector) == (
            store.lexical_search(query, flt, k),
            store.vector_search(probe, flt, k),
        )
    event(f"allowed documents: {min(len(allowed), 3)}{'+' if len(allowed) >= 3 else ''}")
