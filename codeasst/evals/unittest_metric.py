"""`codeasst eval unittest REPO`: completion scored by a real repository's own tests.

REPO is a directory with a pytest suite (a git checkout, an unpacked sdist) or NAME==VERSION,
whose sdist is fetched from PyPI once (packages.fetch). In a temporary copy of it:
1. its tests run once, traced (pytest_reach.py): which lines of the package each passing test runs;
2. a stable sample of the functions those tests reach (`--limit`, `--seed`) is taken, and in each,
   one statement line they run is masked (masking.py);
3. the file, that line emptied to its indentation and the cursor there, goes to the systems below;
   each answer is put in the line and the tests that run the line are run (fresh interpreter,
   `-I`, a timeout). A row passes when they pass.

Systems, on the same rows:
- `ground truth`: the line as it was. It must pass; a row where it does not is dropped (and counted):
  the tests are flaky, or need what the copy lacks;
- `deleted`: the line left empty. A row where that passes too is dropped (and counted): its tests
  do not notice the statement, so it cannot tell a good completion from a bad one;
- `raw`: the model with a plain FIM prompt (PSM), its first line, once with the product's suffix
  budget and once with its own (eval fim's baselines);
- `complete`: `codeasst complete` itself (`complete_at`): its pre-request gate, stops, statement cut
  and confidence gate. Silence counts as a fail for pass@1.
Generation is bounded by tokens, not time (eval fim's eval_options).
The two sanity rows are scored over every masked row, the two models over the rows kept.

The repository's tests and the model's code are run here, because the user asked for this
evaluation of that repository; the product itself never runs model output.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import random
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst.complete.fim import CompleteOptions, fim_prompt
from codeasst.errors import CodeasstError, UsageError
from codeasst.evals import sandbox
from codeasst.evals.fim import (
    OWN_SUFFIX_TOKENS,
    Score,
    _pct,
    _percentile,
    eval_options,
    first_line,
    plain_options,
    settings_label,
)
from codeasst.evals.masking import Function, Masked, functions, mask
from codeasst.evals.packages import REQUIREMENT, fetch, import_root
from codeasst.services import Services

_COPY_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".tox", ".nox", ".venv", "venv", ".eggs",
                                      "build", "dist", ".pytest_cache", ".mypy_cache")
_NOT_SOURCE = {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "bench"}
# The test process: no plugins from codeasst's own environment (they would load with every run and
# are not the repository's), and its own HOME so nothing the tests write lands in the user's.
_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # added to the sandbox's minimal environment


@dataclass
class Row:
    """One masked statement and what each system made of it."""

    file: str
    function: str
    line: int
    statement: str
    tests: list[str]  # node ids of the passing tests that run the line
    function_tests: int  # passing tests that run any line of the function that may be masked
    truth_passes: bool = False
    deleted_passes: bool = False
    raw: str = ""  # the bare model, with the product's suffix budget
    raw_passes: bool = False
    raw_ms: float = 0.0
    raw_own: str = ""  # the bare model, with its own (the whole suffix)
    raw_own_passes: bool = False
    text: str = ""  # `complete`'s suggestion ("" for silence)
    reason: str = ""  # why it was silent
    complete_raw: str = ""  # what the model wrote for `complete`, before its cut
    passes: bool = False
    latency_ms: float = 0.0
    mean_logprob: float | None = None

    @property
    def status(self) -> str:
        if not self.truth_passes:
            return "dropped: the ground truth fails"
        return "dropped: the tests do not notice" if self.deleted_passes else "scored"


@dataclass
class SystemScore(Score):
    sanity: bool = False  # the ground truth or the deletion: nothing is shown or silent
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


@dataclass
class Work:
    """The repository's copy, where each row's file is changed, tested and put back."""

    root: Path
    paths: list[str]  # sys.path entries for the tests: the package's import root first
    ini: Path  # an empty pytest config: a package's own may need plugins (--cov) that are not here
    tests: list[str]  # pytest arguments for the whole suite
    timeout_s: float
    runs: int = 0
    _cache: dict[tuple[str, str, tuple[str, ...]], bool] = field(default_factory=dict)

    def pytest(self, args: list[str], timeout_s: float, trace: list[str] | None = None) -> tuple[int, str, dict]:
        """pytest's exit status, what went wrong in one line, and what pytest_reach recorded."""
        with tempfile.TemporaryDirectory(prefix="codeasst-pytest-") as tmp:
            spec, out = Path(tmp) / "spec.json", Path(tmp) / "out.json"
            spec.write_text(json.dumps({"paths": self.paths, "trace": trace, "out": str(out),
                                        "args": ["-q", "-p", "no:cacheprovider", "-c", str(self.ini),
                                                 "--rootdir", str(self.root), *args]}), encoding="utf-8")
            self.runs += 1
            # The package's tests and the model's line run sandboxed; they may write in the copy and in tmp.
            ran = sandbox.run_python([str(sandbox.PYTEST_RUNNER), str(spec)], cwd=self.root, timeout_s=timeout_s,
                                     writable=[Path(tmp)], env=_ENV)
            if ran.timed_out:
                return -1, f"timed out after {timeout_s:.0f} s", {}
            return ran.returncode, _reason(ran.stdout + ran.stderr), \
                json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}

    def passes(self, file: str, program: str, tests: list[str]) -> bool:
        """Whether `tests` pass with `program` as `file` (the file is put back after)."""
        key = (file, program, tuple(tests))
        if key not in self._cache:
            path = self.root / file
            original = path.read_bytes()
            try:
                path.write_text(program, encoding="utf-8")
                self._cache[key] = self.pytest(["-x", *tests], self.timeout_s)[0] == 0
            finally:
                path.write_bytes(original)
        return self._cache[key]


