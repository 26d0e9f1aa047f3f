"""Commands that change files or what a file may do: `fix` and `trust`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import JsonOption, ModelOption, RepoOption, emit_json, make_services, note
from codeasst.errors import UsageError


def fix(
    files: Annotated[list[str], typer.Argument(help="Python files, or - to read stdin and print the fixed code.")],
    write: Annotated[bool, typer.Option("--write", help="Write verified fixes back (atomically).")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when diagnostics remain.")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Mechanical fixes only; no model.")] = False,
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Model attempts per function.")] = None,
    try_syntax: Annotated[bool, typer.Option("--try-syntax", help="Let the model try to repair a syntax error.")] = False,
    remove_unused_imports: Annotated[bool, typer.Option(
        "--remove-unused-imports", help="Remove unused imports even where they may be re-exports (API).")] = False,
    stdin_filename: Annotated[str | None, typer.Option(
        "--stdin-filename", metavar="PATH",
        help="The file the code on stdin (-) is: its config and its place (an __init__.py re-exports).")] = None,
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fix flake8 findings: mechanical fixes first, then the local model; only verified code is kept."""
    from codeasst.access import alone
    from codeasst.paths import fix_start_dir

    assistant = alone(make_services(fix_start_dir(files, repo, stdin_filename), model=model, about_repo=False))
    overrides = {"max_rounds": rounds, "use_llm": False if no_llm else None, "try_syntax": True if try_syntax else None,
                 "remove_unused_imports": True if remove_unused_imports else None}

    def render(outcome) -> None:
        result = outcome.result
        if result is None:
            note(f"error: {outcome.error}")
            return
        if as_json:
            return
        if outcome.from_stdin:
            sys.stdout.flush()  # a diff printed before goes out before these bytes
            sys.stdout.buffer.write(assistant.fixed_bytes(result))
        elif not write:
            sys.stdout.write(result.diff())
        done = len(result.before) - len(result.after)
        verb = "fixed and wrote" if result.written else "fixed"
        note(f"{result.name}: {verb} {done} of {len(result.before)} diagnostics"
             + "".join(f"\n  left {d.code} line {d.line}: {result.reasons.get(d, '')}" for d in result.after))

    run = assistant.fix_files(files, **overrides, read_stdin=sys.stdin.buffer.read, cwd=repo, write=write,
                              check=check, stdin_filename=stdin_filename, on_outcome=render)
    if as_json:
        emit_json(run.reports(with_diff=not write))
    if run.exit_code:
        raise typer.Exit(run.exit_code)


def trust_file(
    file: Annotated[Path | None, typer.Argument(
        help="The config file to trust; default: the repository's .codeasst.toml.")] = None,
    revoke: Annotated[bool, typer.Option("--revoke", help="Forget the file's trust.")] = False,
    show: Annotated[bool, typer.Option("--list", help="List the trusted files.")] = False,
    repo: RepoOption = Path("."),
    as_json: JsonOption = False,
) -> None:
    """Let a repository's config run programs, reach servers and read secrets, until it is edited."""
    from codeasst import trust
    from codeasst.config import guarded_settings
    from codeasst.paths import PROJECT_CONFIG, find_repo_root

    if show:
        rows = trust.trusted_files()
        if as_json:
            emit_json(rows)
        for row in [] if as_json else rows:
            typer.echo(f"{row['state']:<9} {row['path']}  sha256 {row['sha256'][:12]}")
        return
    target = repo / file if file is not None else find_repo_root(repo)[0] / PROJECT_CONFIG
    if not target.is_file():
        raise UsageError(f"no such file: {target}")
    if revoke:
        done = trust.revoke(target)
        result = {"path": str(target.resolve()), "trusted": False, "changed": done}
        message = f"{'revoked' if done else 'was not trusted'}: {target.resolve()}"
    else:
        guarded = guarded_settings(target)
        digest = trust.trust(target)
        result = {"path": str(target.resolve()), "trusted": True, "sha256": digest, "allows": guarded}
        allowed = "; ".join(f"{key} = {json.dumps(value)}" for key, value in guarded.items())
        message = (f"trusted {target.resolve()} (sha256 {digest[:12]}); any edit revokes it"
                   + (f"\nit may now set: {allowed}" if allowed else ""))
    if as_json:
        emit_json(result)
    else:
        typer.echo(message)
