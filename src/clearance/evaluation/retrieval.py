"""Retrieval quality on a BEIR-format dataset: nDCG@10 and Recall@100 per retriever.

The corpus is ingested into a temporary index with the configured embedding model,
chunking and retrieval settings — the same pipeline ``clearance ingest`` runs, as inline
documents of one PUBLIC corpus that one evaluation user may read — and every judged query
is searched as that user:

==========  ==================================================================================
lexical     the store's BM25 list (:meth:`SQLiteStore.retrieve`, the call hybrid search makes)
vector      the store's cosine list from the same call
hybrid      :meth:`Clearance.search`: both lists fused with RRF, as every search and answer does
reranked    hybrid, then the listwise judge over its first ``[retrieval] k`` hits, as ``ask``
            reranks them (only when ``[rerank] provider`` is not ``"none"``)
==========  ==================================================================================

Lists are of chunks; a document ranks where its best chunk ranks, and each run keeps the
first 100 documents. To find 100 documents each list is asked for ``100 × ⌈chunks per
document⌉`` chunks (at least ``[retrieval] candidates``), so hybrid fuses deeper lists than a
five-hit search does; its first ranks are the same fusion of the same two lists.

The measures come from ``ir-measures`` (trec_eval's implementation through
``pytrec-eval-terrier``), not from code of ours.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ir_measures
from ir_measures import R, nDCG

from clearance.access.policy import Action
from clearance.answer.prompt import assemble_prompt
from clearance.app import Clearance
from clearance.config import (
    AccessSettings,
    CorpusSettings,
    SensitivitySettings,
    Settings,
    StoreSettings,
    TraceSettings,
)
from clearance.errors import EvaluationError
from clearance.evaluation.beir import BeirDataset
from clearance.ingest.pipeline import FileResult
from clearance.llm.base import ChatMessage, ChatRequest, Provider, Snippet
from clearance.llm.guard import AuthorizedSet, EgressGuard
from clearance.llm.registry import make_provider, make_rerank_provider
from clearance.model import SearchHit, Sensitivity
from clearance.retrieval.rerank import rerank
from clearance.store.sqlite import SQLiteStore

__all__ = ["MEASURES", "RETRIEVERS", "RetrievalReport", "evaluate_retrieval"]

RETRIEVERS = ("lexical", "vector", "hybrid", "reranked")
MEASURES = (nDCG @ 10, R @ 100)
#: Documents kept per query and retriever (the deepest cut of :data:`MEASURES`).
DEPTH = 100

_CORPUS = "evaluation"
_USER = "evaluator"
_SOURCE = "beir"
_RANK_SYSTEM = (
    "Rank the sources by how well they answer the question. "
    "Reply only with their labels, best first, like: S2 > S1 > S3."
)


@dataclass(frozen=True, slots=True)
class RetrievalReport:
    """Figures per retriever over one dataset."""

    dataset: str
    documents: int
    indexed: int
    chunks: int
    queries: int
    embedding: str
    scores: dict[str, dict[str, float]]  # retriever → measure name → value
    skipped_queries: dict[str, str] = field(default_factory=dict)  # query id → why

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "documents": self.documents,
            "indexed": self.indexed,
            "chunks": self.chunks,
            "queries": self.queries,
            "embedding": self.embedding,
            "measures": [str(m) for m in MEASURES],
            "retrievers": self.scores,
            "skipped_queries": self.skipped_queries,
        }


def evaluation_settings(settings: Settings, root: Path) -> Settings:
    """``settings`` with the index, corpora and access rules replaced by a throwaway index
    under ``root``: the model, chunking, retrieval and rerank settings are kept, the rest
    (assistants, sources, classification rules, traces) takes no part."""
    return replace(
        settings,
        root=root,
        store=StoreSettings(path=root / "evaluation.db"),
        sensitivity=SensitivitySettings(default_level=Sensitivity.PUBLIC),
        corpora={_CORPUS: CorpusSettings(_CORPUS, max_sensitivity=Sensitivity.PUBLIC)},
        assistants={},
        sources={},
        access=AccessSettings(),
        trace=TraceSettings(enabled=False),
        ingest=replace(settings.ingest, roots=(root,), default_corpus=_CORPUS),
    )


def _manifest(dataset: BeirDataset) -> Iterable[str]:
    for doc_id, (title, text) in dataset.corpus.items():
        body = f"{title}\n\n{text}" if title and text else title or text
        if not body.strip():
            continue  # empty documents are counted as not indexed
        line = {
            "text": body,
            "doc_id": f"{_SOURCE}:{doc_id}",
            "title": title or doc_id,
            "corpus": _CORPUS,
            "acl": ["everyone"],
            "sensitivity": "PUBLIC",
            "source_system": _SOURCE,
        }
        yield json.dumps(line, ensure_ascii=False)


def _judge(settings: Settings) -> Provider | None:
    if settings.rerank.provider == "":
        return make_provider(settings.llm)
    return make_rerank_provider(settings.llm, settings.rerank)


def _reranked(hits: Sequence[SearchHit], question: str, provider: Provider, n: int) -> list[str]:
    """Doc ids of ``hits`` with the first ``n`` reordered by the judge, as ``ask`` does:
    through the egress guard, which lets only the hits' own chunks out."""
    guard = EgressGuard(provider)
    authorized = AuthorizedSet(
        user_id=_USER,
        chunks={h.chunk.chunk_id: h.document.doc_id for h in hits[:n]},
        corpora=frozenset(h.document.corpus for h in hits[:n]),
    )

    def judge(snippets: Sequence[Snippet]) -> str:
        prompt = assemble_prompt(question, snippets, budget=10**6)
        request = ChatRequest(
            purpose="rerank",
            question=question,
            messages=(ChatMessage("system", _RANK_SYSTEM), prompt.messages[1]),
            snippets=prompt.snippets,
        )
        return guard.complete(request, authorized, None).text

    head = rerank(hits[:n], judge)
    return [h.document.doc_id for h in [*head, *hits[n:]]]


