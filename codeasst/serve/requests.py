"""The bodies `codeasst serve`'s routes take: what a request may hold, bounded, with a description each
(they make the OpenAPI document at /openapi.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MAX_TEXT_CHARS = 2_000_000


class CompleteRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="The file, relative to the repository root.")
    line: int = Field(ge=1, description="Cursor line, 1-based.")
    col: int = Field(ge=1, description="Cursor column, 1-based, in characters.")
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="The buffer; the file on disk if unset.")
    client: str = Field("default", max_length=200, description="Who asks: a newer request cancels its older one.")
    trigger: Literal["auto", "invoked"] = Field("auto", description="invoked: the user asked (a key press); "
                                                "complete.invoked_model answers it where set.")


class OpenRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    line: int | None = Field(None, ge=1, description="The cursor, if known: its prompt is warmed as a whole.")
    col: int | None = Field(None, ge=1)
    client: str = Field("default", max_length=200, description="As in /v1/complete: whose session this is.")


class SearchRequest(BaseModel):
    query: str = Field(min_length=1, max_length=200_000)
    k: int | None = Field(None, ge=1, le=200)
    no_llm: bool = False
    context: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Piped text, as `... | codeasst search`.")
    model: str | None = Field(None, max_length=4096, description="As `codeasst search --model`.")
    client: str = Field("cli", max_length=200)
    roles: list[str] = Field([], max_length=20, description="Only files of these roles (`codeasst search --role`).")
    path: str | None = Field(None, max_length=4096, description="Only files under this folder or matching this "
                             "glob (`codeasst search --path`).")


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=200_000)
    system: Literal["checked", "grounded", "baseline"] = Field("checked", description="As `codeasst ask --system`.")
    context: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Piped text, as `... | codeasst ask`.")
    history: list[tuple[str, str]] = Field([], max_length=50, description="Earlier (question, answer) turns (chat).")
    model: str | None = Field(None, max_length=4096, description="As `codeasst ask --model`: loaded once, then kept.")
    client: str = Field("cli", max_length=200)


class IndexRequest(BaseModel):
    rebuild: bool = False
    vectors: bool = Field(True, description="false: return when words and graph are done; the server embeds "
                          "the rest in the background.")
    wait: bool = Field(True, description="false: return once every chunk has the first phase's (static) vector; "
                       "the server makes the embedder's own in the background.")


class EventRequest(BaseModel):
    kind: Literal["shown", "accepted", "discarded"]
    id: str = Field(min_length=1, max_length=200, description="The suggestion's id, from /v1/complete.")
    shown_length: int = Field(0, ge=0, le=1_000_000)
    accepted_length: int = Field(0, ge=0, le=1_000_000)


class FixRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="The buffer; the file on disk if unset.")
    line: int | None = Field(None, ge=1, description="Only the changes at this line (an editor's \"fix this\").")
    client: str = Field("cli", max_length=200)


class SymbolsRequest(BaseModel):
    query: str = Field(max_length=2000)
    limit: int = Field(50, ge=1, le=500)


class NameRequest(BaseModel):
    name: str = Field(min_length=1, max_length=2000, description="A definition: bare, a dotted tail or qualified.")
    limit: int = Field(50, ge=1, le=10_000, description="refs: callers listed per definition; definition: "
                       "definitions given.")
    outline: bool = Field(False, description="refs: each definition's outline, the lines that carry its logic.")
