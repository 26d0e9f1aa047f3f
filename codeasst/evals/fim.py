"""`codeasst eval fim DATA.jsonl`: statement-level completion scored by execution.

A row (SAFIM's Python part, `../shared/data/fim_dev_safim_python.jsonl`): {"task_id",
"kind", "prefix", "suffix", "ground_truth", "unit_tests": [{"input", "output": [...]}]}.
A completion passes when `prefix + completion + suffix`, run as a program, reads each
test's input on stdin and prints one of its accepted outputs (stripped lines). A row may
carry `test_code` instead (bench/fim_lines.py's one-line holes in MBPP functions,
`tests/data/fim/mbpp_lines.jsonl`): then the program followed by it must exit without an error.

Which rows (`--rows`): all, SAFIM's `block` or `control` rows, or `single-line`: block rows
whose hole is one line and whose cursor is at that line's start (after its indentation).
Where the cursor is (`--cursor`): as the row gives it (`indent`: after the indentation, as an
editor's auto-indent puts it), or `line-start`: at column 1 of the emptied line, the
indentation moved into the hole.

Systems, on the same rows, in one run:
- `complete`: what `codeasst complete` shows, from `complete_at`, the function the CLI and the
  server call: the pre-request gate, the prompt, the stops, the statement cut and the
  confidence gate. Silence is a fail for pass@1 and costs nothing in Happiness;
- `raw`: the model with a plain FIM prompt (PSM), its first line as it is: the baseline, once
  with the product's suffix budget and once with its own (the whole suffix, as a user of the bare
  model would give it).
Generation is bounded by tokens (complete.max_tokens), never by time: the figures do not move
with the machine's load. Latency is measured apart, on the product's calls.

Happiness per row, as the typing replay counts it: a passing suggestion is accepted whole
(its length - 3), one that fails is discarded (-14), and every suggestion shown costs 0.05 a
character. The gate's threshold is swept over the product's own candidates (`Suggestion.candidate`,
what the cut kept before the gate judged it), so the tuning split picks it and the test split
reports it.

Rows are split by a hash of `task_id` (about half each), so the split never changes when rows
are added. The programs the model completes are run here: in a temporary folder, with `-I`
(no user site), an empty environment, a timeout and no network use by the programs' nature
(they read stdin and print). This is an evaluation; the product never runs model output.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeasst.backends.base import LLM, GenerationParams
from codeasst.complete.fim import CompleteOptions, Suggestion, fim_prompt, suffix_budget
from codeasst.errors import UsageError
from codeasst.evals import sandbox
from codeasst.services import Services

_TEST_TIMEOUT_S = 10.0
THRESHOLDS = (-math.inf, -1.5, -1.2, -1.0, -0.9, -0.8, -0.7, -0.6, -0.5, -0.4, -0.3, -0.2)  # mean log-probability
CONFIDENCES = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8)  # the learned gate's probability
OWN_SUFFIX_TOKENS = 2048  # the bare model's baseline reads the whole suffix (SAFIM's run to a few hundred)
ROWS = ("all", "block", "control", "single-line")
CURSORS = ("indent", "line-start")
PATH = "main.py"  # the name the rows' programs have in the prompt


def plain_options(options: CompleteOptions, suffix_tokens: int) -> CompleteOptions:
    """The baseline's prompt: PSM with `suffix_tokens` of suffix, `options`' prefix budget."""
    return CompleteOptions(max_tokens=options.max_tokens, time_cap_ms=0, prefix_tokens=options.prefix_tokens,
                           suffix_tokens=suffix_tokens, layout="psm")


def first_line(llm: LLM, prompt: str, max_tokens: int) -> str:
    """The bare model's first line for `prompt`: generation stops at its first newline."""
    text = ""
    for token in llm.stream(prompt, GenerationParams(max_tokens=max_tokens, temperature=0.0)):
        text += token.text
        if "\n" in text:
            break
    return text.split("\n")[0]


def settings_label(options: CompleteOptions) -> str:
    """The `complete` settings a report names: the ones its evaluations tune."""
    context = f", context {options.context_tokens} ({'+'.join(options.context_sources)})" \
        if options.context_tokens else ""
    suffix = options.suffix_tokens or f"auto ({options.suffix_ms} ms)"
    return (f"{options.layout}, suffix {suffix}, max_lines {options.max_lines}, multiline {options.multiline}, "
            f"gate {_gate_label(options)}{context}")


