"""What `codeasst mcp` saves an agent (issue 44, item 5): for each question, the characters an agent
reads until an expected file's path is in what it has read, three ways of reading, in one run.

    CODEASST_MIRRORS=DIR python bench/mcp_reach.py --out rows.jsonl [--sets sweqa,localize]
                                                   [--every N] [--limit N]
    python bench/mcp_reach.py --summarise rows.jsonl     # the table again, from a rows file

The ways of reading, each over the same tree and its index (words and code graph, no vectors):
- `codeasst`: the mcp `search` tool's text (the question cut to its first MAX_QUERY_CHARS
  characters), then, where no expected path was in it, the `definition` tool's text for the first
  hit's symbol (a refused definition costs nothing and adds nothing);
- `rg`: `rg -n -i -F --sort path` with each of the question's words as a `-e` pattern (question_words),
  reading, per file in rg's order, a window of 10 lines before to 10 lines after each matching line,
  overlapping or touching windows merged, each under a `path:start-end` header line;
- `bm25-files`: the indexed files in the order of the BM25-over-whole-files baseline of
  `codeasst eval retrieval` (FileBM25 with plain tokens, every file with a score), each read whole
  under a `path` header line.
The count is the same for all three (chars_to_reach): the characters read up to just past the first
place where an expected path stands as a path in the text, whether in a header or in what is read.
A way that never shows one is null ("not reached").

The sets: SWE-QA's test split (tests/data/ask/sweqa.jsonl, each row over its repository at its
pinned commit), and the localization set's test split (`--localize`, codeasst.evals.localize), each
report over its repository checked out at its base_commit, for the repositories of `--repos` that
have a mirror under CODEASST_MIRRORS (codeasst.evals.repos).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEQA = ROOT / "tests" / "data" / "ask" / "sweqa.jsonl"
LOCALIZE = ROOT.parent / "shared" / "data" / "localize_dev.jsonl"
WAYS = ("codeasst", "rg", "bm25-files")
WITHIN = 8_000
BEFORE, AFTER = 10, 10  # lines of each rg window around its matching line
# Lowercase English stopwords (NLTK's English list, the words of 3+ letters): a word of the question is
# left out of the rg patterns when its lowercase form is one of these.
_STOPWORDS = """
about above after again against ain all and any are aren aren't because been before being below between both
but can couldn couldn't did didn didn't does doesn doesn't doing don don't down during each few for from further
had hadn hadn't has hasn hasn't have haven haven't having her here hers herself him himself his how into isn
isn't it's its itself just mightn mightn't more most mustn mustn't myself needn needn't nor not now off once
only other our ours ourselves out over own same shan shan't she she's should should've shouldn shouldn't some
such than that that'll the their theirs them themselves then there these they this those through too under
until very was wasn wasn't were weren weren't what when where which while who whom why will with won won't
wouldn wouldn't you you'd you'll you're you've your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS.split())
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --- the count, the same for every way of reading ---

def reached_in(text: str, expected: Iterable[str]) -> int | None:
    """The index just past the first place in `text` where one of the `expected` paths stands as a
    path: not inside a longer path or name (`a/b.py` is not in `xa/b.py`, `a/b.pyc` or `a/b.py/c`)."""
    ends = [m.end() for path in expected
            if (m := re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-])", text))]
    return min(ends) if ends else None


def chars_to_reach(pieces: Iterable[str], expected: Iterable[str]) -> int | None:
    """Characters read, piece after piece, until an expected path is read; None if none ever is.
    The pieces are read lazily: a reading stops where it reaches."""
    expected = list(expected)
    read = 0
    for piece in pieces:
        at = reached_in(piece, expected)
        if at is not None:
            return read + at
        read += len(piece)
    return None


# --- rg with windows ---

def question_words(question: str) -> list[str]:
    """The question's words and identifiers (runs of letters, digits and `_` starting with a letter or
    `_`; a dotted name gives each part) of 3 or more characters, less STOPWORDS, each once
    (case-insensitively, as rg -i matches them), in the question's order."""
    seen: dict[str, str] = {}
    for word in WORD.findall(question):
        key = word.lower()
        if len(word) >= 3 and key not in STOPWORDS and key not in seen:
            seen[key] = word
    return list(seen.values())


