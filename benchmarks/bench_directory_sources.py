"""Directory source benchmark: one full sync of a 20,000-user, 2,000-group directory from the
loopback fake of each provider (Entra ID through Graph, Google Workspace's Directory API,
Okta), through the real reader and the sync service into a SQLite index.

Not a test: it prints figures and never asserts. The directory SLA target is 5 minutes: a full
sync must take well under it.

The directory: ``--users`` users (2 % disabled/suspended), ``--groups`` groups. Group sizes
follow a long tail — every 100th group is a department of ~1,000 members, every 10th a team of
~100, the rest ~20 — and one group in five has a later group among its members (so groups
nest, in chains; Okta groups do not nest and get none). Each provider is read at its own maximum page size (Graph 999,
Directory API users 500 and members 200, Okta 200), with its documented paging, over HTTP on
127.0.0.1. Reported per provider: sync wall time, API calls (token requests included), users
and groups applied.

    .venv/bin/python benchmarks/bench_directory_sources.py [--users 20000] [--groups 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from clearance.app import Clearance
from clearance.config import settings_from_dict
from clearance.secrets import Secret
from clearance.sources.directory.base import DirectoryReader
from clearance.sources.directory.entra import EntraOptions, entra_reader
from clearance.sources.directory.google import GoogleOptions, google_reader
from clearance.sources.directory.okta import OktaReader
from clearance.sources.directory.service import sync_directory_source
from clearance.sources.gdrive import parse_service_account
from clearance.store.sqlite import SQLiteStore
from entra_server import CLIENT_ID, SECRET, TENANT, Tenant, entra_server
from google_directory_server import ADMIN, KEY_JSON, Workspace, workspace_server
from okta_server import TOKEN, OktaOrg, okta_server


def shape(
    users: int, groups: int, seed: int = 7
) -> tuple[list[bool], list[tuple[list[int], list[int]]]]:
    """``active`` per user, and per group (member user indexes, nested group indexes)."""
    rng = random.Random(seed)
    active = [rng.random() >= 0.02 for _ in range(users)]
    out = []
    for g in range(groups):
        size = 1000 if g % 100 == 0 else 100 if g % 10 == 0 else 20
        members = rng.sample(range(users), min(users, size))
        nested = [rng.randrange(g + 1, groups)] if g % 5 == 0 and g + 1 < groups else []
        out.append((members, nested))
    return active, out


def entra(active: list[bool], groups: list[tuple[list[int], list[int]]]) -> Tenant:
    t = Tenant()
    t.users = [
        {
            "id": f"oid-{i}",
            "userPrincipalName": f"user{i}@contoso.com",
            "mail": f"user{i}@contoso.com",
            "accountEnabled": a,
            "onPremisesSamAccountName": f"user{i}",
            "otherMails": [],
        }
        for i, a in enumerate(active)
    ]
    t.groups = {
        f"g-{g}": [("user", f"oid-{m}") for m in members] + [("group", f"g-{n}") for n in nested]
        for g, (members, nested) in enumerate(groups)
    }
    return t


def google(active: list[bool], groups: list[tuple[list[int], list[int]]]) -> Workspace:
    w = Workspace()
    w.users = [
        {
            "id": str(10**6 + i),
            "primaryEmail": f"user{i}@example.com",
            "aliases": [],
            "suspended": not a,
            "archived": False,
        }
        for i, a in enumerate(active)
    ]
    w.groups = {
        f"g{g}@example.com": [
            {"type": "USER", "email": f"user{m}@example.com", "status": "ACTIVE"} for m in members
        ]
        + [{"type": "GROUP", "email": f"g{n}@example.com"} for n in nested]
        for g, (members, nested) in enumerate(groups)
    }
    return w


def okta(active: list[bool], groups: list[tuple[list[int], list[int]]]) -> OktaOrg:
    o = OktaOrg()
    for i, a in enumerate(active):
        o.add_user(f"00u{i}", f"user{i}@example.com", "ACTIVE" if a else "SUSPENDED")
    o.groups = {f"00g{g}": [f"00u{m}" for m in members] for g, (members, _) in enumerate(groups)}
    return o


def run(kind: str, make: Callable[[str], DirectoryReader], url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_from_dict(
            {"embedding": {"provider": "none"}, "directories": {"bench": {"kind": kind}}},
            root=Path(tmp),
        )
        with SQLiteStore(Path(tmp) / "index.db") as store:
            app = Clearance(settings, store, embedder=None)
            reader = make(url)
            started = time.perf_counter()
            try:
                report = sync_directory_source(app, "bench", reader=reader)
            finally:
                reader.close()
            seconds = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"{kind}: {report.error}")
    return {
        "kind": kind,
        "seconds": seconds,
        "api_calls": report.api_calls,
        "users": report.users,
        "groups": report.groups,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=2_000)
    args = parser.parse_args()
    active, groups = shape(args.users, args.groups)
    memberships = sum(len(m) + len(n) for m, n in groups)
    print(f"directory: {args.users} users, {args.groups} groups, {memberships} memberships")
    rows = []
    with entra_server(entra(active, groups)) as url:
        rows.append(
            run(
                "entra",
                lambda u: entra_reader(
                    "bench",
                    EntraOptions(TENANT, CLIENT_ID, graph_url=f"{u}/v1.0", login_url=u),
                    Secret(SECRET),
                ),
                url,
            )
        )
    with workspace_server(google(active, groups)) as url:
        account = parse_service_account(Secret(KEY_JSON), "key")
        rows.append(
            run(
                "google",
                lambda u: google_reader(
                    "bench",
                    GoogleOptions(
                        ADMIN, directory_url=f"{u}/admin/directory/v1", token_url=f"{u}/token"
                    ),
                    account,
                ),
                url,
            )
        )
    with okta_server(okta(active, groups)) as url:
        rows.append(run("okta", lambda u: OktaReader("bench", u, Secret(TOKEN)), url))
    print(f"{'provider':<8} {'sync s':>8} {'API calls':>10} {'users':>7} {'groups':>7}  SLA 300 s")
    for r in rows:
        verdict = "within" if r["seconds"] < 300 else "OVER"
        print(
            f"{r['kind']:<8} {r['seconds']:>8.1f} {r['api_calls']:>10} {r['users']:>7} "
            f"{r['groups']:>7}  {verdict}"
        )


if __name__ == "__main__":
    main()
