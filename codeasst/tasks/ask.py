"""`codeasst ask`: retrieve, then stream an answer whose citations are checked.

Three systems answer: "checked" (the default; see tasks.checking): the definitions that answer
the question first, then the model's explanation with each sentence held to the excerpt it
cites; "grounded" (the answer as issue 11 left it, tasks.grounding) and "baseline" (as issue 4
left it), kept so `codeasst eval ask` can measure them against each other in the same run."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst import prompt
from codeasst.backends.base import GenerationParams
from codeasst.errors import UsageError
from codeasst.index.graphdb import CodeGraph
from codeasst.index.indexer import Progress
from codeasst.retrieve import intent
from codeasst.retrieve.fuse import Fused, against_lost_in_the_middle
from codeasst.retrieve.pipeline import Retrieval
from codeasst.retrieve.query import ASSISTANT
from codeasst.services import Services
from codeasst.tasks import checking, flow, grounding
from codeasst.tasks.relations import RelationCheck
from codeasst.tasks.search import find, hits_json

SYSTEMS = ("checked", "grounded", "baseline")
DEFAULT_SYSTEM = "checked"
# A question longer than this is cut to its informative lines (about 600 tokens): a pasted
# log must not overflow the context window, and every prompt token delays the answer.
QUESTION_CHARS = 2000
# Short excerpts: more places fit the same budget, and the model quotes less code back.
EXCERPT_CHARS = 600
# The checked answer gives the model whole definitions, fewer of them: a fragment invites a
# wrong detail (a parameter list or a message of the function next to it).
WHOLE_CHARS = 1200

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
    system: str = "grounded"
    identifiers: list[str] = field(default_factory=list)  # the code names the answer uses
    ungrounded: list[str] = field(default_factory=list)  # those found nowhere in the repository
    prompt_tokens: int | None = None
    excerpts: list[grounding.Excerpt] = field(default_factory=list)  # what the grounded model saw
    generated_tokens: int = 0
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (sentence, why) the checked answer dropped
    # A non-answer: no verified citation, or the model says the excerpts fall short. Then `note`
    # (where to look next) follows the text; it is codeasst's pointer, not a claim of the answer.
    abstained: bool = False
    note: str = ""

    @property
    def body(self) -> str:
        """What the answer claims: its text without the note."""
        return self.text.removesuffix(self.note)

    def to_json(self) -> dict:
        return {
            "question": self.question,
            "system": self.system,
            "answer": self.text,
            "citations": [asdict(c) for c in self.citations],
            "identifiers": self.identifiers,
            "ungrounded": self.ungrounded,
            "hits": hits_json(self.retrieval.hits if self.retrieval else []),
            "excerpts": [{"number": e.number, "path": e.path, "start_line": e.start_line, "end_line": e.end_line,
                          "symbol": e.name} for e in self.excerpts],
            "prompt_tokens": self.prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "abstained": self.abstained,
            "left_out": [{"text": text, "why": why} for text, why in self.left_out],
            "timings": self.timings,
            "dense": self.retrieval.dense if self.retrieval else None,
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


def ask(services: Services, question: str, stdin_text: str | None = None, *,
        progress: Progress | None = None, system: str = DEFAULT_SYSTEM, update_index: bool = True,
        history: Sequence[tuple[str, str]] = ()) -> tuple[Answer, Iterator[str]]:
    """Retrieve, then return the answer object and a stream of its text; citations are
    checked, and the names the answer uses looked up, when the stream ends.

    `history`: earlier (question, answer) turns of a conversation, already cut to the caller's
    token budget. They go to the model as earlier messages, and a short follow-up ("and where
    is it tested?") is retrieved together with the question before it."""
    if system not in SYSTEMS:
        raise UsageError(f"no answer system {system!r}; choose one of {', '.join(SYSTEMS)}")
    cfg = services.settings.ask
    started = time.perf_counter()
    bounded = grounding.bound_question(question, QUESTION_CHARS)
    # The context is filled by rank up to its budget, so no score cutoff: an explicit k.
    query = follow_up_query(bounded, history)
    result = find(services, query, services.settings.retrieval.k, context=stdin_text,
                  full_analysis=cfg.query_analysis, progress=progress,
                  update_index=update_index)
    answer = Answer(question, retrieval=result, timings=dict(result.timings), system=system)
    answer.timings["retrieval_s"] = round(time.perf_counter() - started, 3)
    # Up to half the budget for piped text: its end, where a log or a trace says what matters.
    piped = stdin_text[-(cfg.context_chars // 2):] if stdin_text else ""
    budget = cfg.context_chars - len(piped)
    definitions: list[checking.Definition] = []
    code_graph: CodeGraph | None = None
    flow_text = ""
    if system == "baseline":
        result.hits = in_context(result.hits, budget)  # what the model sees is what Sources lists
        messages = prompt.load("ask").messages(context=render_context(result.hits, piped), question=bounded)
        shown = [(f.hit.path, f.hit.start_line, f.hit.end_line) for f in result.hits]
    else:
        per_excerpt = WHOLE_CHARS if system == "checked" else EXCERPT_CHARS
        answer.excerpts = grounding.select_excerpts(result.hits, bounded, budget, per_excerpt)
        if system == "checked":
            # The lead is retrieval's, flow or not: the definition the best hits show.
            definitions = checking.lead(answer.excerpts, [f.hit for f in result.hits], bounded,
                                        intent.WANTED[result.intent], services.repo.root)
            code_graph = open_graph(services) if cfg.flow or cfg.check_relations else None
            path = flow.best_flow(code_graph, [f.hit for f in result.hits], bounded) \
                if code_graph is not None and cfg.flow and flow.asks_for_flow(bounded) else None
            if path is not None:
                flow_text = path.render()
                if len(path.chain) > 1:  # the model reads the definitions on the chain whole, in call order
                    chain = flow.chain_hits(services.repo.root, path.chain, result.hits, WHOLE_CHARS)
                    result.hits = chain + [f for f in result.hits if all(f is not c for c in chain)]
                    answer.excerpts = grounding.select_excerpts(result.hits, bounded, budget, per_excerpt, len(chain))
        ranks = sorted({e.rank for e in answer.excerpts})
        result.hits = [result.hits[r] for r in ranks]
        messages = prompt.load("ask_checked" if system == "checked" else "ask_grounded").messages(
            context=grounding.render_numbered(answer.excerpts, piped), question=bounded)
        shown = [(e.path, e.start_line, e.end_line) for e in answer.excerpts]
    lead_text = checking.render_lead(definitions) + flow_text
    messages = messages[:1] + _earlier_turns(history) + messages[1:]
    llm = services.llm
    answer.prompt_tokens = llm.count_tokens(llm.chat_prompt(messages))

    def stream() -> Iterator[str]:
        llm.reuse_prefix(llm.chat_prompt(messages[:1]).removesuffix(ASSISTANT))
        began = time.perf_counter()
        first = None
        pieces, shown_text = [], []
        attached: list[Citation] = []

        def on_attach(excerpt: grounding.Excerpt, line: str) -> None:
            attached.append(Citation(excerpt.path, excerpt.start_line, excerpt.end_line, True,
                                     f"codeasst matched the line to this excerpt: {line.strip()[:60]}",
                                     attached=True))

        citing = grounding.CitingStream(answer.excerpts, on_attach) if system != "baseline" else None
        relations = RelationCheck(code_graph, services.repo.root).why_wrong \
            if code_graph is not None and cfg.check_relations else None
        checker = checking.LineChecker(answer.excerpts, bounded, relations) if system == "checked" else None

        def show(text: str) -> Iterator[str]:
            """Every token gives the caller a turn, text or not: a server learns at the next token
            that its client left, even while the checked answer holds a sentence back."""
            if text and "first_token_s" not in answer.timings:
                answer.timings["first_token_s"] = round(time.perf_counter() - started, 3)
            shown_text.append(text)
            yield text

        # What codeasst knows for certain reaches the user before the model reads its prompt.
        yield from show(lead_text)
        params = GenerationParams(max_tokens=cfg.max_tokens, stop=("<|im_end|>",), repeat_penalty=1.1)
        for token in llm.generate(llm.chat_prompt(messages), params):
            if first is None:
                first = time.perf_counter()
                answer.timings["model_first_token_s"] = round(first - started, 3)
            pieces.append(token.text)
            answer.generated_tokens += 1
            out = citing.feed(token.text) if citing else token.text
            yield from show(checker.feed(out) if checker else out)
            if citing and citing.reciting or checker and checker.done:
                break
            if token.text.endswith("\n") and _looping("".join(pieces)):
                break
        if citing:
            out = citing.close()
            yield from show(checker.feed(out) + checker.close() if checker else out)
        answer.timings["answer_s"] = round(time.perf_counter() - began, 3)
        model_text = "".join(pieces)
        if citing:
            # The model's own citations: its "[n]" references, resolved (the attached ones are not in it).
            written = grounding.REFERENCE.sub(
                lambda m: ", ".join(citing.by_number[int(n)].place for n in re.findall(r"\d+", m.group(1))
                                    if int(n) in citing.by_number) or m.group(0), model_text)
            answer.citations = check_citations(services.repo.root, written, result.hits, shown=shown)
            answer.citations += _new_places(attached, answer.citations)
            if checker:
                # Only the citations of what is shown: a sentence left out takes its citation with it.
                kept = "".join(shown_text)[len(lead_text):]
                listed = [Citation(d.path, d.line, d.end_line, True, "codeasst's definition listing", attached=True)
                          for d in definitions]
                answer.citations = _new_places(
                    listed + [c for c in answer.citations if f"{c.path}:{c.start_line}" in kept], [])
                answer.left_out = checker.dropped
        else:
            answer.citations = check_citations(services.repo.root, model_text, result.hits)
            answer.citations += attach_citations(model_text, result.hits, answer.citations)
        answer.abstained = not any(c.verified for c in answer.citations) or grounding.says_no_answer(model_text)
        if citing and answer.abstained:
            answer.note = ("\n\nThe excerpts may not answer this fully; look next at: "
                           f"{grounding.where_to_look(answer.excerpts)}")
            shown_text.append(answer.note)
            yield answer.note
        answer.text = "".join(shown_text)
        claims = answer.body[len(lead_text):] if checker else model_text
        answer.identifiers = grounding.named_identifiers(claims)
        known = grounding.repo_words(services.repo.root, services.indexer().indexed_files())
        answer.ungrounded = grounding.ungrounded(answer.identifiers, known)
        answer.timings["total_s"] = round(time.perf_counter() - started, 3)
        if code_graph is not None:
            code_graph.close()

    return answer, stream()


def open_graph(services: Services) -> CodeGraph | None:
    """The code graph as the index update left it; None where there is none, or none readable (an
    index another process is updating): the answer comes without the flow and relation check."""
    path = services.indexer().index_dir / "graph.sqlite"
    try:  # never repaired here: the process that holds the index's lock may be writing it
        return CodeGraph(path, repair=False) if path.exists() else None
    except sqlite3.DatabaseError:
        return None


# A follow-up this short leans on the question before it for its subject.
FOLLOW_UP_WORDS = 8


def follow_up_query(question: str, history: Sequence[tuple[str, str]]) -> str:
    """What to retrieve for `question`: itself, or with the previous question when it is a short follow-up."""
    if not history or len(question.split()) > FOLLOW_UP_WORDS:
        return question
    return f"{history[-1][0]}\n{question}"


def _earlier_turns(history: Sequence[tuple[str, str]]) -> list[dict]:
    messages = []
    for question, reply in history:
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
    return messages


def _new_places(citations: list[Citation], have: list[Citation]) -> list[Citation]:
    seen = {(c.path, c.start_line, c.end_line) for c in have if c.verified}
    out = []
    for c in citations:
        if (c.path, c.start_line, c.end_line) not in seen:
            seen.add((c.path, c.start_line, c.end_line))
            out.append(c)
    return out


def footer_lines(answer: Answer | dict) -> list[str]:
    """What follows an answer in the terminal: its sources, the citations not to rely on, and
    the names it uses that exist nowhere in the repository. `answer` may be an Answer or its
    JSON (as `codeasst serve` streams it)."""
    data = answer.to_json() if isinstance(answer, Answer) else answer
    citations = data["citations"]
    cited = {(c["path"], c["start_line"], c["end_line"]) for c in citations if c["verified"]}
    lines = ["Sources (* drawn on by the answer):"]
    for hit in data["hits"]:
        path, start, end = hit["path"], hit["start_line"], hit["end_line"]
        drawn = (path, start, end) in cited or any(p == path and s <= end and start <= e for p, s, e in cited)
        lines.append(f"{'*' if drawn else ' '} {path}:{start}-{end}  {hit['symbol']}")
    if any(c["attached"] for c in citations) and data["system"] == "grounded":
        lines.append("(see path:lines) marks a citation codeasst attached to a line the model left uncited.")
    unverified = [c for c in citations if not c["verified"]]
    if unverified:
        lines.append("Unverified citations (do not rely on them):")
        lines += [f"  {c['path']}:{c['start_line']}-{c['end_line']}: {c['reason']}" for c in unverified]
    left_out = data.get("left_out", [])
    if left_out:
        lines.append(f"Left out {len(left_out)} sentence{'s' if len(left_out) > 1 else ''} of the model's "
                     "that the excerpts do not back:")
        lines += [f"  {item['text'][:100]} ({item['why']})" for item in left_out[:5]]
    if data["ungrounded"]:
        lines.append("Not found in the repository (the model may have made these up): "
                     + ", ".join(f"`{name}`" for name in data["ungrounded"]))
    return lines


def _looping(text: str, repeats: int = 3) -> bool:
    """A small model in a loop repeats a line; stop it rather than print the same line forever."""
    lines = [re.sub(r"\d+", "#", line.strip())[:60] for line in text.splitlines() if line.strip()]
    return len(lines) >= repeats and len(set(lines[-repeats:])) == 1 or (
        len(lines) >= 2 * repeats and len(set(lines[-2 * repeats:])) <= 2)


def check_citations(root: Path, text: str, hits: list[Fused],
                    shown: list[tuple[str, int, int]] | None = None) -> list[Citation]:
    """Each path:line in `text`, verified against the repository and the excerpts given
    (`shown`: the line ranges the model saw, when not the hits' own)."""
    seen = set()
    citations = []
    if shown is None:
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
