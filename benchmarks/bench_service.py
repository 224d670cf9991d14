"""Service load benchmark: 50 concurrent clients against ``clearance serve`` during syncs.

Not a test: it prints figures (and PASS/MISS next to the targets) and never asserts.

Setup (seeded, in a temporary directory or ``--workdir``)
---------------------------------------------------------
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
  ``/healthz``, then warms up (six rounds of one search per user and one ask: the in-memory
  index and the answer orchestrator are built then, in every worker; the first round is
  timed).

Run
---
Each run starts ``clearance serve`` on a fresh copy of the index (so every run sees the same
state), warms it up, and offers load for ``--seconds`` (default 60) in one of these profiles
(``--load``, repeatable; default ``closed``):

* ``closed[:N]`` — N clients (default ``--clients``, 50), each sending its next request as
  soon as the last returns: the requirement's "50 concurrent clients". This measures the
  server at saturation; the latency is then mostly queueing.
* ``think:N:MS`` — N clients that pause an exponentially distributed think time (mean MS ms)
  between requests: about N / (MS/1000 + latency) requests per second offered.
* ``rate:R`` — open loop: Poisson arrivals at R per second over ``--clients`` connections;
  latency counts from the arrival, so time queued in the client is included.

Requests: users round robin, a query from bench_store's query generator (2–4 content words of
the corpus vocabulary), ``POST /v1/search`` (3 in 4) or ``POST /v1/ask`` (1 in 4). Every
response's latency, status and returned doc ids (search rows; ask citations) are kept.
Meanwhile one background task, as ``ops``:

* at 1/3 of the run, ``POST /v1/directory/sync?delta=true``: group ``d0`` loses ``user:mix``;
* at 2/3 of the run, ``POST /v1/acl/sync?corpus=bench&delta=true``: the first 200 documents
  of ``group:d0`` lose ``group:d0`` (so user ``d0`` loses them; ``all`` keeps them).

The clients speak HTTP/1.1 over asyncio streams (:class:`Connection`), one keep-alive
connection each: they share the server's cores, and httpx's client cost more CPU per request
than the server itself. The CPU time of the server (all its processes) and of the clients is
read before and after each run and reported per request: unlike latency, it hardly depends on
what else the machine is running.

Server configurations (all runs of one profile are printed side by side at the end):

* ``--compare SRC``: first the same run against a server whose package comes from another
  source tree (e.g. a checkout of an earlier commit: ``git worktree add /tmp/before <commit>``,
  then ``--compare /tmp/before/src``) — before and after from one invocation, same machine,
  same data;
* this tree;
* ``--workers N``: this tree again as ``clearance serve --workers N``.

``--workdir DIR`` keeps the ingested index in DIR and reuses it in later invocations (the
ingest takes minutes and the runs never modify that copy).

Checks
------
Both syncs only **revoke**, so the states are nested: S0 ⊇ S1 ⊇ S2 (what each user may
read). The offline check, for every 200 response: every returned doc id must be allowed by
:func:`clearance.access.policy.authorize` (rules evaluated offline, on the benchmark's own copy
of the directory and ACLs) in the state of the *last sync whose HTTP response had arrived
before the request was sent*. A request sent while a sync was in flight is checked against the
state before it — which, the changes being revocations, accepts exactly the documents allowed on
either side of the change. A request sent after a sync returned must not see what it revoked
("disabling takes effect on the next query"). Crossings of that rule are counted (target 0).

Reported per run: throughput, p50/p95/p99 latency per route, errors (non-200 or transport
errors, target 0), permission crossings (target 0), the syncs' own latency, CPU per request,
and the server's RSS (``VmRSS`` after warm-up and at the end, peak ``VmHWM``, from
``/proc/<pid>/status``, summed over the worker processes). Loopback only.

Target: ``/v1/search`` p95 ≤ 50 ms at 50 concurrent clients on 2 cores.

Run from the repository root::

    .venv/bin/python benchmarks/bench_service.py [--chunks N] [--seconds S] [--clients N]
        [--load PROFILE ...] [--compare SRC] [--workers N] [--workdir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import shutil
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
WARM_ROUNDS = 6
SYNC_SETTLE_S = 1.0  # after a sync returns, the copies are rebuilt on the next search
IDLE_RECONNECT_S = 4.0  # below uvicorn's keep-alive timeout (5 s)

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


class Connection:
    """One keep-alive HTTP/1.1 connection that sends fixed-shape POSTs and reads the reply.

    The clients run on the same cores as the server, so they must cost little: httpx's
    async client spent more CPU per request (5–9 ms) than the server did, which made the
    benchmark measure itself. This speaks just enough HTTP for the server under test
    (Content-Length or chunked bodies, reconnect after ``Connection: close``)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = 0.0  # when the connection last finished a request

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes, token: str) -> tuple[int, bytes]:
        # uvicorn closes a connection idle for 5 s: one idle almost that long is replaced
        # rather than raced against the server's close.
        if self.writer is not None and time.monotonic() - self.used > IDLE_RECONNECT_S:
            await self.close()
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.used = time.monotonic()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        headers = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(b":") for line in head.split(b"\r\n")[1:] if line)
        }
        if headers.get(b"transfer-encoding") == b"chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            data = b"".join(p[:-2] for p in parts)
        else:
            data = await self.reader.readexactly(int(headers.get(b"content-length", b"0")))
        if headers.get(b"connection") == b"close":
            await self.close()
        self.used = time.monotonic()
        return status, data


