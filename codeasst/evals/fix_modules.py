"""`codeasst eval fix-modules SET`: ways to fix lint, scored on whole files of real packages.

The MBPP-sized rows of `eval fix` cannot show what a fixer does to a real module: imports
that look unused but re-export, `#:` comments Sphinx reads, long docstrings, the package's
own flake8 config and tests. Here every file of a set is fixed by every system in one run,
inside a copy of its package, and scored on:

- clean: flake8 with the package's own config (else flake8's defaults) reports nothing;
  the findings left are counted too. A noqa comment the system added silences a finding
  without fixing it, so those are counted apart (`silenced`: findings flake8 reports with
  --disable-noqa after the fix beyond those the file's own comments silenced before), and
  clean is also reported with them counted as left (`clean_without_noqa`);
- names kept: no public top-level name is lost (module_checks.names_lost on the AST) and,
  where the module imports in a fresh interpreter before the fix, `dir(module)` loses no
  public name after it;
- docs kept: module_checks.docs_changed finds nothing;
- tests: the package's own tests (the pytest arguments the set gives) pass with the fixed
  file in place; n/a where they do not pass before the fix (the baseline, run first);
- seconds to fix the file; the report gives the median per system.

Systems: `none` (unchanged: the floor), `autopep8` (`autopep8 -a -a FILE`, which reads the
package's config itself), `ruff` (`ruff check --fix` then `ruff format`, at the package's flake8
line length), and `pipeline` (codeasst.fixing.pipeline.fix_source, as `codeasst fix` runs it).

A set is a TOML file of packages, and may say of itself `split = "tune"` (fix was developed on
it: its figures are in-sample) or `split = "test"` (held out); the report's header repeats it:

    [[package]]
    name = "requests"
    version = "2.19.1"                        # its sdist, fetched from the package index (no setup.py run)
    files = ["requests/__init__.py"]          # relative to the sdist's top folder
    deps = ["chardet==3.0.4"]                 # sdists put on sys.path for the import check and tests
    tests = ["tests/test_hooks.py"]           # pytest arguments, run in the top folder
    why = "re-exports; #: comments"

A package on disk gives `path` (relative to the TOML file) instead of `version`. A directory
given instead of a TOML file is one such package: all its .py files, no tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from codeasst.errors import CodeasstError, UsageError
from codeasst.evals import module_checks, sandbox
from codeasst.evals.packages import PackageSpec, fetch, import_root, line_length, load_set, split_of
from codeasst.fixing.pipeline import FixOptions, fix_source
from codeasst.lint import Linter, LinterError, find_config
from codeasst.services import Services

SYSTEMS = ("none", "autopep8", "ruff", "pipeline")
TOOL_TIMEOUT_S = 300
# Prints the public names of a module imported in a fresh interpreter, with only the given paths added.
_DIR_PROBE = ("import importlib, json, sys, warnings; warnings.simplefilter('ignore'); "
              "sys.path[:0] = json.loads(sys.argv[2]); module = importlib.import_module(sys.argv[1]); "
              "print(json.dumps(sorted(n for n in dir(module) if not n.startswith('_'))))")


@dataclass
class FileResult:
    package: str
    file: str
    system: str
    seconds: float
    before: int  # flake8 findings before the fix
    left: int = 0
    left_codes: dict[str, int] = field(default_factory=dict)  # the findings left, by code
    clean: bool = False
    silenced: int = 0  # findings silenced by noqa comments the system added, not fixed
    silenced_codes: dict[str, int] = field(default_factory=dict)
    names_lost: list[str] = field(default_factory=list)
    import_checked: bool = False  # the module imported before the fix, so dir() was compared too
    docs_changed: list[str] = field(default_factory=list)
    tests: bool | None = None  # None: no baseline to compare with
    llm_calls: int = 0
    error: str = ""  # the system failed on this file; it is scored as left unchanged


@dataclass
class PackageRun:
    name: str
    version: str
    files: int
    flake8_config: str  # the config file flake8 read, or "defaults"
    imports: int  # files whose module imported before the fix
    tests: str  # what the baseline test run said, or why there is none


@dataclass
class SystemSummary:
    system: str
    files: int
    clean: int
    left: int
    silenced: int  # findings hidden by noqa comments the system added: left, not fixed
    clean_without_noqa: int  # files clean with those counted as left
    names_kept: int
    docs_kept: int
    tests_passed: int
    tests_run: int
    p50_s: float
    max_s: float
    llm_calls: int
    errors: int


@dataclass
class ModulesReport:
    data: str
    model: str  # "off" for --no-llm
    findings_before: int
    packages: list[PackageRun]
    systems: list[SystemSummary]
    files: list[FileResult]
    wall_s: float
    sandbox: str = ""  # how the packages' own code and tests ran (sandbox.isolation's note)
    split: str = ""  # what the set says of itself: developed on (in-sample) or held out

    def to_json(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        """The report as Markdown: per system, per package, then per file and system."""
        label = {"pipeline": "pipeline" if self.model != "off" else "pipeline --no-llm"}
        files = len(self.files) // max(1, len(self.systems))
        out = [(f"{files} files from {len(self.packages)} packages in {self.data}; model: {self.model}; "
                f"{self.wall_s:.0f} s in all"), f"split: {self.split}", f"imports and tests: {self.sandbox}", "",
               (f"| system | clean | clean, noqa added counted as left | findings left (of {self.findings_before}) "
                "| silenced by noqa added | public names kept | docs kept | package tests pass | p50 s | max s "
                "| model calls |"), "|---" * 11 + "|"]
        for s in self.systems:
            tests = f"{s.tests_passed}/{s.tests_run}" if s.tests_run else "n/a"
            out.append(f"| {label.get(s.system, s.system)} | {s.clean}/{s.files} | {s.clean_without_noqa}/{s.files} "
                       f"| {s.left} | {s.silenced} | {s.names_kept}/{s.files} | {s.docs_kept}/{s.files} | {tests} "
                       f"| {s.p50_s:.2f} | {s.max_s:.2f} | {s.llm_calls} |")
        out += ["", "| package | files | flake8 config | files importable alone | tests before any fix |",
                "|---|---|---|---|---|"]
        out += [f"| {p.name} {p.version} | {p.files} | {p.flake8_config} | {p.imports} | {p.tests} |"
                for p in self.packages]
        out += ["", "| file | system | findings left | public names | docs | tests | s |", "|---|---|---|---|---|---|---|"]
        for r in self.files:
            names = "kept" if not r.names_lost else _some(f"lost {len(r.names_lost)}", r.names_lost)
            docs = "kept" if not r.docs_changed else _some(f"changed {len(r.docs_changed)}", r.docs_changed)
            tests = {True: "pass", False: "FAIL", None: "n/a"}[r.tests]
            left = f"{r.left} of {r.before}" + (f", {r.silenced} silenced by noqa" if r.silenced else "") \
                + (f" (error: {r.error})" if r.error else "")
            out.append(f"| {r.file} | {label.get(r.system, r.system)} | {left} | {names}"
                       f"{'' if r.import_checked else ' (AST only)'} | {docs} | {tests} | {r.seconds:.2f} |")
        return out


def _some(head: str, items: list[str], shown: int = 3) -> str:
    more = f", +{len(items) - shown}" if len(items) > shown else ""
    return f"{head}: {', '.join(items[:shown])}{more}".replace("|", "\\|")


@dataclass
class _Package:
    spec: PackageSpec
    work: Path  # a copy of the package's tree; each fixed file is put in place here, then put back
    paths: list[str]  # sys.path entries for the import check and the tests: the package's, then its deps'
    ini: Path  # an empty pytest config: old packages' own are for old pytest (six 1.10's is an error to pytest 9)
    tests_ok: bool = False

    def module_name(self, file: str) -> str | None:
        try:
            parts = list((self.work / file).relative_to(self.paths[0]).with_suffix("").parts)
        except ValueError:
            return None
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None

    def public_dir(self, module: str) -> set[str] | None:
        """Public names of the module imported in a fresh, sandboxed interpreter; None if it does not import."""
        ran = sandbox.run_python(["-c", _DIR_PROBE, module, json.dumps(self.paths)], cwd=self.ini.parent,
                                 timeout_s=120)
        if not ran.ok or not ran.stdout.strip():
            return None
        return set(json.loads(ran.stdout.strip().splitlines()[-1]))

    def run_tests(self, timeout_s: float) -> tuple[bool, str]:
        """The package's own tests, sandboxed (its code and tests are not ours): pass, and pytest's last line."""
        with tempfile.TemporaryDirectory(prefix="codeasst-pytest-") as tmp:
            spec = Path(tmp) / "spec.json"
            spec.write_text(json.dumps({"paths": self.paths, "trace": None, "out": None, "args": [
                "-x", "-q", "-p", "no:cacheprovider", "-c", str(self.ini), "--rootdir", str(self.work),
                *self.spec.tests]}), encoding="utf-8")
            ran = sandbox.run_python([str(sandbox.PYTEST_RUNNER), str(spec)], cwd=self.work, timeout_s=timeout_s,
                                     env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        if ran.timed_out:
            return False, f"timed out after {timeout_s:.0f} s"
        lines = [line.strip("= ") for line in ran.stdout.splitlines() if line.strip()]
        return ran.ok, (lines[-1] if lines else f"pytest exit status {ran.returncode}")


@dataclass
class _Context:
    services: Services
    package: _Package
    path: Path
    name: str
    text: str
    encoding: str
    linter: Linter
    line_length: int
    use_llm: bool
    silenced_before: Counter[str]  # what the file's own noqa comments hid before any fix


def _run(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    """A fixer's stdout; a one-line CodeasstError when it cannot run or fails."""
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise CodeasstError(f"{argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise CodeasstError(f"{Path(argv[0]).name} took longer than {TOOL_TIMEOUT_S} s") from None
    if proc.returncode not in ok:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CodeasstError(f"{Path(argv[0]).name} {argv[1]} failed: {last}")
    return proc.stdout


def _none(ctx: _Context) -> tuple[str, int]:
    return ctx.text, 0


def _autopep8(ctx: _Context) -> tuple[str, int]:
    # The command line rather than autopep8.fix_code: it reads the package's config, as a user would get.
    # --global-config: the user's own ~/.config/pycodestyle must not change the figures.
    out = _run([sys.executable, "-m", "autopep8", "-a", "-a", "--global-config", os.devnull, str(ctx.path)],
               ctx.package.work)
    return out.replace("\r\n", "\n"), 0


def ruff_command() -> str:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.is_file() else shutil.which("ruff") or "ruff"


def _ruff(ctx: _Context) -> tuple[str, int]:
    # --isolated and flake8's families at the package's line length: ruff's defaults (88 columns,
    # no E501 or W) would score its config against flake8's, not what it can fix.
    common = ["--isolated", "--line-length", str(ctx.line_length)]
    _run([ruff_command(), "check", "--fix", "--select", "E,W,F", *common, str(ctx.path)], ctx.package.work, (0, 1))
    _run([ruff_command(), "format", *common, str(ctx.path)], ctx.package.work)
    return _read(ctx.path)[0], 0


def _pipeline(ctx: _Context) -> tuple[str, int]:
    result = fix_source(ctx.text, ctx.linter, llm=(lambda: ctx.services.llm) if ctx.use_llm else None,
                        options=FixOptions(use_llm=ctx.use_llm), name=ctx.name, encoding=ctx.encoding)
    return result.fixed, result.llm_calls


_RUNNERS: dict[str, Callable[[_Context], tuple[str, int]]] = {
    "none": _none, "autopep8": _autopep8, "ruff": _ruff, "pipeline": _pipeline,
}


def _read(path: Path) -> tuple[str, str]:
    with path.open("rb") as handle:
        encoding, _ = tokenize.detect_encoding(handle.readline)
    return path.read_bytes().decode(encoding).replace("\r\n", "\n"), encoding


def _prepare(spec: PackageSpec, tmp: Path) -> _Package:
    root = spec.path or fetch(spec.requirement)
    paths = [str(import_root(fetch(dep))) for dep in spec.deps]
    missing = [f for f in spec.files if not (root / f).is_file()]
    if missing:
        raise UsageError(f"{spec.label}: no file {missing[0]}")
    work = tmp / spec.slug
    shutil.copytree(root, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    return _Package(spec, work, [str(import_root(work, spec.src)), *paths], tmp / "pytest.ini")


def _silenced(linter: Linter, text: str, encoding: str, reported: list) -> Counter[str]:
    """The findings `text`'s own `# noqa` comments hide, by code. Lines move under a fix, so they
    are counted by code, not matched by place."""
    every = Counter(d.code for d in linter.check(text, encoding, honour_noqa=False))
    return every - Counter(d.code for d in reported)


def _score(result: FileResult, ctx: _Context, fixed: str, dir_before: set[str] | None, timeout_s: float) -> None:
    try:
        left = ctx.linter.check(fixed, ctx.encoding)
        result.left, result.clean = len(left), not left
        result.left_codes = dict(sorted(Counter(d.code for d in left).items()))
        # Unchanged text hides nothing new; asking flake8 again would only repeat the count made before.
        silenced = Counter() if fixed == ctx.text else _silenced(ctx.linter, fixed, ctx.encoding, left) \
            - ctx.silenced_before
        result.silenced_codes = {code: n for code, n in sorted(silenced.items()) if n > 0}
        result.silenced = sum(result.silenced_codes.values())
    except LinterError as exc:  # flake8 could not read the fixed text: as bad as not clean
        result.left, result.error = result.before, result.error or exc.one_line()
    try:
        lost = set(module_checks.names_lost(ctx.text, fixed))
    except SyntaxError:  # the original does not parse: nothing to compare with
        lost = set()
    if fixed != ctx.text and (dir_before is not None or ctx.package.tests_ok):
        ctx.path.write_bytes(fixed.encode(ctx.encoding, errors="surrogateescape"))
    if dir_before is not None:
        module = ctx.package.module_name(ctx.name)
        after = dir_before if fixed == ctx.text else ctx.package.public_dir(module or "")
        lost |= dir_before - after if after is not None else {"(the module no longer imports)"}
        result.import_checked = True
    result.names_lost = sorted(lost)
    try:
        result.docs_changed = module_checks.docs_changed(ctx.text, fixed)
    except (SyntaxError, tokenize.TokenError):  # the original does not parse: nothing to compare with
        result.docs_changed = []
    if ctx.package.tests_ok:
        result.tests = True if fixed == ctx.text else ctx.package.run_tests(timeout_s)[0]


def evaluate(services: Services, data: Path, *, systems: Sequence[str] = SYSTEMS, use_llm: bool = True,
             only: Sequence[str] = (), run_tests: bool = True, test_timeout_s: float = 300.0,
             out: Path | None = None, keep: Path | None = None,
             progress: Callable[[int, int, FileResult], None] | None = None) -> ModulesReport:
    """Fix every file of the set with every system and score each fix; write per-file results to `out`
    (JSONL) and each fixed file to `keep`/SYSTEM/PACKAGE/FILE if given."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise UsageError(f"unknown system {unknown[0]!r}; choose from {', '.join(SYSTEMS)}" if unknown
                         else "no systems given")
    if "ruff" in systems and not Path(ruff_command()).exists() and not shutil.which(ruff_command()):
        raise UsageError("system ruff needs ruff (pip install ruff; it is a dev dependency of codeasst)")
    specs = [replace(s, files=s.files if not only or s.name in only else tuple(f for f in s.files if f in only))
             for s in load_set(data)]
    specs = [s for s in specs if s.files]
    if not specs:
        raise UsageError(f"{data}: no package or file matches {', '.join(only)}" if only else f"{data}: no packages")
    split = split_of(data)  # before any work: a bad mark is a usage error, not the end of a long run
    started = time.perf_counter()
    if use_llm and "pipeline" in systems:
        services.llm.load()  # outside the per-file timings
    total = sum(len(s.files) for s in specs) * len(systems)
    results: list[FileResult] = []
    packages: list[PackageRun] = []
    with tempfile.TemporaryDirectory(prefix="codeasst-eval-modules-") as tmp, \
            (out.open("w", encoding="utf-8") if out else contextlib.nullcontext()) as sink:
        (Path(tmp) / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        for spec in specs:
            package = _prepare(spec, Path(tmp))
            tests = "none given" if not spec.tests else "not run (--no-tests)"
            if spec.tests and run_tests:
                package.tests_ok, said = package.run_tests(test_timeout_s)
                tests = f"{'passed' if package.tests_ok else 'n/a, failed'}: {said}"
            config = find_config(package.work / spec.files[0])
            imports = 0
            for name in spec.files:
                path = package.work / name
                text, encoding = _read(path)
                original = path.read_bytes()
                linter = Linter.for_path(path, package.work)
                before = linter.check(text, encoding)
                module = package.module_name(name)
                dir_before = package.public_dir(module) if module else None
                imports += dir_before is not None
                ctx = _Context(services, package, path, name, text, encoding, linter, line_length(config), use_llm,
                               _silenced(linter, text, encoding, before))
                for system in systems:
                    t0 = time.perf_counter()
                    try:
                        (fixed, calls), error = _RUNNERS[system](ctx), ""
                    except CodeasstError as exc:  # a file one system cannot handle is scored as left unchanged
                        (fixed, calls), error = (text, 0), exc.one_line()
                    finally:
                        path.write_bytes(original)  # ruff fixes in place
                    result = FileResult(spec.name, name, system, time.perf_counter() - t0, len(before),
                                        llm_calls=calls, error=error)
                    try:
                        _score(result, ctx, fixed, dir_before, test_timeout_s)
                    finally:
                        path.write_bytes(original)
                    results.append(result)
                    if keep:
                        kept = keep / system / spec.name / name
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        kept.write_bytes(fixed.encode(encoding, errors="surrogateescape"))
                    if sink:
                        sink.write(json.dumps(asdict(result)) + "\n")
                        sink.flush()
                    if progress:
                        progress(len(results), total, result)
            packages.append(PackageRun(spec.name, spec.version or "(local)", len(spec.files),
                                       config.name if config else "defaults", imports, tests))
    summaries = [_summary(system, [r for r in results if r.system == system]) for system in systems]
    before = sum(r.before for r in results if r.system == systems[0])
    model = services.model_spec.name if use_llm and "pipeline" in systems else "off"
    return ModulesReport(str(data), model, before, packages, summaries, results, time.perf_counter() - started,
                         sandbox.isolation().note, split)


def _summary(system: str, results: list[FileResult]) -> SystemSummary:
    seconds = [r.seconds for r in results] or [0.0]
    tested = [r for r in results if r.tests is not None]
    return SystemSummary(
        system=system, files=len(results), clean=sum(r.clean for r in results), left=sum(r.left for r in results),
        silenced=sum(r.silenced for r in results), clean_without_noqa=sum(r.clean and not r.silenced for r in results),
        names_kept=sum(not r.names_lost for r in results), docs_kept=sum(not r.docs_changed for r in results),
        tests_passed=sum(bool(r.tests) for r in tested), tests_run=len(tested),
        p50_s=statistics.median(seconds), max_s=max(seconds), llm_calls=sum(r.llm_calls for r in results),
        errors=sum(bool(r.error) for r in results),
    )
