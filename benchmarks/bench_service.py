"""Service load benchmark: 50 concurrent clients against ``clearance serve`` during syncs.

Not a test: it prints figures (and PASS/MISS next to the targets) and never asserts.

Setup (seeded, in a temporary directory)
----------------------------------------
* The synthetic corpus and lexical-only ingest of ``benchmarks/bench_store.py`` (imported, not
  copied): ``--chunks`` chunks (default 100,000), corpus ``bench``, every document ``d`` with
  the ACL ``group:t<d % 1000>``, ``group:h<d % 100>``, ``group:d<d % 10>``, ``group:all``.
  ``[embedding] provider = "none"`` (lexical only, as the 100k index of bench_store has no
  model vectors), ``[answer]`` the default extractive provider, ``[server] rate_limit = "off"``.
* A directory (synced with ``clearance directory sync`` before the server starts) of users of
  different selectivity: ``all`` (group ``all``, 100 % of the documents), ``d0`` (10 %),
  ``h0`` (1 %), ``t0`` (0.1 %), ``mix`` (groups ``h3`` and ``d0``: 11 %), ``none`` (no group:
  nothing), and ``ops``, the administrator (an ``--admin`` token, no group). The corpus ACLs
  are synced once (``clearance acl sync``, a snapshot) so the corpus is fresh.
* One API token per user, created through :class:`clearance.api.tokens.TokenStore`.
* ``clearance serve`` as a subprocess on a free loopback port; the benchmark waits for
  ``/healthz``, then warms up (one search per user and one ask: the in-memory index and the
  answer orchestrator are built then, and timed).

Run
---
``--clients`` (default 50) asyncio tasks share one ``httpx.AsyncClient``; each loops for
``--seconds`` (default 60): pick a user (round robin per client), a query from bench_store's
query generator (2–4 content words of the corpus vocabulary), and ``POST /v1/search`` (3 in 4)
or ``POST /v1/ask`` (1 in 4). Every response's latency, status and returned doc ids
(search rows; ask citations) are kept. Meanwhile one background task, as ``ops``:

* at 1/3 of the run, ``POST /v1/directory/sync?delta=true``: group ``d0`` loses ``user:mix``;
* at 2/3 of the run, ``POST /v1/acl/sync?corpus=bench&delta=true``: the first 200 documents
  of ``group:d0`` lose ``group:d0`` (so user ``d0`` loses them; ``all`` keeps them).

Both changes only **revoke**, so the states are nested: S0 ⊇ S1 ⊇ S2 (what each user may
read). The offline check, for every 200 response: every returned doc id must be allowed by
:func:`clearance.access.policy.authorize` (rules evaluated offline, on the benchmark's own copy
of the directory and ACLs) in the state of the *last sync whose HTTP response had arrived
before the request was sent*. A request sent while a sync was in flight is checked against the
state before it — which, the changes being revocations, accepts exactly the documents allowed on
either side of the change. A request sent after a sync returned must not see what it revoked
("disabling takes effect on the next query"). Crossings of that rule are counted (target 0).

Reported: throughput, p50/p95/p99 latency per route, errors (non-200 or transport errors,
target 0), permission crossings (target 0), the syncs' own latency, and the server's RSS
(``VmRSS`` after warm-up and at the end, peak ``VmHWM`` from ``/proc/<pid>/status``). Loopback
only; the clients run on the same cores as the server (their CPU is in the figures).

Target: ``/v1/search`` p95 ≤ 50 ms at 50 concurrent clients on 2 cores.

Run from the repository root::

    .venv/bin/python benchmarks/bench_service.py [--chunks N] [--seconds S] [--clients N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import CHUNKS_PER_DOC, Corpus, ingest, pct

from clearance.access.policy import (
    Action,
    CorpusFreshness,
    Principal,
    authorize,
)
from clearance.api.tokens import TokenStore
from clearance.config import load_settings
from clearance.store.sqlite import SQLiteStore

TARGET_SEARCH_P95_MS = 50.0
ASK_SHARE = 4  # one request in ASK_SHARE is an ask
ACL_REVOKED_DOCS = 200
REQUEST_TIMEOUT_S = 30.0

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "index.db"

[corpora.bench]
description = "bench_store.py's synthetic corpus"

[server]
rate_limit = "off"
"""

