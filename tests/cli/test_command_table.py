"""The table of where each command is defined (``clearance.cli.main.COMMANDS``) is what the
command modules register: a command missing from it would be neither listed nor run, and
one listed under another module would load the wrong module."""

from __future__ import annotations

import importlib
import pkgutil

import click

import clearance.cli
from clearance.cli.main import COMMANDS, cli

#: Modules of the package that define no command of their own.
_NOT_COMMANDS = {"context", "docgen", "main", "safe"}


def _registered_by(module: str) -> set[str]:
    group = click.Group("probe")
    importlib.import_module(f"clearance.cli.{module}").register(group)
    return set(group.commands)


def test_every_command_module_registers_exactly_the_commands_the_table_gives_it() -> None:
    modules = {info.name for info in pkgutil.iter_modules(clearance.cli.__path__)} - _NOT_COMMANDS
    assert set(COMMANDS.values()) == modules
    for module in sorted(modules):
        assert _registered_by(module) == {n for n, m in COMMANDS.items() if m == module}, module


def test_the_group_lists_every_command_of_the_table() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        assert cli.get_command(ctx, name) is not None, name
