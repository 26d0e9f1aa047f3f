"""The chat's own widgets: the prompt, one conversation turn, the sources panel, the index progress
shown in a turn, and the modal screens."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.syntax import Syntax
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Markdown, OptionList, ProgressBar, Static, TextArea
from textual.widgets.option_list import Option

from codeasst.chat import commands
from codeasst.chat.history import Source, Turn


class PromptArea(TextArea):
    """The question box: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it)
    inserts a newline, Tab completes a slash command, Up and Down recall what was typed."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, recall: list[str] | None = None, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.recall = list(recall or [])
        self._recall_at: int | None = None  # position in `recall` while browsing it
        self._draft = ""  # what was typed before browsing began

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            self._handled(event)
            if self.text.strip():
                self.post_message(self.Submitted(self.text))  # the app clears the box when it takes the text
            return
        if key in ("ctrl+j", "shift+enter"):
            self._handled(event)
            self.insert("\n")
            return
        if key == "tab" and commands.matching(self.text):
            self._handled(event)
            completed = commands.complete(self.text)
            if completed:
                self.text = completed
                self.move_cursor(self.document.end)
            return
        if key == "up" and self.cursor_location[0] == 0 and self._browse(-1):
            self._handled(event)
            return
        if key == "down" and self.cursor_location[0] == self.document.line_count - 1 and self._browse(1):
            self._handled(event)
            return
        await super()._on_key(event)

    @staticmethod
    def _handled(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def taken(self, text: str) -> None:
        """The app took `text`: empty the box and remember it for Up."""
        if not self.recall or self.recall[-1] != text:
            self.recall.append(text)
        self._recall_at = None
        self.clear()

    def _browse(self, step: int) -> bool:
        """Show the previous (-1) or next (+1) entry typed; False when there is none that way."""
        if not self.recall:
            return False
        if self._recall_at is None:
            if step > 0:
                return False
            self._draft = self.text
            at = len(self.recall) - 1
        else:
            at = self._recall_at + step
        if at < 0:
            return True  # at the oldest: stay
        if at >= len(self.recall):
            self._recall_at = None
            self.text = self._draft
        else:
            self._recall_at = at
            self.text = self.recall[at]
        self.move_cursor(self.document.end)
        return True


class TurnView(Vertical):
    """One question and its answer, streamed as Markdown, with a line about it underneath."""

    DEFAULT_CSS = """
    TurnView { height: auto; margin: 0 0 1 0; }
    TurnView .question { color: $text-accent; text-style: bold; padding: 0 1; }
    TurnView Markdown { margin: 0; padding: 0 1; }
    TurnView .meta { color: $text-muted; padding: 0 1; }
    TurnView .warning { color: $text-warning; padding: 0 1; }
    TurnView .error { color: $text-error; padding: 0 1; }
    """

    def __init__(self, question: str, answer: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.question = question
        self.answer = Markdown(answer)
        self.meta = Static("", classes="meta", markup=False)
        self.meta.display = False  # no empty line under answers that have nothing to add

    def compose(self) -> ComposeResult:
        if self.question:
            yield Static(f"› {self.question}", classes="question", markup=False)
        yield self.answer
        yield self.meta

    def note(self, text: str, kind: str = "meta") -> None:
        self.meta.update(text)
        self.meta.set_classes(kind)
        self.meta.display = bool(text)

    def answered(self, turn: Turn, error: str | None) -> None:
        """The line under a finished answer: what went wrong, or what was checked and how fast."""
        if error:
            note, kind = error, "error"
        elif turn.state == "cancelled":
            note, kind = "(stopped)", "warning"
        elif turn.ungrounded:
            note, kind = ("Not found in the repository (the model may have made these up): "
                          + ", ".join(f"`{n}`" for n in turn.ungrounded), "warning")
        else:
            cited = int(turn.stats.get("cited", 0))
            note = (f"{cited} {'citation' if cited == 1 else 'citations'} checked · "
                    f"first token {turn.stats.get('first_token_s', 0):.1f} s")
            kind = "meta"
        if turn.stats.get("dense_total") and not error:
            note += (f" · not yet embedded: dense search covered {int(turn.stats['dense_embedded']):,} of "
                     f"{int(turn.stats['dense_total']):,} chunks")
        self.note(note, kind)


class SourcesList(OptionList):
    """The current answer's places; Enter shows the code, e opens $EDITOR at the line."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select", "Show code"),
                                             Binding("e", "edit", "Open in $EDITOR")]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sources: list[Source] = []

    def show(self, sources: list[Source]) -> None:
        self.sources = list(sources)
        self.clear_options()
        for s in self.sources:
            mark = "*" if s.verified else " "
            self.add_option(Option(f"{mark} {s.place}  {s.label}".rstrip()))
        self.border_subtitle = "* cited" if any(s.verified for s in sources) else ""
        self.display = bool(sources)
        if sources:
            self.highlighted = 0  # Enter on the panel shows the first place at once

    def action_edit(self) -> None:
        if self.highlighted is not None and self.highlighted < len(self.sources):
            source = self.sources[self.highlighted]
            self.app.action_open_in_editor(source.path, source.start_line)


class IndexProgress:
    """Index progress from the worker thread, shown as a labelled bar in the turn that waits on it."""

    def __init__(self, app: App, view: TurnView) -> None:
        self.app, self.view = app, view
        self.box: Horizontal | None = None

    def start(self, files: int) -> None:
        self.app.call_from_thread(self._start, files)

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        if files:
            self.app.call_from_thread(self._advance, files)

    def start_embedding(self, chunks: int) -> None:
        self.app.call_from_thread(self._start, chunks, "embedding", "chunk")

    def embedded(self, chunks: int) -> None:
        self.app.call_from_thread(self._advance, chunks)

    async def _start(self, total: int, doing: str = "indexing", unit: str = "file") -> None:
        await self.finish()
        self.box = Horizontal(Static(f"{doing} {total:,} {unit if total == 1 else unit + 's'} ", classes="meta"),
                              ProgressBar(total=total, show_eta=False), classes="indexing")
        await self.view.mount(self.box)

    def _advance(self, files: int) -> None:
        if self.box is not None:
            self.box.query_one(ProgressBar).advance(files)

    async def finish(self) -> None:
        if self.box is not None:
            box, self.box = self.box, None
            await box.remove()


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question on one line over the prompt, so what it asks about (a diff) stays
    readable above it: y confirms, n or Esc refuses; No has the focus."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center bottom; background: $background 20%; }
    ConfirmScreen > Horizontal { width: 100%; height: 3; border: round $warning; background: $surface;
                                 padding: 0 1; margin-bottom: 2; }
    ConfirmScreen Label { width: 1fr; }
    ConfirmScreen Button { margin: 0 0 0 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "Yes"),
                                             Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self.question)
            yield Button("Yes (y)", id="yes", variant="primary", compact=True)
            yield Button("No (n)", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe choice is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ExcerptScreen(ModalScreen[None]):
    """The code at a source, with line numbers; e opens it in $EDITOR, Esc goes back."""

    DEFAULT_CSS = """
    ExcerptScreen { align: center middle; }
    ExcerptScreen > VerticalScroll { width: 95%; height: 90%; border: round $accent; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "dismiss", "Back"), Binding("e", "edit", "Open in $EDITOR")]

    def __init__(self, title: str, path: str, code: str, start_line: int, theme: str) -> None:
        super().__init__()
        self.title_text = title
        self.path = path
        self.code = code
        self.start_line = start_line
        self.syntax_theme = theme

    def compose(self) -> ComposeResult:
        lexer = Syntax.guess_lexer(self.path, self.code)
        with VerticalScroll() as scroll:
            scroll.border_title = self.title_text
            yield Static(Syntax(self.code, lexer, line_numbers=True, start_line=self.start_line,
                                theme=self.syntax_theme, word_wrap=False))

    def action_edit(self) -> None:
        self.dismiss()
        self.app.action_open_in_editor(self.path, self.start_line)


def editor_command(editor: str, path: Path, line: int) -> list[str]:
    """The command that opens `path` at `line` in the user's editor ($VISUAL or $EDITOR).

    `+LINE FILE` is understood by vi, vim, nvim, nano, emacs, micro, kak and helix; VS Code
    and its kin want `--goto FILE:LINE`."""
    import shlex

    argv = shlex.split(editor)
    name = Path(argv[0]).name if argv else ""
    if name in {"code", "code-insiders", "codium", "cursor"}:
        return [*argv, "--goto", f"{path}:{line}"]
    if name in {"subl", "zed"}:
        return [*argv, f"{path}:{line}"]
    return [*argv, f"+{line}", str(path)]
