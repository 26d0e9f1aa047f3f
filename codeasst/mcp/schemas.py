"""The MCP tools' arguments and results as pydantic models (codeasst.mcp.tools): each input model is
validated strictly (the arguments come from a model that may have read hostile text), and each output
model's JSON schema is its tool's outputSchema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from codeasst.index.roles import ROLES

MAX_QUERY_CHARS = 2000
MAX_QUESTION_CHARS = 4000
MAX_BUFFER_CHARS = 1_000_000

Role = Literal[ROLES]  # type: ignore[valid-type]


class _In(BaseModel):
    # Strict: "3" is not a number and "yes" not true; a buffer's text is taken as sent, spaces and all.
    model_config = ConfigDict(extra="forbid", strict=True)


# --- inputs ---

class SearchIn(_In):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS,
                       description="What the code does or is called, in words or identifiers.")
    k: int = Field(10, ge=1, le=50, description="How many hits.")
    role: Role | None = Field(None, description="Only files of this role (implementation, test, docs, ...).")
    path: str | None = Field(None, max_length=1024,
                             description="Only files under this folder or matching this glob (`src/`, `*.py`).")


class DefinitionIn(_In):
    name: str = Field(min_length=1, max_length=300, description="A function, class, method, attribute or "
                      "constant: bare (`parse`), a dotted tail (`Parser.parse`) or qualified (`pkg.mod.Parser.parse`).")
    offset: int = Field(0, ge=0, le=1_000_000, description="Skip this many lines of the first definition's "
                        "source (to read on where a result was cut).")


class ReferencesIn(_In):
    name: str = Field(min_length=1, max_length=300, description="As for `definition`.")
    limit: int = Field(30, ge=1, le=200, description="How many callers to list per definition.")
    outline: bool = Field(False, description="Also each definition's outline: its branches, loops, returns, "
                          "raises and calls, numbered lines of the file, the rest folded (cheaper than its source).")


class AskIn(_In):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="A question about this code.")


class LintIn(_In):
    path: str = Field(min_length=1, max_length=1024, description="A Python file, relative to the repository root.")
    text: str | None = Field(None, max_length=MAX_BUFFER_CHARS,
                             description="The file's unsaved text; the file on disk when left out.")


class StatusIn(_In):
    pass


class IndexIn(_In):
    rebuild: bool = Field(False, description="Throw the index away and build it again.")


# --- outputs ---

class Hit(BaseModel):
    location: str = Field(description="path:start-end")
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    role: str
    score: float
    sources: list[str]
    preview: str = Field(description="The hit's first lines.")


class SearchOut(BaseModel):
    query: str
    hits: list[Hit]
    notes: list[str]
    words_only: bool = Field(description="No vectors yet: found by words and exact matches alone.")
    cut: str | None = Field(None, description="Why the result was cut and how to get the rest.")


class Definition(BaseModel):
    location: str
    qname: str
    kind: str
    path: str
    line: int
    end_line: int
    signature: str
    doc: str
    source: str = Field(description="Its lines as the file holds them now, from `source_from`.")
    source_from: int = Field(description="The file line the source starts at.")


class DefinitionOut(BaseModel):
    name: str
    definitions: list[Definition]
    found: int = Field(description="How many definitions the name names.")
    cut: str | None = None


class Caller(BaseModel):
    location: str
    qname: str
    kind: str


class Callee(BaseModel):
    name: str
    line: int
    targets: list[str] = Field(description="qname at path:line, for each definition the call resolves to.")


class Place(BaseModel):
    location: str
    qname: str
    kind: str
    signature: str
    callers: list[Caller]
    callers_unresolved: int = Field(description="Calls by this name on receivers of unknown type: not guessed.")
    callees: list[Callee]
    callees_unresolved: list[str]
    bases: list[str]
    outline: list[str] = Field([], description="Where asked for: the outline, as numbered lines of the file.")


class ReferencesOut(BaseModel):
    name: str
    places: list[Place]
    cut: str | None = None


class Citation(BaseModel):
    location: str
    verified: bool
    reason: str


class AskOut(BaseModel):
    question: str
    answer: str
    citations: list[Citation]
    left_out: list[str] = Field(description="Sentences the checks did not let through, with why.")
    notes: list[str]
    cut: str | None = None


class Finding(BaseModel):
    location: str
    code: str
    message: str


class LintOut(BaseModel):
    path: str
    findings: list[Finding]
    cut: str | None = None


class FixOut(BaseModel):
    path: str
    clean: bool = Field(description="flake8 finds nothing in the fixed text.")
    changed: bool
    fixed: int
    remaining: list[Finding]
    diff: str = Field(description="A unified diff; nothing is written.")
    cut: str | None = None


class StatusOut(BaseModel):
    root: str
    indexed: bool
    files: int
    chunks: int
    embedded: int
    embeddable: int
    changed_since: dict[str, list[str]] = Field(description="added, modified, deleted since the last run.")
    where: str = Field(description="'here', or the URL of the codeasst serve that answers.")


class IndexOut(BaseModel):
    files: int
    chunks: int
    added: int
    changed: int
    deleted: int
    waiting_for_vectors: int
    seconds: float
    note: str
