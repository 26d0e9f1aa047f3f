"""The code graph's definitions against Universal Ctags (issue 52): recall (the share of ctags' functions,
methods, classes, structs, enums, interfaces and traits the graph has) and precision (the share of the
graph's that ctags has), per language, on a checkout.

A ctags tag matches a graph definition of the same file and name when the tag's line lies within the
definition, from its first line to the line of its name (annotations, attributes and C return types come
first). ctags is the eval's only (`apt-get install universal-ctags`), never codeasst's.

    python bench/graph_ctags.py DIR LANGUAGE [--exclude DIR ...] [--misses N]

Prints one JSON line: counts, recall, precision, the graph's build time and a few misses of each side.

Swift and Scala, which ctags 5.9 does not parse, are measured against definitions labelled by reading
the code (JSON lines: {"file", "line", "name", "kind"}, the line of the name):

    python bench/graph_ctags.py DIR LANGUAGE --sheet 300 [--seed 52]   # lines to label, drawn by seed
    python bench/graph_ctags.py DIR LANGUAGE --labels FILE            # the graph's recall on them
    python bench/graph_ctags.py DIR LANGUAGE --draw 100 [--judged FILE]

--sheet draws source lines that spell a definition's keyword (outside a comment) in a seeded order, for
a reader to keep the first 100 that define something; --draw draws the graph's own definitions by seed
for a reader to judge, and with --judged (JSON lines: {"file", "line", "name", "kind", "real"}) prints
the share judged real definitions of the kind stated. Where ctags is the weak side (C#'s file-scoped
namespaces, Kotlin's backtick names), --draw-extra N draws N of the graph's definitions ctags lacks for
the same judging, and with --judged prints the precision corrected by that sample: the matched ones,
plus the unmatched ones times the share of the sample judged real.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

from codeasst.index import chunker, graph

# ctags' kinds that count, by its language name, each with the graph kinds it may match.
KINDS = {
    "rust": ("Rust", {"function": "function method", "method": "method function", "struct": "class",
                      "enum": "class", "interface": "class", "macro": "function", "typedef": "class"}),
    "java": ("Java", {"class": "class", "interface": "class", "enum": "class", "method": "method",
                      "annotation": "class"}),
    "cpp": ("C++", {"class": "class", "struct": "class", "enum": "class", "function": "function method"}),
    "c": ("C", {"struct": "class", "enum": "class", "function": "function"}),
    "csharp": ("C#", {"class": "class", "struct": "class", "enum": "class", "interface": "class",
                      "method": "method"}),
    "kotlin": ("Kotlin", {"class": "class", "interface": "class", "object": "class", "method": "method function"}),
    "ruby": ("Ruby", {"class": "class", "method": "method", "singletonMethod": "method"}),
    "php": ("PHP", {"class": "class", "interface": "class", "trait": "class", "function": "function method"}),
    # labelled by hand (--labels): ctags 5.9 has no parser for these two
    "swift": ("Swift", {"class": "class", "struct": "class", "enum": "class", "protocol": "class", "actor": "class",
                        "function": "function method", "method": "method function", "init": "method"}),
    "scala": ("Scala", {"class": "class", "object": "class", "trait": "class", "enum": "class",
                        "function": "function method", "method": "method function"}),
}
# Words that begin a definition, for --sheet: a line that spells one (not after a `.`) is drawn.
KEYWORDS = {"swift": r"func|init|class|struct|enum|protocol|actor", "scala": r"def|class|object|trait|enum"}
GRAPH_KINDS = ("function", "method", "class")
# C and C++ macros are no kind the issue counts (ctags' `macro` is mostly include guards): a graph
# definition from a `#define` is left out too. Rust's macro_rules are counted on both sides.


def ctags_tags(root: str, language: str, excluded: list[str]) -> list[tuple[str, str, int]]:
    name, kinds = KINDS[language]
    langmap = ["--langmap=C:+.h"] if language == "c" else []  # ctags reads a .h as C++ otherwise
    out = subprocess.run(["ctags", "-R", "--output-format=json", "--fields=+nK", f"--languages={name}", *langmap,
                          *(f"--exclude={e}" for e in excluded), "-f", "-", "."],
                         cwd=root, capture_output=True, text=True, check=True).stdout
    tags = []
    for line in out.splitlines():
        tag = json.loads(line)
        if language == "kotlin" and (not tag.get("name", "").strip("`").replace(" ", "_").isidentifier() or (
                tag.get("kind") == "method" and not re.search(r"\bfun\b", tag.get("pattern", "")))):
            continue  # ctags' Kotlin parser lists lambdas (`<lambda>`) and their parameters as methods
        if language == "csharp" and tag.get("name") == "extension":
            continue  # ctags reads C# 14's `extension(string s) { .. }` block as a method named `extension`
        if tag.get("name", "").startswith("__anon"):
            continue  # an anonymous C struct: no name to ask the graph by
        if tag.get("_type") == "tag" and tag.get("kind") in kinds:
            tags.append((tag["path"].removeprefix("./"), tag["name"], int(tag["line"]), tag["kind"]))
    return tags


def labelled(path: str) -> list[tuple[str, str, int, str]]:
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [(r["file"], r["name"], int(r["line"]), r["kind"]) for r in rows]


def sheet(root: str, paths: list[str], language: str, count: int, seed: int) -> None:
    """Source lines that spell a definition's keyword, in a seeded order, with the line above for context."""
    pattern = re.compile(r"(?<![.\w])(?:" + KEYWORDS[language] + r")(?!\w)")
    found = []
    for rel in paths:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            if pattern.search(line) and not line.strip().startswith(("//", "*", "/*")):
                found.append((rel, number, line))
    random.Random(seed).shuffle(found)
    print(f"# {len(found)} lines spell a keyword", file=sys.stderr)
    for rel, number, line in found[:count]:
        print(f"{rel}:{number}: {line.strip()[:150]}")


