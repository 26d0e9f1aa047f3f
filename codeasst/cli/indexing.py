"""The commands `index`, `status`, `search` and `refs`: their options, the call through access/, and what
they print."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import (
    EmbedderOption,
    JsonOption,
    ModelOption,
    RepoOption,
    allow_fast_exit,
    assistant_for,
    emit_json,
    index_progress,
    make_services,
    note,
    text_and_stdin,
)


def index(
    path: Annotated[Path, typer.Argument(help="A directory inside the repository.")] = Path("."),
    repo: RepoOption = Path("."),
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Throw the index away and build it afresh.")] = False,
    explain: Annotated[Path | None, typer.Option("--explain", help="Say why PATH is or is not indexed.")] = None,
    embedder: EmbedderOption = None,
    chunk_chars: Annotated[int | None, typer.Option("--chunk-chars", help="Largest chunk in characters.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List skipped files.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Also make MiniLM's vectors before returning (for CI and "
                                       "containers).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Index the repository, touching only files that changed since the last run."""
    path = repo / path
    services = make_services(path, {"embedder.model": embedder, "index.chunk_chars": chunk_chars})
    if explain is not None:
        from codeasst.index.files import IgnoreRules
        from codeasst.index.files import explain as explain_path
        from codeasst.index.roles import explain_role

        root = services.repo.root
        explain = explain if explain.is_absolute() or repo == Path(".") else repo / explain
        included, why = explain_path(root, explain, IgnoreRules(root), services.settings.index.max_file_bytes)
        role = explain_role(root, explain)
        if as_json:
            emit_json({"path": str(explain), "indexed": included, "reason": why, "role": role})
        else:
            typer.echo(f"{explain}: {'indexed' if included else 'not indexed'}: {why}; role: {role}")
        return

    from codeasst.console import index_summary_lines

    progress = index_progress(as_json)
    assistant = assistant_for(services, unless="--embedder" if embedder else "--chunk-chars" if chunk_chars else None)
    try:
        with progress or nullcontext():
            summary_json = assistant.index(rebuild, progress, wait=wait or not services.settings.index.background)
    except KeyboardInterrupt:
        note("interrupted; the index is consistent and the next run resumes where this one stopped")
        raise typer.Exit(130) from None
    failed = (summary_json.get("background") or {}).get("error")
    if failed:  # the index is usable as it is: one line, exit 0, and the next run tries again
        note(f"the background embedder did not start ({failed}); run `codeasst index` again, or "
             f"`codeasst index --wait` to embed here")
    if as_json:
        emit_json(summary_json)
        return
    for line in index_summary_lines(summary_json, verbose):
        typer.echo(line)
    if summary_json["files"] == 0:
        note(f"no indexable files under {services.repo.root}")


def status(repo: RepoOption = Path("."), as_json: JsonOption = False) -> None:
    """Show what is indexed and how stale it is."""
    from codeasst.console import status_lines

    data = assistant_for(make_services(repo)).status()
    if as_json:
        emit_json(data)
    else:
        typer.echo("\n".join(status_lines(data)))


def search(
    query: Annotated[str | None, typer.Argument(help="What to look for, in any words and any language; "
                                                "without it, piped stdin is the query.")] = None,
    k: Annotated[int | None, typer.Option("-k", min=1, max=200, help="How many hits to show.")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Skip query analysis: dense and exact search only.")] = False,
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    embedder: EmbedderOption = None,
    explain: Annotated[bool, typer.Option("--explain", help="Say what the query is taken to want and how each "
                                          "hit's file role weighed.")] = False,
    role: Annotated[list[str] | None, typer.Option("--role", help="Only files of this role (repeat for more): "
                                                   "implementation, test, docs, example, config, ...")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only files under this folder or matching this "
                                             "glob (`src/`, `*.py`).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Find the code that matches a query (the index is brought up to date first); piped stdin adds context."""
    query, piped = text_and_stdin(query, "QUERY", "search")
    services = make_services(repo, {"embedder.model": embedder}, model=model)
    assistant = assistant_for(services, unless="--embedder" if embedder else None)
    progress = index_progress(as_json) if assistant.where == "here" else None
    with progress or nullcontext():
        reply = assistant.search(query, k, no_llm=no_llm, context=piped or None, model=model, progress=progress,
                                 roles=role or (), path=path)
    if assistant.where == "here":
        allow_fast_exit(reply["index"])
    hits, notes = reply["hits"], reply["notes"]
    for line in notes:
        note(line)
    if as_json:
        emit_json(hits)
        return
    if explain:
        from codeasst.retrieve.intent import explain_lines

        for line in explain_lines(query, services.settings.retrieval.roles, services.loaded):
            typer.echo(line)
    for hit in hits:
        typer.echo(f"{hit['path']}:{hit['start_line']}-{hit['end_line']}  {hit['symbol']}  "
                   f"({hit['score']:.3f}; {', '.join(hit['sources'])}; {hit['role']})")


def refs(
    name: Annotated[str, typer.Argument(help="A function, class, method, attribute or constant: bare (`run`), "
                                        "a dotted tail (`Indexer.run`) or qualified.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000, help="How many callers to list.")] = 50,
    unresolved: Annotated[bool, typer.Option("--unresolved", help="Also name the calls the graph cannot "
                                             "resolve.")] = False,
    outline: Annotated[bool, typer.Option("--outline", help="Also show each definition's outline: the lines "
                                          "that carry its logic, the rest folded.")] = False,
    repo: RepoOption = Path("."),
    as_json: JsonOption = False,
) -> None:
    """Show where NAME is defined, who calls (or reads) it and what it calls, from the code graph."""
    from codeasst.console import refs_lines

    places = assistant_for(make_services(repo)).refs(name, limit=limit, outline=outline)
    if as_json:
        emit_json(places)
        return
    typer.echo("\n".join(refs_lines(places, show_unresolved=unresolved)))
