"""The codeasst command line: parse, build services, call a use case, render. No logic.

One module per group of commands (indexing, asking, editor, fixing, info, evals), and what they
share in `common`. This module makes the app, lists its commands in the order `--help` shows
them, and is the entry point (`codeasst.cli:main`)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from codeasst import __version__
from codeasst.cli import asking, common, editor, evals, fixing, indexing, info
from codeasst.cli.common import Group, note

app = typer.Typer(
    cls=Group,
    help="A private code assistant for the terminal: index, search, ask and fix, all local.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)

# In the order `codeasst --help` lists them.
for command in (indexing.index, indexing.status, indexing.search, indexing.refs, asking.ask, asking.chat,
                editor.complete, editor.serve, editor.lsp, editor.mcp, info.stats, fixing.fix, info.models, info.config):
    app.command()(command)
app.command(name="trust")(fixing.trust_file)
app.command(name="paths")(info.show_paths)
app.add_typer(evals.eval_app, name="eval")


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"codeasst {__version__}")
        raise typer.Exit()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        note("interrupted")
        sys.exit(130)
    except SystemExit as exc:
        if not common.skip_teardown:
            raise
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: nothing left to tell anyone
            code = code or 1
        os._exit(code)
