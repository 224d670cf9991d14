"""Writers that bypass the store: a plain ``sqlite3`` connection, as an operator's shell or
another process would open it, and the rows the store would write for a chunk, by hand."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt

from clearance.analysis import document_terms


@contextmanager
def raw(path: Path, *, foreign_keys: bool = True) -> Iterator[sqlite3.Connection]:
    """An autocommit connection (``foreign_keys=False`` is the sqlite3 default)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        yield db


def index_by_hand(
    db: sqlite3.Connection, chunk: int, text: str, vector: npt.NDArray[np.float32], title: str = ""
) -> None:
    """The term row and the vector of chunk key ``chunk``, as the store writes them
    (replacing any): terms of ``title + "\\n" + text``, ids from the shared dictionary."""
    counts = Counter(document_terms(f"{title}\n{text}"))
    ids: dict[str, int] = {}
    for term in counts:
        db.execute("INSERT OR IGNORE INTO terms (term) VALUES (?)", (term,))
        ids[term] = db.execute("SELECT id FROM terms WHERE term = ?", (term,)).fetchone()[0]
    order = sorted(counts, key=ids.__getitem__)
    db.execute(
        "INSERT OR REPLACE INTO chunk_terms (chunk, length, term_ids, tfs) VALUES (?, ?, ?, ?)",
        (
            chunk,
            sum(counts.values()),
            np.asarray([ids[t] for t in order], dtype="<i4").tobytes(),
            np.asarray([counts[t] for t in order], dtype="<i4").tobytes(),
        ),
    )
    db.execute(
        "INSERT OR REPLACE INTO vectors (chunk, vec) VALUES (?, ?)",
        (chunk, np.asarray(vector, dtype=np.float32).tobytes()),
    )
