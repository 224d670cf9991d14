"""Source sync benchmark: a permission sync after 20 % of the items changed their sharing and
none changed their content.

Not a test: it prints figures and never asserts.

Two measurements, each in its own child process (so each peak RSS is its own):

* ``memory`` — ``--items`` (default 100,000) items from the in-memory connector
  (:class:`clearance.sources.memory.MemoryConnector`): the sync engine, ingest pipeline and
  SQLite store at full size, with no transport.
* ``http`` — ``--http-items`` (default 10,000) files of the fake Microsoft Graph on loopback
  (``tests/graph_server.py``, ``--page-size`` items per page, default 200) read by the real
  ``graph`` connector over HTTP: the same engine plus every API call a real drive costs.

Each measurement: an initial content + permission sync of every item (each shared with one of
50 users), then 20 % of the items (every fifth) shared with another user, then one permission
sync — the measured one. Embeddings come from the in-package hashing embedder wrapped to count
every text it embeds, and the store's document writes (``upsert``, which writes chunks and
vectors) are counted too: both must stay 0 during the permission sync. Reported: wall time of
both syncs, the engine's counts, API calls by endpoint (http), embedder texts and document
writes during each sync, and peak RSS of the process (for http it includes the fake server).

    .venv/bin/python benchmarks/bench_sources.py [--items 100000] [--http-items 10000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clearance.app import Clearance
from clearance.config import settings_from_dict
from clearance.llm.embedding import HashingEmbedder
from clearance.sources.base import Access, SourceDocument
from clearance.sources.memory import MemoryConnector
from clearance.sources.sync import SourceSync, SyncReport
from clearance.store.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

USERS = 50
WORDS = ("budget", "roadmap", "hiring", "audit", "travel", "pricing", "security", "office")


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.texts += len(texts)
        return super().embed(texts)


def text_of(n: int) -> str:
    return f"Item {n}: notes on {WORDS[n % len(WORDS)]} for team {n % 97}."


def make_app(root: Path, source: dict[str, Any], users: list[str]) -> Clearance:
    settings = settings_from_dict(
        {
            "embedding": {"provider": "none"},
            "corpora": {"docs": {"revocation_sla": "1h", "max_sensitivity": "CONFIDENTIAL"}},
            "sources": {"src": {"corpus": "docs", **source}},
        },
        root=root,
    )
    app = Clearance(settings, SQLiteStore(root / "index.db"), embedder=CountingEmbedder())
    directory = {"users": [{"id": u, "active": True, "attributes": {}} for u in users]}
    app.sync_directory_data(json.dumps({**directory, "groups": []}), "directory.json")
    return app


class Writes:
    """Counts the store's document writes (chunks and vectors go through ``upsert``)."""

    def __init__(self, store: SQLiteStore) -> None:
        self.count = 0
        real = store.upsert

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        store.upsert = counted  # type: ignore[method-assign]


def progress(line: str) -> None:
    print(f"    … {line}", flush=True)


def timed_sync(
    app: Clearance, make_connector: Callable[[], Any], writes: Writes, **kinds: bool
) -> dict[str, Any]:
    embedder = app.embedder
    assert isinstance(embedder, CountingEmbedder)
    texts, written = embedder.texts, writes.count
    connector = make_connector()
    start = time.perf_counter()
    try:
        engine = SourceSync(app, app.settings.sources["src"], connector, on_progress=progress)
        reports: list[SyncReport] = engine.run(**kinds)
    finally:
        connector.close()
    wall = time.perf_counter() - start
    errors = [r.error for r in reports if r.error]
    return {
        "wall_s": round(wall, 2),
        "counts": {r.kind: dict(r.counts) for r in reports},
        "errors": errors,
        "embedded_texts": embedder.texts - texts,
        "document_writes": writes.count - written,
    }


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------- in memory


def run_memory(items: int, root: Path) -> dict[str, Any]:
    users = [f"u{k}" for k in range(USERS)]
    app = make_app(root, {"kind": "memory"}, users)
    writes = Writes(app.store)
    connector = MemoryConnector("src")
    for n in range(items):
        access = Access(frozenset({f"user:u{n % USERS}"}))
        connector.put(
            SourceDocument(
                f"mem:{n}", "1", f"Item {n}", f"https://x.test/{n}", access, text=text_of(n)
            )
        )
    print(f"  memory: initial sync of {items:,} items", flush=True)
    initial = timed_sync(app, lambda: connector, writes)
    for n in range(0, items, 5):
        connector.access[f"mem:{n}"] = Access(frozenset({f"user:u{(n + 1) % USERS}"}))
    fetched = connector.fetched
    print(f"  memory: permission sync after {items // 5:,} sharing changes", flush=True)
    measured = timed_sync(app, lambda: connector, writes, content=False)
    measured["fetched"] = connector.fetched - fetched
    app.close()
    return {
        "items": items,
        "initial": initial,
        "permissions": measured,
        "peak_rss_mib": peak_rss_mib(),
    }


