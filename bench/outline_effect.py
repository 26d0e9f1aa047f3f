"""`python bench/outline_effect.py ROWS.jsonl` (ROWS: `codeasst eval ask ... --out ROWS.jsonl`).

Key facts of the same answers with and without the lead's outline lines, scored as `codeasst eval ask`
scores them (evals/ask.py summarise: answerable keyed rows; fact recall the mean per answer; correct:
every fact, no wrong statement, not an abstention). The model never sees the outline, so its text is
the same either way: taking the outline's lines out is the answer as it was before them."""
import json
import re
import statistics
import sys

from codeasst.evals.facts import score_facts

OUTLINE = re.compile(r"^ {2,}(?:…?\d+  .*|… \d+ lines?)$")
with open(sys.argv[1], encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh]


def summary(rows, strip):
    keyed = [r for r in rows if r["keyed"] and r["answerable"]]
    recall, correct, wrong = [], [], []
    for r in keyed:
        text = r["answer"]
        if strip:
            text = "\n".join(line for line in text.splitlines() if not OUTLINE.match(line))
        s = score_facts(r["row"], text)
        recall.append(len(s.stated) / s.facts)
        correct.append(len(s.stated) == s.facts and not s.wrong and not r["abstained"])
        wrong.append(len(s.wrong))
    return (len(keyed), round(statistics.fmean(recall), 4), round(sum(correct) / len(keyed), 4),
            round(statistics.fmean(wrong), 4))


for name, part in (("facts.jsonl", [r for r in rows if r["row"]["repo"].startswith("pypi")]),
                   ("sweqa.jsonl", [r for r in rows if r["row"]["repo"].startswith("github")]), ("all", rows)):
    for strip in (False, True):
        n, fr, c, w = summary(part, strip)
        print(f"{name:12} {'without' if strip else 'with   '} outline: keyed {n}  fact recall {fr}  correct {c}  "
              f"wrong/answer {w}")
shown = sum(1 for r in rows if any(OUTLINE.match(line) for line in r["answer"].splitlines()))
print("answers with an outline:", shown, "of", len(rows))