def draw(root: str, defs: dict[str, list[tuple]], count: int, seed: int, judged: str | None) -> float:
    """The graph's own definitions drawn by seed; with `judged`, the share that are real (returned)."""
    ours = sorted((p, d) for p, ds in defs.items() for d in ds)
    random.Random(seed).shuffle(ours)
    ours = ours[:count]
    verdicts = {}
    if judged:
        with open(judged, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                verdicts[(r["file"], r["line"], r["name"])] = r["real"]
    for p, d in ours:
        with open(os.path.join(root, p), encoding="utf-8", errors="replace") as f:
            text = f.read().splitlines()[d[2] - 1]
        mark = {True: "real", False: "NOT ", None: "?   "}[verdicts.get((p, d[1], d[0]))]
        print(f"{mark} {d[3]:8} {p}:{d[1]} {d[4]}  | {text.strip()[:110]}")
    real = [verdicts.get((p, d[1], d[0])) for p, d in ours]
    share = sum(v is True for v in real) / max(len(ours), 1)
    if judged:
        print(json.dumps({"drawn": len(ours), "judged": sum(v is not None for v in real),
                          "precision": round(share, 3)}))
    return share


def files_of(root: str, language: str, excluded: list[str]) -> list[str]:
    found = []
    for base, dirs, names in os.walk(root):
        rel_base = os.path.relpath(base, root)
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not any(os.path.normpath(os.path.join(rel_base, d)).startswith(e) or d == e
                               for e in excluded)]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_base, n))
            grammar = chunker.grammar_for(rel)
            if grammar == language or (language == "cpp" and rel.endswith(".h")):  # a C++ header named .h
                found.append(rel)
    return sorted(found)


def name_line(lines: list[str], d) -> int:
    """The line of the definition's name: the first from its first line that spells it."""
    pattern = re.compile(r"(?<![\w$])" + re.escape(d.name) + r"(?![\w$])")
    for number in range(d.line, min(d.end_line, len(lines)) + 1):
        if pattern.search(lines[number - 1]):
            return number
    return d.line


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("language", choices=sorted(KINDS))
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--misses", type=int, default=8)
    parser.add_argument("--labels")
    parser.add_argument("--sheet", type=int)
    parser.add_argument("--draw", type=int)
    parser.add_argument("--judged")
    parser.add_argument("--draw-extra", type=int)
    parser.add_argument("--seed", type=int, default=52)
    args = parser.parse_args()
    paths = files_of(args.root, args.language, args.exclude)
    if args.sheet:
        return sheet(args.root, paths, args.language, args.sheet, args.seed)
    tags = labelled(args.labels) if args.labels else [] if args.draw else ctags_tags(args.root, args.language,
                                                                                    args.exclude)
    defs: dict[str, list[tuple]] = {}
    lines_read = 0
    started = time.perf_counter()
    texts = {}
    for rel in paths:
        with open(os.path.join(args.root, rel), encoding="utf-8", errors="replace") as f:
            texts[rel] = f.read()
    for rel, text in texts.items():
        file_graph = graph.extract(rel, text)
        lines_read += len(text.splitlines())
        if file_graph is None:
            continue
        lines = text.splitlines()
        defs[rel] = [(d.name, d.line, name_line(lines, d), d.kind, d.qname) for d in file_graph.defs
                     if d.kind in GRAPH_KINDS and not d.signature.startswith("#define")]
    seconds = time.perf_counter() - started
    if args.draw:
        draw(args.root, defs, args.draw, args.seed, args.judged)
        return None
    kinds = KINDS[args.language][1]

    def matches(tag, d) -> bool:
        return ("".join(tag[1].split()) == d[0] or tag[1].strip("`") == d[0]) and d[1] <= tag[2] <= d[2] and d[3] in kinds[tag[3]].split()

    found = [t for t in tags if any(matches(t, d) for d in defs.get(t[0], ()))]
    missed = [t for t in tags if t not in found]
    by_path: dict[str, list] = {}
    for t in tags:
        by_path.setdefault(t[0], []).append(t)
    ours = [(p, d) for p, ds in defs.items() for d in ds]
    kept = [(p, d) for p, d in ours if any(matches(t, d) for t in by_path.get(p, ()))]
    extra = [(p, d) for p, d in ours if (p, d) not in kept]
    if args.draw_extra:
        unmatched: dict[str, list[tuple]] = {}
        for p, d in extra:
            unmatched.setdefault(p, []).append(d)
        share = draw(args.root, unmatched, args.draw_extra, args.seed, args.judged)
        if args.judged:
            print(json.dumps({"graph": len(ours), "matched": len(kept), "unmatched": len(extra),
                              "precision": round(len(kept) / max(len(ours), 1), 3),
                              "corrected_precision": round((len(kept) + share * len(extra)) / max(len(ours), 1), 3)}))
        return None
    print(json.dumps({
        "language": args.language, "files": len(paths), "lines": lines_read, "ctags": len(tags),
        "graph": len(ours), "recall": round(len(found) / max(len(tags), 1), 3),
        # against a labelled sample only recall is measured: precision is --draw's, by hand
        "precision": None if args.labels else round(len(kept) / max(len(ours), 1), 3),
        "graph_seconds": round(seconds, 2),
        "missed": [f"{t[0]}:{t[2]} {t[3]} {t[1]}" for t in missed[:args.misses]],
        "extra": [] if args.labels else [f"{p}:{d[1]} {d[3]} {d[4]}" for p, d in extra[:args.misses]],
    }))


if __name__ == "__main__":
    sys.exit(main())
