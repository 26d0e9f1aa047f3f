"""`codeasst chat`: a Textual app for conversations about the repository.

The screen is a conversation that streams each answer as Markdown, a sources panel for
the current answer, the prompt, and a status line over the footer. Model work runs in
one thread worker at a time and hands text back with `call_from_thread`; Esc sets a flag
the generation loop checks at every token. All of the work goes through an `Assistant`
(codeasst.chat.assistant), the same use cases the CLI runs.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from codeasst import paths
from codeasst.chat import commands
from codeasst.chat.assistant import Assistant, FixProposal, Status
from codeasst.chat.failures import problem
from codeasst.chat.history import Conversation, History, Source, Turn, listing_markdown, to_markdown
from codeasst.chat.widgets import (
    ConfirmScreen,
    ExcerptScreen,
    IndexProgress,
    PromptArea,
    SourcesList,
    TurnView,
    editor_command,
)
from codeasst.errors import CodeasstError, UsageError

# Commands that use the model or the index, one at a time with answers.
MODEL_WORK = frozenset({"search", "fix", "model", "resume", "clear"})

KEYS = [
    ("Enter", "send the question or command"),
    ("Ctrl+J", "new line in the question (Shift+Enter where the terminal reports it)"),
    ("Up / Down", "recall what you typed before (on the first or last line)"),
    ("Tab", "complete a /command; otherwise move to the sources and back"),
    ("PgUp / PgDn", "scroll the conversation"),
    ("Esc", "stop the answer being written"),
    ("Enter on a source", "show its code; e opens it in $EDITOR"),
    ("Ctrl+L", "new conversation"),
    ("Ctrl+Q", "quit"),
]


class ChatApp(App):
    TITLE = "codeasst chat"
    CSS = """
    Screen { layout: vertical; }
    #conversation { height: 1fr; scrollbar-size-vertical: 1; }
    #suggestions { height: auto; max-height: 8; border: round $accent; display: none; }
    #sources { height: auto; max-height: 7; border: round $panel; display: none; }
    #sources:focus { border: round $accent; }
    #prompt { height: auto; min-height: 3; max-height: 8; border: round $accent; }
    #status { height: 1; padding: 0 1; color: $text-muted; background: $panel; }
    .welcome { color: $text-muted; padding: 0 1; margin-bottom: 1; }
    .indexing { height: 1; padding: 0 1; }
    .indexing Static { width: auto; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Stop answer"),
        Binding("pageup", "scroll_conversation(-1)", "Scroll", show=False, priority=True),
        Binding("pagedown", "scroll_conversation(1)", "Scroll", show=False, priority=True),
        Binding("ctrl+l", "new_conversation", "New chat"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, assistant: Assistant, history: History, *, repo_name: str,
                 conversation: Conversation | None = None, theme: str | None = None, blink: bool = True) -> None:
        super().__init__()
        self.assistant = assistant
        self.history = history
        self.repo_name = repo_name
        self.conversation = conversation or history.new_conversation()
        self.blink = blink
        self.busy = False
        self._cancel = threading.Event()
        self._status: Status | None = None
        self._last_rate = 0.0
        self._current: TurnView | None = None
        self._answering = False  # busy with an answer (Esc stops it), not a command
        if theme:
            if theme not in self.available_themes:
                raise UsageError(f"no theme {theme!r}", hint="try textual-light, textual-dark, ansi-light or ansi-dark")
            self.theme = theme

    # Layout

    def compose(self) -> ComposeResult:
        conversation = VerticalScroll(id="conversation")
        conversation.can_focus = False  # Tab goes between the prompt and the sources; PgUp/PgDn scroll
        yield conversation
        yield OptionList(id="suggestions")
        sources = SourcesList(id="sources")
        sources.border_title = "Sources"
        yield sources
        prompt = PromptArea(id="prompt", recall=self.history.inputs())
        prompt.cursor_blink = self.blink
        prompt.border_title = "Ask about the code, or /help"
        yield prompt
        yield Static("", id="status")
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#conversation", VerticalScroll).anchor()
        welcome = f"Ask about {self.repo_name}. Answers cite path:line; /help lists commands and keys."
        if self.conversation.turns:
            welcome = f"Conversation {self.conversation.id}: {self.conversation.title}"
        await self._render_conversation(welcome)
        self.query_one(PromptArea).focus()
        self._refresh_status()
        self.load_status()

    async def _show_turn(self, turn: Turn) -> TurnView:
        view = TurnView(turn.question, turn.answer)
        await self.query_one("#conversation").mount(view)
        if turn.state != "done":
            view.note(f"({turn.state})")
        return view

    def _refresh_status(self) -> None:
        parts = [self._status.line() if self._status else "reading the index…"]
        if self._last_rate:
            parts.append(f"{self._last_rate:.1f} tok/s")
        if self.busy:
            parts.append("answering… Esc stops" if self._answering else "working…")
        self.query_one("#status", Static).update(" · ".join(parts))

    @work(thread=True, group="status")
    def load_status(self) -> None:
        try:
            status = self.assistant.status()
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            self.call_from_thread(self.notify, problem(exc), severity="error")
            return
        self.call_from_thread(self._set_status, status)

    def _set_status(self, status: Status) -> None:
        self._status = status
        self._refresh_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.busy and self._answering  # the footer shows Esc only while an answer is being written
        if action == "scroll_conversation":
            return len(self.screen_stack) == 1  # not under a dialog or the code view
        return True

    def _set_busy(self, busy: bool, answering: bool = False) -> None:
        self.busy = busy
        self._answering = busy and answering
        self.refresh_bindings()
        self._refresh_status()

    # Input

    @on(PromptArea.Changed, "#prompt")
    def _suggest(self, event: PromptArea.Changed) -> None:
        found = commands.matching(event.text_area.text)
        box = self.query_one("#suggestions", OptionList)
        box.clear_options()
        for c in found:
            box.add_option(Option(f"{c.usage:<16} {c.help}"))
        box.display = bool(found)

    @on(PromptArea.Submitted)
    async def _submitted(self, event: PromptArea.Submitted) -> None:
        text = event.text.strip("\n")
        invocation = commands.parse(text)
        needs_model = invocation is None or (invocation.command is not None and invocation.command.name in MODEL_WORK)
        if needs_model and self._refuse_when_busy():
            return  # the text stays in the box, to send when the answer is done
        self.query_one(PromptArea).taken(text)
        self.history.add_input(text)
        self.query_one("#suggestions").display = False
        if invocation is None:
            await self.ask(text)
        else:
            await self.run_command(invocation)

    async def ask(self, question: str) -> None:
        if self._refuse_when_busy():
            return
        view = TurnView(question)
        await self.query_one("#conversation").mount(view)
        self._current = view
        stream = view.answer.get_stream(view.answer)
        self._cancel.clear()
        self._set_busy(True, answering=True)
        view.note("looking through the code…")
        self._answer(question, view, stream, list(self.conversation.turns))

    def _refuse_when_busy(self) -> bool:
        if self.busy:
            self.notify("An answer is being written; Esc stops it.", severity="warning")
        return self.busy

    @work(thread=True, group="model")
    def _answer(self, question: str, view: TurnView, stream, earlier: list[Turn]) -> None:
        progress = IndexProgress(self, view)
        first = [True]

        def on_text(text: str) -> None:
            if first[0]:
                first[0] = False
                self.call_from_thread(view.note, "")
                self.call_from_thread(progress.finish)
            self.call_from_thread(stream.write, text)

        try:
            turn = self.assistant.answer(question, earlier, on_text=on_text, cancelled=self._cancel.is_set,
                                         progress=progress)
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            turn = Turn(question, state="failed")
            self.call_from_thread(self._answered, view, stream, turn, progress, problem(exc))
            return
        self.call_from_thread(self._answered, view, stream, turn, progress, None)

    async def _answered(self, view: TurnView, stream, turn: Turn, progress: IndexProgress,
                        error: str | None) -> None:
        await stream.stop()
        await progress.finish()
        view.answered(turn, error)
        if turn.stats.get("tokens_per_s"):
            self._last_rate = turn.stats["tokens_per_s"]
        if turn.state != "failed":
            self.history.add_turn(self.conversation, turn)
            self.query_one(SourcesList).show(turn.sources)
        self._set_busy(False)
        if self._status is None or not self._status.indexed or self._status.stale:
            self.load_status()

    def action_scroll_conversation(self, pages: int) -> None:
        conversation = self.query_one("#conversation", VerticalScroll)
        if pages < 0:
            conversation.scroll_page_up()
        else:
            conversation.scroll_page_down()

    async def action_quit(self) -> None:
        self._cancel.set()  # a generation in a worker thread ends at its next token, so quitting is quick
        await super().action_quit()

    def action_cancel(self) -> None:
        if self.busy and not self._cancel.is_set():
            self._cancel.set()
            if self._current is not None:
                self._current.note("stopping…", "warning")

    # Slash commands

    async def run_command(self, invocation: commands.Invocation) -> None:
        name, arg = (invocation.command.name if invocation.command else None), invocation.argument
        if name is None:
            await self._say(f"No command `/{invocation.name}`; `/help` lists them.", "error")
        elif name == "help":
            await self._say(commands.help_markdown(KEYS))
        elif name == "clear":
            await self.action_new_conversation()
        elif name == "quit":
            await self.action_quit()
        elif name == "history":
            await self._say(listing_markdown(self.history.conversations()))
        elif name == "resume":
            await self._resume(arg)
        elif name == "export":
            await self._export(arg)
        elif self._refuse_when_busy():
            return
        elif name == "search":
            if not arg:
                await self._say("`/search` needs a query: `/search where are settings loaded`", "error")
                return
            view = await self._say(f"Searching for {arg!r}…", question=f"/search {arg}")
            self._set_busy(True)
            self._search(arg, view)
        elif name == "fix":
            view = await self._say(f"Fixing {arg}…" if arg else "", question=f"/fix {arg}".rstrip())
            self._set_busy(True)
            self._propose_fix(arg, view)
        elif name == "model":
            view = await self._say("", question=f"/model {arg}".rstrip())
            self._set_busy(True)
            self._model(arg, view)

    async def _say(self, markdown: str, kind: str = "meta", question: str = "") -> TurnView:
        view = TurnView(question, markdown if kind == "meta" else "")
        await self.query_one("#conversation").mount(view)
        if kind != "meta":
            view.note(markdown.replace("`", ""), kind)
        return view

    @work(thread=True, group="model")
    def _search(self, query: str, view: TurnView) -> None:
        progress = IndexProgress(self, view)
        try:
            found = self.assistant.search(query, progress=progress)
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            self.call_from_thread(self._done, view, problem(exc), "error")
            return
        finally:
            self.call_from_thread(progress.finish)
        text = "\n".join(f"- `{s.place}` {s.label}" for s in found) or "Nothing found."
        self.call_from_thread(self._searched, view, text, found)

    def _searched(self, view: TurnView, text: str, found: list[Source]) -> None:
        view.answer.update(text)
        view.note(f"{len(found)} places; they are in Sources")
        self.query_one(SourcesList).show(found)
        self._set_busy(False)

    def _done(self, view: TurnView, text: str, kind: str = "meta") -> None:
        if kind == "meta":
            view.answer.update(text)
        else:
            view.answer.update("")
            view.note(text, kind)
        self._set_busy(False)

    @work(thread=True, group="model")
    def _propose_fix(self, path: str, view: TurnView) -> None:
        try:
            proposal = self.assistant.propose_fix(path)
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            self.call_from_thread(self._done, view, problem(exc), "error")
            return
        self.call_from_thread(self._show_fix, view, proposal)

    def _show_fix(self, view: TurnView, proposal: FixProposal) -> None:
        if not proposal.changed:
            self._done(view, f"{proposal.summary}. Nothing to change.")
            return
        view.answer.update(f"```diff\n{proposal.diff.rstrip()}\n```")
        view.note(proposal.summary)

        def decided(apply: bool | None) -> None:
            if apply:
                self._apply_fix(proposal, view)
            else:
                view.note(f"{proposal.summary}. Not applied: {proposal.path} is as it was.", "warning")
                self._set_busy(False)

        self.push_screen(ConfirmScreen(f"Apply this fix to {proposal.path}?"), decided)

    @work(thread=True, group="model")
    def _apply_fix(self, proposal: FixProposal, view: TurnView) -> None:
        try:
            message = self.assistant.apply_fix(proposal)
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            self.call_from_thread(view.note, f"{problem(exc)}; the file was not changed", "error")
        else:
            self.call_from_thread(view.note, f"{proposal.summary}. {message[:1].upper()}{message[1:]}.")
        self.call_from_thread(self._set_busy, False)

    @work(thread=True, group="model")
    def _model(self, name: str, view: TurnView) -> None:
        try:
            if name:
                chosen = self.assistant.switch_model(name)
                text = f"Now using **{chosen}**; it loads with the next question."
            else:
                current = self._status.model if self._status else "?"
                text = f"In use: **{current}**. Installed: " + ", ".join(
                    f"`{m}`" for m in self.assistant.models()) + ". `/model NAME` switches."
        except Exception as exc:  # noqa: BLE001 (one line in the conversation; see failures.problem)
            self.call_from_thread(self._done, view, problem(exc), "error")
            return
        self.call_from_thread(self._done, view, text)
        if name:
            self.call_from_thread(self.load_status)

    async def _resume(self, arg: str) -> None:
        if self._refuse_when_busy():
            return
        loaded = self.history.load(int(arg)) if arg.isdigit() else None
        if loaded is None:
            await self._say(f"No conversation {arg!r} in this repository; `/history` lists them.", "error")
            return
        await self._start(loaded)

    async def _export(self, arg: str) -> None:
        if not self.conversation.turns:
            await self._say("Nothing to export yet: no question has been answered in this conversation.", "error")
            return
        if arg:
            target = Path(arg).expanduser()
        else:
            target = paths.data_dir() / "transcripts" / f"conversation-{self.conversation.id}.md"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(to_markdown(self.conversation), encoding="utf-8")
        except OSError as exc:
            await self._say(f"Could not write {target}: {exc.strerror}", "error")
            return
        await self._say(f"Wrote the transcript to `{target}`.")

    async def action_new_conversation(self) -> None:
        if self._refuse_when_busy():
            return
        await self._start(self.history.new_conversation())

    async def _start(self, conversation: Conversation) -> None:
        self.conversation = conversation
        await self.query_one("#conversation").remove_children()
        self.query_one(SourcesList).show([])
        await self._render_conversation(f"Conversation {self.conversation.id}"
                                        + (f": {self.conversation.title}" if self.conversation.title else " (new)"))

    async def _render_conversation(self, heading: str) -> None:
        conversation = self.query_one("#conversation", VerticalScroll)
        await conversation.mount(Static(heading, classes="welcome", markup=False))
        for turn in self.conversation.turns:
            await self._show_turn(turn)
        if self.conversation.turns:
            self.query_one(SourcesList).show(self.conversation.turns[-1].sources)

    # Sources

    @on(OptionList.OptionSelected, "#sources")
    def _source_chosen(self, event: OptionList.OptionSelected) -> None:
        source = self.query_one(SourcesList).sources[event.option_index]
        try:
            code = self.assistant.excerpt(source)
        except CodeasstError as exc:
            self.notify(exc.one_line(), severity="error")
            return
        dark = self.current_theme.dark if self.current_theme else True
        self.push_screen(ExcerptScreen(source.place, source.path, code, source.start_line,
                                       "monokai" if dark else "default"))

    @on(OptionList.OptionSelected, "#suggestions")
    def _suggestion_chosen(self, event: OptionList.OptionSelected) -> None:
        prompt = self.query_one(PromptArea)
        chosen = commands.matching(prompt.text)[event.option_index]
        prompt.text = f"/{chosen.name} " if chosen.hint else f"/{chosen.name}"
        prompt.move_cursor(prompt.document.end)
        prompt.focus()

    def action_open_in_editor(self, path: str, line: int) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify("Set $EDITOR (or $VISUAL) to open files from here.", severity="warning")
            return
        target = Path(path) if Path(path).is_absolute() else Path(self._root()) / path
        command = editor_command(editor, target, line)
        try:
            with self.suspend():
                subprocess.run(command, check=False)
        except OSError as exc:
            self.notify(f"Could not run {command[0]}: {exc.strerror}", severity="error")
        except SuspendNotSupported:  # a headless or web driver has no terminal to hand over
            self.notify("Cannot open an editor from this kind of terminal.", severity="warning")

    def _root(self) -> str:
        return str(getattr(self.assistant, "root", "."))


def default_theme() -> str:
    """Textual's light theme when the terminal says its background is light (COLORFGBG, as
    rxvt, Konsole and others set it: "fg;bg", where a bg of 7 or 15 is light)."""
    colors = os.environ.get("COLORFGBG", "")
    background = colors.rsplit(";", 1)[-1]
    return "textual-light" if background in {"7", "15"} else "textual-dark"


def make_app(assistant: Assistant, history: History, repo_name: str, *, resume: int | None = None,
             latest: bool = False, theme: str | None = None, blink: bool = True) -> ChatApp:
    """The one way to build the app: the CLI and the tests both call this."""
    conversation = None
    if resume is not None:
        conversation = history.load(resume)
        if conversation is None:
            raise UsageError(f"no conversation {resume} in this repository", hint="`/history` in chat lists them")
    elif latest:
        conversation = history.latest()
    return ChatApp(assistant, history, repo_name=repo_name, conversation=conversation,
                   theme=theme or default_theme(), blink=blink)
