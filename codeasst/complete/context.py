"""Other files' text for a completion, from three sources (complete.context_sources):

- `imports`: what the current file imports from its own repository. A Python file's `from X
  import a, b` lines name the definitions its code is most likely to call. Each one found in the
  repository is given to the model as a stub: the `def` or `class` line, the docstring's first
  line, a class's method signatures, a constant's assignment. Modules are found by path and read
  with `ast`; nothing is imported or run.
- `index`: chunks of other files that share the most words with the lines before the cursor, as
  Tabby's snippets from its index: BM25 over the repository's files in the current file's language
  (those the index's ignore rules keep), the best files cut as the index cuts them, smaller.
- `recent`: a ring buffer of what the user looked at last in other files, as llama.vim keeps one:
  when a client moves to another file, the lines around its last cursor in the file it left.
  Only `codeasst serve` sees a session, so only it has this source (RecentFiles).

None of them changes while the user types inside one function, so they sit first in the prompt,
where their KV prefix is reused from one request to the next; the server pins them per file
between two `/v1/open` calls.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codeasst.index.chunker import chunk_file, grammar_for
from codeasst.index.files import IgnoreRules, scan
from codeasst.retrieve.bm25 import FileBM25, tokens

FROM_IMPORT = re.compile(r"^from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^#\n]*))", re.MULTILINE)
STUB_CHARS = 600  # one definition's stub at most: a long class keeps its first methods
FOLLOW = 2  # re-exports followed (`from .core import name` in a package's __init__.py)
QUERY_LINES = 12  # non-blank lines before the cursor's that the index source searches with
RELATED_FILES = 3  # best files by BM25 whose chunks are scored
RELATED_CHUNKS = 4
MIN_RATIO = 0.5  # of the best chunk's score: a chunk sharing only `def` and `self` is noise
CHUNK_CHARS = 600  # the index's chunking, smaller: a snippet is read on every cold request
RING_FILES = 8  # other files the ring buffer keeps, one piece each
RING_LINES = (32, 16)  # lines before and after the last cursor in a file left


@dataclass(frozen=True)
class _Module:
    stamp: tuple[int, int]
    tree: ast.Module | None
    lines: list[str]


_modules: dict[Path, _Module] = {}
_counts: dict[Path, dict] = {}  # root -> its files' BM25 counts (bm25.FileBM25.for_files' memo)


def imported_definitions(root: Path, path: str, text: str) -> list[tuple[str, str]]:
    """(module path relative to `root`, stubs of the names `text` imports from it), in import order.
    `path` is the current file's, relative to `root`; modules outside the repository are skipped."""
    found: dict[str, list[str]] = {}
    seen = set()
    for match in FROM_IMPORT.finditer(text):
        dots, module, grouped, plain = match.groups()
        names = [part.split(" as ")[0].strip() for part in (grouped if grouped is not None else plain).split(",")]
        target = _module_file(root, path, len(dots), module)
        if target is None:
            continue  # not in the repository
        for name in names:
            if not name.isidentifier() or (target, name) in seen:
                continue
            seen.add((target, name))
            where, stub = _definition(root, target, name, FOLLOW)
            if stub:
                found.setdefault(where, []).append(stub)
    return [(rel, "\n\n".join(stubs)) for rel, stubs in found.items()]


def _module_file(root: Path, path: str, level: int, module: str) -> Path | None:
    parts = [p for p in module.split(".") if p]
    if level:
        base = PurePosixPath(path).parent
        for _ in range(level - 1):
            base = base.parent
        bases = [root / base]
    else:
        bases = [root, root / "src"]
    for base in bases:
        stem = base.joinpath(*parts)
        for candidate in (stem.with_name(stem.name + ".py") if parts else None, stem / "__init__.py"):
            if candidate is not None and candidate.is_file() and _inside(root, candidate):
                return candidate
    return None


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _load(path: Path) -> _Module:
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _modules.get(path)
    if cached is not None and cached.stamp == stamp:
        return cached
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        source, tree = "", None
    module = _Module(stamp, tree, source.split("\n"))
    _modules[path] = module
    return module


def _definition(root: Path, file: Path, name: str, follow: int) -> tuple[str, str]:
    """(the file that defines `name`, relative to `root`, its stub); ("", "") when not found."""
    module = _load(file)
    if module.tree is None:
        return "", ""
    rel = file.relative_to(root).as_posix()
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return rel, _clip(_stub(node, module.lines))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and name in _assigned(node):
            return rel, module.lines[node.lineno - 1][:200]
    if follow:
        for node in module.tree.body:
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                original = next(a.name for a in node.names if (a.asname or a.name) == name)
                target = _module_file(root, rel, node.level, node.module or "")
                if target is not None and target != file:
                    return _definition(root, target, original, follow - 1)
    return "", ""


