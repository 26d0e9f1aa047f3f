"""How readable are `fix`'s wrapped long lines? codeasst's wrapper against `autopep8 -a -a` on the same
statements of real files (old releases of popular libraries, fetched with `pip download` at bench time).

    python bench/fix_wrap.py [--packages requests==2.19.1 urllib3==1.23 flask==1.0.2 click==7.0]
                             [--limit 79] [--examples 3]

For every statement with a code line over the limit (not a comment or a docstring line), each tool
re-lays that statement alone in its file (autopep8: `-a -a --line-range FIRST LAST`; codeasst: wrap.py,
as `fix` runs it). Figures per tool:

- fixed: every line of the statement now fits;
- as black: the layout (lines, indentation, tokens per line; quotes and `u''` prefixes aside) equals
  what `ruff format` (black's style; ruff is a dev dependency) makes of the statement at the same
  limit, counted over the statements ruff itself brings within the limit;
- bad shapes: backslash continuations, and lines that end by opening a subscript (`headers[`).
"""

from __future__ import annotations

import argparse
import io
import platform
import re
import subprocess
import sys
import tempfile
import tokenize
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.fixing.mechanical import _logical_lines
from codeasst.fixing.verify import lines_inside_strings
from codeasst.fixing.wrap import wrap_statement

PACKAGES = ["requests==2.19.1", "urllib3==1.23", "flask==1.0.2", "click==7.0"]
RUFF = Path(sys.executable).parent / "ruff"


@dataclass
class Tally:
    fixed: int = 0
    black: int = 0
    backslashes: int = 0
    open_subscripts: int = 0
    examples: list = field(default_factory=list)


def fetch(packages: list[str], into: Path) -> list[Path]:
    """The .py files of each package's wheel, unpacked under `into`."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                    "-d", str(into / "wheels"), *packages], check=True)
    for wheel in sorted((into / "wheels").glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(into / "src")
    return sorted(p for p in (into / "src").rglob("*.py") if ".dist-info" not in str(p))


def long_statements(text: str, limit: int) -> list[tuple[int, int]]:
    """(first, last) line of each statement with a code line over `limit`."""
    lines = text.splitlines()
    inside = lines_inside_strings(text)
    return [(first, last) for first, last in _logical_lines(text)
            if any(len(lines[i - 1]) > limit and i not in inside and not lines[i - 1].lstrip().startswith("#")
                   for i in range(first, last + 1))]


def replaced(before: str, after: str, last: int) -> list[str]:
    """The lines that stand where lines first..last of `before` stood (the rest is unchanged)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return new[: len(new) - (len(old) - last)]


def by_autopep8(text: str, first: int, last: int, limit: int) -> list[str]:
    import autopep8

    fixed = autopep8.fix_code(text, options={"aggressive": 2, "max_line_length": limit, "line_range": [first, last]})
    return replaced(text, fixed, last)[first - 1:]


def by_ruff(text: str, first: int, last: int, limit: int) -> list[str] | None:
    end = len(text.splitlines()[last - 1]) + 1
    proc = subprocess.run([str(RUFF), "format", "--isolated", "--line-length", str(limit), "--config",
                           "format.quote-style='preserve'", "--range", f"{first}:1-{last}:{end}",
                           "--stdin-filename", "x.py", "-"], input=text, capture_output=True, text=True,
                          check=False)  # a file ruff cannot parse just has no reference
    return replaced(text, proc.stdout, last)[first - 1:] if proc.returncode == 0 else None


def shape(lines: list[str]) -> list[tuple[int, tuple[str, ...]]] | None:
    """Indentation and tokens of each line: what a layout is, whatever the spacing or quotes."""
    rows: dict[int, list[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                text = re.sub(r"^[uU](?=['\"])", "", tok.string).replace('"', "'")
                rows.setdefault(tok.start[0], []).append(text)
    except (tokenize.TokenError, SyntaxError):
        return None
    return [(len(lines[r - 1]) - len(lines[r - 1].lstrip()), tuple(v)) for r, v in sorted(rows.items())]


def score(tally: Tally, lines: list[str], reference: list[str] | None, limit: int) -> None:
    if all(len(line.rstrip("\n")) <= limit for line in lines):
        tally.fixed += 1
    if reference is not None and shape(lines) == shape(reference):
        tally.black += 1
    tally.backslashes += sum(line.rstrip().endswith("\\") for line in lines)
    tally.open_subscripts += sum(bool(re.search(r"[\w)\]'\"]\[$", line.rstrip())) for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=PACKAGES)
    parser.add_argument("--limit", type=int, default=79)
    parser.add_argument("--examples", type=int, default=0, help="print this many before/after examples")
    parser.add_argument("--show", nargs="*", default=[], help="examples only from files whose path ends so")
    args = parser.parse_args()
    limit = args.limit
    with tempfile.TemporaryDirectory() as tmp:
        files = fetch(args.packages, Path(tmp))
        codeasst, autopep8, statements, reference_fits = Tally(), Tally(), 0, 0
        for path in files:
            text = path.read_text(encoding="utf-8")
            for first, last in long_statements(text, limit):
                statements += 1
                original = text.splitlines(keepends=True)[first - 1:last]
                reference = by_ruff(text, first, last, limit)
                if reference is not None and all(len(line.rstrip("\n")) <= limit for line in reference):
                    reference_fits += 1
                else:
                    reference = None  # black leaves it too long: no layout to compare with
                ours = wrap_statement(text, first, last, limit) or original
                theirs = by_autopep8(text, first, last, limit)
                score(codeasst, ours, reference, limit)
                score(autopep8, theirs, reference, limit)
                shown = not args.show or any(str(path).endswith(end) for end in args.show)
                if reference is not None and ours != theirs and shown and len(codeasst.examples) < args.examples:
                    codeasst.examples.append((path.relative_to(Path(tmp) / "src"), first, original, theirs, ours,
                                              reference))
    print(f"# {statements} long statements in {len(files)} files of {', '.join(args.packages)}; limit {limit}; "
          f"{reference_fits} that ruff format (black style) brings within the limit")
    print(f"# {platform.machine()}, {platform.python_version()}, {sys.platform}")
    print("| tool | fixed | as black (of those black fixes) | backslash continuations | lines ending `x[` |")
    print("|---|---|---|---|---|")
    for name, tally in (("autopep8 -a -a", autopep8), ("codeasst", codeasst)):
        print(f"| {name} | {tally.fixed}/{statements} ({tally.fixed / max(statements, 1):.0%}) "
              f"| {tally.black}/{reference_fits} ({tally.black / max(reference_fits, 1):.0%}) "
              f"| {tally.backslashes} | {tally.open_subscripts} |")
    for where, first, original, theirs, ours, reference in codeasst.examples:
        print(f"\n## {where}:{first}\n\nbefore:\n{''.join(original)}\nautopep8 -a -a:\n{''.join(theirs)}"
              f"\ncodeasst:\n{''.join(ours)}\nblack (ruff format):\n{''.join(reference)}")


if __name__ == "__main__":
    main()