def _documents(doc_ids: Iterable[str]) -> list[str]:
    """Dataset ids in first-seen order, at most :data:`DEPTH`."""
    out: dict[str, None] = {}
    for doc_id in doc_ids:
        out.setdefault(doc_id.removeprefix(f"{_SOURCE}:"), None)
        if len(out) == DEPTH:
            break
    return list(out)


def _run(ranked: dict[str, list[str]]) -> list[ir_measures.ScoredDoc]:
    return [
        ir_measures.ScoredDoc(query_id, doc_id, float(DEPTH - rank))
        for query_id, doc_ids in ranked.items()
        for rank, doc_id in enumerate(doc_ids)
    ]


def _measure(dataset: BeirDataset, ranked: dict[str, list[str]]) -> dict[str, float]:
    qrels = [
        ir_measures.Qrel(q, d, g)
        for q, docs in dataset.qrels.items()
        if q in ranked
        for d, g in docs.items()
    ]
    values = ir_measures.calc_aggregate(MEASURES, qrels, _run(ranked))
    return {str(m): float(values.get(m, 0.0)) for m in MEASURES}


def _index(
    app: Clearance,
    dataset: BeirDataset,
    root: Path,
    on_plan: Callable[[int], None] | None,
    on_result: Callable[[FileResult], None] | None,
) -> dict[str, str]:
    """Ingest the corpus; return chunk id → document id of what was stored."""
    directory = {"users": [{"id": _USER, "active": True}]}
    app.sync_directory_data(json.dumps(directory), "evaluation directory")
    manifest = root / "corpus.manifest.jsonl"
    manifest.write_text("\n".join(_manifest(dataset)) + "\n", encoding="utf-8")
    app.ingest([], manifest=manifest, on_plan=on_plan, on_result=on_result)
    return {
        chunk.chunk_id: document.doc_id
        for document in app.store.list_documents(_CORPUS)
        for chunk in app.store.get_chunks(document.doc_id)
    }