# user -> directory groups (ids without the "group:" prefix)
USERS: dict[str, tuple[str, ...]] = {
    "all": ("all",),
    "d0": ("d0",),
    "h0": ("h0",),
    "t0": ("t0",),
    "mix": ("h3", "d0"),
    "none": (),
}
ADMIN = "ops"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- access states


@dataclass
class State:
    """The benchmark's own copy of the directory and the ACLs that differ from the corpus's."""

    groups: dict[str, set[str]]  # group id -> user ids
    acl_overrides: dict[int, frozenset[str]] = field(default_factory=dict)

    def copy(self) -> State:
        return State({g: set(m) for g, m in self.groups.items()}, dict(self.acl_overrides))

    def principal(self, user: str) -> Principal:
        groups = {f"group:{g}" for g, members in self.groups.items() if user in members}
        principals = frozenset({f"user:{user}", "everyone", *groups})
        return Principal(user, known=True, active=True, principals=principals)


def initial_state() -> State:
    groups: dict[str, set[str]] = {}
    for user, gs in USERS.items():
        for g in gs:
            groups.setdefault(g, set()).add(user)
    return State(groups)


def directory_json(state: State) -> dict[str, Any]:
    return {
        "users": [{"id": u, "active": True, "attributes": {}} for u in (*USERS, ADMIN)],
        "groups": [
            {"id": g, "members": sorted(f"user:{u}" for u in members)}
            for g, members in sorted(state.groups.items())
        ],
    }


class Checker:
    """``authorize()`` offline, per state, cached per (state, user, doc)."""

    def __init__(self, corpus: Corpus, config: Path, states: list[State]) -> None:
        settings = load_settings(config)
        self.corpus = corpus
        self.states = states
        self.ceiling = settings.corpus("bench").max_sensitivity
        self.now = datetime.now(UTC)
        self.fresh = CorpusFreshness("bench", self.now, 24 * 3600.0)
        self.cache: dict[tuple[int, str, str], bool] = {}

    def allowed(self, state: int, user: str, doc_id: str) -> bool:
        key = (state, user, doc_id)
        if key not in self.cache:
            d = int(doc_id.split(":", 1)[1])
            if not doc_id.startswith("bench:") or not 0 <= d < self.corpus.n_docs:
                self.cache[key] = False
                return False
            s = self.states[state]
            doc = self.corpus.document(d)
            if d in s.acl_overrides:
                doc = _with_acl(doc, s.acl_overrides[d])
            decision = authorize(
                s.principal(user),
                Action.RETRIEVE,
                doc,
                assistant=None,
                corpus_ceiling=self.ceiling,
                freshness=self.fresh,
                now=self.now,
            )
            self.cache[key] = decision.allow
        return self.cache[key]


def _with_acl(doc: Any, acl: frozenset[str]) -> Any:
    from dataclasses import replace

    return replace(doc, acl=acl)


# --------------------------------------------------------------------------- server