def _reason(output: str) -> str:
    """The line of pytest's output that says what went wrong: an error, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.removeprefix("E ").strip() for line in lines if line.startswith(("E ", "ERROR:"))]
    return (errors or lines or ["no output"])[-1]


def resolve(repo: str) -> tuple[Path, str]:
    """The repository's folder and its label: a directory as given, or NAME==VERSION from PyPI."""
    if REQUIREMENT.fullmatch(repo):
        return fetch(repo), repo
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise UsageError(f"{repo} is neither a directory nor NAME==VERSION (a release on PyPI)")
    return path.resolve(), str(path)


def _is_source(rel: Path) -> bool:
    name = rel.name
    return not (any(part.startswith(".") or part in _NOT_SOURCE for part in rel.parts[:-1])
                or name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "setup.py"))


def prepare(folder: Path, tests: str | None, tmp: Path, timeout_s: float) -> Work:
    """The copy of `folder` under `tmp`, with the pytest arguments of its suite."""
    root = tmp / "repo"
    shutil.copytree(folder, root, ignore=_COPY_IGNORE)
    ini = tmp / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    args = shlex.split(tests) if tests else [d for d in ("tests", "test") if (root / d).is_dir()][:1] or ["."]
    return Work(root, [str(import_root(root))], ini, args, timeout_s)


def sources(work: Work) -> dict[str, str]:
    """The package's own .py files (not its tests), relative to the copy, with their text."""
    top = Path(work.paths[0])
    found = {}
    for path in sorted(top.rglob("*.py")):
        rel = path.relative_to(top)
        if _is_source(rel):
            try:
                found[path.relative_to(work.root).as_posix()] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # not UTF-8: `complete` would refuse it anyway
    return found


