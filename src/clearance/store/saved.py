"""The embedded store's in-memory search copy, saved beside the SQLite file.

Opening a large index used to mean rebuilding its BM25 postings and reading every vector
out of SQLite before the first search (about 20 s at a million chunks). The store saves its
:class:`~clearance.store.memory.ContentIndex` (postings, per-chunk columns and vectors) in
a folder beside the file, ``<index>.saved/``, and the next process maps it back instead:
the arrays are memory-mapped, read as searches touch them.

What keeps the saved copy honest:

* **It is a cache, never a source.** It names the store it was made from (a random
  ``store_id`` kept in the file's ``meta`` table), the content generation and the
  change-log position it includes. A copy of another file, of an unknown format, or one
  that cannot be read is ignored and the copy is rebuilt from the file. A copy that is
  behind is brought up to date like any in-memory copy: the chunks the change log names
  since are applied, and a copy whose chunks no longer match the file's (count and key
  sum) is rebuilt (:meth:`SQLiteStore._current_content
  <clearance.store.sqlite.SQLiteStore._current_content>`).
* **Permissions are never saved.** Only content is: which chunks hold which terms and
  vectors. Documents' ACLs, sensitivity and expiry are read from the file at every
  access generation, so a revocation is governed by the file alone.
* **A deleted chunk leaves nothing behind.** A dead position (a chunk deleted or replaced
  since the copy was built) is saved with no postings, no vector and no id: a document
  removed from the index is not kept in the saved copy's files.
* **Written whole or not at all.** A new copy is written to a temporary folder and renamed
  into place; a reader sees the old copy or the new one. Files are readable by the file's
  owner only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from clearance.store.memory import ContentIndex, VectorRows

__all__ = ["FORMAT", "load_copy", "save_copy", "saved_generation", "saved_path"]

#: The saved copy's format; a copy of another format is ignored.
FORMAT = 1

_ARRAYS = (
    "keys",
    "doc_keys",
    "sensitivity",
    "lengths",
    "live",
    "offsets",
    "postings",
    "frequencies",
)


def saved_path(index: Path) -> Path:
    """Where the saved copy of the index file ``index`` lives."""
    return index.with_name(index.name + ".saved")


def _without_dead(content: ContentIndex) -> dict[str, Any]:
    """What is saved: every posting, id and vector of a dead position left out (the terms
    and vectors of what was deleted), posting offsets counted again."""
    live = content.live
    keep = live[content.postings]
    offsets, postings, frequencies = content.offsets, content.postings, content.frequencies
    if not keep.all():  # (a copy built afresh has no dead position: nothing to count again)
        counts = np.diff(offsets)
        term_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of[keep], minlength=counts.size), out=offsets[1:])
        postings, frequencies = postings[keep], frequencies[keep]
    out: dict[str, Any] = {name: getattr(content, name) for name in _ARRAYS}
    out.update(offsets=offsets, postings=postings, frequencies=frequencies)
    out["chunk_ids"] = [
        c if alive else "" for c, alive in zip(content.chunk_ids, live.tolist(), strict=True)
    ]
    if content.vectors is not None:
        positions, matrix = content.vectors.positions, content.vectors.matrix
        alive_rows = live[positions]
        if not alive_rows.all():
            positions, matrix = positions[alive_rows], matrix[alive_rows]
        out["vector_positions"], out["vectors"] = positions, matrix
    return out


def save_copy(content: ContentIndex, index: Path, store_id: str) -> None:
    """Save ``content`` (with its vectors when loaded) as the saved copy of ``index``,
    replacing any older one. Raises ``OSError`` when the folder cannot be written."""
    target = saved_path(index)
    folder = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        saved = _without_dead(content)
        for name in (*_ARRAYS, *(("vector_positions", "vectors") if "vectors" in saved else ())):
            np.save(folder / f"{name}.npy", np.ascontiguousarray(saved[name]))
        encoded = [cid.encode("utf-8") for cid in saved["chunk_ids"]]
        ends = np.cumsum([len(e) for e in encoded], dtype=np.int64)
        np.save(folder / "chunk_id_ends.npy", ends)
        (folder / "chunk_ids.bin").write_bytes(b"".join(encoded))
        header = {
            "format": FORMAT,
            "store_id": store_id,
            "generation": content.generation,
            "log_seq": content.log_seq,
            "vectors": "vectors" in saved,
        }
        (folder / "header.json").write_text(json.dumps(header), encoding="utf-8")
        for path in folder.iterdir():
            os.chmod(path, 0o600)
        old = target.with_name(f".{target.name}-old-{os.getpid()}")
        if target.exists():
            target.rename(old)
        folder.rename(target)  # another process saving at the same moment: OSError
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        # The old copy set aside, if it was: another process's copy took its place.
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(target.with_name(f".{target.name}-old-{os.getpid()}"), ignore_errors=True)
        raise


def saved_generation(index: Path, store_id: str) -> tuple[int, int, bool] | None:
    """``(generation, log_seq, with vectors)`` of the saved copy of ``index`` made from the
    store ``store_id``, or ``None``."""
    header = _header(saved_path(index), store_id)
    if header is None:
        return None
    return int(header["generation"]), int(header["log_seq"]), bool(header["vectors"])


def _header(folder: Path, store_id: str) -> dict[str, Any] | None:
    try:
        header = json.loads((folder / "header.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    if header.get("store_id") != store_id:
        return None
    return header


def load_copy(index: Path, store_id: str) -> ContentIndex | None:
    """The saved copy of ``index`` made from the store ``store_id``, its arrays mapped
    read-only; ``None`` when there is none, it is of another store or format, or it
    cannot be read (it is then rebuilt from the file)."""
    folder = saved_path(index)
    header = _header(folder, store_id)
    if header is None:
        return None
    try:
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        ends = np.load(folder / "chunk_id_ends.npy")
        blob = (folder / "chunk_ids.bin").read_bytes()
        starts = np.concatenate([[0], ends[:-1]]) if ends.size else ends
        chunk_ids = [
            blob[s:e].decode("utf-8") for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        vectors = None
        if header["vectors"]:
            positions = np.load(folder / "vector_positions.npy")
            matrix = np.load(folder / "vectors.npy", mmap_mode="r")
            vectors = VectorRows(np.asarray(positions, dtype=np.int64), matrix)
        sizes = {arrays[n].shape[0] for n in ("keys", "doc_keys", "sensitivity", "lengths", "live")}
        if sizes != {len(chunk_ids)} or arrays["postings"].shape != arrays["frequencies"].shape:
            return None
    except (OSError, ValueError, UnicodeDecodeError, KeyError):
        return None
    return ContentIndex.restored(
        int(header["generation"]),
        int(header["log_seq"]),
        chunk_ids=chunk_ids,
        vectors=vectors,
        **arrays,
    )
