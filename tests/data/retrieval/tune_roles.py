"""Choose the role weights (the setting retrieval.off_intent) on the TUNE rows of checkouts.jsonl,
never on its test rows.

    python tests/data/retrieval/tune_roles.py [--rankings /tmp/roles-rankings.pkl]

Each tune question is retrieved once through the product (`find`, as `search` and the eval call
it); its rankings per retriever are kept, then re-fused under every candidate setting with the
product's own `fuse` and `weigh`. The objective is recall@1 + recall@5 at the file level, the
mean over rows; a tie keeps the milder setting (weights nearer 1). The figures it prints are
in-sample: they are the rows the settings were chosen on.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from codeasst.evals.repos import repo_dir
from codeasst.evals.rows import load_rows
from codeasst.evals.scoring import ranked_files
from codeasst.retrieve import intent
from codeasst.retrieve.pipeline import fuse

CHOICES = (1.0, 0.7, 0.5, 0.35, 0.25, 0.15, 0.1)


def collect(path: Path) -> list[dict]:
    from codeasst.services import build_services
    from codeasst.tasks.search import find

    rows = [row for row in load_rows(path) if row.get("split") == "tune"]
    out, services_for = [], {}
    for number, row in enumerate(rows, start=1):
        if row["repo"] not in services_for:
            services = build_services(repo_dir(row["repo"], path.parent), model="bundled")
            services.indexer().run()
            services_for[row["repo"]] = services
        result = find(services_for[row["repo"]], row["question"], update_index=False)
        out.append({"row": row, "rankings": result.rankings, "intent": result.intent})
        print(f"[{number}/{len(rows)}] {row['question'][:70]}", file=sys.stderr)
    return out


def objective(items: list[dict], off: dict[str, float]) -> float:
    from codeasst.config import RetrievalSettings

    cfg = RetrievalSettings()
    total = 0.0
    for item in items:
        fused = intent.weigh(fuse(item["rankings"], cfg), item["intent"], off)
        files = ranked_files([f.hit for f in fused])
        expected = set(item["row"]["expected"])
        total += len(expected & set(files[:1])) / len(expected) + len(expected & set(files[:5])) / len(expected)
    return total / len(items)


# Where the search starts, and what a role keeps when no tune row moves it: a guess made before
# any run (tests and docs half, fixtures and generated or vendored code less). A tie keeps it.
PRIOR = {"implementation": 0.5, "test": 0.5, "fixture": 0.3, "docs": 0.5, "example": 0.5, "benchmark": 0.5,
         "config": 0.5, "generated": 0.3, "vendored": 0.3}


def tune(items: list[dict]) -> dict[str, float]:
    off = dict(PRIOR)
    unmoved = set(off)
    print(f"roles off: {objective(items, dict.fromkeys(off, 1.0)) / 2:.3f} mean of r@1 and r@5")
    best = objective(items, off)
    print(f"the prior: {best / 2:.3f}")
    for _ in range(3):
        changed = False
        for role in off:
            for value in CHOICES:
                trial = {**off, role: value}
                score = objective(items, trial)
                if abs(score - best) > 1e-9:
                    unmoved.discard(role)
                if score > best + 1e-9:
                    best, off, changed = score, trial, True
        if not changed:
            break
    print(f"chosen: {best / 2:.3f} mean of r@1 and r@5 (in-sample)")
    print(f"roles no tune row moves (kept at the prior): {', '.join(sorted(unmoved)) or 'none'}")
    return off


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=Path, default=HERE / "checkouts.jsonl")
    parser.add_argument("--rankings", type=Path, help="keep the retrieved rankings here, or read them if there")
    args = parser.parse_args()
    if args.rankings and args.rankings.is_file():
        items = pickle.loads(args.rankings.read_bytes())
    else:
        items = collect(args.questions)
        if args.rankings:
            args.rankings.write_bytes(pickle.dumps(items))
    for item in items:  # retrievers tried in issue 28 and dropped (their learned weight was 0)
        item["rankings"] = {k: v for k, v in item["rankings"].items() if k not in ("definitions", "called")}
    print("retrieval.off_intent =", tune(items))


if __name__ == "__main__":
    main()
