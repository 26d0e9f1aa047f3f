"""`codeasst ask`: retrieve, then stream an answer whose citations are checked."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst import prompt
from codeasst.backends.base import GenerationParams
from codeasst.index.indexer import Progress
from codeasst.retrieve.fuse import Fused, against_lost_in_the_middle
from codeasst.retrieve.pipeline import Retrieval
from codeasst.retrieve.query import ASSISTANT
from codeasst.services import Services
from codeasst.tasks.search import find, hits_json

# path:12 or path:12-30, where path has a directory separator or an extension.
CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]+|(?:[\w.-]+/)+[\w.-]+):(\d+)(?:\s*[-–]\s*(\d+))?")


@dataclass
class Citation:
    path: str
    start_line: int
    end_line: int
    verified: bool
    reason: str  # why it is (not) verified
    attached: bool = False  # added by codeasst because the answer names the excerpt's symbol or file


@dataclass
class Answer:
    question: str
    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    retrieval: Retrieval | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "question": self.question,
            "answer": self.text,
            "citations": [asdict(c) for c in self.citations],
            "hits": hits_json(self.retrieval.hits if self.retrieval else []),
            "timings": self.timings,
        }


def in_context(hits: list[Fused], budget_chars: int) -> list[Fused]:
    """The best hits, in rank order, whose code fits the budget (the best one always does)."""
    chosen, used = [], 0
    for item in hits:
        size = len(item.hit.text)
        if chosen and used + size > budget_chars:
            continue
        chosen.append(item)
        used += size
    return chosen


def render_context(hits: list[Fused], piped: str) -> str:
    """`hits` as chosen by in_context. Piped text comes first; the excerpts follow, strongest
    at both ends against "lost in the middle", each headed by its path and line range, the
    citation the model should copy. Numbering every line would cost about 30% more prompt
    tokens (Qwen spells digits one token each), and prompt processing is what the user waits for."""
    parts = []
    if piped:
        parts.append(f"Input from stdin:\n```\n{piped}\n```\n")
    for item in against_lost_in_the_middle(hits):
        hit = item.hit
        parts.append(f"[{hit.path}:{hit.start_line}-{hit.end_line}] {hit.name}\n{hit.text.rstrip()}\n")
    return "\n".join(parts)


def ask(services: Services, question: str, stdin_text: str | None = None, *, interactive: bool = False,
        progress: Progress | None = None) -> tuple[Answer, Iterator[str]]:
    """Retrieve, then return the answer object and a stream of its text; citations are
    checked when the stream ends."""
    cfg = services.settings.ask
    started = time.perf_counter()
    # The context is filled by rank up to its budget, so no score cutoff: an explicit k.
    result = find(services, question, services.settings.retrieval.k, context=stdin_text,
                  full_analysis=cfg.query_analysis, interactive=interactive, progress=progress)
    answer = Answer(question, retrieval=result, timings=dict(result.timings))
    answer.timings["retrieval_s"] = round(time.perf_counter() - started, 3)
    # Up to half the budget for piped text: its end, where a log or a trace says what matters.
    piped = stdin_text[-(cfg.context_chars // 2):] if stdin_text else ""
    result.hits = in_context(result.hits, cfg.context_chars - len(piped))  # what the model sees is what Sources lists
    context = render_context(result.hits, piped)
    messages = prompt.load("ask").messages(context=context, question=question)

    def stream() -> Iterator[str]:
        llm = services.llm
        llm.reuse_prefix(llm.chat_prompt(messages[:1]).removesuffix(ASSISTANT))
        began = time.perf_counter()
        first = None
        pieces = []
        params = GenerationParams(max_tokens=cfg.max_tokens, stop=("<|im_end|>",), repeat_penalty=1.1)
        for token in llm.generate(llm.chat_prompt(messages), params):
            if first is None:
                first = time.perf_counter()
                answer.timings["first_token_s"] = round(first - started, 3)
            pieces.append(token.text)
            yield token.text
            if token.text.endswith("\n") and _looping("".join(pieces)):
                break
        answer.timings["answer_s"] = round(time.perf_counter() - began, 3)
        answer.text = "".join(pieces)
        answer.citations = check_citations(services.repo.root, answer.text, result.hits)
        answer.citations += attach_citations(answer.text, result.hits, answer.citations)

    return answer, stream()


def _looping(text: str, repeats: int = 3) -> bool:
    """A small model in a loop repeats a line; stop it rather than print the same line forever."""
    lines = [re.sub(r"\d+", "#", line.strip())[:60] for line in text.splitlines() if line.strip()]
    return len(lines) >= repeats and len(set(lines[-repeats:])) == 1 or (
        len(lines) >= 2 * repeats and len(set(lines[-2 * repeats:])) <= 2)


def check_citations(root: Path, text: str, hits: list[Fused]) -> list[Citation]:
    """Each path:line in `text`, verified against the repository and the excerpts given."""
    seen = set()
    citations = []
    shown = [(f.hit.path, f.hit.start_line, f.hit.end_line) for f in hits]
    for match in CITATION.finditer(text):
        path, start = match.group(1).removeprefix("./"), int(match.group(2))
        end = int(match.group(3)) if match.group(3) else start
        if (path, start, end) in seen:
            continue
        seen.add((path, start, end))
        citations.append(_verify(root, path, start, end, shown))
    return citations


# Names an excerpt defines, in the languages the chunker parses (Go methods have a receiver first).
DEFINES = re.compile(r"\b(?:def|class|function|func|fn|interface|struct|type|enum|trait)\s+(?:\([^)]*\)\s*)?"
                     r"([A-Za-z_]\w{2,})")
NOT_DEFINITIONS = frozenset({"file", "module", "window", "section", "key", "statement"})


def defined_names(hit) -> set[str]:
    names = set(DEFINES.findall(hit.text))
    if hit.kind not in NOT_DEFINITIONS:
        names.add(hit.name.rsplit(".", 1)[-1])
    return {n for n in names if len(n) >= 3}


def attach_citations(text: str, hits: list[Fused], written: list[Citation]) -> list[Citation]:
    """Citations codeasst adds for the excerpts the answer draws on by name: one that defines
    a name the answer uses as a word, or whose file path the answer writes. A small model
    often explains the right code without citing it; the reader still gets the place."""
    cited = {(c.path, c.start_line, c.end_line) for c in written if c.verified}
    attached = []
    for item in hits:
        hit = item.hit
        place = (hit.path, hit.start_line, hit.end_line)
        if place in cited:
            continue
        named = sorted(n for n in defined_names(hit) if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text))
        if named or hit.path in text:
            cited.add(place)
            attached.append(Citation(*place, True, f"the answer names {', '.join(named[:3]) or hit.path}",
                                     attached=True))
    return attached


def _verify(root: Path, path: str, start: int, end: int, shown: list[tuple[str, int, int]]) -> Citation:
    target = (root / path).resolve()
    if root.resolve() not in target.parents or not target.is_file():
        return Citation(path, start, end, False, "no such file in the repository")
    try:
        count = len(target.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError as exc:
        return Citation(path, start, end, False, f"unreadable: {exc.strerror}")
    if end < start or start < 1 or end > count:
        return Citation(path, start, end, False, f"lines out of range (the file has {count})")
    if not any(p == path and s <= end and start <= e for p, s, e in shown):
        return Citation(path, start, end, False, "exists, but was not among the excerpts the model saw")
    return Citation(path, start, end, True, "matches an excerpt")
