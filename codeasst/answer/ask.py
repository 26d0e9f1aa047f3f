"""`codeasst ask`: retrieve, then stream an answer whose citations are checked.

Three systems answer: "checked" (the default; see answer.checking): the definitions that answer
the question first, then the model's explanation with each sentence held to the excerpt it
cites; "grounded" (the answer as issue 11 left it, answer.grounding) and "baseline" (as issue 4
left it), kept so `codeasst eval ask` can measure them against each other in the same run."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

from codeasst import prompt
from codeasst.answer import checking, flow, grounding, lines, registrations
from codeasst.answer.citations import Citation, attach_citations, check_citations, new_places
from codeasst.answer.relations import RelationCheck
from codeasst.backends.base import LLM, GenerationParams
from codeasst.errors import UsageError
from codeasst.index.graphdb import CodeGraph, DefRow, read_graph
from codeasst.index.outline import Focus
from codeasst.index.summary import Progress
from codeasst.retrieve import intent
from codeasst.retrieve.fuse import Fused, against_lost_in_the_middle
from codeasst.retrieve.pipeline import Retrieval
from codeasst.retrieve.query import ASSISTANT
from codeasst.services import Services
from codeasst.tasks.refs import outline_at
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
# Outline lines one definition of the lead may take of the answer's ask.outline_lines (refs shows 12):
# chosen on the keyed tune splits: 12, 16, 20 and 24 stated 0.261, 0.278, 0.295 and 0.295 of the key facts.
DEFINITION_LINES = 20
# The definitions a question names are read first where retrieval did not show them: the first
# NAMED_NAMES names it writes as code, each naming at most NAMED_PER_NAME definitions (tune, 44 keyed
# rows, lead alone: fact recall 0.407 -> 0.430, correct 0.205 -> 0.227; SWE-QA's files shown unchanged).
NAMED_FIRST, NAMED_NAMES, NAMED_PER_NAME = True, 3, 2
# The lead's definitions of other files come from all of retrieval's hits, not only from those the
# model's context holds (which, with ask.model = none, no model reads).
MORE_FROM_HITS = True
# Roles of retrieval's hits a "where do I add X?" may lead with where no registration names the Xs.
CODE_ROLES = frozenset({"implementation", "config"})
# The flow's steps and callers are places the answer shows, cited as the lead's definitions are.
FLOW_CITED = True



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
    outlines: list[dict] = field(default_factory=list)  # the lead's definitions' outlines (Outline.to_json())
    registrations: dict | None = None  # "where do I add X?": where the Xs are registered (registrations.py)

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
            "outlines": self.outlines,
            "registrations": self.registrations,
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


@dataclass
class _Plan:
    """What the model is asked and what codeasst says before it, settled before the model writes."""

    messages: list[dict]
    shown: list[tuple[str, int, int]]  # the line ranges the model sees
    lead: str = ""  # the definitions that answer, then the flow: true by construction
    definitions: list[checking.Definition] = field(default_factory=list)
    graph: CodeGraph | None = None  # for the relation check, closed when the answer ends
    excerpt_outlines: dict[int, list] = field(default_factory=dict)  # by excerpt number, for the line check
    registered: list[tuple[str, int, int]] = field(default_factory=list)  # the registrations the lead shows
    flowed: list[tuple[str, int, int]] = field(default_factory=list)  # the places the flow shows


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
    llm = services.ask_llm  # None: ask.model is 'none', the answer is its lead and outline
    result = find(services, query, services.settings.retrieval.k, context=stdin_text,
                  full_analysis=cfg.query_analysis, progress=progress, update_index=update_index, preload=llm)
    answer = Answer(question, retrieval=result, timings=dict(result.timings), system=system)
    answer.timings["retrieval_s"] = round(time.perf_counter() - started, 3)
    # Up to half the budget for piped text: its end, where a log or a trace says what matters.
    piped = stdin_text[-(cfg.context_chars // 2):] if stdin_text else ""
    budget = cfg.context_chars - len(piped)
    if system == "baseline":
        result.hits = in_context(result.hits, budget)  # what the model sees is what Sources lists
        plan = _Plan(prompt.load("ask").messages(context=render_context(result.hits, piped), question=bounded),
                     [(f.hit.path, f.hit.start_line, f.hit.end_line) for f in result.hits])
    else:
        plan = _excerpt_plan(services, answer, bounded, piped, budget)
    plan.messages = plan.messages[:1] + _earlier_turns(history) + plan.messages[1:]
    if llm is not None:
        answer.prompt_tokens = llm.count_tokens(llm.chat_prompt(plan.messages))
    return answer, _stream(services, answer, plan, bounded, started, llm)


def _excerpt_plan(services: Services, answer: Answer, bounded: str, piped: str, budget: int) -> _Plan:
    """The grounded and checked answers' prompt: numbered excerpts; the checked one's lead first."""
    cfg = services.settings.ask
    result = answer.retrieval
    checked = answer.system == "checked"
    per_excerpt = WHOLE_CHARS if checked else EXCERPT_CHARS
    answer.excerpts = grounding.select_excerpts(result.hits, bounded, budget, per_excerpt)
    plan = _Plan([], [])
    if checked:
        # The lead is retrieval's, flow or not: the definition the best hits show. Asked where to add
        # an X, it is where the existing Xs are registered, and the definitions in those files only.
        by_words = _files_by_words(services, result, bounded)
        code = [(f.hit.path, f.hit.start_line, f.hit.end_line) for f in result.hits if f.hit.role in CODE_ROLES]
        where = registrations.find(services.repo.root, result.files, bounded, by_words, code)
        plan.graph = read_graph(result.index_dir) if cfg.flow or cfg.check_relations or NAMED_FIRST else None
        if where is not None and where.registered():
            _read_first(services, answer, where.registered(), bounded, budget, per_excerpt)
        named = []
        if where is None and plan.graph is not None and NAMED_FIRST:
            named = _named_first(services, answer, plan.graph, bounded, budget, per_excerpt)
        plan.definitions = checking.lead(answer.excerpts, [f.hit for f in result.hits], bounded,
                                         intent.WANTED[result.intent], services.repo.root,
                                         by_words, named)
        if where is None and MORE_FROM_HITS:
            plan.definitions += _other_files(services, result, plan.definitions, bounded, per_excerpt, by_words, named)
        if where is not None:
            answer.registrations = where.to_json()
            plan.registered = where.places()
            plan.definitions = [d for d in plan.definitions if d.path in {p for p, _, _ in plan.registered}]
        missing, named = _names_missing(services, result, bounded)
        if missing and len(missing) == named:  # all the code it names is missing: say so, lead with nothing else
            plan.definitions = []
        follow = cfg.flow and where is None
        path = _follow_flow(services, answer, plan.graph, bounded, budget, per_excerpt) if follow else None
        # Outlines for the lead's definitions, then for the definition the chain ends at, the one that
        # does the work; then the chain's other steps, while ask.outline_lines last.
        steps = [] if path is None else [*path.chain[-1:], *path.chain[1:-1]]
        places = [(d.path, d.line, d.end_line) for d in plan.definitions  # modules have none
                  if d.signature and (checking.OTHER_OUTLINED or d.path == plan.definitions[0].path)]
        outlines = _outlines(services, plan.graph, places + [(d.path, d.line, d.end_line) for d in steps],
                             cfg.outline_lines, Focus.of(bounded))
        answer.outlines = [o.to_json() for o in outlines.values()]
        plan.flowed = path.places() if path and FLOW_CITED else []
        plan.lead = ((where.render() if where is not None else "") + _missing_note(missing)
                     + checking.render_lead(plan.definitions, outlines) + (path.render(outlines) if path else ""))
        plan.excerpt_outlines = _excerpt_outlines(services, plan.graph, answer)
    ranks = sorted({e.rank for e in answer.excerpts})
    result.hits = [result.hits[r] for r in ranks]
    plan.messages = prompt.load("ask_checked" if checked else "ask_grounded").messages(
        context=grounding.render_numbered(answer.excerpts, piped, line_numbers=checked), question=bounded)
    plan.shown = [(e.path, e.start_line, e.end_line) for e in answer.excerpts]
    return plan


def _other_files(services: Services, result: Retrieval, lead: list, question: str, per_excerpt: int,
                 by_words: list[str], named: list) -> list:
    """Definitions of other files than the lead's, each the best of its file among all of retrieval's hits
    (not only those the model's context holds), until the lead holds checking.MAX_LEAD; none where
    nothing leads (a test or docs answered better)."""
    if not lead or len(lead) >= checking.MAX_LEAD:
        return []
    pool = grounding.select_excerpts(result.hits, question, sys.maxsize, per_excerpt)
    found = checking.lead(pool, [f.hit for f in result.hits], question, intent.WANTED[result.intent],
                          services.repo.root, by_words, named)
    files, more = {d.path for d in lead}, []
    for d in found:
        if d.path not in files and len(lead) + len(more) < checking.MAX_LEAD:
            files.add(d.path)
            more.append(d)
    return more


def _files_by_words(services: Services, result, question: str) -> list[str]:
    """The files BM25 over whole files ranks first for the question: retrieval's where it ran that
    ranking (a question that describes code), else run here, for the lead's ranking alone."""
    ranked = result.rankings.get("bm25-files")
    if ranked is None:
        if checking.FILE_WEIGHT == 0:
            return []
        reader = services.indexer().reader()
        try:
            ranked = reader.bm25_files(question, checking.FILE_DEPTH)
        finally:
            reader.close()
    return list(dict.fromkeys(hit.path for hit in ranked))


def _outlines(services: Services, code_graph: CodeGraph | None, places: list[tuple[str, int, int]],
              budget: int, focus: Focus | None = None) -> dict:
    """The outlines of the definitions at `places` (path, line, end line) by (path, line), in that order
    while `budget` lines last for the whole answer (ask.outline_lines), the question's lines first."""
    out, left = {}, budget
    for path, line, end_line in places:
        if left <= 1 or (path, line) in out:
            continue
        found = outline_at(services.repo.root, code_graph, path, line, end_line, min(DEFINITION_LINES, left), focus)
        if found is not None:
            out[(path, line)] = found
            left -= found.chosen
    return out


def _excerpt_outlines(services: Services, code_graph: CodeGraph | None, answer: Answer) -> dict[int, list]:
    """Each excerpt's definition's outline as (line, text), by excerpt number: a sentence of the model's is
    held to the line it cites and to this outline around it (answer/lines.py)."""
    out: dict[int, list] = {}
    for e in answer.excerpts:
        hit = answer.retrieval.hits[e.rank].hit
        if hit.kind not in checking.DEFINITION_KINDS:
            continue
        found = outline_at(services.repo.root, code_graph, e.path, hit.start_line, hit.end_line)
        if found is not None:
            out[e.number] = [(line.number, line.text) for line in found.lines]
    return out


def _names_missing(services: Services, result: Retrieval, question: str) -> tuple[list[str], int]:
    """The code names the question writes (`frobnicate()`, `a.b`, snake_case) that no indexed file has, and
    how many it writes."""
    names = sorted(_written_names(question))
    if not names:
        return [], 0
    return grounding.ungrounded(names, grounding.repo_words(services.repo.root, result.files)), len(names)


def _written_names(question: str) -> set[str]:
    """The code names a question writes; what it quotes ('Foo_Bar.baz') is input, not a name."""
    return lines.code_names(lines.QUOTED.sub(" ", question))


def _missing_note(missing: list[str]) -> str:
    if not missing:
        return ""
    listed = ", ".join(f"`{name}`" for name in missing[:3])
    return f"Nothing in this repository is named {listed}: no file of the index has that name.\n\n"


def _read_first(services: Services, answer: Answer, places: list[tuple[str, int, int]], bounded: str, budget: int,
                per_excerpt: int) -> None:
    """The lines at `places` (path, first line, last line) become the first excerpts, read from their files."""
    rows = [DefRow(0, path, path, path, "registrations", line, end, "", "") for path, line, end in places]
    _first(services, answer, rows, bounded, budget, per_excerpt)


def _first(services: Services, answer: Answer, rows: list[DefRow], bounded: str, budget: int,
           per_excerpt: int) -> None:
    """These definitions become the first excerpts, in this order: a hit that shows one whole moves
    first, the others are read from their files (flow.chain_hits)."""
    result = answer.retrieval
    first = flow.chain_hits(services.repo.root, rows, result.hits, WHOLE_CHARS)
    result.hits = first + [f for f in result.hits if all(f is not c for c in first)]
    answer.excerpts = grounding.select_excerpts(result.hits, bounded, budget, per_excerpt, len(first))


def _named_first(services: Services, answer: Answer, code_graph: CodeGraph, bounded: str, budget: int,
                 per_excerpt: int) -> list[tuple[str, int]]:
    """The definitions the question names (`FlagSet.Parse`, `validates_schema`: one or two a name, in
    the code graph) become the first excerpts, and their places (path, first line) are returned: the
    lead weighs them first."""
    rows = []
    written = _written_names(bounded)
    parts = {part for name in written if "." in name for part in name.split(".")}
    names = sorted((n for n in written if n not in parts), key=lambda n: ("." not in n, bounded.find(n)))
    for name in names[:NAMED_NAMES]:
        found = [d for d in code_graph.find(name) if d.kind in ("function", "method", "class")]
        rows += found if 0 < len(found) <= NAMED_PER_NAME else []
    if rows:
        _first(services, answer, rows, bounded, budget, per_excerpt)
    return [(d.path, d.line) for d in rows]


def _follow_flow(services: Services, answer: Answer, code_graph: CodeGraph | None, bounded: str, budget: int,
                 per_excerpt: int) -> flow.Flow | None:
    """The flow where the question asks how something runs (None where not, or none is found); the
    definitions on its chain become the first excerpts, read whole, in call order."""
    if code_graph is None or not flow.asks_for_flow(bounded):
        return None
    result = answer.retrieval
    path = flow.best_flow(code_graph, [f.hit for f in result.hits], bounded, services.repo.root)
    if path is None:
        return None
    if len(path.chain) > 1:
        _first(services, answer, path.chain, bounded, budget, per_excerpt)
    return path


def _stream(services: Services, answer: Answer, plan: _Plan, bounded: str, started: float,
            llm: LLM | None) -> Iterator[str]:
    """The answer's text as it comes: the lead, then the model's words as the checks let them through
    (no model: the lead alone); at its end, the answer's citations, abstention and names are settled."""
    cfg = services.settings.ask
    if llm is not None:
        llm.reuse_prefix(llm.chat_prompt(plan.messages[:1]).removesuffix(ASSISTANT))
    began = time.perf_counter()
    pieces: list[str] = []
    shown_text: list[str] = []
    attached: list[Citation] = []

    def on_attach(excerpt: grounding.Excerpt, line: str) -> None:
        attached.append(Citation(excerpt.path, excerpt.start_line, excerpt.end_line, True,
                                 f"codeasst matched the line to this excerpt: {line.strip()[:60]}", attached=True))

    citing = grounding.CitingStream(answer.excerpts, on_attach) if answer.system != "baseline" else None
    relations = RelationCheck(plan.graph, services.repo.root).why_wrong \
        if plan.graph is not None and cfg.check_relations else None
    checker = checking.LineChecker(answer.excerpts, bounded, relations, plan.excerpt_outlines) \
        if answer.system == "checked" else None

    def show(text: str) -> Iterator[str]:
        """Every token gives the caller a turn, text or not: a server learns at the next token
        that its client left, even while the checked answer holds a sentence back."""
        if text and "first_token_s" not in answer.timings:
            answer.timings["first_token_s"] = round(time.perf_counter() - started, 3)
        shown_text.append(text)
        yield text

    try:
        # What codeasst knows for certain reaches the user before the model reads its prompt.
        yield from show(plan.lead)
        params = GenerationParams(max_tokens=cfg.max_tokens, stop=("<|im_end|>",), repeat_penalty=1.1)
        for token in llm.generate(llm.chat_prompt(plan.messages), params) if llm is not None else ():
            if not pieces:
                answer.timings["model_first_token_s"] = round(time.perf_counter() - started, 3)
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
        _settle_citations(services, answer, plan, model_text, citing, checker, attached)
        if citing and answer.abstained:
            answer.note = ("\n\nThe excerpts may not answer this fully; look next at: "
                           f"{grounding.where_to_look(answer.excerpts)}")
            shown_text.append(answer.note)
            yield answer.note
        answer.text = "".join(shown_text)
        claims = answer.body[len(plan.lead):] if checker else model_text
        answer.identifiers = grounding.named_identifiers(claims)
        known = grounding.repo_words(services.repo.root, answer.retrieval.files)
        answer.ungrounded = grounding.ungrounded(answer.identifiers, known)
        answer.timings["total_s"] = round(time.perf_counter() - started, 3)
    finally:
        if plan.graph is not None:
            plan.graph.close()


def _settle_citations(services: Services, answer: Answer, plan: _Plan, model_text: str, citing, checker,
                      attached: list[Citation]) -> None:
    """The answer's citations once the model is done, and whether it abstained (no verified citation,
    or the model says the excerpts fall short)."""
    root, hits = services.repo.root, answer.retrieval.hits
    if citing:
        # The model's own citations: its "[n]" references, resolved (the attached ones are not in it).
        written = grounding.REFERENCE.sub(
            lambda m: ", ".join(citing.by_number[int(n)].place for n in re.findall(r"\d+", m.group(1))
                                if int(n) in citing.by_number) or m.group(0), model_text)
        answer.citations = check_citations(root, written, hits, shown=plan.shown)
        answer.citations += new_places(attached, answer.citations)
        if checker:
            # Only the citations of what is shown: a sentence left out takes its citation with it.
            listed = [Citation(d.path, d.line, d.end_line, True, "codeasst's definition listing", attached=True)
                      for d in plan.definitions]
            listed += [Citation(path, line, end, True, "codeasst's registration listing", attached=True)
                       for path, line, end in plan.registered]
            listed += [Citation(path, line, end, True, "codeasst's flow through the code graph", attached=True)
                       for path, line, end in plan.flowed]
            held = [Citation(path, line, line, True, "the line this sentence was checked against")
                    for path, line in checker.places]
            answer.citations = new_places(listed + held, [])
            answer.left_out = checker.dropped
    else:
        answer.citations = check_citations(root, model_text, hits)
        answer.citations += attach_citations(model_text, hits, answer.citations)
    answer.abstained = not any(c.verified for c in answer.citations) or grounding.says_no_answer(model_text)


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


def _looping(text: str, repeats: int = 3) -> bool:
    """A small model in a loop repeats a line; stop it rather than print the same line forever."""
    lines = [re.sub(r"\d+", "#", line.strip())[:60] for line in text.splitlines() if line.strip()]
    return len(lines) >= repeats and len(set(lines[-repeats:])) == 1 or (
        len(lines) >= 2 * repeats and len(set(lines[-2 * repeats:])) <= 2)


