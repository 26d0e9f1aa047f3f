"""`codeasst fix`: make Python files flake8-clean without changing what they do.

The CLI calls `fix_files` with the names it was given and renders each outcome
as it arrives; `fix_files` fixes each file (`fix_file`, or `fix_text` for
stdin), writes it back when asked (`write_fix`), and decides the exit code.
Nothing here prints.

How the fix works is in codeasst.fixing.pipeline; what each fix may change is in
codeasst.fixing.codes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from codeasst.errors import CodeasstError, UsageError
from codeasst.fixing.formatter import find_formatter
from codeasst.fixing.pipeline import (
    Change,
    FixOptions,
    FixResult,
    Rejection,
    SourceSyntaxError,
    fix_source,
)
from codeasst.fixing.source import (
    FileChangedError,
    FixInputError,
    decode,
    dominant_newline,
    normalize_newlines,
    read_source,
    write_source,
)
from codeasst.lint import Diagnostic, Linter, LinterError
from codeasst.paths import fix_start_dir as start_dir
from codeasst.services import Services

__all__ = [
    "Change", "Diagnostic", "FileChangedError", "FixInputError", "FixOptions", "FixResult", "FixRun", "LinterError",
    "Outcome", "Rejection", "SourceSyntaxError", "fix_buffer", "fix_file", "fix_files", "fix_text", "fixed_bytes",
    "lint_buffer", "options_from", "start_dir", "write_fix",
]

STDIN = "-"


def options_from(services: Services, **overrides: Any) -> FixOptions:
    """FixOptions from the [fix] settings section, then CLI overrides (None = unset)."""
    section = services.settings.fix
    values: dict[str, Any] = {}
    for f in fields(FixOptions):
        value = getattr(section, f.name, None)  # use_llm and try_syntax are flags only
        if value is not None:
            values[f.name] = tuple(value) if f.name == "linter" else value
    values.update({k: v for k, v in overrides.items() if v is not None})
    return replace(FixOptions(), **values)


def fix_file(services: Services, path: Path, *, options: FixOptions | None = None,
             for_write: bool = False, name: str | None = None) -> FixResult:
    """Fix one file in memory. `for_write` refuses up front a file that could not be written back;
    `name` is what the diff and the report call it (the path itself by default)."""
    options = options or options_from(services)
    source = read_source(path, options.max_file_bytes, for_write=for_write)
    linter = Linter.for_path(source.path, services.repo.root, options.linter, options.linter_timeout_s)
    formatter = find_formatter(source.path, services.repo.root) if options.formatter == "auto" else None
    result = fix_source(source.text, linter, llm=lambda: services.llm, options=options, name=name or str(path),
                        encoding=source.encoding, formatter=formatter)
    result.source = source
    return result


def fix_text(services: Services, data: bytes, *, name: str = "stdin.py", path: Path | None = None,
             options: FixOptions | None = None) -> FixResult:
    """Fix code read from stdin. It is judged as the file `path` (`--stdin-filename`, as ruff and
    black take it): that file's flake8 config, and what its place says of its names (a package's
    `__init__.py` re-exports its imports); without one, as a file `name` at the repository's top."""
    options = options or options_from(services)
    if len(data) > options.max_file_bytes:
        raise FixInputError(f"{name}: {len(data):,} bytes is over the limit of {options.max_file_bytes:,}")
    text, encoding, _ = decode(data, name)
    root = services.repo.root
    path = path or root / name
    linter = Linter.for_path(path, root, options.linter, options.linter_timeout_s)
    formatter = find_formatter(path, root) if options.formatter == "auto" else None
    result = fix_source(normalize_newlines(text), linter, llm=lambda: services.llm, options=options, name=name,
                        encoding=encoding, formatter=formatter)
    result.newline = dominant_newline(text)
    return result


def lint_buffer(services: Services, path: Path, text: str) -> list[Diagnostic]:
    """flake8's findings on an editor's buffer, judged as the file `path` (its config, as `fix` reads it)."""
    options = options_from(services)
    linter = Linter.for_path(path, services.repo.root, options.linter, options.linter_timeout_s)
    return linter.check(normalize_newlines(text))