def windows(match_lines: Iterable[int], n_lines: int, before: int = BEFORE,
            after: int = AFTER) -> list[tuple[int, int]]:
    """The line ranges (1-based, inclusive) read around the matching lines of a file of `n_lines`
    lines: `before` lines before each to `after` after, within the file, overlapping or touching
    ranges merged."""
    merged: list[tuple[int, int]] = []
    for line in sorted(set(match_lines)):
        start, end = max(1, line - before), min(n_lines, line + after)
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def file_lines(data: bytes) -> list[str]:
    """A file's lines as rg counts them (split at \\n only), without the line ends."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def window_pieces(path: str, lines: list[str], match_lines: Iterable[int]) -> list[str]:
    return [f"{path}:{start}-{end}\n" + "".join(f"{line}\n" for line in lines[start - 1:end])
            for start, end in windows(match_lines, len(lines))]


def rg_binary() -> str:
    """The venv's rg (ripgrep 14.1.0 there), else the one on PATH."""
    found = shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("rg")
    if found is None:
        raise SystemExit("rg not found")
    return found


def rg_command(rg: str, words: list[str]) -> list[str]:
    return [rg, "--no-config", "-n", "-i", "-F", "--sort", "path", "--no-heading", "--with-filename", "--null",
            "--color", "never", *(arg for word in words for arg in ("-e", word))]