@dataclass(frozen=True)
class Profile:
    """How the clients offer load.

    * ``closed:N`` — N clients, each sending its next request as soon as the last returns.
    * ``think:N:MS`` — N clients that wait an exponentially distributed think time (mean MS
      milliseconds) between requests, as people at a search box do.
    * ``rate:R`` — open loop: requests arrive at R per second (Poisson), whatever the server
      does; each waits for one of ``--clients`` connections. Latency counts from the arrival,
      so time queued in the client is included (no coordinated omission).
    """

    kind: str
    clients: int
    think_ms: float = 0.0
    rate: float = 0.0

    @classmethod
    def parse(cls, text: str, default_clients: int) -> Profile:
        kind, _, rest = text.partition(":")
        values = rest.split(":") if rest else []
        try:
            if kind == "closed" and len(values) <= 1:
                return cls(kind, int(values[0]) if values else default_clients)
            if kind == "think" and len(values) == 2:
                return cls(kind, int(values[0]), think_ms=float(values[1]))
            if kind == "rate" and len(values) == 1:
                return cls(kind, default_clients, rate=float(values[0]))
        except ValueError:
            pass
        raise argparse.ArgumentTypeError(
            f"bad load profile {text!r}: closed[:N], think:N:MS or rate:R"
        )

    def __str__(self) -> str:
        if self.kind == "think":
            return f"{self.clients} clients, think {self.think_ms:g} ms"
        if self.kind == "rate":
            return f"open loop {self.rate:g} req/s"
        return f"{self.clients} clients, no think time"


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


class Load:
    """The requests of one run: who asks what, and what came back."""

    def __init__(self, tokens: dict[str, str], queries: list[str]) -> None:
        self.tokens = tokens
        self.queries = queries
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self.count = 0
        self.start = time.monotonic()

    def next_request(self, client: int) -> tuple[str, str, bytes]:
        """(route, user, body) of the next request: users round robin, 1 in ASK_SHARE an ask."""
        n = self.count
        self.count += 1
        users = list(USERS)
        user = users[n % len(users)]
        query = self.queries[(n * 7919 + client) % len(self.queries)]
        route = "ask" if n % ASK_SHARE == ASK_SHARE - 1 else "search"
        body = {"question": query} if route == "ask" else {"query": query}
        return route, user, json.dumps(body).encode()

    async def send(self, conn: Connection, client: int, arrived: float | None = None) -> None:
        route, user, body = self.next_request(client)
        sent = time.monotonic() if arrived is None else arrived
        try:
            status, data = await asyncio.wait_for(
                conn.post(f"/v1/{route}", body, self.tokens[user]), REQUEST_TIMEOUT_S
            )
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            await conn.close()
            self.errors.append(f"{route} at {sent - self.start:.1f} s {type(exc).__name__}: {exc}")
            self.samples.append(Sample(route, user, sent, (time.monotonic() - sent) * 1000, 0, ()))
            return
        ms = (time.monotonic() - sent) * 1000
        ids: tuple[str, ...] = ()
        if status == 200:
            reply = json.loads(data)
            rows = reply.get("results") if route == "search" else reply.get("citations")
            ids = tuple(row["doc_id"] for row in rows or ())
        else:
            self.errors.append(f"{route} at {sent - self.start:.1f} s {status}: {data[:200]!r}")
        self.samples.append(Sample(route, user, sent, ms, status, ids))


async def closed_loop(
    load: Load, conn: Connection, client: int, stop_at: float, think_ms: float, seed: int
) -> None:
    rng = random.Random(seed * 1000 + client)
    if think_ms:  # spread the first requests over one think time
        await asyncio.sleep(rng.uniform(0, think_ms / 1000))
    while time.monotonic() < stop_at:
        await load.send(conn, client)
        if think_ms:
            await asyncio.sleep(rng.expovariate(1000 / think_ms))
    await conn.close()