def fix_buffer(services: Services, path: Path, text: str, *, line: int | None = None) -> FixResult:
    """The verified fix of an editor's buffer (the file `path`, its unsaved text), as `codeasst fix` makes
    it. With `line`, only the fix's changes that touch that line (an editor's "fix this"), kept when the
    file then parses, the line's findings are gone and no finding is new; else nothing is changed there."""
    name = path.relative_to(services.repo.root).as_posix() if path.is_relative_to(services.repo.root) else path.name
    result = fix_text(services, text.encode("utf-8"), name=name, path=path)
    if line is None or not result.changed:
        return result
    partial = _changes_at(result.original, result.fixed, line)
    left = lint_buffer(services, path, partial) if partial != result.original else None
    at_line = {d.code for d in result.before if d.line == line}
    before = Counter(d.code for d in result.before)
    if left is None or any(d.code in at_line and d.line == line for d in left) or \
            any(n > before[code] for code, n in Counter(d.code for d in left).items()):
        return replace(result, fixed=result.original, after=result.before, reasons={}, changes=[])
    return replace(result, fixed=partial, after=left, reasons={})


def _changes_at(original: str, fixed: str, line: int) -> str:
    """`original` with only those of the changes to `fixed` that touch 1-based `line`. Where a change
    spans more lines (a removed import next to the line), only the line's own new version is taken,
    when one is recognisably it."""
    import difflib

    old, new = original.splitlines(keepends=True), fixed.splitlines(keepends=True)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or not i1 < line <= max(i2, i1 + 1):
            out += old[i1:i2]
            continue
        if i2 - i1 > 1 and line <= i2:
            mine = old[line - 1]
            ratio, best = max(((difflib.SequenceMatcher(None, mine, cand).ratio(), cand) for cand in new[j1:j2]),
                              default=(0.0, ""))
            if ratio >= 0.6:
                out += old[i1:line - 1] + [best] + old[line:i2]
                continue
        out += new[j1:j2]
    return "".join(out)


def fixed_bytes(result: FixResult) -> bytes:
    """The fixed text as the file would hold it (its encoding and line endings); for stdout."""
    if result.source is not None:
        return result.source.encode(result.fixed)
    return result.fixed.replace("\n", result.newline).encode("utf-8")


def write_fix(result: FixResult) -> bool:
    """Write a verified fix back atomically; False when there was nothing to write.

    Raises FileChangedError, and writes nothing, if the file changed since fix_file read it."""
    if not result.changed:
        return False
    if result.source is None:
        raise FixInputError(f"{result.name}: not read from a file; nothing to write back")
    write_source(result.source, result.fixed)
    result.written = True
    return True


@dataclass
class Outcome:
    """One name given to `fix`: its result, or the one-line error that stopped it."""

    name: str
    result: FixResult | None = None
    error: str = ""
    exit_code: int = 0  # the error's; 0 when the file was fixed (or left with diagnostics)

    @property
    def from_stdin(self) -> bool:
        return self.name == STDIN


@dataclass
class FixRun:
    outcomes: list[Outcome] = field(default_factory=list)
    exit_code: int = 0

    def reports(self, *, with_diff: bool) -> list[dict]:
        """The JSON report: one entry per file that could be fixed; errors are told on stderr."""
        return [o.result.to_json(with_diff=with_diff) for o in self.outcomes if o.result is not None]


def fix_files(services: Services, names: list[str], *, options: FixOptions, read_stdin: Callable[[], bytes],
              cwd: Path = Path("."), write: bool = False, check: bool = False, stdin_filename: str | None = None,
              on_outcome: Callable[[Outcome], None] | None = None) -> FixRun:
    """Fix each name in turn (`-` is stdin, read by `read_stdin` and judged as `stdin_filename`
    when given), relative names against `cwd`, writing verified fixes back when `write`;
    `on_outcome` sees each one as soon as it is done.

    Exit code: the highest of the errors' codes, so one bad file is not hidden by the others; else
    1 with `check` when any diagnostic remains; else 0."""
    if stdin_filename is not None and STDIN not in names:
        raise UsageError("--stdin-filename names the code read from stdin: give - as the file")
    if stdin_filename is not None and not stdin_filename.strip():
        raise UsageError("--stdin-filename is empty")
    run = FixRun()
    for name in names:
        outcome = Outcome(name)
        try:
            if name == STDIN:
                stands_for = (cwd / stdin_filename).absolute() if stdin_filename else None
                outcome.result = fix_text(services, read_stdin(), name=stdin_filename or "stdin.py", path=stands_for,
                                          options=options)
            else:
                outcome.result = fix_file(services, cwd / name, options=options, for_write=write, name=str(Path(name)))
                if write:
                    write_fix(outcome.result)
        except CodeasstError as exc:
            outcome.result, outcome.error, outcome.exit_code = None, exc.one_line(), exc.exit_code
        run.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    failed = max((o.exit_code for o in run.outcomes), default=0)
    remaining = any(o.result.after for o in run.outcomes if o.result is not None)
    run.exit_code = failed or (1 if check and remaining else 0)
    return run
