"""The codeasst command line: parse, build services, call a use case, render. No logic."""

from __future__ import annotations

import itertools
import json
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from codeasst import __version__
from codeasst.errors import CodeasstError, UsageError


class _Group(TyperGroup):
    """Turns a CodeasstError into one line on stderr and its exit code, in every caller."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CodeasstError as exc:
            _note(f"error: {exc.one_line()}")
            ctx.exit(exc.exit_code)


app = typer.Typer(
    cls=_Group,
    help="A private code assistant for the terminal: index, search, ask and fix, all local.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)

RepoOption = Annotated[Path, typer.Option("--repo", "-C", help="Run as if started in this directory.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model: a name from `codeasst models` or a .gguf path.")]
EmbedderOption = Annotated[str | None, typer.Option("--embedder", help="Embedder: 'bundled' or a model folder.")]


# A search or ask that wrote nothing may end without interpreter teardown: freeing the model,
# the Chroma client and the ONNX session takes about 0.25 s, a tenth of a search.
_skip_teardown = False


def _allow_fast_exit(summary: dict | None) -> None:
    """Let this run skip teardown if its index update (IndexSummary.to_json()) wrote nothing."""
    global _skip_teardown
    _skip_teardown = summary is None or not (summary["added"] or summary["changed"] or summary["deleted"]
                                             or summary["rebuilt"])


def _assistant(services, *, unless: str | None = None, alone: bool = False):
    """The one way in (codeasst.access): the running `codeasst serve` for this repository, else this process."""
    from codeasst.access import connect

    return connect(services, unless=unless, alone=alone, on_note=_note)


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _note(message: str) -> None:
    typer.echo(f"codeasst: {message}", err=True)


def _services(repo: Path, flags: dict[str, Any] | None = None, model: str | None = None, *,
              about_repo: bool = True):
    from codeasst.console import ModelAssemblyProgress
    from codeasst.services import build_services

    services = build_services(repo, flags, model=model, on_model_progress=ModelAssemblyProgress(), on_note=_note)
    if model is not None:
        _ = services.model_spec  # a --model that names nothing fails now (exit 2), not after indexing
    trust_note = services.loaded.trust_note()
    if trust_note:
        _note(trust_note)
    if about_repo and not services.repo.is_git:
        _note(f"{services.repo.root} is not a git repository; indexing that directory itself")
    return services


def _read_stdin() -> str | None:
    """Piped stdin as text, or None on a terminal. Bytes that are not UTF-8 (a latin-1 file
    in a diff) are replaced, with a note, rather than refused: the rest is still useful."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _note(f"stdin is not UTF-8 (byte {exc.start}); undecodable bytes were replaced")
        return data.decode("utf-8", errors="replace")


def _text_and_stdin(given: str | None, name: str, command: str) -> tuple[str, str | None]:
    """The query and the piped context; with no query argument, piped stdin is the query."""
    piped = _read_stdin()
    if given is not None:
        return given, piped or None
    if piped and piped.strip():
        return piped, None
    raise UsageError(f"give a {name}, or pipe one in: ... | codeasst {command}")


def _index_progress(as_json: bool):
    """A progress bar for indexing when a person watches stderr, else None."""
    from codeasst.console import RichProgress, stderr_is_tty

    return RichProgress() if stderr_is_tty() and not as_json else None


