"""Train the confidence gate (codeasst/complete/confidence.py) for Happiness per request.

    python bench/train_gate.py ROWS.jsonl [ROWS.jsonl ...] [--write]

Inputs, each read for its candidates (what `complete`'s cut kept, before the gate) and their
gate features, all obtained through `complete_at`:
- `codeasst eval fim ... --split tune --out FILE`: a candidate is taken when the completed
  program passes its tests, and then whole;
- `python bench/typing_replay.py --offline FILE --files ...`: taken as far as the user's next
  whole lines match it (the replay's own rule).

Happiness of showing one candidate: its length taken - 3 when taken, else -14; and 0.05 a
character shown. One threshold is chosen for mid-line candidates and one for those at a line's
start; a place where no threshold gains anything gets 1.01, never shown. A logistic regression (scikit-learn) is fitted on standardised features; the
threshold on its probability that maximises the summed Happiness is chosen on out-of-fold
probabilities (5 folds, averaged over 5 shuffles), so the figure printed for it is not the fit's own. `--write`
stores the model, fitted on all rows, with that threshold, in the package.

Use tuning data only: the eval's tuning split and replays of files no report is made on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

MODEL_FILE = Path(__file__).resolve().parents[1] / "codeasst" / "complete" / "gate_model.json"
THRESHOLDS = [round(x, 3) for x in np.arange(0.0, 0.96, 0.025)]
REPEATS = 5
GROUP = {False: "line-start", True: "mid-line"}
NEVER = 1.01  # a threshold no probability reaches


def read(paths: list[Path]) -> list[dict]:
    """One item per candidate: features, taken (characters, 0 if not), shown (characters), source."""
    items = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "product" in row:  # eval fim --out
                candidate = row["product"].get("candidate", "")
                if not candidate or not row.get("features"):
                    continue
                taken = len(candidate) if row["candidate_passes"] else 0
                items.append({"features": row["features"], "taken": taken, "shown": len(candidate),
                              "source": f"fim:{path.name}"})
            elif row["candidate"]:  # typing_replay.py --offline
                items.append({"features": row["features"], "taken": row["accepted"], "shown": len(row["candidate"]),
                              "source": f"replay:{path.name}"})
    return items


def gain(item: dict) -> float:
    """Happiness of showing this candidate."""
    return (item["taken"] - 3 if item["taken"] else -14.0) - 0.05 * item["shown"]


def best_threshold(probabilities: np.ndarray, gains: np.ndarray) -> tuple[float, float]:
    totals = [(float(gains[probabilities >= t].sum()), t) for t in THRESHOLDS]
    total, threshold = max(totals)
    return threshold, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path, nargs="+")
    parser.add_argument("--write", action="store_true", help=f"store the model in {MODEL_FILE}")
    parser.add_argument("--C", type=float, default=0.5, help="inverse regularisation strength")
    args = parser.parse_args()

    items = read(args.rows)
    if not items:
        sys.exit("no candidates in the rows given")
    for item in items:  # rows written before sum_logprob was a feature: it is mean x tokens
        f = item["features"]
        f.setdefault("sum_logprob", f["mean_logprob"] * round(np.expm1(f["tokens"])))
    names = sorted(items[0]["features"])
    x = np.array([[item["features"][n] for n in names] for item in items])
    y = np.array([1 if item["taken"] else 0 for item in items])
    gains = np.array([gain(item) for item in items])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale

    cv = np.zeros(len(items))  # out-of-fold probabilities, averaged over REPEATS shuffles of the folds
    for seed in range(REPEATS):
        for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(z, y):
            model = LogisticRegression(C=args.C, max_iter=1000).fit(z[train], y[train])
            cv[test] += model.predict_proba(z[test])[:, 1] / REPEATS
    sources = sorted({item["source"] for item in items})
    print(f"{len(items)} candidates ({y.sum()} taken) from {', '.join(sources)}")
    print(f"show every candidate: Happiness {gains.sum():.1f} ({gains.sum() / len(items):.2f} per candidate)")
    # One operating point for each kind of place: mid-line (the rest of a line the user is typing) and
    # at a line's start (a block opened, between statements, a block's end). Where no threshold gains
    # anything, the place is never shown (NEVER), and the product does not ask the model there.
    groups = np.array([GROUP[item["features"].get("place_mid-line", 0.0) == 1.0] for item in items])
    thresholds = {}
    for group in ("line-start", "mid-line"):
        mask = groups == group
        threshold, total = best_threshold(cv[mask], gains[mask]) if mask.any() else (NEVER, 0.0)
        if total <= 0:
            threshold, total = NEVER, 0.0
        thresholds[group] = threshold
        shown = mask & (cv >= threshold)
        print(f"{group}: {int(mask.sum())} candidates; cross-validated, confidence >= {threshold}: Happiness "
              f"{total:.1f}, shown {int(shown.sum())}, taken of those {int(y[shown].sum())}")
    show = np.array([cv[i] >= thresholds[groups[i]] for i in range(len(items))])
    means = np.array([item["features"]["mean_logprob"] for item in items])
    lp_threshold, lp_total = max((float(gains[means >= t].sum()), t) for t in np.arange(-2.0, 0.01, 0.1))[::-1]
    print(f"the mean log-probability alone, best threshold {lp_threshold:.1f} (chosen on these rows, in-sample): "
          f"Happiness {lp_total:.1f}")
    for source in sources:
        mask = np.array([item["source"] == source for item in items])
        print(f"  {source}: {mask.sum()} candidates; show all {gains[mask].sum():.1f}, gated (cross-validated) "
              f"{gains[mask & show].sum():.1f}")

    model = LogisticRegression(C=args.C, max_iter=1000).fit(z, y)
    order = np.argsort(-np.abs(model.coef_[0]))
    print("coefficients (standardised):", ", ".join(f"{names[i]} {model.coef_[0][i]:+.2f}" for i in order))
    if args.write:
        MODEL_FILE.write_text(json.dumps({
            "names": names, "mean": [round(float(v), 6) for v in mean], "scale": [round(float(v), 6) for v in scale],
            "coef": [round(float(v), 6) for v in model.coef_[0]], "intercept": round(float(model.intercept_[0]), 6),
            "thresholds": thresholds,
            "trained_on": f"{len(items)} candidates from {', '.join(sources)}; threshold chosen on "
                          f"out-of-fold probabilities (5 folds, 5 shuffles) for Happiness",
        }, indent=1) + "\n", encoding="utf-8")
        print(f"written: {MODEL_FILE}")


if __name__ == "__main__":
    main()