# ---------------------------------------------------------------------- over HTTP


def endpoint(path: str) -> str:
    if "/oauth2/" in path:
        return "token"
    if path.startswith("/download/"):
        return "download"
    if "/root/delta" in path:
        return "delta"
    if path.split("?")[0].endswith("/permissions"):
        return "permissions"
    if "/items/" in path:
        return "item"
    if "/users/" in path:
        return "users"
    if "/groups/" in path:
        return "groups"
    return "other"


def run_http(items: int, page_size: int, root: Path) -> dict[str, Any]:
    from clearance.secrets import Secret
    from clearance.sources.graph import graph_connector, parse_options
    from graph_server import CLIENT_ID, CLIENT_SECRET, DRIVE, TENANT, FakeGraph

    upns = [f"user{k}@contoso.example" for k in range(USERS)]
    with FakeGraph() as graph:
        graph.page_size = page_size
        options = {
            "tenant_id": TENANT,
            "client_id": CLIENT_ID,
            "drive_id": DRIVE,
            "graph_url": graph.graph_url,
            "login_url": graph.login_url,
            "user_id": "upn",
        }
        app = make_app(root, {"kind": "graph", "options": options}, upns)
        writes = Writes(app.store)
        for k, upn in enumerate(upns):
            graph.add_user(f"u-{k}", upn)

        def grant(k: int) -> dict[str, Any]:
            return {"roles": ["read"], "grantedToV2": {"user": {"id": f"u-{k}"}}}

        for n in range(items):
            graph.add_file(f"f{n}", text_of(n))
            graph.share(f"f{n}", grant(n % USERS))

        def connector() -> Any:
            parsed = parse_options("src", options)
            return graph_connector("src", parsed, Secret(CLIENT_SECRET))

        def calls_during(step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            before = graph.request_count
            result = step()
            result["api_calls"] = dict(
                sorted(Counter(endpoint(r.path) for r in graph.requests[before:]).items())
            )
            return result

        print(f"  http: initial sync of {items:,} files (page size {page_size})", flush=True)
        initial = calls_during(lambda: timed_sync(app, connector, writes))
        for n in range(0, items, 5):
            graph.share(f"f{n}", grant((n + 1) % USERS))
        print(f"  http: permission sync after {items // 5:,} sharing changes", flush=True)
        measured = calls_during(lambda: timed_sync(app, connector, writes, content=False))
        app.close()
    return {
        "items": items,
        "page_size": page_size,
        "initial": initial,
        "permissions": measured,
        "peak_rss_mib": peak_rss_mib(),
    }


# ---------------------------------------------------------------------- main


def in_child(target: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    queue: multiprocessing.Queue[dict[str, Any]] = multiprocessing.Queue()
    child = multiprocessing.Process(target=lambda: queue.put(target(*args)))
    child.start()
    result = queue.get()
    child.join()
    return result


def show(name: str, result: dict[str, Any]) -> None:
    print(f"\n== {name}: {result['items']:,} items", flush=True)
    for phase in ("initial", "permissions"):
        r = result[phase]
        print(
            f"  {phase:12} wall {r['wall_s']:8.2f} s   embedded texts {r['embedded_texts']:>7}   "
            f"document writes {r['document_writes']:>7}   errors {len(r['errors'])}"
        )
        print(f"  {'':12} counts {r['counts']}")
        if "api_calls" in r:
            print(f"  {'':12} API calls {r['api_calls']} (total {sum(r['api_calls'].values()):,})")
        if "fetched" in r:
            print(f"  {'':12} connector fetches {r['fetched']}")
    print(f"  peak RSS {result['peak_rss_mib']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="memory connector items")
    parser.add_argument("--http-items", type=int, default=10_000, help="fake Graph files")
    parser.add_argument("--page-size", type=int, default=200)
    parser.add_argument("--only", choices=("memory", "http"))
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as folder:
        if args.only in (None, "memory"):
            (Path(folder) / "memory").mkdir()
            results["memory"] = in_child(run_memory, args.items, Path(folder) / "memory")
        if args.only in (None, "http"):
            (Path(folder) / "http").mkdir()
            results["http"] = in_child(
                run_http, args.http_items, args.page_size, Path(folder) / "http"
            )
    for name, result in results.items():
        show(name, result)
    print(f"\nload average at end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
