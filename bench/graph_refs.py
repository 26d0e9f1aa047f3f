"""The code graph's resolved callers against labelled calls (issue 52): on a checkout, 10 functions or
methods whose name is defined once, with 1 to 30 whole-word occurrences (`rg -w`), drawn with a fixed
seed; each occurrence is a true call or not, and the graph's callers of the definition are scored
against the true calls. One unit: a call at (file, line).

    python bench/graph_refs.py DIR LANGUAGE [--exclude DIR ...] [--labels FILE] [--seed 52]

Without --labels, an occurrence is labelled a call where the name is followed by `(` (a Rust `::<T>(`
too, and a macro's `!(`, `!{`, `![`) off its definition's line, and the occurrences are printed with that label and the
graph's verdict, disagreements marked `<<`, for a reader to correct; --labels FILE (JSON lines:
{"name", "path", "line", "call"}) gives the corrected labels. Prints the precision and recall of the
resolved callers, with the rows. --blind prints the occurrences and the guessed label alone, without the
graph's verdict or any figure: the sheet a reader labels before seeing what the graph resolves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from codeasst.index import chunker, graph
from codeasst.index.graphdb import CodeGraph


def build(root: Path, language: str, excluded: list[str]) -> tuple[CodeGraph, list[str]]:
    files = {}
    for base, dirs, names in os.walk(root):
        rel_base = os.path.relpath(base, root)
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not any(os.path.normpath(os.path.join(rel_base, d)).startswith(e) for e in excluded)]
        for name in names:
            rel = os.path.normpath(os.path.join(rel_base, name))
            if chunker.grammar_for(rel) == language or (language == "cpp" and chunker.grammar_for(rel) == "c"):
                files[rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    code_graph = CodeGraph(Path(tempfile.mkdtemp()) / "graph.sqlite")
    code_graph.sync(root, {p: s for p, s in files.items() if graph.graph_language(p)})
    return code_graph, sorted(files)


def occurrences(root: Path, name: str, paths: list[str]) -> list[tuple[str, int, str]]:
    out = subprocess.run(["rg", "-n", "-w", "--no-heading", "-F", name, *paths], cwd=root, check=False,
                         capture_output=True, text=True).stdout  # rg exits 1 when nothing matches
    found = []
    for line in out.splitlines():
        path, number, text = line.split(":", 2)
        found.append((path, int(number), text))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("language")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--labels")
    parser.add_argument("--seed", type=int, default=52)
    parser.add_argument("--blind", action="store_true")
    args = parser.parse_args()
    root = Path(args.root)
    code_graph, paths = build(root, args.language, args.exclude)
    rows = code_graph._db.execute(
        "SELECT name, COUNT(*) FROM defs WHERE kind IN ('function', 'method') GROUP BY name").fetchall()
    once = sorted(name for name, count in rows if count == 1 and len(name) >= 4 and name.isidentifier())
    rng = random.Random(args.seed)
    rng.shuffle(once)
    labels = {}
    if args.labels:
        for line in Path(args.labels).read_text().splitlines():
            row = json.loads(line)
            labels[(row["name"], row["path"], row["line"])] = row["call"]
    chosen, true_calls, resolved, hits = [], 0, 0, 0
    for name in once:
        if len(chosen) == 10:
            break
        (d,) = code_graph._defs("name = ? AND kind IN ('function', 'method')", (name,))
        occ = [o for o in occurrences(root, name, paths) if (o[0], o[1]) != (d.path, d.line)]
        if not 1 <= len(occ) <= 30:
            continue
        chosen.append(name)
        callers = {(e.path, e.line) for e in code_graph.in_edges(d)[0]}
        pattern = re.compile(r"(?<![\w$])" + re.escape(name) + r"\s*(?:(?:::<[^>]*>\s*)?\(|!\s*[({\[])")
        print(f"\n{name}  ({d.kind} {d.path}:{d.line})")
        for path, number, text in occ:
            guess = bool(pattern.search(text)) and not re.search(r"\b(fn|def|void|func|fun)\s+" + name, text)
            call = labels.get((name, path, number), guess)
            marked = (path, number) in callers
            true_calls += call
            resolved += marked
            hits += call and marked
            if args.blind:
                print(f"  {'call' if call else '    '} {path}:{number}: {text.strip()[:140]}")
                continue
            flag = "  <<" if call != marked else ""
            print(f"  {'call' if call else '    '} {'graph' if marked else '     '} {path}:{number}: "
                  f"{text.strip()[:90]}{flag}")
    if args.blind:
        return
    print(json.dumps({"language": args.language, "names": chosen, "true_calls": true_calls,
                      "resolved": resolved, "precision": round(hits / max(resolved, 1), 3),
                      "recall": round(hits / max(true_calls, 1), 3)}))


if __name__ == "__main__":
    sys.exit(main())
