"""Questions about the code: `ask` for one answer, `chat` for a conversation."""

from __future__ import annotations

import itertools
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import (
    JsonOption,
    ModelOption,
    RepoOption,
    allow_fast_exit,
    assistant_for,
    emit_json,
    index_progress,
    make_services,
    note,
    read_stdin,
    text_and_stdin,
)
from codeasst.errors import CodeasstError, UsageError


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
    question, piped = text_and_stdin(question, "QUESTION", "ask")
    services = make_services(repo, model=model)
    assistant = assistant_for(services) if question.strip() else assistant_for(services, alone=True)
    progress = index_progress(as_json) if assistant.where == "here" else None
    answer, last = None, ""
    with progress or nullcontext():
        events = assistant.ask(question, context=piped or None, system=system, model=model, progress=progress)
        first = next(events, None)  # retrieval is done when the first event comes: the bar goes
    try:
        for event in itertools.chain([first] if first is not None else [], events):
            if event["type"] == "index":
                allow_fast_exit(event["summary"])
            elif event["type"] == "note":
                note(event["text"])
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
        emit_json(answer)
        return
    from codeasst.console import answer_footer_lines

    gap = "\n" * (2 - (len(last) - len(last.rstrip("\n"))))
    sys.stdout.write(gap + "\n".join(answer_footer_lines(answer)) + "\n")


def chat(
    repo: RepoOption = Path("."),
    model: ModelOption = None,
    resume: Annotated[int | None, typer.Option("--resume", help="Continue conversation ID (/history lists them).")] = None,
    last: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest conversation.")] = False,
    theme: Annotated[str | None, typer.Option("--theme", help="A Textual theme, e.g. textual-light; "
                                              "by default light or dark as the terminal says.")] = None,
) -> None:
    """Talk about the code in a terminal UI; with a question piped in, print one answer instead."""
    piped = read_stdin()
    if piped is not None:
        if not piped.strip():
            raise UsageError("the question on stdin is empty")
        ask(piped.strip(), repo=repo, model=model, system="checked", as_json=False)
        return
    if not sys.stdout.isatty():
        raise UsageError("chat needs a terminal; pipe a question in (echo QUESTION | codeasst chat) "
                         "or use `codeasst ask`")
    from codeasst.chat.app import make_app
    from codeasst.chat.assistant import ChatAssistant
    from codeasst.chat.failures import setup_logging
    from codeasst.chat.history import History

    services = make_services(repo, model=model)
    assistant = ChatAssistant(assistant_for(services))
    history = History.open_default(services.repo.root)
    setup_logging()
    chat_app = make_app(assistant, history, services.repo.root.name, resume=resume, latest=last,
                        theme=theme)
    try:
        chat_app.run()
    finally:
        history.close()
