"""Reading a retrieval dataset in the BEIR layout, from a folder or a zip file.

The layout (Thakur et al., *BEIR*, 2021) is three files:

* ``corpus.jsonl`` — one JSON object a line: ``_id``, ``text``, optional ``title``;
* ``queries.jsonl`` — one JSON object a line: ``_id``, ``text``;
* ``qrels/<split>.tsv`` — a header line, then ``query-id``, ``corpus-id`` and an integer
  ``score`` per line, tab-separated (score > 0: relevant).

In a zip the three may sit under one top folder (``scifact/corpus.jsonl``), as the published
archives have them. Only queries with at least one judgement are kept: a query nobody judged
measures nothing. Every problem is an :class:`~clearance.errors.EvaluationError` naming the
file and line.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from clearance.errors import EvaluationError

__all__ = ["BeirDataset", "load_beir"]


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A corpus, the judged queries and their relevance judgements."""

    name: str
    corpus: dict[str, tuple[str, str]]  # doc id → (title, text)
    queries: dict[str, str]  # query id → text, judged queries only, file order
    qrels: dict[str, dict[str, int]]  # query id → doc id → grade


class _Source:
    """The dataset's files, whether in a folder or a zip."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        if path.is_file():
            try:
                self._zip = zipfile.ZipFile(path)
            except (OSError, zipfile.BadZipFile) as exc:
                raise EvaluationError(f"{path}: not a readable zip file: {exc}") from None
            self._names = [n for n in self._zip.namelist() if not n.endswith("/")]
        elif path.is_dir():
            self._names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
        else:
            raise EvaluationError(f"{path}: no such folder or zip file")

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def find(self, suffix: str) -> str:
        """The member whose path ends with ``suffix`` (the shallowest if several)."""
        found = [n for n in self._names if n == suffix or n.endswith("/" + suffix)]
        if not found:
            raise EvaluationError(f"{self.path}: no {suffix} (expected the BEIR layout)")
        return min(found, key=lambda n: (len(PurePosixPath(n).parts), n))

    def lines(self, name: str) -> Iterator[tuple[int, str]]:
        try:
            zipped = self._zip
            raw = zipped.read(name) if zipped is not None else (self.path / name).read_bytes()
            text = raw.decode("utf-8-sig")
        except (OSError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise EvaluationError(f"{self.path}: cannot read {name}: {exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield number, line


def _records(source: _Source, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every JSON line of ``name``, each with a string ``_id``."""
    for number, line in source.lines(name):
        where = f"{name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(f"{where}: not valid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise EvaluationError(f"{where}: expected a JSON object")
        if not isinstance(record.get("_id"), str | int) or str(record["_id"]) == "":
            raise EvaluationError(f"{where}: '_id' must be a non-empty string")
        if not isinstance(record.get("text", ""), str):
            raise EvaluationError(f"{where}: 'text' must be a string")
        yield where, record


def _qrels(source: _Source, name: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for number, line in source.lines(name):
        fields = line.split("\t")
        if number == 1 and not fields[-1].strip().lstrip("-").isdigit():
            continue  # the header
        if len(fields) != 3:
            raise EvaluationError(
                f"{name}:{number}: expected query-id, corpus-id and score separated by tabs"
            )
        query_id, doc_id, grade = (f.strip() for f in fields)
        try:
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
        except ValueError:
            raise EvaluationError(f"{name}:{number}: score {grade!r} is not an integer") from None
    return qrels


def load_beir(path: Path, split: str = "test") -> BeirDataset:
    """Read the dataset at ``path`` (folder or zip) with the judgements of ``split``."""
    source = _Source(path)
    try:
        corpus: dict[str, tuple[str, str]] = {}
        for where, record in _records(source, source.find("corpus.jsonl")):
            title = record.get("title") or ""
            if not isinstance(title, str):
                raise EvaluationError(f"{where}: 'title' must be a string")
            corpus[str(record["_id"])] = (title, record.get("text", ""))
        queries = {
            str(r["_id"]): r.get("text", "")
            for _, r in _records(source, source.find("queries.jsonl"))
        }
        qrels_name = source.find(f"qrels/{split}.tsv")
        qrels = _qrels(source, qrels_name)
    finally:
        source.close()
    unknown = sorted(q for q in qrels if q not in queries)
    if unknown:
        raise EvaluationError(f"{qrels_name}: query {unknown[0]!r} is not in queries.jsonl")
    judged = {q: {d: g for d, g in qrels[q].items() if g > 0} for q in queries if q in qrels}
    judged = {q: docs for q, docs in judged.items() if docs}
    if not judged:
        raise EvaluationError(f"{qrels_name}: no query has a relevant document")
    name = path.name.removesuffix(".zip")
    return BeirDataset(name, corpus, {q: queries[q] for q in judged}, judged)