def _clip(stub: str) -> str:
    """At most STUB_CHARS, ending at a line's end."""
    if len(stub) <= STUB_CHARS:
        return stub
    cut = stub.rfind("\n", 0, STUB_CHARS)
    return stub[:cut] if cut > 0 else stub.split("\n")[0]


def _assigned(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, lines: list[str]) -> str:
    """The header lines (decorators left out), the docstring's first line, and for a class its
    methods' stubs, the bodies replaced by `...`."""
    header = []
    for line in lines[node.lineno - 1: max(node.body[0].lineno - 1, node.lineno)]:
        header.append(line)
        if line.split("#")[0].rstrip().endswith(":"):
            break  # the signature's end; comments before the body are not part of it
    indent = " " * (node.col_offset + 4)
    out = list(header)
    doc = ast.get_docstring(node, clean=True)
    if doc:
        out.append(f'{indent}"""{doc.strip().splitlines()[0]}"""')
    if isinstance(node, ast.ClassDef):
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and (not n.name.startswith("_") or n.name == "__init__")]
        for method in methods:
            out.append(_stub(method, lines))
        if not methods and not doc:
            out.append(f"{indent}...")
    else:
        out.append(f"{indent}...")
    return "\n".join(out)


def related_chunks(root: Path, path: str, prefix: str, max_file_bytes: int) -> list[tuple[str, str]]:
    """(file, chunk) of other files in the language of `path` that share the most words with the
    last lines of `prefix` before the cursor's, best first; files over `max_file_bytes` are left out,
    as the index leaves them. BM25 ranks the files (their term counts are kept in memory for as long
    as the process lives: the server's), then their chunks."""
    grammar = grammar_for(path)
    lines = [line for line in prefix.split("\n")[:-1] if line.strip()][-QUERY_LINES:]
    query = "\n".join(lines)
    if grammar is None or not tokens(query):
        return []
    files = [f.path for f in scan(root, IgnoreRules(root), max_file_bytes).files
             if f.path != path and grammar_for(f.path) == grammar]
    bm25 = FileBM25.for_files(root, files, memo=_counts.setdefault(root, {}))
    terms = Counter(tokens(query))
    scored = []
    for rel, _ in bm25.rank(query, RELATED_FILES):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        scored += [(bm25.score_text(terms, chunk.text), rel, chunk.text) for chunk in chunk_file(rel, text, CHUNK_CHARS)]
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0] if scored else 0.0
    return [(rel, text) for score, rel, text in scored[:RELATED_CHUNKS] if score > 0 and score >= best * MIN_RATIO]


class RecentFiles:
    """One client's ring buffer: for each of the last RING_FILES other files it was in, the lines
    around its last cursor there (llama.vim picks its ring chunks on leaving a buffer too)."""

    def __init__(self) -> None:
        self.pieces: deque[tuple[str, str]] = deque(maxlen=RING_FILES)
        # (file, the lines around the cursor) of the last request: only those, not the whole buffer,
        # are kept, so a client holds at most RING_FILES + 1 pieces.
        self.at: tuple[str, str] | None = None

    def visit(self, path: str, text: str, line: int) -> None:
        """The client is at `line` of `path`; leaving another file puts a piece of it in the ring."""
        if self.at is not None and self.at[0] != path:
            left, piece = self.at
            self.forget(left)
            if piece.strip():
                self.pieces.append((left, piece))
        lines = text.split("\n")
        before, after = RING_LINES
        self.at = (path, "\n".join(lines[max(0, line - 1 - before): line + after]).strip("\n"))

    def chars(self) -> int:
        return sum(len(text) for _, text in self.pieces) + (len(self.at[1]) if self.at else 0)

    def drop_oldest(self) -> bool:
        """Forget the oldest piece (a client over its cap); False when none is left."""
        if self.pieces:
            self.pieces.popleft()
            return True
        if self.at is not None:
            self.at = None
            return True
        return False

    def forget(self, path: str) -> None:
        for item in [p for p in self.pieces if p[0] == path]:
            self.pieces.remove(item)

    def context(self, path: str) -> list[tuple[str, str]]:
        """The pieces of files other than `path`, the most recent first."""
        return [item for item in reversed(self.pieces) if item[0] != path]
