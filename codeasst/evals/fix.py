"""`codeasst eval fix DATA.jsonl`: ways to fix lint, scored on the same rows in one run.

- `none`: the code returned unchanged, the floor: it is kept and AST-unchanged by
  construction, and clean only where the row's code already is;
- `autopep8`: `autopep8 -a -a` alone, the deterministic baseline;
- `raw`: the model with the CodeLinterEval-style prompt (prompts/fix.toml, no hints),
  its answer taken as is, without any check;
- `pipeline`: `codeasst fix` itself (codeasst.fixing.pipeline).

A row (lintfix_dev.jsonl): {"task_id", "code", "feedback", "test_setup_code", "tests"}.
Scores per system: clean (flake8 with its default rules reports nothing, as
CodeLinterEval scores), kept (fixed code + test_setup_code + tests runs without
error in a subprocess), AST unchanged (on rows whose diagnostics are all layout
codes, the fix left the AST as it was), and mean seconds per row.
"""

from __future__ import annotations

import ast
import contextlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst import prompt
from codeasst.errors import CodeasstError, UsageError
from codeasst.evals import sandbox
from codeasst.fixing.codes import is_style
from codeasst.fixing.equivalence import canonical_dump
from codeasst.fixing.pipeline import FixOptions, fix_source
from codeasst.fixing.units import Unit, ask_for_code, extract_code
from codeasst.lint import Linter, LinterError
from codeasst.services import Services

SYSTEMS = ("none", "autopep8", "raw", "pipeline")
_USES_MODEL = frozenset({"raw", "pipeline"})
FIELDS = ("task_id", "code", "feedback", "test_setup_code", "tests")


@dataclass
class RowResult:
    task_id: str
    system: str
    fixed: str
    seconds: float
    clean: bool = False
    kept: bool = False
    style_only: bool = False
    ast_same: bool | None = None  # only for style-only rows
    remaining: list[str] = field(default_factory=list)
    error: str = ""
    llm_calls: int = 0


@dataclass
class SystemScore:
    system: str
    rows: int
    clean: float
    kept: float
    style_rows: int
    ast_unchanged: float | None
    mean_s: float
    llm_calls: int  # model calls in all; the pipeline asks only for what rules could not fix
    not_clean: list[str]
    not_kept: list[str]


