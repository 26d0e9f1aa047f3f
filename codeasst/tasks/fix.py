"""`codeasst fix`: make a Python file flake8-clean without changing what it does.

The CLI calls `fix_file` (or `fix_text` for stdin), renders the FixResult, and
calls `write_fix` when the user wants the file changed. Nothing here prints.
How the fix works is in codeasst.fixing.pipeline; what each fix may change is in
codeasst.fixing.codes.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

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
from codeasst.services import Services

__all__ = [
    "Change", "Diagnostic", "FileChangedError", "FixInputError", "FixOptions", "FixResult", "LinterError",
    "Rejection", "SourceSyntaxError", "fix_file", "fix_text", "fixed_bytes", "options_from", "write_fix",
]


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
             for_write: bool = False) -> FixResult:
    """Fix one file in memory. `for_write` refuses up front a file that could not be written back."""
    options = options or options_from(services)
    source = read_source(path, options.max_file_bytes, for_write=for_write)
    linter = Linter.for_path(source.path, services.repo.root, options.linter, options.linter_timeout_s)
    result = fix_source(source.text, linter, llm=lambda: services.llm, options=options, name=str(path),
                        encoding=source.encoding)
    result.source = source
    return result


def fix_text(services: Services, data: bytes, *, name: str = "stdin.py", options: FixOptions | None = None) -> FixResult:
    """Fix code read from stdin, linted as if it were the file `name` in the repository (for config)."""
    options = options or options_from(services)
    if len(data) > options.max_file_bytes:
        raise FixInputError(f"{name}: {len(data):,} bytes is over the limit of {options.max_file_bytes:,}")
    text, encoding, _ = decode(data, name)
    root = services.repo.root
    linter = Linter.for_path(root / name, root, options.linter, options.linter_timeout_s)
    result = fix_source(normalize_newlines(text), linter, llm=lambda: services.llm, options=options, name=name,
                        encoding=encoding)
    result.newline = dominant_newline(text)
    return result


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
