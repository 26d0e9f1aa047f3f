"""False sentences shown per answer (issue 43): two systems' answers to the same questions, shuffled
together into one blind set of prose sentences for a person (or a helper) to label true or false by
reading the code, then counted per system and per part of the answer.

    python bench/false_sentences.py prepare A.jsonl B.jsonl --names old,new --out DIR
        writes DIR/items.jsonl (what the labeller sees: question, repository, the answer's prose
        sentences, in a shuffled order with no system named) and DIR/key.jsonl (which system wrote
        each item, and the part of the answer each sentence is in), from `codeasst eval ask --out`
        files of the same rows
    python bench/false_sentences.py report DIR
        reads DIR/labels.jsonl ({"item", "sentence", "label": "true"|"false"|"unsure", "why"}) and
        prints false sentences shown per answer, per system and per part

Counted are the sentences the user reads: the lead's (each definition listed, each step of the flow,
the callers), and the model's. Not counted: outline lines (lines of the file, true by construction)
and the "look next at" note (codeasst's pointer, not a claim).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import sys
from pathlib import Path

OUTLINE = re.compile(r"^\s*(?:…?\d+\s{2,}|… \d+ lines?\s*$|… and \d+ more (?:methods?: |lines?\s*$))")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])")
PLACE = re.compile(r"\[[^\]\n]*:\d+(?:-\d+)?[^\]\n]*\]|\(see [^)\n]*\)")
NOTE = "The excerpts may not answer this fully; look next at"
SEED = "codeasst-issue-43-labels"


def parts(answer: str) -> list[tuple[str, str]]:
    """The prose sentences of an answer as shown, each with its part: lead, flow or model."""
    out: list[tuple[str, str]] = []
    for block in re.split(r"\n\s*\n", answer.strip()):
        lines = [line for line in block.splitlines() if line.strip() and not OUTLINE.match(line)]
        if not lines or lines[0].startswith(NOTE):
            continue
        if lines[0].startswith(("Where the existing", "No place in this repository registers")):
            out += [("lead", line.strip()) for line in lines[1:] if line.startswith("- ")] or [("lead", lines[0])]
        elif lines[0].startswith("In the code:"):
            items: list[str] = []
            for line in lines[1:]:
                if line.startswith("- ") or not items:
                    items.append(line.strip())
                else:
                    items[-1] += " " + line.strip()  # an "errors:" line belongs to its definition
            out += [("lead", item) for item in items]
        elif lines[0].startswith("How it flows"):
            out += [("flow", line.strip()) for line in lines[1:]]
        else:
            for line in lines:
                for s in SENTENCE_END.split(line.strip()):
                    if not re.search(r"\w", PLACE.sub("", s)):  # a citation alone belongs to the sentence before
                        if out and out[-1][0] == "model":
                            out[-1] = ("model", out[-1][1] + " " + s.strip())
                        continue
                    out.append(("model", s.strip()))
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def prepare(files: list[Path], names: list[str], out: Path) -> None:
    items, key = [], []
    for path, name in zip(files, names):
        for row in _rows(path):
            sentences = parts(row["answer"])
            ident = hashlib.sha256(f"{SEED}\n{name}\n{row['row']['repo']}\n{row['row']['question']}".encode()).hexdigest()[:10]
            items.append({"item": ident, "repo": row["row"]["repo"], "question": row["row"]["question"],
                          "sentences": [{"n": n, "text": text} for n, (_, text) in enumerate(sentences, start=1)]})
            key.append({"item": ident, "system": name, "repo": row["row"]["repo"], "question": row["row"]["question"],
                        "parts": [part for part, _ in sentences], "keyed": row.get("keyed", False)})
    random.Random(SEED).shuffle(items)
    out.mkdir(parents=True, exist_ok=True)
    (out / "items.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    (out / "key.jsonl").write_text("".join(json.dumps(k, ensure_ascii=False) + "\n" for k in key), encoding="utf-8")
    print(f"{len(items)} answers, {sum(len(i['sentences']) for i in items)} sentences -> {out}")


def report(folder: Path) -> dict:
    key = {k["item"]: k for k in _rows(folder / "key.jsonl")}
    labels: dict[tuple[str, int], str] = {}
    for label in _rows(folder / "labels.jsonl"):
        labels[(label["item"], int(label["sentence"]))] = label["label"]
    result: dict = {}
    for system in sorted({k["system"] for k in key.values()}):
        mine = [k for k in key.values() if k["system"] == system]
        block: dict = {"answers": len(mine)}
        for part in ("all", "lead", "flow", "model"):
            false, unsure, shown, unlabelled = [], 0, 0, 0
            for k in mine:
                count = 0
                for n, p in enumerate(k["parts"], start=1):
                    if part != "all" and p != part:
                        continue
                    shown += 1
                    label = labels.get((k["item"], n))
                    if label is None:
                        unlabelled += 1
                    count += label == "false"
                    unsure += label == "unsure"
                false.append(count)
            block[part] = {"sentences_per_answer": round(shown / len(mine), 2),
                           "false_per_answer": round(statistics.fmean(false), 3),
                           "answers_with_a_false_sentence": sum(1 for f in false if f),
                           "unsure": unsure, "unlabelled": unlabelled}
        result[system] = block
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--names", required=True)
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("report")
    r.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        names = args.names.split(",")
        if len(names) != len(args.files):
            parser.error("one name per file")
        prepare(args.files, names, args.out)
    else:
        json.dump(report(args.folder), sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