@dataclass
class FixEvalReport:
    data: str
    rows: int
    systems: list[SystemScore]
    wall_s: float
    sandbox: str = ""  # how the "kept" checks ran the fixed code (sandbox.isolation's note)
    splits: dict[str, int] = field(default_factory=dict)  # rows per `split` mark ("unmarked" for none)

    def to_json(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        marks = ", ".join(f"{name} {n}" for name, n in self.splits.items())
        unmarked = " (unmarked rows: nothing says whether fix was developed on them)" if "unmarked" in self.splits else ""
        out = [f"{self.rows} rows from {self.data}; {self.wall_s:.0f} s in all", f"splits: {marks}{unmarked}",
               f"kept checks: {self.sandbox}",
               "| system | clean | kept | AST unchanged (style-only rows) | mean s/row | model calls |",
               "|---|---|---|---|---|---|"]
        for s in self.systems:
            ast_same = f"{s.ast_unchanged:.1%} of {s.style_rows}" if s.ast_unchanged is not None else "-"
            out.append(f"| {s.system} | {s.clean:.1%} | {s.kept:.1%} | {ast_same} | {s.mean_s:.2f} | {s.llm_calls} |")
        return out


def load_rows(path: Path, limit: int | None = None) -> list[dict]:
    try:
        raw = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    rows = []
    for number, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON: {exc.msg}") from None
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise UsageError(f"{path}:{number}: missing {', '.join(missing)}")
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return rows


def _codes(feedback: str) -> set[str]:
    return {line.split(":", 1)[0].strip() for line in feedback.splitlines() if ":" in line}


def _none(row: dict, **_: object) -> tuple[str, int]:
    return row["code"], 0


def _autopep8(row: dict, **_: object) -> tuple[str, int]:
    import autopep8  # deferred: only this system needs it

    return autopep8.fix_code(row["code"], options={"aggressive": 2}), 0


def _raw(row: dict, services: Services, **_: object) -> tuple[str, int]:
    messages = prompt.load("fix").messages(code=row["code"], feedback=row["feedback"].strip(), hints="")
    reply = ask_for_code(services.llm, messages, max(256, int(len(row["code"]) / 2.5) + 128))
    extracted = extract_code(reply, Unit(1, 1, "code", None))
    return (extracted.code if extracted else row["code"]), 1


def _pipeline(row: dict, services: Services, linter: Linter, options: FixOptions, **_: object) -> tuple[str, int]:
    result = fix_source(row["code"], linter, llm=lambda: services.llm, options=options, name=linter.display_name)
    return result.fixed, result.llm_calls


_RUNNERS: dict[str, Callable[..., tuple[str, int]]] = {
    "none": _none, "autopep8": _autopep8, "raw": _raw, "pipeline": _pipeline,
}


def _kept(row: dict, fixed: str, workdir: Path, timeout_s: float) -> bool:
    program = "\n".join([fixed, row["test_setup_code"], *row["tests"], ""])
    script = workdir / "kept_check.py"
    script.write_text(program, encoding="utf-8")
    return sandbox.run_python([str(script)], cwd=workdir, timeout_s=timeout_s).ok  # the raw model's code, too


def _ast_same(before: str, after: str) -> bool:
    try:
        return canonical_dump(ast.parse(before)) == canonical_dump(ast.parse(after))
    except SyntaxError:
        return False


def evaluate(services: Services, data: Path, *, systems: Sequence[str] = SYSTEMS, limit: int | None = None,
             options: FixOptions | None = None, out: Path | None = None, test_timeout_s: float = 10.0,
             progress: Callable[[str, int, int, RowResult], None] | None = None) -> FixEvalReport:
    """Run each system over the rows, score them, and write per-row results to `out` (JSONL) if given."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise UsageError(f"unknown system {unknown[0]!r}; choose from {', '.join(SYSTEMS)}")
    rows = load_rows(data, limit)
    started = time.perf_counter()
    if _USES_MODEL.intersection(systems):
        services.llm.load()  # outside the per-row timings
    scores = []
    with tempfile.TemporaryDirectory(prefix="codeasst-eval-fix-") as tmp, \
            (out.open("w", encoding="utf-8") if out else contextlib.nullcontext()) as sink:
        workdir = Path(tmp)
        # --isolated in an empty directory: flake8's default rules, as the benchmark scores.
        linter = Linter(workdir, "row.py", isolated=True, timeout_s=120)
        for system in systems:
            done = []
            for i, row in enumerate(rows):
                t0 = time.perf_counter()
                try:
                    (fixed, calls), error = _RUNNERS[system](row, services=services, linter=linter,
                                                             options=options or FixOptions()), ""
                except CodeasstError as exc:  # a row one system cannot handle is scored as unfixed
                    fixed, calls, error = row["code"], 0, exc.one_line()
                result = RowResult(row["task_id"], system, fixed, time.perf_counter() - t0, error=error,
                                   llm_calls=calls)
                _score(row, result, linter, workdir, test_timeout_s)
                done.append(result)
                if sink:
                    sink.write(json.dumps(asdict(result)) + "\n")
                    sink.flush()
                if progress:
                    progress(system, i + 1, len(rows), result)
            scores.append(_summary(system, done))
    splits = dict(Counter(str(row.get("split", "unmarked")) for row in rows))
    return FixEvalReport(str(data), len(rows), scores, time.perf_counter() - started, sandbox.isolation().note,
                         splits)


def _score(row: dict, result: RowResult, linter: Linter, workdir: Path, timeout_s: float) -> None:
    try:
        diags = linter.check(result.fixed)
    except LinterError:
        diags = None  # flake8 crashed on this text: not clean
    result.clean = diags == []
    result.remaining = [f"{d.code} {d.line}" for d in diags or []]
    result.kept = _kept(row, result.fixed, workdir, timeout_s)
    result.style_only = all(is_style(c) for c in _codes(row["feedback"]))
    if result.style_only:
        result.ast_same = _ast_same(row["code"], result.fixed)


def _summary(system: str, results: list[RowResult]) -> SystemScore:
    n = len(results) or 1
    style = [r for r in results if r.style_only]
    return SystemScore(
        system=system, rows=len(results),
        clean=sum(r.clean for r in results) / n, kept=sum(r.kept for r in results) / n,
        style_rows=len(style),
        ast_unchanged=sum(bool(r.ast_same) for r in style) / len(style) if style else None,
        mean_s=sum(r.seconds for r in results) / n, llm_calls=sum(r.llm_calls for r in results),
        not_clean=[r.task_id for r in results if not r.clean], not_kept=[r.task_id for r in results if not r.kept],
    )
