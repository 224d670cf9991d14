"""Generate ``docs/cli.md`` from the commands themselves, so help and docs never drift.

``python -m clearance.cli.docgen > docs/cli.md``; a test fails when the file is stale.
"""

from __future__ import annotations

import click

from clearance.cli.main import cli

__all__ = ["render"]

_INTRO = """\
# Command reference

Generated from `clearance --help` by `python -m clearance.cli.docgen`; do not edit by hand.

Configuration lookup (a public contract): `--config FILE`, else
`$CLEARANCE_HOME/clearance.toml`, else `./clearance.toml`. Every command prints JSON with
`--json`; errors are one line on stderr (with `--json` also `{"error", "message"}` on stdout)
and exit 1 (operational), 2 (bad configuration or input) or 3 (not found). A settings file
is checked whole: each problem is an `error:` line of its own, `file:line: key: what is
wrong`, in the order of the file, and the JSON adds them as `"problems"`.

Human output prints data (titles, ids, file names, text) as its literal text: control and
invisible formatting characters are shown as escapes such as `\\x1b` or `\\u202e`, and
nothing in a document is read as rich markup or an emoji code. `--json` carries the exact
data.

`--assistant NAME` (`search`, `ask`, `explain`) narrows a request to the corpora and the
sensitivity ceiling of one `[assistants.NAME]` table. Omitting it narrows nothing: every
corpus is in scope, each under its own `max_sensitivity`, and the user's permissions
(directory, ACLs, freshness, expiry, RESTRICTED never retrieved) apply exactly as with an
assistant. A name that is not configured exits 3 (`ask --json` still prints its result, with
status `unknown_assistant`). A deployment that must confine every request to an assistant
sets `[access] require_assistant = true`: omitting `--assistant` then exits 3 too (and the
Python API refuses it the same way).
"""


def _walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    out = [(path, command)]
    if isinstance(command, click.Group):
        # Listed as help lists them: the top group registers its commands when listed.
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            out.extend(_walk(sub, [*path, name]))
    return out


def render() -> str:
    parts = [_INTRO]
    for path, command in _walk(cli, ["clearance"]):
        ctx = click.Context(
            command,
            info_name=" ".join(path),
            terminal_width=88,
            max_content_width=88,
            help_option_names=["-h", "--help"],  # as the real group sets for every command
        )
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{command.get_help(ctx)}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
