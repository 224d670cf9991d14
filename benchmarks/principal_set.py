"""Micro-benchmark of ``Directory.principal_set`` (not a test: it prints, it never asserts).

Why: the principal set is computed on every request (docs/design.md §1 stage 1), so it must stay cheap
on a realistic enterprise directory. The target is ≤ 5 ms for a user at the bottom of a 10-level
nesting chain among 5,000 groups.

Shape: 5,000 groups. A 10-level chain ``chain0 ⊂ chain1 ⊂ … ⊂ chain9``; each chain level is also a
member of a few "fan-out" groups, so the reachable set is not a bare line. All other groups are
distractors: random members drawn from 20,000 other users and from other distractor groups
(nested, with cycles), none of which the measured users reach.

Measured (each printed as p50 / p95 / max in milliseconds):

* cold     — a fresh ``Directory`` per measurement: reverse-index build + traversal;
* uncached — index already built, first lookup of a user on this instance (traversal only);
* cached   — repeated lookup of the same user on the same instance;
* delta    — ``apply_delta`` of a small sync delta on a warm directory (copies the maps and
  patches the reverse index);
* 1st@delta — the first lookup on the version that delta produced.

Run: ``.venv/bin/python benchmarks/principal_set.py [--groups N] [--repeat N] [--seed N]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

from clearance.access.directory import Directory, DirectoryDoc, Group, User

CHAIN_DEPTH = 10
FANOUT_PER_LEVEL = 3


def build(n_groups: int, n_measured: int, n_other_users: int, seed: int) -> Directory:
    rng = random.Random(seed)
    users = [User(f"m{i}", True) for i in range(n_measured)]
    users += [User(f"o{i}", rng.random() > 0.05) for i in range(n_other_users)]
    groups: dict[str, set[str]] = {}
    # The chain: measured users sit in chain0; chain(i) is a member of chain(i+1).
    groups["chain0"] = {f"user:m{i}" for i in range(n_measured)}
    for level in range(1, CHAIN_DEPTH):
        groups[f"chain{level}"] = {f"group:chain{level - 1}"}
    for level in range(CHAIN_DEPTH):
        for k in range(FANOUT_PER_LEVEL):
            groups[f"fan{level}_{k}"] = {f"group:chain{level}"}
    n_distractors = n_groups - len(groups)
    distractor_ids = [f"d{i}" for i in range(n_distractors)]
    for i, gid in enumerate(distractor_ids):
        members = {f"user:o{rng.randrange(n_other_users)}" for _ in range(rng.randint(5, 40))}
        # Nest distractors among themselves (only "upwards" mostly, plus some cycles).
        for _ in range(rng.randint(0, 3)):
            members.add(f"group:{distractor_ids[rng.randrange(max(1, i))]}")
        if rng.random() < 0.02:
            members.add(f"group:{distractor_ids[rng.randrange(n_distractors)]}")
        groups[gid] = members
    return Directory(users, [Group(g, frozenset(m)) for g, m in groups.items()], version=1)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(
        f"{label:<9} n={len(ordered):<5} p50={p50:8.4f} ms  p95={p95:8.4f} ms  "
        f"max={ordered[-1]:8.4f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=500)
    parser.add_argument("--cold-repeat", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    directory = build(args.groups, n_measured=args.repeat, n_other_users=20_000, seed=args.seed)
    memberships = sum(len(g.members) for g in directory.groups.values())
    expected = 1 + CHAIN_DEPTH * (1 + FANOUT_PER_LEVEL) + 1
    sample = directory.principal_set("m0")
    assert len(sample) == expected, (len(sample), expected)  # sanity of the fixture, not timing
    print(
        f"directory: {len(directory.groups)} groups, {len(directory.users)} users, "
        f"{memberships} memberships; measured user reaches {len(sample) - 2} groups "
        f"({CHAIN_DEPTH}-level chain)"
    )

    cold: list[float] = []
    users = list(directory.users.values())
    groups = list(directory.groups.values())
    for _ in range(args.cold_repeat):
        fresh = Directory(users, groups, version=1)
        cold.append(timed(partial(fresh.principal_set, "m1")))

    warm = Directory(users, groups, version=1)
    warm.principal_set("m0")  # builds the reverse index
    uncached = [timed(partial(warm.principal_set, f"m{i}")) for i in range(1, args.repeat)]
    cached = [timed(partial(warm.principal_set, "m1")) for _ in range(args.repeat)]

    # A sync delta on a warm directory: one distractor group rewritten, one user disabled.
    # apply_delta patches the warm index, so the first lookup on the new version stays cheap.
    after_delta: list[float] = []
    first_lookup: list[float] = []
    current = warm
    for i in range(args.cold_repeat):
        doc = DirectoryDoc(
            source="bench",
            users={f"o{i}": User(f"o{i}", False)},
            groups={f"d{i}": Group(f"d{i}", frozenset({f"user:o{i + 1}", "group:d0"}))},
            delta=True,
        )
        start = time.perf_counter_ns()
        current = current.apply_delta(doc)
        after_delta.append((time.perf_counter_ns() - start) / 1e6)
        first_lookup.append(timed(partial(current.principal_set, "m1")))

    report("cold", cold)
    report("uncached", uncached)
    report("cached", cached)
    report("delta", after_delta)
    report("1st@delta", first_lookup)


if __name__ == "__main__":
    main()
