"""`codeasst eval fim DATA.jsonl`: statement-level completion scored by execution.

A row (SAFIM's Python part, `../shared/data/fim_dev_safim_python.jsonl`): {"task_id",
"kind", "prefix", "suffix", "ground_truth", "unit_tests": [{"input", "output": [...]}]}.
A completion passes when `prefix + completion + suffix`, run as a program, reads each
test's input on stdin and prints one of its accepted outputs (stripped lines).

Systems, from one generation per row (greedy decoding, so running the model again for each
would give the same text):
- `raw`: the model with a plain FIM prompt (PSM, 256 tokens of suffix), its first line as
  it is: the baseline. Where the product's prompt differs (another `complete.layout` or
  `suffix_tokens`), the baseline is generated from its own prompt, in the same run;
- `complete`: `codeasst complete` itself: the stops, the statement cut, the confidence gate.
The gate's threshold and the line limit are swept over the same generations, so the tuning
split picks them and the test split reports them.

Rows are split by a hash of `task_id` (about half each), so the split never changes when rows
are added. The programs the model completes are run here: in a temporary folder, with `-I`
(no user site, no environment), a timeout and no network use by the programs' nature (they
read stdin and print). This is an evaluation; the product never runs model output.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeasst.complete.cut import cut
from codeasst.complete.fim import CompleteOptions, fim_prompt, generate, mean_logprob
from codeasst.errors import UsageError
from codeasst.services import Services

_TEST_TIMEOUT_S = 10.0
THRESHOLDS = (-math.inf, -1.5, -1.2, -1.0, -0.9, -0.8, -0.7, -0.6, -0.5, -0.4, -0.3, -0.2)
LINE_LIMITS = (1, 2, 4)
PLAIN_SUFFIX_TOKENS = 256  # the baseline's suffix: what `complete` read before it was tuned (docs/benchmarks.md)


def plain_options(options: CompleteOptions, max_lines: int) -> CompleteOptions:
    """The baseline's prompt and stops: PSM with PLAIN_SUFFIX_TOKENS, `options`' budgets otherwise."""
    return CompleteOptions(max_lines=max_lines, max_tokens=options.max_tokens, time_cap_ms=options.time_cap_ms,
                           prefix_tokens=options.prefix_tokens, suffix_tokens=PLAIN_SUFFIX_TOKENS, layout="psm")


def settings_label(options: CompleteOptions) -> str:
    """The `complete` settings a report names: the ones its evaluations tune."""
    context = f", context {options.context_tokens} ({'+'.join(options.context_sources)})" \
        if options.context_tokens else ""
    return (f"{options.layout}, suffix {options.suffix_tokens}, max_lines {options.max_lines}, "
            f"threshold {options.min_mean_logprob}{context}")


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


@dataclass
class Generation:
    task_id: str
    kind: str
    raw: str
    tokens: list[tuple[int, float]]
    seconds: float
    prompt_tokens: int
    truth_passes: bool
    passes: dict[str, bool] = field(default_factory=dict)  # completion text -> passes
    baseline: str | None = None  # the baseline's text, where its plain prompt differs from the product's


def load(path: Path, split: str, limit: int | None) -> list[Row]:
    if split not in ("tune", "test", "all"):
        raise UsageError(f"unknown split '{split}': use tune, test or all")
    rows = []
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
                      data.get("ground_truth", ""), list(data["unit_tests"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a FIM row ({exc})") from None
        if split in ("all", split_of(row.task_id)):
            rows.append(row)
    # A stable sample across the file, not its first rows (they come grouped by kind).
    rows.sort(key=lambda r: hashlib.sha256(r.task_id.encode()).hexdigest())
    return rows[:limit] if limit else rows


def runs(program: str, tests: list[dict]) -> bool:
    """Whether `program` prints an accepted output for every test."""
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "main.py"
        file.write_text(program, encoding="utf-8")
        for test in tests:
            try:
                proc = subprocess.run([sys.executable, "-I", str(file)], input=test["input"], capture_output=True,
                                      text=True, timeout=_TEST_TIMEOUT_S, cwd=tmp, env={}, check=False)
            except subprocess.TimeoutExpired:
                return False
            got = [line.strip() for line in proc.stdout.strip().splitlines()]
            accepted = test["output"] if isinstance(test["output"], list) else [test["output"]]
            if proc.returncode != 0 or not any(got == [x.strip() for x in str(a).strip().splitlines()]
                                                  for a in accepted):
                return False
    return True


def _passes(gen: Generation, row: Row, text: str) -> bool:
    if text not in gen.passes:
        gen.passes[text] = bool(text.strip()) and runs(row.prefix + text + row.suffix, row.tests)
    return gen.passes[text]


def suggestion(row: Row, gen: Generation, max_lines: int, threshold: float) -> str:
    """What `complete` shows for this generation with these settings ("" for silence)."""
    text, _ = cut("python", row.prefix, gen.raw, row.suffix, max_lines)
    if not text:
        return ""
    mean = mean_logprob(gen.tokens, text, gen.raw)
    return text if mean is None or mean >= threshold else ""


@dataclass
class Score:
    system: str
    rows: int
    passed: int
    shown: int
    passed_shown: int
    truth_passed: int

    @property
    def pass_at_1(self) -> float:
        return self.passed / self.rows if self.rows else 0.0

    @property
    def pass_when_shown(self) -> float:
        return self.passed_shown / self.shown if self.shown else 0.0

    @property
    def silence(self) -> float:
        return 1 - self.shown / self.rows if self.rows else 0.0


def score(name: str, rows: list[Row], gens: list[Generation], pick: Callable[[Row, Generation], str]) -> Score:
    passed = shown = passed_shown = 0
    for row, gen in zip(rows, gens, strict=True):
        text = pick(row, gen)
        ok = _passes(gen, row, text)
        passed += ok
        if text.strip():
            shown += 1
            passed_shown += ok
    return Score(name, len(rows), passed, shown, passed_shown, sum(g.truth_passes for g in gens))


def generate_all(services: Services, rows: list[Row], options: CompleteOptions,
                 on_row: Callable[[int, int], None] | None = None) -> list[Generation]:
    llm = services.complete_llm
    llm.load()
    gens = []
    wide = replace(options, max_lines=max(LINE_LIMITS))
    plain = plain_options(wide, wide.max_lines)
    for number, row in enumerate(rows, 1):
        prompt = fim_prompt(row.prefix, row.suffix, wide)
        started = time.perf_counter()
        raw, tokens, _ = generate(llm, prompt, row.prefix, wide)
        seconds = time.perf_counter() - started
        gen = Generation(row.task_id, row.kind, raw, tokens, seconds, llm.count_tokens(prompt) or 0,
                         runs(row.prefix + row.ground_truth + row.suffix, row.tests))
        if (baseline_prompt := fim_prompt(row.prefix, row.suffix, plain)) != prompt:
            gen.baseline = generate(llm, baseline_prompt, row.prefix, plain)[0]
        gens.append(gen)
        if on_row:
            on_row(number, len(rows))
    return gens


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def report(rows: list[Row], gens: list[Generation], options: CompleteOptions, split: str, seconds: float,
           model: str) -> dict:
    raw = score("raw (plain FIM, first line)", rows, gens,
                lambda r, g: (g.raw if g.baseline is None else g.baseline).split("\n")[0])
    product = score(f"complete ({settings_label(options)})", rows, gens,
                    lambda r, g: suggestion(r, g, options.max_lines, options.min_mean_logprob))
    sweep = [score(f"max_lines {n}, threshold {t}", rows, gens, lambda r, g, n=n, t=t: suggestion(r, g, n, t))
             for n in LINE_LIMITS for t in THRESHOLDS]
    latencies = sorted(g.seconds for g in gens)
    return {"model": model, "split": split, "rows": len(rows), "seconds": round(seconds, 1),
            "latency_p50_s": round(statistics.median(latencies), 3) if latencies else None,
            "latency_p95_s": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 3)
            if latencies else None,
            "prompt_tokens_p50": statistics.median(g.prompt_tokens for g in gens) if gens else None,
            "systems": [raw, product], "sweep": sweep}


def lines(result: dict) -> list[str]:
    head = (f"{result['rows']} rows ({result['split']} split), model {result['model']}, {result['seconds']} s; "
            f"generation p50 "
            f"{result['latency_p50_s']} s, p95 {result['latency_p95_s']} s; prompt tokens p50 "
            f"{result['prompt_tokens_p50']}")
    out = [head, "",
           "| system | pass@1 | pass when shown | shown | silence | ground truth passes |", "|---|---|---|---|---|---|"]
    for s in result["systems"]:
        out.append(f"| {s.system} | {_pct(s.pass_at_1)} ({s.passed}) | {_pct(s.pass_when_shown)} | {s.shown} | "
                   f"{_pct(s.silence)} | {s.truth_passed} |")
    out += ["", "Sweep over the same generations (choose on the tuning split):", "",
            "| settings | pass@1 | pass when shown | silence |", "|---|---|---|---|"]
    for s in result["sweep"]:
        out.append(f"| {s.system} | {_pct(s.pass_at_1)} | {_pct(s.pass_when_shown)} | {_pct(s.silence)} |")
    return out


def to_json(result: dict) -> dict:
    def one(s: Score) -> dict:
        return {"system": s.system, "rows": s.rows, "pass_at_1": round(s.pass_at_1, 4),
                "pass_when_shown": round(s.pass_when_shown, 4), "shown": s.shown, "silence": round(s.silence, 4),
                "ground_truth_passes": s.truth_passed}

    return {**result, "systems": [one(s) for s in result["systems"]], "sweep": [one(s) for s in result["sweep"]]}


def write_rows(path: Path, gens: list[Generation]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for g in gens:
            f.write(json.dumps({"task_id": g.task_id, "kind": g.kind, "raw": g.raw, "seconds": round(g.seconds, 3),
                                "prompt_tokens": g.prompt_tokens, "truth_passes": g.truth_passes,
                                "tokens": g.tokens}) + "\n")
