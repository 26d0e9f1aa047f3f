"""Prompts are data: one TOML file per prompt in codeasst/prompts/, each part a template.

Templates use `$name` / `${name}` (string.Template), so the braces that fill
code samples need no escaping. A variable the caller does not supply is an
error, never an empty string.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template

from codeasst.backends.base import Message
from codeasst.errors import CodeasstError


class PromptError(CodeasstError):
    """A prompt file is missing, malformed, or was rendered without a variable it needs."""


@dataclass(frozen=True)
class Prompt:
    name: str
    parts: dict[str, str]  # e.g. {"system": "...", "user": "..."} or {"text": "..."} for raw prompts

    def variables(self) -> set[str]:
        return set().union(*(_names(text) for text in self.parts.values()))

    def render(self, part: str, **values: object) -> str:
        if part not in self.parts:
            raise PromptError(f"prompt {self.name!r} has no part {part!r}")
        missing = sorted(_names(self.parts[part]) - set(values))
        if missing:
            raise PromptError(f"prompt {self.name!r} needs {', '.join(missing)}")
        return Template(self.parts[part]).substitute({k: str(v) for k, v in values.items()})

    def messages(self, **values: object) -> list[Message]:
        """The chat messages of a prompt with `system` and `user` parts."""
        return [{"role": role, "content": self.render(role, **values)}
                for role in ("system", "user") if role in self.parts]


def _names(template: str) -> set[str]:
    return {m.group("named") or m.group("braced") for m in Template.pattern.finditer(template)
            if m.group("named") or m.group("braced")}


@cache
def load(name: str) -> Prompt:
    source = resources.files("codeasst.prompts").joinpath(f"{name}.toml")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PromptError(f"no prompt named {name!r} (looked for codeasst/prompts/{name}.toml)") from None
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"codeasst/prompts/{name}.toml: {exc}") from None
    if not data or not all(isinstance(v, str) for v in data.values()):
        raise PromptError(f"codeasst/prompts/{name}.toml must hold only string parts")
    return Prompt(name, data)
