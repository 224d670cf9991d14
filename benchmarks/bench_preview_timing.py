"""Preview timing benchmark: does a hidden document answer slower than an absent one?

Not a test: it prints figures (and PASS/MISS next to the target) and never asserts.

Setup (seeded, in a temporary directory)
----------------------------------------
* A lexical-only project (``[embedding] provider = "none"``, ``[server] rate_limit = "off"``:
  the benchmark sends thousands of requests as one user) with ``--documents`` Markdown files
  (default 500) in corpus ``default``, readable by group ``staff``, and one document,
  ``kd:eng-runbook``, in corpus ``kd``: readable by group ``oncall`` and ``--acl`` people
  named one by one (default 1,000: a document shared with many people, whose ACL is that
  many rows to read). Corpus ``kd`` has ``realtime_check = true`` (the default 30 s cache)
  against a permission service the benchmark serves on loopback, which denies everything.
  The directory has ``ann`` (staff) and ``root`` (staff and oncall).
* ``ann``'s API token, and a browser session signed in with it through ``POST /signin``.
* ``clearance serve`` as a subprocess on a free loopback port (one worker).

Run
---
For each door — the API (``GET /v1/documents/{id}`` with the bearer token) and the UI
(``GET /documents/{id}`` with the session cookie) — ``--pairs`` pairs (default 2,000) of
previews as ``ann``: the hidden document's id (it exists; ann may not read it) and an absent
id of the same length (``kd:eng-runbool``), the order within each pair drawn at random,
over one keep-alive connection per door, after ``--warmup`` pairs that are not counted.
Every response must be the same 404 for both ids (checked: the body of hidden and absent
must be byte-identical), else the run stops.

Reported per door: the median latency of each id, the median of the paired differences
(hidden − absent), the two-sided Mann–Whitney U p-value of the two samples (scipy), and how
often an attacker comparing the medians of 200 random samples of each picks the hidden id
(1,000 draws; 50 % is chance).

Target: no difference at p < 0.001 over 2,000 pairs (a p-value at or above 0.001 is PASS).

Usage::

    .venv/bin/python benchmarks/bench_preview_timing.py [--pairs 2000] [--documents 500]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "clearance.cli.main"]

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[corpora.default]
description = "Everything in docs/"

[corpora.kd]
description = "The engineering knowledge base"
realtime_check = true

[corpora.kd.realtime]
url = "{checker}"

[server]
rate_limit = "off"
"""

DIRECTORY = {
    "users": [
        {"id": "ann", "active": True, "attributes": {}},
        {"id": "root", "active": True, "attributes": {}},
    ],
    "groups": [
        {"id": "staff", "members": ["user:ann", "user:root"]},
        {"id": "oncall", "members": ["user:root"]},
    ],
}

HIDDEN = "kd:eng-runbook"
ABSENT = "kd:eng-runbool"  # the same length, never ingested

WORDS = [
    "travel",
    "policy",
    "hotel",
    "train",
    "budget",
    "approval",
    "expense",
    "invoice",
    "vendor",
    "contract",
    "laptop",
    "onboarding",
    "security",
    "review",
    "quarterly",
    "report",
    "roadmap",
    "release",
    "incident",
    "runbook",
]