def reach(work: Work, files: list[str]) -> tuple[dict[str, str], dict[tuple[str, int], list[str]]]:
    """Every test's outcome, and the passing tests that run each line of `files`."""
    trace = [str(work.root / f) for f in files]
    # The whole suite, traced, may take a while: ten times one row's limit, at least five minutes.
    timeout_s = max(10 * work.timeout_s, 300.0)
    code, tail, data = work.pytest(["--continue-on-collection-errors", *work.tests], timeout_s, trace)
    if code == 5 or (code in (0, 1) and not data.get("tests")):
        raise UsageError(f"no tests collected (pytest {' '.join(work.tests)}): {tail}",
                         hint="give the suite's pytest arguments with --tests")
    if code == 4:
        raise UsageError(f"pytest refused its arguments ({' '.join(work.tests)}): {tail}")
    if code not in (0, 1) or not data:
        raise CodeasstError(f"the repository's tests did not run (pytest exit status {code}): {tail}")
    outcomes, lines = {}, {}
    prefix = len(str(work.root)) + 1
    for node, test in data["tests"].items():
        outcomes[node] = test["outcome"]
        if test["outcome"] == "passed":
            for file, numbers in test["lines"].items():
                for number in numbers:
                    lines.setdefault((file[prefix:], number), []).append(node)
    return outcomes, lines


def own_functions(texts: dict[str, str], outcomes: dict[str, str]) -> list[Function]:
    """The functions of `texts` but for those in files that hold tests: a test file given by a name
    pytest would not collect by itself (`--tests checks.py`) is told apart by its node ids."""
    test_files = {node.split("::")[0] for node in outcomes}
    return [f for file, text in texts.items() if file not in test_files for f in functions(text, file)]


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def reached(found: list[Function], lines: dict[tuple[str, int], list[str]]) -> list[Function]:
    """The functions where a passing test runs a line that may be masked."""
    return [f for f in found if any((f.file, n) in lines for n in f.statements)]


def select(found: list[Function], lines: dict[tuple[str, int], list[str]], limit: int | None,
           seed: int) -> list[tuple[Function, int, list[str], int]]:
    """A stable sample of the functions the tests reach: each with its masked line, the tests that run
    that line, and how many tests run any maskable line of it. The same seed gives the same sample."""
    picked = []
    for f in sorted(reached(found, lines), key=lambda f: _rank(seed, f.key))[:limit]:
        run = [n for n in f.statements if (f.file, n) in lines]
        line = random.Random(_rank(seed, f.key)).choice(run)
        picked.append((f, line, sorted(lines[(f.file, line)]),
                       len({t for n in run for t in lines[(f.file, n)]})))
    return picked


def _raw(services: Services, masked: Masked, suffix_tokens: int, max_tokens: int) -> tuple[str, float]:
    """The baseline: a plain FIM prompt with `suffix_tokens` of suffix, the model's first line."""
    plain = plain_options(CompleteOptions(max_tokens=max_tokens), suffix_tokens)
    started = time.perf_counter()
    text = first_line(services.complete_llm, fim_prompt(masked.prefix, masked.suffix, plain), max_tokens)
    return text, (time.perf_counter() - started) * 1000


def test_piece(work: Work, node_id: str) -> tuple[str, str, int] | None:
    """(the test's file, its text, the test function's last line) for a pytest node id; None when the
    function cannot be found (a parametrised id, a test from a plugin)."""
    file, _, rest = node_id.partition("::")
    *classes, name = rest.split("[")[0].split("::")
    try:
        text = (work.root / file).read_text(encoding="utf-8")
        scope: ast.AST = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    for part in [*classes, name]:  # many classes of one file have a `test_basic`
        scope = next((node for node in getattr(scope, "body", [])
                      if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == part),
                     None)
        if scope is None:
            return None
    return file, text, scope.end_lineno or scope.lineno


def came_from_test(work: Work, row: Row, masked: Masked, options: CompleteOptions) -> dict | None:
    """Other files' context as the server builds it for a user who comes to the masked line from
    writing the first test that runs it: that test's end is the cursor its ring buffer keeps."""
    from codeasst.complete.context import RecentFiles
    from codeasst.tasks.complete import other_files

    piece = test_piece(work, row.tests[0]) if row.tests else None
    if piece is None:
        return None
    ring = RecentFiles()
    ring.visit(*piece)
    ring.visit(row.file, masked.text, masked.line)
    return other_files(work.root, masked.text, row.file, options, prefix=masked.prefix, recent=ring.context(row.file))