def clearance_cli(config: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "clearance.cli.main", "--config", str(config), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"clearance {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def proc_status(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"clearance serve did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


# --------------------------------------------------------------------------- load


@dataclass
class Sample:
    route: str
    user: str
    sent: float
    ms: float
    status: int
    doc_ids: tuple[str, ...]


@dataclass
class SyncEvent:
    name: str
    sent: float
    done: float
    status: int
    body: str


async def client_loop(
    http: httpx.AsyncClient,
    index: int,
    tokens: dict[str, str],
    queries: list[str],
    stop_at: float,
    samples: list[Sample],
    errors: list[str],
) -> None:
    users = list(USERS)
    n = index
    while time.monotonic() < stop_at:
        user = users[n % len(users)]
        query = queries[(n * 7919 + index) % len(queries)]
        route = "ask" if n % ASK_SHARE == index % ASK_SHARE else "search"
        n += 1
        body = {"question": query} if route == "ask" else {"query": query}
        headers = {"Authorization": f"Bearer {tokens[user]}"}
        sent = time.monotonic()
        try:
            r = await http.post(f"/v1/{route}", json=body, headers=headers)
        except httpx.HTTPError as exc:
            errors.append(f"{route} {type(exc).__name__}: {exc}")
            samples.append(Sample(route, user, sent, (time.monotonic() - sent) * 1000, 0, ()))
            continue
        ms = (time.monotonic() - sent) * 1000
        ids: tuple[str, ...] = ()
        if r.status_code == 200:
            data = r.json()
            rows = data.get("results") if route == "search" else data.get("citations")
            ids = tuple(row["doc_id"] for row in rows or ())
        else:
            errors.append(f"{route} {r.status_code}: {r.text[:200]}")
        samples.append(Sample(route, user, sent, ms, r.status_code, ids))


async def syncs(
    http: httpx.AsyncClient, admin_token: str, seconds: float, start: float, corpus: Corpus
) -> list[SyncEvent]:
    headers = {"Authorization": f"Bearer {admin_token}"}
    events: list[SyncEvent] = []

    async def post(name: str, url: str, content: bytes, media: str) -> None:
        sent = time.monotonic()
        r = await http.post(url, content=content, headers={**headers, "Content-Type": media})
        events.append(SyncEvent(name, sent, time.monotonic(), r.status_code, r.text[:300]))

    await asyncio.sleep(max(0.0, start + seconds / 3 - time.monotonic()))
    delta = {"users": [], "groups": [{"id": "d0", "members": ["user:d0"]}]}
    await post(
        "directory delta (mix leaves d0)",
        "/v1/directory/sync?delta=true",
        json.dumps(delta).encode(),
        "application/json",
    )
    await asyncio.sleep(max(0.0, start + 2 * seconds / 3 - time.monotonic()))
    lines = [
        json.dumps({"doc_id": corpus.doc_id(d), "acl": sorted(acl_revoked(corpus, d))})
        for d in revoked_docs(corpus)
    ]
    await post(
        f"ACL delta ({len(lines)} docs lose group:d0)",
        "/v1/acl/sync?corpus=bench&delta=true",
        ("\n".join(lines) + "\n").encode(),
        "application/x-ndjson",
    )
    return events


def revoked_docs(corpus: Corpus) -> list[int]:
    return [d for d in range(0, corpus.n_docs, 10)][:ACL_REVOKED_DOCS]


def acl_revoked(corpus: Corpus, d: int) -> frozenset[str]:
    return corpus.acl(d) - {"group:d0"}


async def run_load(
    url: str,
    tokens: dict[str, str],
    queries: list[str],
    args: argparse.Namespace,
    corpus: Corpus,
) -> tuple[list[Sample], list[str], list[SyncEvent], float]:
    limits = httpx.Limits(max_connections=args.clients + 4, max_keepalive_connections=args.clients)
    samples: list[Sample] = []
    errors: list[str] = []
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=REQUEST_TIMEOUT_S) as http:
        start = time.monotonic()
        stop_at = start + args.seconds
        sync_task = asyncio.create_task(syncs(http, tokens[ADMIN], args.seconds, start, corpus))
        await asyncio.gather(
            *(
                client_loop(http, i, tokens, queries, stop_at, samples, errors)
                for i in range(args.clients)
            )
        )
        events = await sync_task
        elapsed = time.monotonic() - start
    return samples, errors, events, elapsed


# --------------------------------------------------------------------------- main


def setup(
    args: argparse.Namespace, work: Path
) -> tuple[Corpus, Path, dict[str, str], dict[str, Any]]:
    corpus = Corpus.build(args.chunks, args.seed)
    config = work / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    figures: dict[str, Any] = {}
    figures["ingest"] = ingest(corpus, work / "index.db", "ingest (lexical only)")
    state = initial_state()
    (work / "directory.json").write_text(json.dumps(directory_json(state)), encoding="utf-8")
    clearance_cli(config, "directory", "sync", str(work / "directory.json"))
    with (work / "acl.jsonl").open("w", encoding="utf-8") as f:
        for d in range(corpus.n_docs):
            f.write(json.dumps({"doc_id": corpus.doc_id(d), "acl": sorted(corpus.acl(d))}) + "\n")
    t0 = time.perf_counter()
    clearance_cli(config, "acl", "sync", str(work / "acl.jsonl"), "--corpus", "bench")
    figures["acl_snapshot_cli_s"] = round(time.perf_counter() - t0, 2)
    store = SQLiteStore(work / "index.db")
    tokens_store = TokenStore(store)
    tokens = {u: tokens_store.create(u)[0] for u in USERS}
    tokens[ADMIN] = tokens_store.create(ADMIN, admin=True)[0]
    store.close()
    return corpus, config, tokens, figures