async def open_loop(
    load: Load, conns: list[Connection], rate: float, stop_at: float, seed: int
) -> None:
    rng = random.Random(seed)
    idle: asyncio.Queue[Connection] = asyncio.Queue()
    for conn in conns:
        idle.put_nowait(conn)
    tasks: set[asyncio.Task[None]] = set()

    async def one(arrived: float, client: int) -> None:
        conn = await idle.get()
        try:
            await load.send(conn, client, arrived)
        finally:
            idle.put_nowait(conn)

    arrival = time.monotonic()
    n = 0
    while arrival < stop_at:
        await asyncio.sleep(max(0.0, arrival - time.monotonic()))
        task = asyncio.create_task(one(arrival, n))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        n += 1
        arrival += rng.expovariate(rate)
    await asyncio.gather(*tasks)
    for conn in conns:
        await conn.close()


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
    return list(range(0, corpus.n_docs, 10))[:ACL_REVOKED_DOCS]


def acl_revoked(corpus: Corpus, d: int) -> frozenset[str]:
    return corpus.acl(d) - {"group:d0"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def run_load(
    port: int,
    server_pid: int,
    tokens: dict[str, str],
    queries: list[str],
    profile: Profile,
    args: argparse.Namespace,
    corpus: Corpus,
) -> tuple[Load, list[SyncEvent], dict[str, float]]:
    load = Load(tokens, queries)
    conns = [Connection("127.0.0.1", port) for _ in range(profile.clients)]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
        server_cpu, client_cpu = cpu_seconds(server_pid), own_cpu_seconds()
        start = load.start = time.monotonic()
        stop_at = start + args.seconds
        sync_task = asyncio.create_task(syncs(http, tokens[ADMIN], args.seconds, start, corpus))
        if profile.kind == "rate":
            await open_loop(load, conns, profile.rate, stop_at, args.seed)
        else:
            await asyncio.gather(
                *(
                    closed_loop(load, conn, i, stop_at, profile.think_ms, args.seed)
                    for i, conn in enumerate(conns)
                )
            )
        events = await sync_task
        elapsed = time.monotonic() - start
        cpu = {
            "elapsed_s": elapsed,
            "server_cpu_s": cpu_seconds(server_pid) - server_cpu,
            "client_cpu_s": own_cpu_seconds() - client_cpu,
        }
    return load, events, cpu


# --------------------------------------------------------------------------- one run


def start_server(
    config: Path, src: Path | None, log: Path, workers: int
) -> tuple[subprocess.Popen[bytes], int]:
    """``clearance serve`` on a free loopback port; ``src`` puts another source tree first on
    the path (the baseline of ``--compare``)."""
    port = free_port()
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(src), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    command = [sys.executable, "-m", "clearance.cli.main", "--config", str(config), "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=config.parent
        )
    return process, port


def tree_rss(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process plus its children (the workers of ``--workers``), MB."""
    total: dict[str, float] = {}
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    with contextlib.suppress(OSError):
        pids += [int(c) for c in children.read_text().split()]
    for p in pids:
        for key, value in proc_status(p).items():
            total[key] = total.get(key, 0.0) + value
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live children."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(c) for c in children.read_text().split()]
    return sum(cpu_seconds(p) for p in pids)


def warm_up(port: int, tokens: dict[str, str], queries: list[str]) -> dict[str, float]:
    warm: dict[str, float] = {}
    # A new connection per request, and several rounds: with --workers, each process builds
    # its own in-memory index, and the kernel hands each new connection to one of them.
    fresh = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120, limits=fresh) as http:
        for round_ in range(WARM_ROUNDS):
            for user in USERS:
                t = time.perf_counter()
                r = http.post(
                    "/v1/search",
                    json={"query": queries[round_]},
                    headers={"Authorization": f"Bearer {tokens[user]}"},
                )
                if round_ == 0:
                    warm[f"search {user}"] = round((time.perf_counter() - t) * 1000, 1)
                if r.status_code != 200:
                    raise SystemExit(f"warm-up search failed: {r.status_code} {r.text}")
            t = time.perf_counter()
            r = http.post(
                "/v1/ask",
                json={"question": queries[10 + round_]},
                headers={"Authorization": f"Bearer {tokens['all']}"},
            )
            if round_ == 0:
                warm["ask all"] = round((time.perf_counter() - t) * 1000, 1)
            if r.status_code != 200:
                raise SystemExit(f"warm-up ask failed: {r.status_code} {r.text}")
    return warm


def one_run(
    name: str,
    src: Path | None,
    workers: int,
    profile: Profile,
    pristine: Path,
    work: Path,
    corpus: Corpus,
    tokens: dict[str, str],
    queries: list[str],
    checker: Checker,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One server (on a fresh copy of the index, so every run starts from the same state)
    under one load profile, with the two syncs; figures and the permission check."""
    shutil.copyfile(pristine, work / "index.db")
    for suffix in ("-wal", "-shm"):
        (work / f"index.db{suffix}").unlink(missing_ok=True)
    log = work / "serve.log"
    process, port = start_server(work / "clearance.toml", src, log, workers)
    figures: dict[str, Any] = {"server": name, "load": str(profile)}
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, log)
        figures["warmup_ms"] = warm_up(port, tokens, queries)
        figures["rss_after_warmup_mb"] = tree_rss(process.pid)
        figures["loadavg_start"] = round(os.getloadavg()[0], 2)
        server_cpu = tree_cpu(process.pid)
        load, events, cpu = asyncio.run(
            run_load(port, process.pid, tokens, queries, profile, args, corpus)
        )
        cpu["server_cpu_s"] = tree_cpu(process.pid) - server_cpu
        figures["rss_end_mb"] = tree_rss(process.pid)
        figures["loadavg_end"] = round(os.getloadavg()[0], 2)
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    samples, elapsed = load.samples, cpu["elapsed_s"]
    figures["elapsed_s"] = round(elapsed, 2)
    figures["requests"] = len(samples)
    figures["throughput_rps"] = round(len(samples) / elapsed, 1)
    figures["server_cpu_ms_per_request"] = round(
        1000 * cpu["server_cpu_s"] / max(1, len(samples)), 2
    )
    figures["client_cpu_ms_per_request"] = round(
        1000 * cpu["client_cpu_s"] / max(1, len(samples)), 2
    )
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
    figures["search_outside_syncs"] = outside_syncs(samples, events)
    figures["errors"] = len(load.errors)
    figures["error_examples"] = load.errors[:5]
    t0_load = min((s.sent for s in samples), default=0.0)
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
    figures["server_log_tracebacks"] = log.read_text(errors="replace").count("Traceback")
    report_run(figures)
    return figures


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


def reused_setup(
    args: argparse.Namespace, work: Path
) -> tuple[Corpus, Path, dict[str, str], dict[str, Any]]:
    """:func:`setup` in ``work``, or what an earlier run with the same corpus left there
    (``--workdir``): ingesting 100k chunks takes minutes, the runs do not change it."""
    saved = work / "setup.json"
    key = {"chunks": args.chunks, "seed": args.seed}
    if saved.exists() and (work / "pristine.db").exists():
        found = json.loads(saved.read_text())
        if found["key"] == key:
            corpus = Corpus.build(args.chunks, args.seed)
            return corpus, work / "clearance.toml", found["tokens"], found["figures"]
    corpus, config, tokens, figures = setup(args, work)
    shutil.copyfile(work / "index.db", work / "pristine.db")
    saved.write_text(json.dumps({"key": key, "tokens": tokens, "figures": figures}))
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


def outside_syncs(samples: list[Sample], events: list[SyncEvent]) -> dict[str, Any]:
    """Search latency of the requests that overlapped no sync: a sync's write transaction
    and the rebuild of the in-memory copies after it stall the searches that meet them,
    and with two syncs a minute those few requests decide the p95 of a light load."""
    windows = [(e.sent, e.done + SYNC_SETTLE_S) for e in events]
    ok = [s for s in samples if s.route == "search" and s.status == 200]
    clear = [
        s for s in ok if not any(s.sent < end and s.sent + s.ms / 1000 > a for a, end in windows)
    ]
    return {"share": round(len(clear) / max(1, len(ok)), 3), **lat(clear)}


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


def servers(args: argparse.Namespace) -> list[tuple[str, Path | None, int]]:
    """(name, source tree, workers) of each server configuration to run, baseline first."""
    found: list[tuple[str, Path | None, int]] = []
    if args.compare is not None:
        found.append((f"baseline ({args.compare_label})", args.compare, 1))
    found.append(("this tree", None, 1))
    if args.workers > 1:
        found.append((f"this tree, --workers {args.workers}", None, args.workers))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="corpus size (default 100000)")
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="duration of each run (default 60)"
    )
    parser.add_argument(
        "--clients", type=int, default=50, help="clients, or connections of rate:R (default 50)"
    )
    parser.add_argument(
        "--load",
        action="append",
        metavar="PROFILE",
        help="closed[:N] (default), think:N:MS or rate:R; repeat for several runs",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="SRC",
        help="also run a server from this source tree (a checkout's src/), first, as baseline",
    )
    parser.add_argument("--compare-label", default="baseline", help="the baseline's name")
    parser.add_argument(
        "--workers", type=int, default=1, help="also run 'serve --workers N' (default: not)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="set the index up here once and reuse it in later runs (default: a temporary one)",
    )
    parser.add_argument("--queries", type=int, default=500, help="distinct queries")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--out", type=Path, help="write the figures as JSON to this file")
    args = parser.parse_args()
    profiles = [Profile.parse(p, args.clients) for p in args.load or ["closed"]]
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    runs: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if args.workdir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clearance-bench-")))
        else:
            work = args.workdir
            work.mkdir(parents=True, exist_ok=True)
        corpus, config, tokens, setup_figures = reused_setup(args, work)
        figures.update(setup_figures)
        figures["corpus"] = {"documents": corpus.n_docs, "chunks": corpus.n_docs * CHUNKS_PER_DOC}
        queries = corpus.queries(args.queries)
        pristine = work / "pristine.db"
        # the states: S0 initial, S1 after the directory delta, S2 after the ACL delta as well
        s0 = initial_state()
        s1 = s0.copy()
        s1.groups["d0"] = {"d0"}
        s2 = s1.copy()
        for d in revoked_docs(corpus):
            s2.acl_overrides[d] = acl_revoked(corpus, d)
        checker = Checker(corpus, config, [s0, s1, s2])
        report_setup(figures)
        for profile in profiles:
            for name, src, workers in servers(args):
                runs.append(
                    one_run(
                        name,
                        src,
                        workers,
                        profile,
                        pristine,
                        work,
                        corpus,
                        tokens,
                        queries,
                        checker,
                        args,
                    )
                )
    figures["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    figures["runs"] = runs
    report_summary(runs)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.out}")


def mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report_setup(f: dict[str, Any]) -> None:
    print(f"\n# Service benchmark — {f['date']}")
    print(f"command: {f['command']}")
    print(
        f"machine: {f['cores']} cores, Python {f['python']}; load average {f['loadavg_start']} "
        "at start (clients and server share the cores)"
    )
    c = f["corpus"]
    print(
        f"corpus: {c['documents']} documents, {c['chunks']} chunks, lexical only; ingest "
        f"{f['ingest']['chunks_per_s']} chunks/s; ACL snapshot (CLI) {f['acl_snapshot_cli_s']} s"
    )


def report_run(f: dict[str, Any]) -> None:
    print(f"\n## {f['server']} — {f['load']}")
    print(f"warm-up (ms): {f['warmup_ms']}; load average {f['loadavg_start']} → {f['loadavg_end']}")
    print(
        f"{f['requests']} requests in {f['elapsed_s']} s = {f['throughput_rps']} req/s; "
        f"errors {f['errors']} [{mark(f['errors'] == 0)} = 0]; CPU per request: server "
        f"{f['server_cpu_ms_per_request']} ms, clients {f['client_cpu_ms_per_request']} ms"
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
    o = f["search_outside_syncs"]
    print(
        f"/v1/search overlapping no sync (+{SYNC_SETTLE_S:g} s): {o['share']:.1%} of them, "
        f"p50 {o['p50']} / p95 {o['p95']} / p99 {o['p99']} ms"
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


def report_summary(runs: list[dict[str, Any]]) -> None:
    """Every run on one line, the server configurations of each load profile together."""
    print("\n## Side by side")
    head = (
        f"{'load':<28}{'server':<30}{'req/s':>7}{'err':>5}{'search p50/p95/p99 ms':>24}"
        f"{'no-sync p95':>12}{'ask p95':>9}{'cpu/req':>9}{'cross':>6}{'RSS MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for f in runs:
        s, a = f["routes"]["search"], f["routes"]["ask"]
        lats = f"{s['p50']:.0f} / {s['p95']:.0f} / {s['p99']:.0f}"
        print(
            f"{f['load']:<28}{f['server']:<30}{f['throughput_rps']:>7}{f['errors']:>5}"
            f"{lats:>24}{f['search_outside_syncs']['p95']:>12.0f}{a['p95']:>9.0f}"
            f"{f['server_cpu_ms_per_request']:>9}"
            f"{f['permissions']['crossings']:>6}{f['rss_end_mb'].get('VmRSS', float('nan')):>8.0f}"
        )


if __name__ == "__main__":
    main()
