"""Query analysis: the LLM turns a question into an English query, keywords
for exact search and a hypothetical snippet (HyDE). Small models drift, so the
reply is parsed defensively and every field falls back to something usable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeasst import prompt
from codeasst.backends.base import LLM, GenerationParams

IDENTIFIER = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|"
                        r"[a-z]+_[a-z0-9_]+|_?[A-Za-z]+[a-z0-9]*[A-Z][A-Za-z0-9]*)\b")
ASSISTANT = "<|im_start|>assistant\n"
STOPWORDS = frozenset(
    ["the", "a", "an", "and", "or", "of", "in", "on", "to", "for", "with", "from", "by", "is", "are", "was", "be", "how", "what", "where", "which", "when", "who", "why", "does", "do", "this", "that", "these", "those", "it", "its", "into", "use", "used", "using", "code", "file", "function", "class", "method", "there", "here", "find", "implemented", "implement", "handled", "handle", "work", "works"]
)


@dataclass
class QueryAnalysis:
    original: str
    english: str
    keywords: list[str] = field(default_factory=list)
    hyde: str = ""
    raw: str = ""  # the model's reply, for debugging drift


def is_english(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return not letters or sum(c.isascii() for c in letters) / len(letters) > 0.9


def identifiers_in(text: str) -> list[str]:
    """Identifiers a user typed: `backticked`, dotted.names, snake_case, camelCase."""
    found = []
    for match in IDENTIFIER.finditer(text):
        word = (match.group(1) or match.group(2)).strip().strip("()")
        if word and word not in found:
            found.append(word)
    return found


def _clean_keywords(line: str) -> list[str]:
    words = []
    for raw in re.split(r"[,;]|\s{2,}", line):
        word = raw.strip().strip("`'\"()[]<>.").strip()
        if " " in word:
            word = word.split()[0] if len(word.split()) > 3 else word
        if len(word) >= 3 and word.lower() not in STOPWORDS and word not in words:
            words.append(word)
    return words[:8]


def parse_reply(question: str, reply: str, prefilled_english: str | None) -> QueryAnalysis:
    english = prefilled_english or ""
    keywords: list[str] = []
    code_lines: list[str] = []
    in_code = False
    for line in reply.splitlines():
        lowered = line.strip().lower()
        if in_code:
            if lowered.startswith(("english:", "keywords:")):
                in_code = False
            elif line.strip().startswith("```"):
                continue
            else:
                code_lines.append(line)
                continue
        if lowered.startswith("english:") and not english:
            english = line.split(":", 1)[1].strip()
        elif lowered.startswith("keywords:"):
            keywords = _clean_keywords(line.split(":", 1)[1])
        elif lowered.startswith("code:"):
            in_code = True
            rest = line.split(":", 1)[1].strip()
            if rest:
                code_lines.append(rest)
    hyde = "\n".join(code_lines[:10]).strip("\n")
    typed = identifiers_in(question)
    merged = typed + [k for k in keywords if k not in typed]
    return QueryAnalysis(
        original=question,
        english=english if english and len(english) < 400 else question,
        keywords=merged[:8],
        hyde=hyde,
        raw=reply,
    )


def analyze(llm: LLM, question: str, language: str, hyde: bool = True, hyde_tokens: int = 32,
            hyde_lines: int = 6, keyword_tokens: int = 20, llm_keywords: bool = False) -> QueryAnalysis:
    """Up to two short generations sharing one KV cache: the English query and keywords,
    then the HyDE snippet inside a pre-filled code fence (small models often skip it otherwise).

    Every generated token costs about 30 ms on 2 CPU cores, so both are capped tightly, and
    the model writes only what it adds: an English question is pre-filled, and its keywords
    are the identifiers the user typed unless `llm_keywords` asks the model for more."""
    english = question if is_english(question) else None
    if english and not hyde and not llm_keywords:
        return QueryAnalysis(question, question, identifiers_in(question))
    messages = prompt.load("query_analysis").messages(question=question, language=language)
    llm.reuse_prefix(llm.chat_prompt(messages[:1]).removesuffix(ASSISTANT))
    # Pre-filling the reply saves the model from translating English into English.
    opening = (f"english: {question}" + ("\nkeywords:" if llm_keywords else "")) if english else "english:"
    head = llm.chat_prompt(messages) + opening
    reply = ""
    if english and llm_keywords:
        reply, cut = _text(llm, head, GenerationParams(max_tokens=keyword_tokens, stop=("<|im_end|>", "\n")))
        reply = _finished_items(reply, cut)
    elif not english:
        stop = ("<|im_end|>", "\ncode", "\n\n")
        reply, cut = _text(llm, head, GenerationParams(max_tokens=keyword_tokens + 40, stop=stop))
        if "keywords:" in reply:
            before, _, items = reply.rpartition("keywords:")
            reply = before + "keywords:" + _finished_items(items, cut)
        else:
            more, cut = _text(llm, head + reply + "\nkeywords:", GenerationParams(max_tokens=keyword_tokens, stop=stop))
            reply += "\nkeywords:" + _finished_items(more, cut)
    snippet = ""
    if hyde:
        fence = f"\ncode:\n```{language.lower()}\n"
        snippet, cut = _text(llm, head + reply.rstrip() + fence,
                             GenerationParams(max_tokens=hyde_tokens, stop=("```", "<|im_end|>")), max_lines=hyde_lines)
        if cut and "\n" in snippet.strip("\n"):
            snippet = snippet.rstrip("\n").rsplit("\n", 1)[0]  # drop the unfinished line
    parsed = parse_reply(question, opening + reply, english)
    parsed.hyde = snippet.strip("\n")
    parsed.keywords = [k for k in parsed.keywords if k.lower() != language.lower()]
    parsed.raw = opening + reply + "\n---\n" + snippet
    return parsed


def _text(llm: LLM, prompt_text: str, params: GenerationParams, max_lines: int | None = None) -> tuple[str, bool]:
    """The generated text, and whether max_tokens cut it short (max_lines keeps whole lines)."""
    pieces: list[str] = []
    newlines = 0
    for token in llm.generate(prompt_text, params):
        pieces.append(token.text)
        newlines += token.text.count("\n")
        if max_lines is not None and newlines >= max_lines:
            return "\n".join("".join(pieces).split("\n")[:max_lines]), False  # whole lines
    return "".join(pieces), len(pieces) >= params.max_tokens


def _finished_items(keywords: str, cut: bool) -> str:
    """A keyword list cut short loses its unfinished last item."""
    return keywords.rsplit(",", 1)[0] if cut and "," in keywords else keywords