def _gate_label(options: CompleteOptions) -> str:
    from codeasst.complete.confidence import gate_model

    model = gate_model()
    if model is None:
        return f"mean log-probability >= {options.min_mean_logprob}"
    if options.min_confidence is not None:
        return f"learned, confidence >= {options.min_confidence:.2f}"
    return "learned, confidence >= " + ", ".join(f"{t:.2f} {place}" if t <= 1 else f"never {place}"
                                                 for place, t in model.thresholds.items())


def split_of(task_id: str) -> str:
    return "tune" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 2 == 0 else "test"


@dataclass
class Row:
    task_id: str
    kind: str
    prefix: str
    suffix: str
    ground_truth: str
    tests: list[dict]
    test_code: str = ""  # run after the program, never shown to the model (bench/fim_lines.py's rows)


@dataclass
class Outcome:
    """What each system made of one row."""

    task_id: str
    kind: str
    truth_passes: bool
    product: Suggestion
    baselines: dict[str, str]  # system name -> its text
    passes: dict[str, bool] = field(default_factory=dict)  # completion text -> passes


def load(path: Path, split: str, limit: int | None, rows: str = "all", cursor: str = "indent") -> list[Row]:
    """The rows of `split` and of the kind `rows`, with the cursor where `cursor` puts it."""
    if split not in ("tune", "test", "all"):
        raise UsageError(f"unknown split '{split}': use tune, test or all")
    if rows not in ROWS:
        raise UsageError(f"unknown rows '{rows}': use {', '.join(ROWS)}")
    if cursor not in CURSORS:
        raise UsageError(f"unknown cursor '{cursor}': use {', '.join(CURSORS)}")
    found = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            row = Row(str(data["task_id"]), data.get("kind", ""), data["prefix"], data["suffix"],
                      data.get("ground_truth", ""), list(data.get("unit_tests") or []), data.get("test_code", ""))
            if not row.tests and not row.test_code:
                raise KeyError("unit_tests or test_code")
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a FIM row ({exc})") from None
        wanted = rows == "all" or (_kind(row) if rows == "single-line" else row.kind) == rows
        if wanted and split in ("all", split_of(row.task_id)):
            found.append(at_line_start(row) if cursor == "line-start" else row)
    # A stable sample across the file, not its first rows (they come grouped by kind).
    found.sort(key=lambda r: hashlib.sha256(r.task_id.encode()).hexdigest())
    return found[:limit] if limit else found


def _kind(row: Row) -> str:
    """`single-line` for a block row with a one-line hole at its line's start, and for the rows of
    bench/fim_lines.py; else the row's kind."""
    if row.kind == "line":
        return "single-line"
    line_start = row.prefix[row.prefix.rfind("\n") + 1:]
    if row.kind == "block" and not line_start.strip() and "\n" not in row.ground_truth.strip():
        return "single-line"
    return row.kind


def at_line_start(row: Row) -> Row:
    """The row with the cursor at column 1 of its line: the indentation before it goes into the hole."""
    cut_at = row.prefix.rfind("\n") + 1
    indent = row.prefix[cut_at:]
    if indent.strip() or not indent:
        return row  # the cursor is after code on its line, or already at column 1
    return replace(row, prefix=row.prefix[:cut_at], ground_truth=indent + row.ground_truth)


def runs(program: str, tests: list[dict], test_code: str = "") -> bool:
    """Whether `program` prints an accepted output for every test; with `test_code`, whether the
    program followed by it exits without an error (reading nothing on stdin). The program holds the
    model's text: it runs sandboxed."""
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "main.py"
        file.write_text(program + ("\n" + test_code if test_code else ""), encoding="utf-8")
        if test_code:
            return sandbox.run_python([str(file)], cwd=Path(tmp), timeout_s=_TEST_TIMEOUT_S).ok
        for test in tests:
            ran = sandbox.run_python([str(file)], cwd=Path(tmp), timeout_s=_TEST_TIMEOUT_S, stdin=test["input"])
            got = [line.strip() for line in ran.stdout.strip().splitlines()]
            accepted = test["output"] if isinstance(test["output"], list) else [test["output"]]
            if not ran.ok or not any(got == [x.strip() for x in str(a).strip().splitlines()] for a in accepted):
                return False
    return True


