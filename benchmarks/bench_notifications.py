"""How long a permission change at the source takes to reach the index, with and without
change notifications (docs/notifications.md).

A simulated hour on an injected clock (nothing sleeps): a source of ``--items`` items whose
permission reads cost ``--delay-ms`` a request, ``--concurrency`` requests at a time (the HTTP
connectors' ``max_concurrency``), one request per item; ``--change-rate`` of the items change
permissions during the hour, at uniformly random moments. The scheduled full re-listing runs
every ``permission_interval`` (the configuration's default for ``--sla``); each sync applies
what it read when it ends, so a change is seen by the first re-listing that reads its item
after it happened. With notifications, each change is notified at once (``--delivery-s``
later: the source's own delay, which Clearance does not control); notices gather in the real
:class:`~clearance.sources.notifications.NoticeQueue` for its debounce and are read as one
targeted sync on the notified lane, which runs beside the re-listing as ``clearance serve``
runs it. "one lane" is the same with notified work waiting for a running re-listing to end.

Measured: the time from a change to the first moment a query reflects it (p50 / p95 / max),
permission API calls per hour, and the corpus's largest permission lag (from the start of the
last completed re-listing) against the SLA.

    python benchmarks/bench_notifications.py [--items 20000] [--delay-ms 20] [--sla 15m]
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import random
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from clearance.sources.base import Notice
from clearance.sources.notifications import DEBOUNCE_S, NoticeQueue

T0 = datetime(2025, 1, 1, tzinfo=UTC)
HOUR_S = 3600.0


@dataclass
class Outcome:
    mode: str
    latencies: list[float]
    calls: int
    full_syncs: int
    targeted_syncs: int
    max_lag_s: float
    listing_s: float


def _read_time(items: int, concurrency: int, delay_s: float) -> float:
    return math.ceil(items / concurrency) * delay_s


def simulate(
    mode: str,
    *,
    items: int,
    delay_s: float,
    concurrency: int,
    changes: list[tuple[float, int]],
    interval_s: float,
    debounce_s: float,
    delivery_s: float,
    hours: float,
) -> Outcome:
    """``mode``: ``off`` (re-listing only), ``on`` (a notified lane beside it), ``one lane``
    (notified work waits for a running re-listing)."""
    end = hours * HOUR_S
    order = list(range(items))
    random.Random(7).shuffle(order)
    position = {item: p for p, item in enumerate(order)}
    listing_s = _read_time(items, concurrency, delay_s)
    # The re-listings: (start, end) on their interval, back to back when longer than it.
    syncs: list[tuple[float, float]] = []
    start = 0.0
    while start < end + interval_s + listing_s:
        syncs.append((start, start + listing_s))
        start = max(start + interval_s, start + listing_s)
    calls = items * sum(1 for s, _ in syncs if s < end)

    def relisted(item: int, changed: float) -> float:
        """When the first re-listing that reads ``item`` after ``changed`` applies."""
        offset = (position[item] // concurrency + 1) * delay_s
        for s, e in syncs:
            if s + offset >= changed:
                return e
        raise AssertionError("the simulated hour ran past its re-listings")

    seen = {i: relisted(item, at) for i, (at, item) in enumerate(changes)}
    targeted = 0
    if mode != "off":
        queue = NoticeQueue(debounce_s)
        arrivals = [(at + delivery_s, i) for i, (at, _) in enumerate(changes)]
        heapq.heapify(arrivals)
        waiting: dict[str, list[int]] = {}
        lane_free = 0.0
        while arrivals or len(queue):
            due = queue.next_due()
            next_arrival = arrivals[0][0] if arrivals else math.inf
            if due is None or next_arrival < (due - T0).total_seconds():
                at, i = heapq.heappop(arrivals)
                doc = f"memory:{changes[i][1]}"
                queue.add("drive", Notice.changed([doc]), T0 + timedelta(seconds=at))
                waiting.setdefault(doc, []).append(i)
                continue
            now = max((due - T0).total_seconds(), lane_free)
            if mode == "one lane":  # wait for a running re-listing to end
                now = next((e for s, e in syncs if s <= now < e), now)
            for _, pending in queue.take_due(T0 + timedelta(seconds=now)):
                names = sorted(pending.doc_ids)
                applied = now + _read_time(len(names), concurrency, delay_s)
                calls += len(names)
                targeted += 1
                lane_free = applied
                for doc in names:
                    for i in waiting.pop(doc, []):
                        seen[i] = min(seen[i], applied)
    latencies = sorted(seen[i] - at for i, (at, _) in enumerate(changes))
    completed = [(s, e) for s, e in syncs if e <= end + listing_s]
    lags = [e2 - s1 for (s1, _), (_, e2) in itertools.pairwise(completed)]
    return Outcome(
        mode,
        latencies,
        calls,
        sum(1 for s, _ in syncs if s < end),
        targeted,
        max(lags, default=listing_s),
        listing_s,
    )


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="per permission request")
    parser.add_argument("--concurrency", type=int, default=4, help="requests at a time")
    parser.add_argument("--change-rate", type=float, default=0.01, help="of the items, per hour")
    parser.add_argument("--sla", type=float, default=900.0, help="revocation SLA, seconds")
    parser.add_argument("--interval", type=float, help="permission interval (default: config's)")
    parser.add_argument("--debounce", type=float, default=DEBOUNCE_S)
    parser.add_argument("--delivery-s", type=float, default=0.0, help="source's notice delay")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    interval = args.interval if args.interval is not None else min(300.0, args.sla / 4)
    rng = random.Random(args.seed)
    count = max(1, round(args.items * args.change_rate * args.hours))
    changes = sorted(
        (rng.uniform(0, args.hours * HOUR_S), rng.randrange(args.items)) for _ in range(count)
    )
    print(
        f"{args.items} items, {args.delay_ms:g} ms a request x {args.concurrency} at a time, "
        f"{count} permission changes in {args.hours:g} h, SLA {args.sla:g} s, re-listing "
        f"every {interval:g} s, debounce {args.debounce:g} s, delivery {args.delivery_s:g} s"
    )
    header = (
        f"{'notifications':<14} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'calls/h':>9} "
        f"{'re-lists':>8} {'targeted':>8} {'listing s':>9} {'max lag s':>9} {'in SLA':>6}"
    )
    print(header)
    for mode in ("off", "on", "one lane"):
        out = simulate(
            mode,
            items=args.items,
            delay_s=args.delay_ms / 1000,
            concurrency=args.concurrency,
            changes=changes,
            interval_s=interval,
            debounce_s=args.debounce,
            delivery_s=args.delivery_s,
            hours=args.hours,
        )
        print(
            f"{out.mode:<14} {_quantile(out.latencies, 0.5):>7.1f} "
            f"{_quantile(out.latencies, 0.95):>7.1f} {max(out.latencies):>7.1f} "
            f"{out.calls / args.hours:>9,.0f} {out.full_syncs:>8} {out.targeted_syncs:>8} "
            f"{out.listing_s:>9.1f} {out.max_lag_s:>9.1f} "
            f"{'yes' if out.max_lag_s <= args.sla else 'NO':>6}"
        )


if __name__ == "__main__":
    main()