def rg_matches(rg: str, root: Path, words: list[str]) -> Iterator[tuple[str, list[int]]]:
    """(path, matching line numbers) per file, in rg's order (by path), read from rg as it prints;
    rg is stopped when the reader stops."""
    if not words:
        return
    proc = subprocess.Popen(rg_command(rg, words), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    try:
        current, lines = None, []
        for raw in proc.stdout:
            name, _, rest = raw.partition(b"\0")
            path = name.decode("utf-8", errors="replace")
            number = int(rest.split(b":", 1)[0])
            if path != current:
                if current is not None:
                    yield current, lines
                current, lines = path, []
            lines.append(number)
        if current is not None:
            yield current, lines
    finally:
        proc.kill()
        proc.stdout.close()
        proc.wait()


def rg_reading(rg: str, root: Path, words: list[str]) -> Iterator[str]:
    for path, numbers in rg_matches(rg, root, words):
        yield from window_pieces(path, file_lines((root / path).read_bytes()), numbers)


# --- whole files in BM25's order ---

def file_pieces(order: Iterable[str], read: Callable[[str], str]) -> Iterator[str]:
    """Each file whole, under a header line naming it, in `order`."""
    for path in order:
        yield f"{path}\n{read(path)}"


# --- codeasst's tools ---

def codeasst_reading(assistant, question: str, max_chars: int, seen: dict) -> Iterator[str]:
    """The search tool's text, then the definition tool's text for its first hit's symbol; what was
    called goes into `seen`."""
    from codeasst.mcp.tools import MAX_QUERY_CHARS, Refused, call

    started = time.perf_counter()
    result = call(assistant, "search", {"query": question[:MAX_QUERY_CHARS]}, max_chars=max_chars)
    hits = result.data["hits"]
    seen.update(search_s=round(time.perf_counter() - started, 3), hits=len(hits), search_chars=len(result.text),
                words_only=result.data["words_only"], first_symbol=hits[0]["symbol"] if hits else None)
    yield result.text
    if not hits:
        seen["definition"] = "no hit"
        return
    try:
        definition = call(assistant, "definition", {"name": hits[0]["symbol"]}, max_chars=max_chars)
    except Refused as exc:
        seen["definition"] = f"refused: {exc}"
        return
    seen["definition"] = f"read, {len(definition.text)} characters"
    yield definition.text


# --- the sets ---

def sweqa_rows(path: Path) -> list[dict]:
    from codeasst.evals.rows import load_rows

    return [{**row, "set": "sweqa"} for row in load_rows(path) if row.get("split") == "test"]


def localize_rows(path: Path, repos: list[str]) -> tuple[list[dict], dict]:
    from codeasst.evals.localize import assign_splits, checkout_rows
    from codeasst.evals.rows import load_rows

    rows = [row for row in assign_splits(load_rows(path)) if row["split"] == "test"]
    kept, dropped = checkout_rows(rows, repos)
    return [{**row, "id": row["source"], "set": "localize"} for row in kept], dropped


class Trees:
    """Each row's tree, indexed without vectors (as `eval retrieval --lexical-only` does), with its
    services, assistant and BM25-over-files baseline; a checkout moved to a row's commit is indexed
    again (only what changed)."""

    def __init__(self, sweqa_base: Path) -> None:
        from codeasst.evals.localize import Checkouts

        self.sweqa_base = sweqa_base
        self.checkouts = Checkouts()
        self.ready: dict[str, tuple] = {}
        self.memo: dict[str, dict] = {}
        self.index_s: list[float] = []

    def for_row(self, row: dict) -> tuple:
        from codeasst.access import alone
        from codeasst.evals.repos import repo_dir
        from codeasst.retrieve.bm25 import FileBM25, plain_tokens
        from codeasst.services import build_services

        key = row["repo"]
        moved = self.checkouts.switch(row) if row["set"] == "localize" else False
        if key in self.ready and not moved:
            return self.ready[key]
        if key in self.ready:
            services = self.ready[key][0]
        else:
            tree = self.checkouts.tree(key) if row["set"] == "localize" else repo_dir(key, self.sweqa_base)
            # No vectors anywhere: the search tool's own index check must not embed either.
            services = build_services(tree, {"index.search_embed_limit": 0},
                                      on_note=lambda m: print(f"note: {m}", file=sys.stderr))
        started = time.perf_counter()
        indexer = services.indexer()
        indexer.run(embed_limit=0)
        baseline = FileBM25.for_files(services.repo.root, indexer.indexed_files(), tokenize=plain_tokens,
                                      memo=self.memo.setdefault(key, {}))
        self.index_s.append(time.perf_counter() - started)
        self.ready[key] = (services, alone(services), baseline)
        return self.ready[key]


def measure(row: dict, trees: Trees, rg: str) -> dict:
    services, assistant, baseline = trees.for_row(row)
    root = services.repo.root
    expected = row["expected"]
    seen: dict = {"definition": "not needed"}
    out = {"id": row["id"], "set": row["set"], "repo": row["repo"], "commit": row.get("base_commit"),
           "expected": expected, "chars": {}, "seconds": {}}

    started = time.perf_counter()
    out["chars"]["codeasst"] = chars_to_reach(
        codeasst_reading(assistant, row["question"], services.settings.mcp.max_chars, seen), expected)
    out["seconds"]["codeasst"] = round(time.perf_counter() - started, 3)
    out["codeasst"] = seen

    words = question_words(row["question"])
    started = time.perf_counter()
    with closing(rg_reading(rg, root, words)) as pieces:  # stops rg where the reading stops
        out["chars"]["rg"] = chars_to_reach(pieces, expected)
    out["seconds"]["rg"] = round(time.perf_counter() - started, 3)
    out["rg_words"] = len(words)

    started = time.perf_counter()
    order = [path for path, _ in baseline.rank(row["question"], len(baseline.docs))]
    out["chars"]["bm25-files"] = chars_to_reach(
        file_pieces(order, lambda p: (root / p).read_bytes().decode("utf-8", errors="replace")), expected)
    out["seconds"]["bm25-files"] = round(time.perf_counter() - started, 3)
    out["bm25_rank"] = next((i for i, p in enumerate(order, 1) if p in expected), None)
    return out


# --- the summary ---

def summary(rows: list[dict], within: int = WITHIN) -> dict:
    """Per set (and all together), per way: rows reached within `within` characters, their share,
    rows reached at all and the median characters to reach over those."""
    groups = {name: [r for r in rows if r["set"] == name] for name in dict.fromkeys(r["set"] for r in rows)}
    if len(groups) > 1:
        groups["both sets"] = rows
    out = {}
    for name, group in groups.items():
        ways = {}
        for way in WAYS:
            costs = [r["chars"][way] for r in group if r["chars"][way] is not None]
            within_n = sum(c <= within for c in costs)
            ways[way] = {"rows": len(group), "within": within_n, "share": round(within_n / len(group), 3),
                         "reached": len(costs), "median": statistics.median(costs) if costs else None}
        ours, rg, bm25 = (ways[w]["within"] for w in WAYS)
        out[name] = {"ways": ways, "target_met": ours > rg and ours > bm25 and ours >= 1.5 * rg}
    return out


def table(figures: dict, within: int = WITHIN) -> list[str]:
    lines = [(f"| set | way | rows | reached within {within:,} chars | share | reached at all "
              "| median chars to reach (reached rows) |"), "|---|---|---|---|---|---|---|"]
    for name, block in figures.items():
        for way, f in block["ways"].items():
            median = f"{f['median']:,.0f}" if f["median"] is not None else "-"
            lines.append(f"| {name} | {way} | {f['rows']} | {f['within']} | {f['share']:.3f} | {f['reached']} "
                         f"| {median} |")
    for name, block in figures.items():
        w = block["ways"]
        lines.append(f"{name}: codeasst {w['codeasst']['within']} against rg {w['rg']['within']} and bm25-files "
                     f"{w['bm25-files']['within']}: target (more than either, and at least 1.5x rg) "
                     f"{'met' if block['target_met'] else 'NOT met'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the rows file (JSONL, one row per question, appended as measured)")
    parser.add_argument("--sets", default="sweqa,localize", help="sweqa, localize or both (comma-separated)")
    parser.add_argument("--sweqa", type=Path, default=SWEQA)
    parser.add_argument("--localize", type=Path, default=LOCALIZE)
    parser.add_argument("--repos", default="sympy,astropy", help="the localization set's packages to run")
    parser.add_argument("--every", type=int, default=1, help="every n-th row of each set (a deterministic subset)")
    parser.add_argument("--limit", type=int, help="at most this many rows of each set")
    parser.add_argument("--summarise", type=Path, help="print the table of an earlier rows file and stop")
    args = parser.parse_args()

    if args.summarise:
        rows = [json.loads(line) for line in args.summarise.read_text().splitlines() if line.strip()]
        print("\n".join(table(summary(rows))))
        return
    if args.out is None:
        parser.error("--out FILE is needed")
    sets = args.sets.split(",")
    rows: list[dict] = []
    if "sweqa" in sets:
        rows += sweqa_rows(args.sweqa)[:: args.every][: args.limit]
    if "localize" in sets:
        chosen, dropped = localize_rows(args.localize, args.repos.split(","))
        print(f"localization test rows over {args.repos}: {len(chosen)} with a mirror and their files at "
              f"base_commit; dropped: {dropped}", file=sys.stderr)
        rows += chosen[:: args.every][: args.limit]
    rg = rg_binary()
    version = subprocess.run([rg, "--version"], check=True, capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{len(rows)} rows; {version} at {rg}", file=sys.stderr)
    trees = Trees(args.sweqa.parent)
    args.out.write_text("")
    measured, started = [], time.perf_counter()
    for number, row in enumerate(rows, start=1):
        item = measure(row, trees, rg)
        measured.append(item)
        with args.out.open("a", encoding="utf-8") as out:
            out.write(json.dumps(item) + "\n")
        print(f"[{number}/{len(rows)}] {item['id']}: {item['chars']} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr)
    wall = time.perf_counter() - started
    print("\n".join(table(summary(measured))))
    print(f"{len(measured)} rows in {wall:.0f} s; indexing (first index and updates after each switch) "
          f"{sum(trees.index_s):.0f} s of it; per row, median seconds: "
          + ", ".join(f"{way} {statistics.median(r['seconds'][way] for r in measured):.2f}" for way in WAYS))


if __name__ == "__main__":
    main()