def score_row(services: Services, work: Work, row: Row, source: str, options: CompleteOptions,
              recent_tests: bool = False) -> None:
    """Run the sanity checks, then, on a row they keep, both systems. `recent_tests`: `complete`'s ring
    buffer holds the end of the first test that runs the line (came_from_test)."""
    from codeasst.tasks.complete import complete_at

    masked = mask(source, row.line)
    row.truth_passes = work.passes(row.file, masked.fill(masked.statement), row.tests)
    row.deleted_passes = work.passes(row.file, masked.fill(""), row.tests)
    if row.status != "scored":
        return  # nothing the models write could be told apart here: no need to ask them
    # Both prompts start with the same prefix: each system starts from a cache that holds none of it,
    # so that its latency is that of a first request here, not one the other system's request sped up.
    services.complete_llm.warm("\n")
    row.raw, row.raw_ms = _raw(services, masked, options.suffix_tokens, options.max_tokens)
    row.raw_own = _raw(services, masked, OWN_SUFFIX_TOKENS, options.max_tokens)[0]
    services.complete_llm.warm("\n")
    context = came_from_test(work, row, masked, options) if recent_tests else None
    suggestion = complete_at(services, masked.text, masked.line, masked.col, row.file, options, root=work.root,
                             context=context)
    row.text, row.reason, row.latency_ms = suggestion.text, suggestion.reason, suggestion.latency_ms
    row.mean_logprob, row.complete_raw = suggestion.mean_logprob, suggestion.raw

    # Silence leaves the line empty: the deletion, which fails on every row kept (and is not run again).
    row.raw_passes, row.raw_own_passes, row.passes = (work.passes(row.file, masked.fill(text), row.tests)
                                                      for text in (row.raw, row.raw_own, row.text))


def evaluate(services: Services, repo: str, *, tests: str | None = None, limit: int | None = 20, seed: int = 0,
             test_timeout_s: float = 60.0, options: CompleteOptions | None = None, recent_tests: bool = False,
             on_note: Callable[[str], None] | None = None, on_row: Callable[[int, int, Row], None] | None = None
             ) -> dict:
    """Trace the repository's tests, mask a sample of the functions they reach, score each system."""
    from codeasst.tasks.complete import options_from

    if importlib.util.find_spec("pytest") is None:
        raise UsageError("eval unittest runs the repository's tests with pytest, which is not installed",
                         hint="pip install pytest; it is in codeasst's dev extra")
    folder, label = resolve(repo)
    options = eval_options(services, options or options_from(services))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codeasst-eval-unittest-") as tmp:
        work = prepare(folder, tests, Path(tmp), test_timeout_s)
        texts = sources(work)
        if not texts:
            raise UsageError(f"{label}: no Python source files outside its tests")
        outcomes, lines = reach(work, list(texts))
        found = own_functions(texts, outcomes)
        passed = sum(o == "passed" for o in outcomes.values())
        if on_note:
            on_note(f"{len(outcomes)} tests, {passed} passed; {len(found)} functions in {len(texts)} files")
        picked = select(found, lines, limit, seed)
        if not picked:
            raise CodeasstError(f"{label}: no passing test runs a statement that could be masked")
        services.complete_llm.load()  # outside the latencies
        rows = []
        for number, (function, line, reached_by, function_tests) in enumerate(picked, 1):
            text = texts[function.file]
            row = Row(function.file, function.qualname, line, mask(text, line).statement, reached_by, function_tests)
            score_row(services, work, row, text, options, recent_tests)
            rows.append(row)
            if on_row:
                on_row(number, len(picked), row)
    statuses = [r.status for r in rows]
    return {"repo": label, "model": services.complete_llm.name, "tests": work.tests, "seed": seed,
            "seconds": round(time.perf_counter() - started, 1),
            "tests_found": len(outcomes), "tests_passed": passed, "functions": len(found),
            "functions_reached": len(reached(found, lines)), "masked": len(rows),
            "dropped_unnoticed": statuses.count("dropped: the tests do not notice"),
            "dropped_truth_fails": statuses.count("dropped: the ground truth fails"),
            "scored": statuses.count("scored"), "test_runs": work.runs, "sandbox": sandbox.isolation().note,
            "settings": settings_label(options) + (", ring: the test" if recent_tests else ""),
            "systems": systems(rows), "rows": rows}


