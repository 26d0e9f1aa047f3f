"""Slash commands: small records (name, what it does, what it takes), parsing and completion."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    hint: str = ""  # the argument it takes, shown after the name

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.hint}".rstrip()


COMMANDS = (
    Command("search", "find code for a query and list the places", "QUERY"),
    Command("fix", "fix a Python file's lint, show the diff, apply it when you confirm", "FILE"),
    Command("model", "show the model in use, or switch to another", "[NAME]"),
    Command("history", "list this repository's earlier conversations"),
    Command("resume", "continue an earlier conversation", "ID"),
    Command("export", "write this conversation as Markdown", "[FILE]"),
    Command("clear", "start a new conversation"),
    Command("help", "list commands and keys"),
    Command("quit", "leave"),
)
BY_NAME = {c.name: c for c in COMMANDS}


@dataclass(frozen=True)
class Invocation:
    command: Command | None  # None: no such command
    name: str
    argument: str


def parse(text: str) -> Invocation | None:
    """The slash command `text` invokes, or None when it is a question."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    return Invocation(BY_NAME.get(name.lower()), name, argument.strip())


def matching(text: str) -> list[Command]:
    """Commands whose name starts with what is typed after the slash (before any argument)."""
    if not text.startswith("/") or " " in text or "\n" in text:
        return []
    prefix = text[1:].lower()
    return [c for c in COMMANDS if c.name.startswith(prefix)]


def complete(text: str) -> str | None:
    """`text` completed to the one command it can be, or to the longest prefix the candidates share."""
    found = matching(text)
    if not found:
        return None
    if len(found) == 1:
        return f"/{found[0].name} " if found[0].hint else f"/{found[0].name}"
    names = [c.name for c in found]
    shared = names[0]
    for name in names[1:]:
        while not name.startswith(shared):
            shared = shared[:-1]
    return f"/{shared}" if len(shared) + 1 > len(text) else None


def help_markdown(keys: list[tuple[str, str]]) -> str:
    lines = ["**Commands**", ""]
    lines += [f"- `{c.usage}`: {c.help}" for c in COMMANDS]
    lines += ["", "**Keys**", ""]
    lines += [f"- `{key}`: {what}" for key, what in keys]
    return "\n".join(lines)
