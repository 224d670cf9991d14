"""``clearance init [DIR]``: a commented default configuration and an empty data directory."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from clearance.cli.context import console, json_option, printed_json
from clearance.cli.safe import safe
from clearance.errors import ConfigError

#: What ``init`` says about trust: a filesystem source's files count as the organisation's own.
ORIGIN_NOTE = (
    'files a filesystem source syncs count as your organisation\'s own writing (origin "human", '
    "trusted in citations and prompts); mark external material in such a folder (vendor "
    'documents, web pages, mail exports) with "origin": "external_web" or "email" in its '
    "_meta.json or <file>.meta.json, or set one origin for all its files with "
    '[trust.source_origins] files = "external_web" (docs/sources.md)'
)


def default_config_text() -> str:
    from importlib import resources

    return (resources.files("clearance") / "data" / "default-config.toml").read_text("utf-8")


def register(cli: click.Group) -> None:
    @cli.command("init")
    @click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
    @click.option("--force", is_flag=True, help="Overwrite an existing clearance.toml.")
    @json_option
    def init(directory: Path | None, force: bool, as_json: bool) -> None:
        """Write a commented default clearance.toml and an empty data directory."""
        from clearance.config import CONFIG_NAME

        target = directory or Path.cwd()
        config = target / CONFIG_NAME
        if config.exists() and not force:
            raise ConfigError(f"{config} already exists (use --force to overwrite)")
        target.mkdir(parents=True, exist_ok=True)
        config.write_text(default_config_text(), encoding="utf-8")
        (target / "data").mkdir(exist_ok=True)
        if not printed_json(as_json, {"config": str(config), "data": str(target / "data")}):
            console.print(f"wrote {safe(config)}")
            console.print(f"created {safe(target / 'data')}/")
            home = safe(shlex.quote(str(target.resolve())))
            console.print(
                "\nnext:\n"
                f"  export CLEARANCE_HOME={home}\n"
                "  clearance directory sync directory.json   # who exists: users and groups\n"
                '  clearance ingest FOLDER                   # with a _meta.json naming its "acl"\n'
                '  clearance ask "…" --user ID               # or: clearance serve\n'
                "(README.md and docs/metadata.md say more)",
                highlight=False,
            )
            console.print(f"\nnote: {ORIGIN_NOTE}", highlight=False, markup=False)
