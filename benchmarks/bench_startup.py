"""CPU time a command spends before it does any work: `clearance --help` and `clearance status`.

Run from the repository root::

    .venv/bin/python benchmarks/bench_startup.py --baseline 679b5af

Each command runs ``--runs`` times in a fresh interpreter (user + system CPU of the child,
from ``resource.getrusage``); the median is reported. With ``--baseline REV`` the same
commands run side by side, in the same run, against the source tree of ``REV`` (checked
out into a temporary git worktree), so the ratio compares like with like on one machine.
``status`` runs on a small index built here with the current tree.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import sys; from clearance.cli.main import main; sys.argv[0] = 'clearance'; main()"


def cpu_seconds(src: Path, args: list[str], home: Path) -> float:
    """User + system CPU of one ``clearance ARGS`` run with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src), "CLEARANCE_HOME": str(home)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(src: Path, args: list[str], home: Path, runs: int) -> float:
    cpu_seconds(src, args, home)  # compile the tree's bytecode once, outside the figures
    return statistics.median(cpu_seconds(src, args, home) for _ in range(runs))


def build_index(home: Path) -> None:
    """A small index (the ACME manifest) for ``status`` to open."""
    acme = ROOT / "examples" / "acme"
    (home / "clearance.toml").write_text((acme / "clearance.toml").read_text(encoding="utf-8"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CLEARANCE_HOME": str(home)}
    for args in (
        ["ingest", "--manifest", str(acme / "manifest.jsonl")],
        ["directory", "sync", str(acme / "directory.json")],
    ):
        subprocess.run(
            [sys.executable, "-c", PROBE, *args], env=env, check=True, capture_output=True
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a git revision to measure side by side")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    commands = {"--help": ["--help"], "status": ["status"]}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        print("building a small index …", file=sys.stderr)
        build_index(home)
        trees = {"current": ROOT / "src"}
        if args.baseline:
            base = Path(tmp) / "baseline"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                check=True,
                capture_output=True,
            )
            trees[args.baseline] = base / "src"
        try:
            rows = {
                name: {tree: median_cpu(src, argv, home, args.runs) for tree, src in trees.items()}
                for name, argv in commands.items()
            }
        finally:
            if args.baseline:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                    check=False,
                    capture_output=True,
                )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"median CPU seconds of {args.runs} runs (user + system)")
    for name, by_tree in rows.items():
        cells = "  ".join(f"{tree}: {seconds:.3f} s" for tree, seconds in by_tree.items())
        ratio = ""
        if args.baseline:
            ratio = f"  ({by_tree['current'] / by_tree[args.baseline]:.2f}× the baseline)"
        print(f"clearance {name:<7} {cells}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