def _passes(outcome: Outcome, row: Row, text: str) -> bool:
    if text not in outcome.passes:
        outcome.passes[text] = bool(text.strip()) and runs(row.prefix + text + row.suffix, row.tests, row.test_code)
    return outcome.passes[text]


def happiness(text: str, passes: bool) -> float:
    """One request's Happiness (module docstring): 0 for silence."""
    if not text.strip():
        return 0.0
    return (len(text) - 3 if passes else -14.0) - 0.05 * len(text)


@dataclass
class Score:
    system: str
    rows: int
    passed: int
    shown: int
    passed_shown: int
    truth_passed: int
    happiness: float = 0.0  # in all
    multi_line: int = 0  # suggestions shown with more than one line

    @property
    def pass_at_1(self) -> float:
        return self.passed / self.rows if self.rows else 0.0

    @property
    def pass_when_shown(self) -> float:
        return self.passed_shown / self.shown if self.shown else 0.0

    @property
    def silence(self) -> float:
        return 1 - self.shown / self.rows if self.rows else 0.0

    @property
    def happiness_per_row(self) -> float:
        return self.happiness / self.rows if self.rows else 0.0


def score(name: str, rows: list[Row], outcomes: list[Outcome], pick: Callable[[Outcome], str]) -> Score:
    result = Score(name, len(rows), 0, 0, 0, sum(o.truth_passes for o in outcomes))
    for row, outcome in zip(rows, outcomes, strict=True):
        text = pick(outcome)
        ok = _passes(outcome, row, text)
        result.passed += ok
        result.happiness += happiness(text, ok)
        if text.strip():
            result.shown += 1
            result.passed_shown += ok
            result.multi_line += "\n" in text.strip("\n")
    return result


def gated(outcome: Outcome, threshold: float) -> str:
    """The product's candidate under another threshold of its gate: the learned model's probability,
    or where its file is missing, the mean log-probability."""
    product = outcome.product
    value = product.confidence if product.confidence is not None else product.mean_logprob
    return product.candidate if value is None or value >= threshold else ""


def eval_options(services: Services, options: CompleteOptions | None = None) -> CompleteOptions:
    """`options` (the [complete] settings by default) as an evaluation runs them: no time cap, and the suffix budget this machine gets now,
    fixed for the whole run (the product decides it from the measured speed; complete.suffix_tokens)."""
    if options is None:
        from codeasst.tasks.complete import options_from

        options = options_from(services)
    llm = services.complete_llm
    llm.load()
    return replace(options, time_cap_ms=0, suffix_tokens=suffix_budget(llm, options))


def baseline_names(options: CompleteOptions) -> tuple[str, str]:
    return (f"raw (plain FIM, first line), the product's suffix ({options.suffix_tokens} tokens)",
            f"raw (plain FIM, first line), its own suffix (up to {OWN_SUFFIX_TOKENS} tokens)")


def generate_all(services: Services, rows: list[Row], options: CompleteOptions,
                 on_row: Callable[[int, int], None] | None = None) -> list[Outcome]:
    """Each row through `complete_at` (the product), then through the two baselines. `options` come
    from eval_options. Each row's prompts start cold: the rows share nothing."""
    from codeasst.tasks.complete import complete_at

    llm = services.complete_llm
    names = baseline_names(options)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="codeasst-eval-fim-") as tmp:
        for number, row in enumerate(rows, 1):
            text = row.prefix + row.suffix
            line = row.prefix.count("\n") + 1
            col = len(row.prefix) - (row.prefix.rfind("\n") + 1) + 1
            product = complete_at(services, text, line, col, PATH, options, root=Path(tmp), llm=llm)
            baselines = {name: first_line(llm, fim_prompt(row.prefix, row.suffix, plain_options(options, budget)),
                                          options.max_tokens)
                         for name, budget in zip(names, (options.suffix_tokens, OWN_SUFFIX_TOKENS), strict=True)}
            truth = runs(row.prefix + row.ground_truth + row.suffix, row.tests, row.test_code)
            outcomes.append(Outcome(row.task_id, row.kind, truth, product, baselines))
            if on_row:
                on_row(number, len(rows))
    return outcomes


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else None