@app.command()
def index(
    path: Annotated[Path, typer.Argument(help="A directory inside the repository.")] = Path("."),
    repo: RepoOption = Path("."),
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Throw the index away and build it afresh.")] = False,
    explain: Annotated[Path | None, typer.Option("--explain", help="Say why PATH is or is not indexed.")] = None,
    embedder: EmbedderOption = None,
    chunk_chars: Annotated[int | None, typer.Option("--chunk-chars", help="Largest chunk in characters.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List skipped files.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Index the repository, touching only files that changed since the last run."""
    path = repo / path
    services = _services(path, {"embedder.model": embedder, "index.chunk_chars": chunk_chars})
    if explain is not None:
        from codeasst.index.files import IgnoreRules
        from codeasst.index.files import explain as explain_path
        from codeasst.index.roles import explain_role

        root = services.repo.root
        explain = explain if explain.is_absolute() or repo == Path(".") else repo / explain
        included, why = explain_path(root, explain, IgnoreRules(root), services.settings.index.max_file_bytes)
        role = explain_role(root, explain)
        if as_json:
            _emit_json({"path": str(explain), "indexed": included, "reason": why, "role": role})
        else:
            typer.echo(f"{explain}: {'indexed' if included else 'not indexed'}: {why}; role: {role}")
        return

    from codeasst.console import index_summary_lines

    progress = _index_progress(as_json)
    assistant = _assistant(services, unless="--embedder" if embedder else "--chunk-chars" if chunk_chars else None)
    try:
        with progress or nullcontext():
            summary_json = assistant.index(rebuild, progress)
    except KeyboardInterrupt:
        _note("interrupted; the index is consistent and the next run resumes where this one stopped")
        raise typer.Exit(130) from None
    if as_json:
        _emit_json(summary_json)
        return
    for line in index_summary_lines(summary_json, verbose):
        typer.echo(line)
    if summary_json["files"] == 0:
        _note(f"no indexable files under {services.repo.root}")


@app.command()
def status(repo: RepoOption = Path("."), as_json: JsonOption = False) -> None:
    """Show what is indexed and how stale it is."""
    from codeasst.console import status_lines

    data = _assistant(_services(repo)).status()
    if as_json:
        _emit_json(data)
    else:
        typer.echo("\n".join(status_lines(data)))


@app.command()
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
    as_json: JsonOption = False,
) -> None:
    """Find the code that matches a query (the index is brought up to date first); piped stdin adds context."""
    query, piped = _text_and_stdin(query, "QUERY", "search")
    services = _services(repo, {"embedder.model": embedder}, model=model)
    assistant = _assistant(services, unless="--embedder" if embedder else None)
    progress = _index_progress(as_json) if assistant.where == "here" else None
    with progress or nullcontext():
        reply = assistant.search(query, k, no_llm=no_llm, context=piped or None, model=model, progress=progress)
    if assistant.where == "here":
        _allow_fast_exit(reply["index"])
    hits, notes = reply["hits"], reply["notes"]
    for note in notes:
        _note(note)
    if as_json:
        _emit_json(hits)
        return
    if explain:
        from codeasst.retrieve.intent import explain_lines

        for line in explain_lines(query, services.settings.retrieval.roles):
            typer.echo(line)
    for hit in hits:
        typer.echo(f"{hit['path']}:{hit['start_line']}-{hit['end_line']}  {hit['symbol']}  "
                   f"({hit['score']:.3f}; {', '.join(hit['sources'])}; {hit['role']})")


@app.command()
def refs(
    name: Annotated[str, typer.Argument(help="A function, class or method: bare (`run`), a dotted tail "
                                        "(`Indexer.run`) or qualified.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000, help="How many callers to list.")] = 50,
    unresolved: Annotated[bool, typer.Option("--unresolved", help="Also name the calls the graph cannot "
                                             "resolve.")] = False,
    repo: RepoOption = Path("."),
    as_json: JsonOption = False,
) -> None:
    """Show where NAME is defined, who calls it and what it calls, from the code graph."""
    from codeasst.console import refs_lines

    places = _assistant(_services(repo), alone=True).refs(name, limit=limit)
    if as_json:
        _emit_json([p.to_json() for p in places])
        return
    typer.echo("\n".join(refs_lines(places, show_unresolved=unresolved)))


@app.command()
def ask(
    question: Annotated[str | None, typer.Argument(help="A question about the code, in any language; "
                                                   "without it, piped stdin is the question.")] = None,
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    system: Annotated[str, typer.Option("--system", help="checked (the definitions that answer first, then the "
                                        "model's sentences its excerpts back), grounded (the answer before issue 26) "
                                        "or baseline (before issue 11).")] = "checked",
    as_json: JsonOption = False,
) -> None:
    """Answer a question about the repository, citing path:line; stdin, if piped, is added as context."""
    question, piped = _text_and_stdin(question, "QUESTION", "ask")
    services = _services(repo, model=model)
    assistant = _assistant(services) if question.strip() else _assistant(services, alone=True)
    progress = _index_progress(as_json) if assistant.where == "here" else None
    answer, last = None, ""
    with progress or nullcontext():
        events = assistant.ask(question, context=piped or None, system=system, model=model, progress=progress)
        first = next(events, None)  # retrieval is done when the first event comes: the bar goes
    try:
        for event in itertools.chain([first] if first is not None else [], events):
            if event["type"] == "index":
                _allow_fast_exit(event["summary"])
            elif event["type"] == "note":
                _note(event["text"])
            elif event["type"] == "text" and not as_json:
                sys.stdout.write(event["text"])
                sys.stdout.flush()
                last = (last + event["text"])[-2:]
            elif event["type"] == "answer":
                answer = {k: v for k, v in event.items() if k != "type"}
    finally:
        events.close()
    if answer is None:
        raise CodeasstError("the running `codeasst serve` stopped before the answer ended",
                            hint="run the question again")
    if as_json:
        _emit_json(answer)
        return
    from codeasst.console import answer_footer_lines

    gap = "\n" * (2 - (len(last) - len(last.rstrip("\n"))))
    sys.stdout.write(gap + "\n".join(answer_footer_lines(answer)) + "\n")


@app.command()
def chat(
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    resume: Annotated[int | None, typer.Option("--resume", help="Continue conversation ID (/history lists them).")] = None,
    last: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest conversation.")] = False,
    theme: Annotated[str | None, typer.Option("--theme", help="A Textual theme, e.g. textual-light; "
                                              "by default light or dark as the terminal says.")] = None,
) -> None:
    """Talk about the code in a terminal UI; with a question piped in, print one answer instead."""
    piped = _read_stdin()
    if piped is not None:
        if not piped.strip():
            raise UsageError("the question on stdin is empty")
        ask(piped.strip(), repo=repo, model=model, system="checked", as_json=False)
        return
    if not sys.stdout.isatty():
        raise UsageError("chat needs a terminal; pipe a question in (echo QUESTION | codeasst chat) "
                         "or use `codeasst ask`")
    from codeasst.chat.app import make_app, setup_logging
    from codeasst.chat.assistant import ChatAssistant
    from codeasst.chat.history import History

    services = _services(repo, model=model)
    assistant = ChatAssistant(_assistant(services))
    history = History.open_default(services.repo.root)
    setup_logging()
    chat_app = make_app(assistant, history, services.repo.root.name, resume=resume, latest=last,
                        theme=theme)
    try:
        chat_app.run()
    finally:
        history.close()


@app.command()
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
    services = _services(repo, model=model, about_repo=False)
    where = target.resolve() if target is not None else services.repo.root / name
    # The server answers for its own repository's files only, with its own model.
    assistant = _assistant(services, alone=model is not None or not where.is_relative_to(services.repo.root))
    data_json = assistant.complete(name if assistant.where == "here" else str(where), line, col, text, file=target)
    if as_json:
        _emit_json(data_json)
    else:
        sys.stdout.write(data_json["text"])
        if data_json["text"] and sys.stdout.isatty():
            sys.stdout.write("\n")


@app.command()
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
        from codeasst.paths import find_repo_root
        from codeasst.serve import discovery

        root = find_repo_root(repo)[0]
        found = discovery.find(root)
        if found is None:
            raise CodeasstError(f"no codeasst serve is running for {root}")
        if as_json:
            _emit_json({"url": found.url, "pid": found.pid, "token": found.token, "repo": str(root),
                        "record": str(discovery.record_path(root))})
        else:
            typer.echo(f"{found.url} (pid {found.pid}; token in {discovery.record_path(root)})")
        return
    from codeasst.serve.run import run_server

    services = _services(repo, model=model)
    run_server(services, host=host, port=port, token=token, no_token=no_token, note=_note)


@app.command()
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
        if note := services.loaded.trust_note():
            typer.echo(f"codeasst lsp: {note}", err=True)
        return services

    run(services_for, start=not no_start, root=root if repo is not None else None)


@app.command()
def stats(as_json: JsonOption = False) -> None:
    """Accept Rate, Discard Rate and Happiness of inline suggestions, per model variant and day."""
    from codeasst.serve.events import EventStore

    store = EventStore.open_default()
    days = store.days()
    if as_json:
        _emit_json([{"variant": d.variant, "day": d.day, "shown": d.shown, "accepted": d.accepted,
                     "discarded": d.discarded, "accept_rate": round(d.accept_rate, 4),
                     "discard_rate": round(d.discard_rate, 4), "happiness": round(d.happiness, 3)} for d in days])
        return
    if not days:
        typer.echo("no suggestion events yet (`codeasst serve` records them from editor clients)")
        return
    typer.echo("| variant | day | shown | accept rate | discard rate | happiness per shown |")
    typer.echo("|---|---|---|---|---|---|")
    for d in days:
        typer.echo(f"| {d.variant} | {d.day} | {d.shown} | {d.accept_rate:.1%} | {d.discard_rate:.1%} | "
                   f"{d.happiness:.2f} |")
    comparison = store.compare()
    if comparison is not None:
        typer.echo("")
        typer.echo("\n".join(comparison.lines()))


@app.command()
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

    assistant = alone(_services(fix_start_dir(files, repo, stdin_filename), model=model, about_repo=False))
    overrides = {"max_rounds": rounds, "use_llm": False if no_llm else None, "try_syntax": True if try_syntax else None,
                 "remove_unused_imports": True if remove_unused_imports else None}

    def render(outcome) -> None:
        result = outcome.result
        if result is None:
            _note(f"error: {outcome.error}")
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
        _note(f"{result.name}: {verb} {done} of {len(result.before)} diagnostics"
              + "".join(f"\n  left {d.code} line {d.line}: {result.reasons.get(d, '')}" for d in result.after))

    run = assistant.fix_files(files, **overrides, read_stdin=sys.stdin.buffer.read, cwd=repo, write=write,
                              check=check, stdin_filename=stdin_filename, on_outcome=render)
    if as_json:
        _emit_json(run.reports(with_diff=not write))
    if run.exit_code:
        raise typer.Exit(run.exit_code)


@app.command()
def models(
    check: Annotated[bool, typer.Option("--check", help="Load the model and time a short generation.")] = False,
    prepare: Annotated[bool, typer.Option("--prepare", help="Build now, once per machine, what the first index "
                                          "would: the embedder's ONNX export and its int8 copy.")] = False,
    model: ModelOption = None,
    repo: RepoOption = Path("."),
    as_json: JsonOption = False,
) -> None:
    """List the language models codeasst can use; --check probes one."""
    from codeasst.console import model_lines, probe_lines
    from codeasst.models import available_models
    services = _services(repo, model=model, about_repo=False)
    if prepare:
        import time

        if as_json or check:
            raise UsageError("--prepare takes neither --json nor --check")
        started = time.perf_counter()
        services.embedder.load()
        services.query_embedder.load()
        typer.echo(f"embedder ready: {services.embedder.name} (queries: {services.query_embedder.name}) "
                   f"in {time.perf_counter() - started:.1f} s")
        return
    if check:
        from codeasst.access import alone

        result = alone(services).probe()
        if as_json:
            _emit_json(result)
        else:
            typer.echo("\n".join(probe_lines(result)))
        return
    specs = [spec.to_json() for spec in available_models(services.settings)]
    current = services.model_spec.name  # what "auto" or --model resolves to here
    if current not in {spec["name"] for spec in specs}:
        specs.append(services.model_spec.to_json())
    completing = services.complete_spec.name  # what complete.model resolves to here
    if completing not in {spec["name"] for spec in specs}:
        specs.append(services.complete_spec.to_json())
    if as_json:
        _emit_json({"current": current, "completing": completing, "models": specs})
    else:
        typer.echo("\n".join(model_lines(specs, current, completing)))


@app.command()
def config(repo: RepoOption = Path("."), as_json: JsonOption = False) -> None:
    """Show the effective settings and where each value came from."""
    from codeasst.config import describe, load_settings
    from codeasst.paths import find_repo_root

    root, _ = find_repo_root(repo)
    loaded = load_settings(root)
    rows = describe(loaded)
    if as_json:
        _emit_json({"files_read": [str(p) for p in loaded.files_read], "ignored": loaded.ignored,
                    "untrusted_file": str(loaded.untrusted_file) if loaded.untrusted_file else None,
                    "settings": rows})
        return
    read = ", ".join(str(p) for p in loaded.files_read) or "none"
    typer.echo(f"# config files read: {read}")
    if loaded.ignored:
        typer.echo(f"# {loaded.trust_note()}")
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        typer.echo(f"{row['key']:<{width}} = {json.dumps(row['value'])}    # {row['origin']}")


@app.command(name="trust")
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
            _emit_json(rows)
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
        _emit_json(result)
    else:
        typer.echo(message)


@app.command(name="paths")
def show_paths(as_json: JsonOption = False) -> None:
    """Show where codeasst keeps its config, data and cache."""
    from codeasst import paths

    data = {
        "config_dir": str(paths.config_dir()),
        "config_file": str(paths.user_config_file()),
        "data_dir": str(paths.data_dir()),
        "cache_dir": str(paths.cache_dir()),
        "home_override": os.environ.get(paths.HOME_ENV),
    }
    if as_json:
        _emit_json(data)
        return
    for key, value in data.items():
        typer.echo(f"{key:<13} {value if value is not None else '-'}")


eval_app = typer.Typer(cls=_Group, help="Measure quality on a data set.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("retrieval")
def eval_retrieval(
    questions: Annotated[Path | None, typer.Argument(help="JSONL: repo, question, expected files, lang, split.")] = None,
    localize: Annotated[Path | None, typer.Option("--localize", help="Also the bug-report set (JSONL: repo, "
                                                  "question, expected, source), over installed packages.")] = None,
    repos: Annotated[str | None, typer.Option("--repos", help="With --localize: only these packages, "
                                              "comma-separated (indexing a big package takes minutes).")] = None,
    checkouts: Annotated[bool, typer.Option("--checkouts", help="With --localize: each report over its repository "
                                            "checked out at its base_commit, tests and docs included, from a local "
                                            "git mirror (CODEASST_MIRRORS).")] = False,
    split: Annotated[str, typer.Option("--split", help="tune, test or all (each split apart, then together); "
                                       "tune figures are in-sample.")] = "all",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows (of the split).")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Also score the LLM rerank stage.")] = False,
    rows_out: Annotated[Path | None, typer.Option("--rows-out", help="Append each scored row here as it is "
                                                  "scored (JSONL), so a long run cut short keeps its rows.")] = None,
    embedding_rules: Annotated[bool, typer.Option("--embedding-rules", help="Embed every chunk, and score each "
                                                  "candidate rule of which chunks get vectors (and none: lexical "
                                                  "only) as a stage, with the chunks each embeds.")] = False,
    lexical_only: Annotated[bool, typer.Option("--lexical-only", help="Embed nothing: search as it answers in a "
                                               "big repository before its vectors are done.")] = False,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Precision, recall, F1 and recall@k of each retrieval stage, per tune/test split."""
    from codeasst.evals.retrieval import evaluate, report_lines

    def progress(number: int, total: int, row: dict) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {row['question'][:60]} -> {', '.join(row['top'])}", err=True)

    from codeasst.console import stderr_is_tty

    flags = {"retrieval.rerank": True} if rerank else None
    report = evaluate(questions.resolve() if questions else None, split=split, limit=limit, flags=flags, model=model,
                      on_row=progress, localize=localize.resolve() if localize else None,
                      repos=[r.strip() for r in repos.split(",") if r.strip()] if repos else None,
                      checkouts=checkouts, rows_out=rows_out, embedding_rules=embedding_rules,
                      lexical_only=lexical_only)
    if as_json:
        _emit_json(report)
    else:
        typer.echo("\n".join(report_lines(report)))


@eval_app.command("ask")
def eval_ask(
    questions: Annotated[list[Path], typer.Argument(help="JSONL files: repo, question, expected files, lang, split.")],
    split: Annotated[str, typer.Option("--split", help="tune, test or all (each split apart, then together).")] = "all",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows of each file.")] = None,
    per_repo: Annotated[int | None, typer.Option("--per-repo", min=1,
                                                 help="Only the first N rows of each repository.")] = None,
    systems: Annotated[str, typer.Option("--systems", help="Comma-separated: checked, grounded, baseline.")] = (
        "grounded,checked"),
    out: Annotated[Path | None, typer.Option("--out", help="Write per-answer results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cited, on-target and grounded-identifier rates and first-token time of ask's answer systems."""
    from codeasst.console import stderr_is_tty
    from codeasst.evals.ask import evaluate, report_lines

    def progress(number: int, total: int, s) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {s.system}: correct {s.correct}, facts {len(s.stated)}/{s.facts}, "
                       f"wrong {len(s.wrong)}, abstained {s.abstained}, on target {s.on_target}, "
                       f"{len(s.ungrounded)} of {s.identifiers} names not found, first token {s.first_token_s} s",
                       err=True)

    report = evaluate([q.resolve() for q in questions], split=split, limit=limit, per_repo=per_repo, model=model, out=out,
                      systems=[name.strip() for name in systems.split(",") if name.strip()], on_answer=progress)
    if as_json:
        _emit_json(report)
    else:
        typer.echo("\n".join(report_lines(report)))


@eval_app.command("relations")
def eval_relations(
    data: Annotated[Path, typer.Argument(help="JSONL: repo, sentence, cited files, true (the label), kind, origin.")],
    as_json: JsonOption = False,
) -> None:
    """How many false relations the answer check leaves out, and how many true ones."""
    from codeasst.evals.relations import evaluate, report_lines

    report = evaluate(data.resolve())
    if as_json:
        _emit_json(report)
    else:
        typer.echo("\n".join(report_lines(report)))


@eval_app.command("fix")
def eval_fix(
    data: Annotated[Path, typer.Argument(help="JSONL: code, flake8 feedback, test_setup_code, tests.")],
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows.")] = None,
    systems: Annotated[str, typer.Option(
        "--systems", help="Comma-separated: none (the code unchanged), autopep8, raw, pipeline.")] = (
        "none,autopep8,raw,pipeline"),
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Clean, kept and AST-unchanged rates of fix and its baselines, run side by side."""
    from codeasst.evals.fix import evaluate

    services = _services(Path("."), model=model, about_repo=False)
    chosen = [name.strip() for name in systems.split(",") if name.strip()]
    report = evaluate(services, data.resolve(), systems=chosen, limit=limit, out=out)
    if as_json:
        _emit_json(report.to_json())
    else:
        typer.echo("\n".join(report.lines()))


@eval_app.command("fim")
def eval_fim(
    data: Annotated[Path, typer.Argument(help="JSONL: task_id, prefix, suffix, ground_truth, unit_tests.")],
    split: Annotated[str, typer.Option("--split", help="tune, test or all (by a hash of task_id).")] = "test",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only N rows (a stable sample).")] = None,
    rows: Annotated[str, typer.Option("--rows", help="all, block, control, or single-line (block rows whose hole "
                                      "is one line, the cursor at its start).")] = "all",
    cursor: Annotated[str, typer.Option("--cursor", help="indent (after the line's indentation, as the row gives "
                                        "it) or line-start (column 1; the indentation goes into the hole).")]
    = "indent",
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Completion scored by execution: `complete` itself against the raw model (plain FIM, first line)."""
    import time

    from codeasst.evals import fim

    services = _services(Path("."), model=model, about_repo=False)
    chosen = fim.load(data.resolve(), split, limit, rows, cursor)
    options = fim.eval_options(services)
    started = time.perf_counter()
    outcomes = fim.generate_all(services, chosen, options, on_row=lambda n, total: typer.echo(
        f"[{n}/{total}]", err=True) if n % 25 == 0 else None)
    result = fim.report(chosen, outcomes, options, split, time.perf_counter() - started, services.complete_llm.name,
                        kind=rows, cursor=cursor)
    if out:
        fim.write_rows(out, chosen, outcomes)
    if as_json:
        _emit_json(fim.to_json(result))
    else:
        typer.echo("\n".join(fim.lines(result)))


@eval_app.command("unittest")
def eval_unittest(
    repo: Annotated[str, typer.Argument(help="A directory with a pytest suite, or NAME==VERSION (its sdist, "
                                        "fetched from PyPI once).")],
    tests: Annotated[str | None, typer.Option("--tests", help="The suite's pytest arguments, relative to REPO "
                                              "(default: tests/ or test/ if there, else all of REPO).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Mask N functions (a stable sample).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Another seed, another sample.")] = 0,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1, help="Seconds per test run.")] = 60.0,
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    recent_tests: Annotated[bool, typer.Option("--recent-tests", help="complete's ring buffer of recent files holds "
                                               "the first test that runs the line, as if the user came from it "
                                               "(with complete.context_tokens > 0 and 'recent' a source).")] = False,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Completion scored by a repository's own tests: a masked statement, the tests that run it."""
    from codeasst.evals import unittest_metric

    services = _services(Path("."), model=model, about_repo=False)
    result = unittest_metric.evaluate(
        services, repo, tests=tests, limit=limit, seed=seed, test_timeout_s=test_timeout, on_note=_note,
        recent_tests=recent_tests,
        on_row=lambda n, total, row: typer.echo(f"[{n}/{total}] {row.file}::{row.function} line {row.line}: "
                                                f"{row.status}", err=True))
    if out:
        unittest_metric.write_rows(out, result["rows"])
    if as_json:
        _emit_json(unittest_metric.to_json(result))
    else:
        typer.echo("\n".join(unittest_metric.lines(result)))


@eval_app.command("fix-modules")
def eval_fix_modules(
    data: Annotated[Path, typer.Argument(help="A TOML set of packages and files (tests/data/fix/modules.toml), "
                                         "or a directory of .py files.")],
    systems: Annotated[str, typer.Option(
        "--systems", help="Comma-separated: none (the files unchanged), autopep8, ruff, pipeline.")] = (
        "none,autopep8,ruff,pipeline"),
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Run the pipeline without the model.")] = False,
    only: Annotated[str | None, typer.Option("--only", help="Comma-separated package names or files.")] = None,
    no_tests: Annotated[bool, typer.Option("--no-tests", help="Skip the packages' own tests.")] = False,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1, help="Seconds per test run.")] = 300.0,
    out: Annotated[Path | None, typer.Option("--out", help="Write per-file results here (JSONL).")] = None,
    keep: Annotated[Path | None, typer.Option("--keep", help="Write each fixed file to DIR/SYSTEM/PACKAGE/FILE.")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Clean, public names, docs and tests kept when fix and its baselines fix real modules."""
    from codeasst.console import stderr_is_tty
    from codeasst.evals.fix_modules import FileResult, evaluate

    def progress(number: int, total: int, r: FileResult) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {r.file} {r.system}: {r.left} of {r.before} left, "
                       f"{r.seconds:.1f} s", err=True)

    services = _services(Path("."), model=model, about_repo=False)
    report = evaluate(services, data.resolve(), systems=[s.strip() for s in systems.split(",") if s.strip()],
                      use_llm=not no_llm, only=[s.strip() for s in (only or "").split(",") if s.strip()],
                      run_tests=not no_tests, test_timeout_s=test_timeout, out=out, keep=keep, progress=progress)
    if as_json:
        _emit_json(report.to_json())
    else:
        typer.echo("\n".join(report.lines()))


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
        _note("interrupted")
        sys.exit(130)
    except SystemExit as exc:
        if not _skip_teardown:
            raise
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: nothing left to tell anyone
            code = code or 1
        os._exit(code)


if __name__ == "__main__":
    main()