def evaluate_retrieval(
    dataset: BeirDataset,
    settings: Settings,
    *,
    on_plan: Callable[[int], None] | None = None,
    on_result: Callable[[FileResult], None] | None = None,
    on_queries: Callable[[int], None] | None = None,
    on_query: Callable[[str], None] | None = None,
) -> RetrievalReport:
    """Index ``dataset`` with ``settings``' model and search settings in a temporary
    folder, search every judged query with every retriever, and measure the runs.

    ``on_plan``/``on_result`` follow the ingestion (documents), ``on_queries``/``on_query``
    the searches."""
    with tempfile.TemporaryDirectory(prefix="clearance-eval-") as tmp:
        root = Path(tmp)
        eval_settings = evaluation_settings(settings, root)
        with Clearance(eval_settings, SQLiteStore(eval_settings.db_path), trace_key=None) as app:
            chunk_doc = _index(app, dataset, root, on_plan, on_result)
            indexed = len(set(chunk_doc.values()))
            if not indexed:
                raise EvaluationError(f"{dataset.name}: no document of the corpus could be indexed")
            per_doc = math.ceil(len(chunk_doc) / indexed)
            pool = max(eval_settings.retrieval.candidates, DEPTH * per_doc)
            judge = _judge(eval_settings)
            try:
                return _search_all(app, dataset, chunk_doc, pool, judge, on_queries, on_query)
            finally:
                close = getattr(judge, "close", None)
                if callable(close):
                    close()


def _search_all(
    app: Clearance,
    dataset: BeirDataset,
    chunk_doc: dict[str, str],
    pool: int,
    judge: Provider | None,
    on_queries: Callable[[int], None] | None,
    on_query: Callable[[str], None] | None,
) -> RetrievalReport:
    settings = app.settings
    embedder = app.embedder
    indexed = len(set(chunk_doc.values()))
    access = app.access()
    flt = access.search_filter(
        access.principal(_USER), None, app.store.corpora(), action=Action.RETRIEVE
    )
    retrievers = [r for r in RETRIEVERS if r != "vector" or embedder is not None]
    retrievers = [r for r in retrievers if r != "reranked" or judge is not None]
    ranked: dict[str, dict[str, list[str]]] = {r: {} for r in retrievers}
    skipped: dict[str, str] = {}
    if on_queries is not None:
        on_queries(len(dataset.queries))
    limit = settings.answer.max_question_chars
    for query_id, text in dataset.queries.items():
        if on_query is not None:
            on_query(query_id)
        if len(text) > limit:
            skipped[query_id] = f"longer than [answer] max_question_chars ({limit})"
            continue
        vector = embedder.embed([text])[0] if embedder is not None else None
        lexical, vectors = app.store.retrieve(text, vector, flt, pool)
        ranked["lexical"][query_id] = _documents(chunk_doc[c] for c, _ in lexical)
        if "vector" in ranked:
            ranked["vector"][query_id] = _documents(chunk_doc[c] for c, _ in vectors)
        hits = app.search(_USER, text, k=pool).hits
        ranked["hybrid"][query_id] = _documents(h.document.doc_id for h in hits)
        if judge is not None:
            order = _reranked(hits, text, judge, settings.retrieval.k)
            ranked["reranked"][query_id] = _documents(order)
    return RetrievalReport(
        dataset=dataset.name,
        documents=len(dataset.corpus),
        indexed=indexed,
        chunks=len(chunk_doc),
        queries=len(dataset.queries) - len(skipped),
        embedding=embedder.name if embedder is not None else "none",
        scores={r: _measure(dataset, runs) for r, runs in ranked.items()},
        skipped_queries=skipped,
    )