def report(rows: list[Row], outcomes: list[Outcome], options: CompleteOptions, split: str, seconds: float,
           model: str, *, kind: str = "all", cursor: str = "indent") -> dict:
    product = score(f"complete ({settings_label(options)})", rows, outcomes, lambda o: o.product.text)
    baselines = [score(name, rows, outcomes, lambda o, name=name: o.baselines[name]) for name in baseline_names(options)]
    learned = any(o.product.confidence is not None for o in outcomes)
    sweep = [score(f"complete, {'confidence' if learned else 'mean log-probability'} threshold {t}", rows, outcomes,
                   lambda o, t=t: gated(o, t)) for t in (CONFIDENCES if learned else THRESHOLDS)]
    asked = [o.product for o in outcomes if o.product.prompt_tokens]  # the gate answered the others at once
    silenced = {}
    for o in outcomes:
        if not o.product.text:
            why = o.product.reason.split(" (")[0]
            silenced[why] = silenced.get(why, 0) + 1
    return {"model": model, "split": split, "rows_kind": kind, "cursor": cursor, "rows": len(rows),
            "seconds": round(seconds, 1), "suffix_tokens": options.suffix_tokens,
            "latency_p50_ms": _percentile([p.latency_ms for p in asked], 0.5),
            "latency_p95_ms": _percentile([p.latency_ms for p in asked], 0.95),
            "prompt_tokens_p50": statistics.median(p.prompt_tokens for p in asked) if asked else None,
            "silenced": dict(sorted(silenced.items(), key=lambda kv: -kv[1])),
            "systems": [*baselines, product], "sweep": sweep, "sandbox": sandbox.isolation().note}


def lines(result: dict) -> list[str]:
    head = (f"{result['rows']} rows ({result['rows_kind']}, cursor {result['cursor']}; {result['split']} split), "
            f"model {result['model']}, {result['seconds']} s; complete's latency (rows the model answered) p50 "
            f"{result['latency_p50_ms']} ms, p95 {result['latency_p95_ms']} ms; prompt tokens p50 "
            f"{result['prompt_tokens_p50']}; generation bounded by tokens, not time")
    out = [head, f"programs ran: {result['sandbox']}", "", _HEADER.format("system"), _RULE]
    out += [_row(s) for s in result["systems"]]
    if result["silenced"]:
        out += ["", "complete's silences: " + "; ".join(f"{why}: {n}" for why, n in result["silenced"].items())]
    out += ["", "The product's candidates under other thresholds of its gate (choose on the tuning split):", "",
            _HEADER.format("settings"), _RULE]
    out += [_row(s) for s in result["sweep"]]
    return out


_HEADER = ("| {} | pass@1 | pass when shown | shown | silence | multi-line shown | Happiness per row | "
           "ground truth passes |")
_RULE = "|---|---|---|---|---|---|---|---|"


def _row(s: Score) -> str:
    return (f"| {s.system} | {_pct(s.pass_at_1)} ({s.passed}) | {_pct(s.pass_when_shown)} | {s.shown} | "
            f"{_pct(s.silence)} | {s.multi_line} | {s.happiness_per_row:.2f} | {s.truth_passed} |")


def to_json(result: dict) -> dict:
    def one(s: Score) -> dict:
        return {"system": s.system, "rows": s.rows, "pass_at_1": round(s.pass_at_1, 4),
                "pass_when_shown": round(s.pass_when_shown, 4), "shown": s.shown, "silence": round(s.silence, 4),
                "multi_line_shown": s.multi_line, "happiness_per_row": round(s.happiness_per_row, 3),
                "ground_truth_passes": s.truth_passed}

    return {**result, "systems": [one(s) for s in result["systems"]], "sweep": [one(s) for s in result["sweep"]]}


def write_rows(path: Path, rows: list[Row], outcomes: list[Outcome]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row, o in zip(rows, outcomes, strict=True):
            f.write(json.dumps({"task_id": o.task_id, "kind": o.kind, "truth_passes": o.truth_passes,
                                "product": o.product.to_json(), "features": o.product.features,
                                "product_passes": _passes(o, row, o.product.text),
                                "candidate_passes": _passes(o, row, o.product.candidate),
                                "baselines": {name: {"text": text, "passes": _passes(o, row, text)}
                                              for name, text in o.baselines.items()}}) + "\n")
