"""Shared plumbing for CLI commands: finding the config, opening the service, printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from clearance.app import Clearance
from clearance.config import Settings, load_settings

__all__ = ["AppContext", "console", "emit_json", "pass_app"]

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class AppContext:
    config: Path | None

    def settings(self) -> Settings:
        return load_settings(self.config)

    @contextmanager
    def open(self) -> Iterator[Clearance]:
        app = Clearance.open(self.settings())
        try:
            yield app
        finally:
            app.close()


pass_app = click.make_pass_decorator(AppContext)


def emit_json(data: Any) -> None:
    """Machine-readable output: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")(func)