def _score(name: str, rows: list[Row], pick: Callable[[Row], tuple[str, bool]],
           latency: Callable[[Row], float] | None = None) -> SystemScore:
    picks = [pick(r) for r in rows]
    shown = [ok for text, ok in picks if text.strip()]
    ms = [latency(r) for r in rows] if latency else []
    return SystemScore(name, len(rows), sum(ok for _, ok in picks), len(shown), sum(shown),
                       sum(r.truth_passes for r in rows), sanity=latency is None, latency_p50_ms=_percentile(ms, 0.5),
                       latency_p95_ms=_percentile(ms, 0.95))


def systems(rows: list[Row]) -> list[SystemScore]:
    """The sanity rows over every masked row, the models over the rows kept."""
    kept = [r for r in rows if r.status == "scored"]
    return [_score("ground truth (the line as it was)", rows, lambda r: (r.statement, r.truth_passes)),
            _score("deleted (the line left empty)", rows, lambda r: ("", r.deleted_passes)),
            _score("raw (plain FIM, first line), the product's suffix", kept, lambda r: (r.raw, r.raw_passes),
                   lambda r: r.raw_ms),
            _score(f"raw (plain FIM, first line), its own suffix (up to {OWN_SUFFIX_TOKENS} tokens)", kept,
                   lambda r: (r.raw_own, r.raw_own_passes)),
            _score("complete", kept, lambda r: (r.text, r.passes), lambda r: r.latency_ms)]


def lines(result: dict) -> list[str]:
    head = (f"{result['repo']}: {result['tests_found']} tests ({result['tests_passed']} pass), "
            f"{result['functions']} functions, {result['functions_reached']} reached by a passing test; "
            f"{result['masked']} masked, {result['dropped_unnoticed']} dropped as the tests do not notice the "
            f"line, {result['dropped_truth_fails']} as the ground truth fails; {result['scored']} scored. "
            f"{result['test_runs']} test runs, {result['seconds']} s; model {result['model']}; "
            f"complete: {result['settings']}.")
    out = [head, f"tests ran: {result['sandbox']}", "", "| system | rows | pass@1 | pass when shown | shown | silence | p50 ms | p95 ms |",
           "|---|---|---|---|---|---|---|---|"]
    for s in result["systems"]:
        shown = ("-", "-", "-") if s.sanity else (_pct(s.pass_when_shown), s.shown, _pct(s.silence))
        ms = ["-" if v is None else v for v in (s.latency_p50_ms, s.latency_p95_ms)]
        out.append(f"| {s.system} | {s.rows} | {_pct(s.pass_at_1)} ({s.passed}) | {' | '.join(map(str, shown))} | "
                   f"{ms[0]} | {ms[1]} |")
    return out


def to_json(result: dict) -> dict:
    def one(s: SystemScore) -> dict:
        shown = {"pass_when_shown": None, "shown": None, "silence": None} if s.sanity else {
            "pass_when_shown": round(s.pass_when_shown, 4), "shown": s.shown, "silence": round(s.silence, 4)}
        return {"system": s.system, "rows": s.rows, "pass_at_1": round(s.pass_at_1, 4), "passed": s.passed,
                **shown, "latency_p50_ms": s.latency_p50_ms, "latency_p95_ms": s.latency_p95_ms}

    return {**{k: v for k, v in result.items() if k != "rows"}, "systems": [one(s) for s in result["systems"]]}


def write_rows(path: Path, rows: list[Row]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            data = asdict(row)
            data["status"] = row.status
            data["raw_ms"], data["latency_ms"] = round(row.raw_ms, 1), round(row.latency_ms, 1)
            f.write(json.dumps(data) + "\n")
