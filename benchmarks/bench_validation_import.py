"""What one validation style would cost every command at start-up, measured side by side.

Run from the repository root::

    .venv/bin/python benchmarks/bench_validation_import.py

Every command reads the settings, so the library that validates them is loaded before any
work. Three candidates load and validate the same shape — 30 tables of 8 strict fields
each (about the size of ``clearance.toml``'s schema) — in fresh interpreters:

* ``today``: ``import clearance.config`` and reading the shipped default settings (the
  hand-written checks on frozen dataclasses);
* ``pydantic``: 30 frozen ``BaseModel`` classes with ``extra="forbid"`` and strict types;
* ``msgspec``: 30 frozen ``Struct`` classes with ``forbid_unknown_fields`` (only when
  msgspec is importable; it is not a dependency of the project).

Reported: the median user + system CPU of ``--runs`` interpreters, minus that of an empty
interpreter, so the figure is what the library and the schema add.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import subprocess
import sys

TABLES, FIELDS = 30, 8

TODAY = """
from clearance.config import settings_from_dict
settings_from_dict({})
"""

PYDANTIC = f"""
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr
kinds = (StrictInt, StrictStr, StrictBool)
defaults = (1, "x", True)
for i in range({TABLES}):
    namespace = {{
        "__annotations__": {{f"f{{j}}": kinds[j % 3] for j in range({FIELDS})}},
        "model_config": ConfigDict(extra="forbid", frozen=True),
        **{{f"f{{j}}": defaults[j % 3] for j in range({FIELDS})}},
    }}
    model = type(BaseModel)(f"T{{i}}", (BaseModel,), namespace)
    model.model_validate({{"f0": 2}})
"""

MSGSPEC = f"""
import msgspec
kinds = (int, str, bool)
defaults = (1, "x", True)
for i in range({TABLES}):
    fields = [(f"f{{j}}", kinds[j % 3], defaults[j % 3]) for j in range({FIELDS})]
    struct = msgspec.defstruct(f"T{{i}}", fields, forbid_unknown_fields=True, frozen=True)
    msgspec.convert({{"f0": 2}}, struct)
"""


def cpu(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(code: str, runs: int) -> float:
    cpu(code)  # bytecode compiled once, outside the figures
    return statistics.median(cpu(code) for _ in range(runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    candidates = {"today": TODAY, "pydantic": PYDANTIC}
    if importlib.util.find_spec("msgspec") is not None:
        candidates["msgspec"] = MSGSPEC
    empty = median("pass", args.runs)
    print(f"median CPU above an empty interpreter ({empty:.3f} s), {args.runs} runs each")
    for name, code in candidates.items():
        print(f"{name:<9} {median(code, args.runs) - empty:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