def lat(samples: list[Sample]) -> dict[str, float]:
    ms = [s.ms for s in samples]
    if not ms:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {
        "p50": round(pct(ms, 0.50), 2),
        "p95": round(pct(ms, 0.95), 2),
        "p99": round(pct(ms, 0.99), 2),
        "max": round(max(ms), 2),
    }


def check(samples: list[Sample], events: list[SyncEvent], checker: Checker) -> dict[str, Any]:
    dones = sorted(e.done for e in events if e.status == 200)
    crossings: list[str] = []
    per_state = [0, 0, 0]
    docs_checked = 0
    revoked_seen_in_flight = 0
    for s in samples:
        if s.status != 200:
            continue
        state = sum(1 for t in dones if t <= s.sent)
        per_state[state] += 1
        for doc_id in s.doc_ids:
            docs_checked += 1
            if not checker.allowed(state, s.user, doc_id):
                crossings.append(f"{s.route} by {s.user} in state S{state}: {doc_id}")
            elif state + 1 < len(checker.states) and not checker.allowed(
                len(checker.states) - 1, s.user, doc_id
            ):
                revoked_seen_in_flight += 1
    return {
        "responses_per_state": per_state,
        "doc_ids_checked": docs_checked,
        "crossings": len(crossings),
        "crossing_examples": crossings[:10],
        "later_revoked_docs_returned_before_the_sync": revoked_seen_in_flight,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="corpus size (default 100000)")
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    parser.add_argument("--queries", type=int, default=500, help="distinct queries")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--out", type=Path, help="write the figures as JSON to this file")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="clearance-bench-service-") as tmp:
        work = Path(tmp)
        corpus, config, tokens, setup_figures = setup(args, work)
        figures.update(setup_figures)
        figures["corpus"] = {"documents": corpus.n_docs, "chunks": corpus.n_docs * CHUNKS_PER_DOC}
        queries = corpus.queries(args.queries)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = work / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "clearance.cli.main",
                    "--config",
                    str(config),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            t0 = time.perf_counter()
            wait_healthy(url, process, log)
            figures["server_start_s"] = round(time.perf_counter() - t0, 2)
            warm: dict[str, float] = {}
            with httpx.Client(base_url=url, timeout=120) as http:
                for user in USERS:
                    t = time.perf_counter()
                    r = http.post(
                        "/v1/search",
                        json={"query": queries[0]},
                        headers={"Authorization": f"Bearer {tokens[user]}"},
                    )
                    warm[f"search {user}"] = round((time.perf_counter() - t) * 1000, 1)
                    if r.status_code != 200:
                        raise SystemExit(f"warm-up search failed: {r.status_code} {r.text}")
                t = time.perf_counter()
                r = http.post(
                    "/v1/ask",
                    json={"question": queries[1]},
                    headers={"Authorization": f"Bearer {tokens['all']}"},
                )
                warm["ask all"] = round((time.perf_counter() - t) * 1000, 1)
                if r.status_code != 200:
                    raise SystemExit(f"warm-up ask failed: {r.status_code} {r.text}")
            figures["warmup_ms"] = warm
            figures["rss_after_warmup_mb"] = proc_status(process.pid)
            samples, errors, events, elapsed = asyncio.run(
                run_load(url, tokens, queries, args, corpus)
            )
            figures["rss_end_mb"] = proc_status(process.pid)
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        serve_log = log.read_text(errors="replace")
        # the states: S0 initial, S1 after the directory delta, S2 after the ACL delta as well
        s0 = initial_state()
        s1 = s0.copy()
        s1.groups["d0"] = {"d0"}
        s2 = s1.copy()
        for d in revoked_docs(corpus):
            s2.acl_overrides[d] = acl_revoked(corpus, d)
        checker = Checker(corpus, config, [s0, s1, s2])
    figures["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    t0_load = min((s.sent for s in samples), default=0.0)
    figures["elapsed_s"] = round(elapsed, 2)
    figures["requests"] = len(samples)
    figures["throughput_rps"] = round(len(samples) / elapsed, 1)
    routes: dict[str, Any] = {}
    for route in ("search", "ask"):
        rs = [s for s in samples if s.route == route]
        ok = [s for s in rs if s.status == 200]
        routes[route] = {
            "requests": len(rs),
            "rps": round(len(rs) / elapsed, 1),
            "errors": len(rs) - len(ok),
            **lat(ok),
            "mean_doc_ids": round(sum(len(s.doc_ids) for s in ok) / max(1, len(ok)), 2),
        }
    figures["routes"] = routes
    figures["errors"] = len(errors)
    figures["error_examples"] = errors[:5]
    figures["syncs"] = [
        {
            "name": e.name,
            "at_s": round(e.sent - t0_load, 2),
            "ms": round((e.done - e.sent) * 1000, 1),
            "status": e.status,
            "body": e.body if e.status != 200 else "",
        }
        for e in events
    ]
    figures["permissions"] = check(samples, events, checker)
    figures["server_log_tracebacks"] = serve_log.count("Traceback")
    report(figures)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.out}")


def mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(f: dict[str, Any]) -> None:
    print(f"\n# Service benchmark — {f['date']}")
    print(f"command: {f['command']}")
    print(
        f"machine: {f['cores']} cores, Python {f['python']}; load average {f['loadavg_start']} "
        f"at start, {f['loadavg_end']} at the end (clients and server share the cores)"
    )
    c = f["corpus"]
    print(
        f"corpus: {c['documents']} documents, {c['chunks']} chunks, lexical only; ingest "
        f"{f['ingest']['chunks_per_s']} chunks/s; ACL snapshot (CLI) {f['acl_snapshot_cli_s']} s"
    )
    print(f"server start {f['server_start_s']} s; warm-up (ms): {f['warmup_ms']}")
    print(
        f"\n{f['requests']} requests in {f['elapsed_s']} s = {f['throughput_rps']} req/s; "
        f"errors {f['errors']} [{mark(f['errors'] == 0)} = 0]"
    )
    head = (
        f"{'route':<11}{'requests':>9}{'req/s':>8}{'errors':>7}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'p99 ms':>9}{'max ms':>9}{'ids/resp':>9}"
    )
    print(head)
    print("-" * len(head))
    for route, r in f["routes"].items():
        print(
            f"/v1/{route:<7}{r['requests']:>9}{r['rps']:>8}{r['errors']:>7}{r['p50']:>9}"
            f"{r['p95']:>9}{r['p99']:>9}{r['max']:>9}{r['mean_doc_ids']:>9}"
        )
    p95 = f["routes"]["search"]["p95"]
    print(
        f"/v1/search p95 {p95} ms [{mark(p95 <= TARGET_SEARCH_P95_MS)} ≤ "
        f"{TARGET_SEARCH_P95_MS:.0f} ms]"
    )
    for e in f["syncs"]:
        print(f"sync at {e['at_s']} s: {e['name']} → {e['status']} in {e['ms']} ms {e['body']}")
    p = f["permissions"]
    print(
        f"permission check: {p['doc_ids_checked']} doc ids in "
        f"{sum(p['responses_per_state'])} responses (S0/S1/S2: {p['responses_per_state']}); "
        f"crossings {p['crossings']} [{mark(p['crossings'] == 0)} = 0]; documents revoked later "
        f"returned before their sync: {p['later_revoked_docs_returned_before_the_sync']}"
    )
    for line in p["crossing_examples"]:
        print(f"  {line}")
    for line in f["error_examples"]:
        print(f"  error: {line}")
    w, e = f["rss_after_warmup_mb"], f["rss_end_mb"]
    print(
        f"server RSS: {w.get('VmRSS', float('nan')):.0f} MB after warm-up, "
        f"{e.get('VmRSS', float('nan')):.0f} MB at the end, peak (VmHWM) "
        f"{e.get('VmHWM', float('nan')):.0f} MB; tracebacks in the server log: "
        f"{f['server_log_tracebacks']}"
    )


if __name__ == "__main__":
    main()