def clearance(config: Path, *args: str) -> str:
    result = subprocess.run(
        [*CLI, "--config", str(config), *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"clearance {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def make_project(root: Path, documents: int, acl: int, seed: int, checker: str) -> Path:
    rng = random.Random(seed)
    config = root / "clearance.toml"
    config.write_text(CONFIG.format(checker=checker), encoding="utf-8")
    docs = root / "docs"
    docs.mkdir()
    (docs / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    for i in range(documents):
        body = " ".join(rng.choice(WORDS) for _ in range(120))
        (docs / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
    (docs / "runbook.md").write_text(
        "# Rollback\n\nThe rollback key is kept in the vault.\n", encoding="utf-8"
    )
    people = [f"user:person-{i:05d}" for i in range(acl)]
    sidecar = {"doc_id": HIDDEN, "corpus": "kd", "acl": ["group:oncall", *people]}
    (docs / "runbook.md.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    (root / "directory.json").write_text(json.dumps(DIRECTORY), encoding="utf-8")
    clearance(config, "ingest", str(docs), "--json")
    clearance(config, "directory", "sync", str(root / "directory.json"))
    return config


class Deny(http.server.BaseHTTPRequestHandler):
    """The source system's permission service: every document denied, as its wire format."""

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"decisions": dict.fromkeys(asked["doc_ids"], False)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("clearance serve exited before it answered")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("clearance serve did not start")


def sign_in(port: int, token: str) -> str:
    """A UI session cookie for ``token``, through the sign-in form as a browser posts it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/signin", headers={"Accept": "text/html"})
    response = conn.getresponse()
    response.read()
    match = re.search(r"clearance_csrf=([^;]+)", response.getheader("set-cookie") or "")
    if match is None:
        raise SystemExit("the sign-in page set no CSRF cookie")
    csrf = match.group(1)
    form = f"csrf={quote(csrf)}&token={quote(token)}"
    conn.request(
        "POST",
        "/signin",
        body=form,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"clearance_csrf={csrf}",
            "Origin": f"http://127.0.0.1:{port}",
        },
    )
    response = conn.getresponse()
    response.read()
    match = re.search(r"clearance_session=([^;]+)", response.getheader("set-cookie") or "")
    if match is None:
        raise SystemExit(f"sign-in failed: {response.status}")
    conn.close()
    return match.group(1)


Fetch = Callable[[str], tuple[int, int, bytes]]


def door(port: int, path: str, headers: dict[str, str]) -> Fetch:
    """One keep-alive connection; each call previews one id: (ns, status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def fetch(doc_id: str) -> tuple[int, int, bytes]:
        target = f"{path}{quote(doc_id, safe='')}"
        start = time.perf_counter_ns()
        conn.request("GET", target, headers=headers)
        response = conn.getresponse()
        body = response.read()
        return time.perf_counter_ns() - start, response.status, body

    return fetch


def measure(fetch: Fetch, pairs: int, warmup: int, rng: random.Random) -> dict[str, list[int]]:
    times: dict[str, list[int]] = {HIDDEN: [], ABSENT: []}
    bodies: dict[str, bytes] = {}
    for n in range(warmup + pairs):
        order = [HIDDEN, ABSENT] if rng.random() < 0.5 else [ABSENT, HIDDEN]
        for doc_id in order:
            ns, status, body = fetch(doc_id)
            if status != 404:
                raise SystemExit(f"{doc_id} answered {status}, not 404")
            bodies.setdefault(doc_id, body)
            if n >= warmup:
                times[doc_id].append(ns)
    if bodies[HIDDEN] != bodies[ABSENT]:
        raise SystemExit("the hidden and the absent document got different bodies")
    return times


def p_value(a: list[int], b: list[int]) -> tuple[float, str]:
    """Two-sided Mann–Whitney U with scipy, else a permutation test of the medians."""
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        rng = random.Random(0)
        observed = abs(statistics.median(a) - statistics.median(b))
        pooled = a + b
        rounds, extreme = 2000, 0
        for _ in range(rounds):
            rng.shuffle(pooled)
            left, right = pooled[: len(a)], pooled[len(a) :]
            extreme += abs(statistics.median(left) - statistics.median(right)) >= observed
        return (extreme + 1) / (rounds + 1), "permutation test of the medians"
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue), "Mann-Whitney U"


def attacker_picks(hidden: list[int], absent: list[int], rng: random.Random) -> float:
    """How often comparing the medians of 200 samples of each picks the hidden id."""
    draws, wins = 1000, 0.0
    for _ in range(draws):
        h = statistics.median(rng.sample(hidden, 200))
        a = statistics.median(rng.sample(absent, 200))
        wins += 1.0 if h > a else 0.5 if h == a else 0.0
    return wins / draws


def report(name: str, times: dict[str, list[int]], rng: random.Random) -> bool:
    hidden, absent = times[HIDDEN], times[ABSENT]
    diffs = [h - a for h, a in zip(hidden, absent, strict=True)]
    p, test = p_value(hidden, absent)
    passed = p >= 0.001
    print(
        f"{name:>4}: n={len(hidden)} pairs  median hidden {statistics.median(hidden) / 1e6:.3f} ms"
        f"  absent {statistics.median(absent) / 1e6:.3f} ms"
        f"  paired diff {statistics.median(diffs) / 1e3:+.1f} µs"
        f"  p={p:.3g} ({test})"
        f"  attacker picks hidden {attacker_picks(hidden, absent, rng):.0%}"
        f"  {'PASS' if passed else 'MISS'} (no difference at p < 0.001)"
    )
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--acl", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bench-preview-"))
    process: subprocess.Popen[bytes] | None = None
    checker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    threading.Thread(target=checker.serve_forever, daemon=True).start()
    try:
        checker_url = f"http://127.0.0.1:{checker.server_address[1]}/check"
        config = make_project(root, args.documents, args.acl, args.seed, checker_url)
        token = json.loads(clearance(config, "token", "create", "--user", "ann", "--json"))["token"]
        port = free_port()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            [*CLI, "--config", str(config), "serve", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        wait_for(port, process)
        session = sign_in(port, token)
        rng = random.Random(args.seed)
        doors = {
            "API": door(port, "/v1/documents/", {"Authorization": f"Bearer {token}"}),
            "UI": door(
                port,
                "/documents/",
                {"Cookie": f"clearance_session={session}", "Accept": "text/html"},
            ),
        }
        print(
            f"{args.pairs} interleaved pairs per door after {args.warmup} warm-up pairs, "
            f"{args.documents + 1} documents; hidden {HIDDEN!r} (ACL of {args.acl + 1}), "
            f"absent {ABSENT!r}"
        )
        for name, fetch in doors.items():
            report(name, measure(fetch, args.pairs, args.warmup, rng), rng)
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        checker.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
