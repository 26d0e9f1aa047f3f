"""What editors and agents use: `complete` once, `serve` to keep the models warm, `lsp` to speak
editors' protocol, `mcp` coding agents'."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import JsonOption, ModelOption, RepoOption, assistant_for, emit_json, make_services, note
from codeasst.errors import CodeasstError, UsageError


def complete(
    file: Annotated[str, typer.Argument(help="The file, or - to read its text from stdin (name it with --path).")],
    line: Annotated[int, typer.Option("--line", help="Cursor line, 1-based.")],
    col: Annotated[int, typer.Option("--col", help="Cursor column, 1-based, in characters.")],
    path: Annotated[str | None, typer.Option("--path", help="The file's name with stdin (for its language).")] = None,
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a completion at the cursor: whole statements, or nothing when unsure."""
    if file == "-":
        data = sys.stdin.buffer.read()
        name = path or "stdin.py"
        target = None
    else:
        target = Path(file)
        if not target.is_file():
            raise UsageError(f"{file}: no such file")
        data = target.read_bytes()
        name = path or file
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    services = make_services(repo, model=model, about_repo=False)
    where = target.resolve() if target is not None else services.repo.root / name
    # The server answers for its own repository's files only, with its own model.
    assistant = assistant_for(services, alone=model is not None or not where.is_relative_to(services.repo.root))
    data_json = assistant.complete(name if assistant.where == "here" else str(where), line, col, text, file=target)
    if as_json:
        emit_json(data_json)
    else:
        sys.stdout.write(data_json["text"])
        if data_json["text"] and sys.stdout.isatty():
            sys.stdout.write("\n")


def serve(
    repo: RepoOption = Path("."),
    host: Annotated[str, typer.Option("--host", help="Address to bind; anything but 127.0.0.1 is reachable "
                                      "from other machines, and then needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port; 0 picks a free one.")] = 8765,
    token: Annotated[str | None, typer.Option("--token", envvar="CODEASST_SERVE_TOKEN",
                                              help="The bearer token every request must carry; by default a "
                                              "random one, kept in the discovery record (--info).")] = None,
    no_token: Annotated[bool, typer.Option("--no-token", help="On 127.0.0.1 only: no token, so any program "
                                           "of any user on this machine may read the code.")] = False,
    info: Annotated[bool, typer.Option("--info", help="Print the running server for this repository and "
                                       "exit (with --json, its token too, for editor clients).")] = False,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Keep the models warm for this repository: inline completion over HTTP, and fast one-shot commands."""
    if info:
        _info(repo, as_json)
        return
    from codeasst.serve.run import run_server

    services = make_services(repo, model=model)
    run_server(services, host=host, port=port, token=token, no_token=no_token, note=note)


def _info(repo: Path, as_json: bool) -> None:
    """`serve --info`: the server running for this repository, from its discovery record."""
    from codeasst.paths import find_repo_root
    from codeasst.wire import discovery

    root = find_repo_root(repo)[0]
    found = discovery.find(root)
    if found is None:
        raise CodeasstError(f"no codeasst serve is running for {root}")
    if as_json:
        emit_json({"url": found.url, "pid": found.pid, "token": found.token, "repo": str(root),
                   "record": str(discovery.record_path(root))})
    else:
        typer.echo(f"{found.url} (pid {found.pid}; token in {discovery.record_path(root)})")


def lsp(
    repo: Annotated[Path | None, typer.Option("--repo", "-C", help="The repository; by default the folder the "
                                              "editor opens (its rootUri), else this directory.")] = None,
    no_start: Annotated[bool, typer.Option("--no-start", help="Only join a running `codeasst serve`; never "
                                           "start one.")] = False,
) -> None:
    """Speak the Language Server Protocol on stdio: completions, lint fixes and code search in any editor."""
    from codeasst.lsp.server import run
    from codeasst.paths import find_repo_root
    from codeasst.services import build_services

    root = find_repo_root(repo if repo is not None else Path("."))[0]  # a bad --repo is an error now, not in the editor

    def services_for(root: Path):
        services = build_services(root, on_note=lambda text: typer.echo(f"codeasst lsp: {text}", err=True))
        if trust_note := services.loaded.trust_note():
            typer.echo(f"codeasst lsp: {trust_note}", err=True)
        return services

    run(services_for, start=not no_start, root=root if repo is not None else None)


MCP_LOCK_WAIT_S = 60.0


def mcp(
    repo: RepoOption = Path("."),
) -> None:
    """Give a coding agent codeasst's search, definitions, references, checked answers, lint and fix, over MCP on stdio."""
    try:
        # The SDK is imported here, not at the top: `codeasst --help` stays fast.
        from codeasst.mcp.server import serve
    except ImportError as exc:
        raise CodeasstError(f"the MCP SDK is missing ({exc.name})", hint="pip install 'mcp>=2.3,<3'") from None
    # A search answers at once, from words where vectors are missing: an agent's client times out, and
    # the vectors come in the background (here, or in the server this joins).
    services = make_services(repo, {"index.search_embed_limit": 0})
    # A second agent's index run waits for the first's (a lock per index), within an agent's patience.
    serve(assistant_for(services, lock_wait_s=MCP_LOCK_WAIT_S), services.settings.mcp.max_chars)
