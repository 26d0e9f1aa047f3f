"""Which files get indexed: .gitignore at every level, .git/info/exclude,
.codeasstignore (which may re-include with `!`), built-in defaults, and
content checks (binary, not UTF-8, minified, too large).

Rules are layered as git layers them: a later rule wins over an earlier one,
and a rule in a deeper directory comes after those of its parents. The order
is: built-in defaults, .git/info/exclude, .gitignore files, .codeasstignore
files. A directory that ends up excluded is not descended into, as in git.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from codeasst.errors import UsageError

SNIFF_BYTES = 8192
# A real source line is rarely longer than this; minified bundles have few, huge lines.
MINIFIED_LINE_CHARS = 1000


@dataclass(frozen=True)
class Rule:
    pattern: str
    source: str  # file that holds it, relative to the repo root, or "built-in defaults"
    line: int
    base: str  # directory the pattern is relative to ("" for the root)
    negated: bool
    regex: re.Pattern[str]

    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


def parse_rules(text: str, source: str, base: str) -> list[Rule]:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    rules = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        compiled = GitIgnoreSpecPattern(line)
        if compiled.include is None or compiled.regex is None:
            continue  # blank line or comment
        rules.append(
            Rule(
                pattern=line.strip(),
                source=source,
                line=number,
                base=base,
                negated=not compiled.include,
                regex=compiled.regex,
            )
        )
    return rules


def default_rules() -> list[Rule]:
    text = resources.files("codeasst.index").joinpath("default_ignore.txt").read_text()
    return [
        Rule(r.pattern, "built-in defaults", 0, "", r.negated, r.regex)
        for r in parse_rules(text, "built-in defaults", "")
    ]


@dataclass
class Verdict:
    excluded: bool
    rule: Rule | None  # the rule that decided, None when no rule matched

    def describe(self) -> str:
        if self.rule is None:
            return "no ignore rule matches"
        verb = "re-included" if self.rule.negated else "excluded"
        return f"{verb} by '{self.rule.pattern}' in {self.rule.where()}"


class IgnoreRules:
    """The layered rules of one repository, read lazily per directory."""

    IGNORE_FILES = (".gitignore", ".codeasstignore")

    def __init__(self, root: Path) -> None:
        self.root = root
        self._base: list[Rule] = default_rules()
        exclude = root / ".git" / "info" / "exclude"
        if exclude.is_file():
            self._base += parse_rules(_read_text(exclude), ".git/info/exclude", "")
        self._per_dir: dict[str, tuple[list[Rule], list[Rule]]] = {}
        self._layers: dict[str, list[Rule]] = {}

    def _dir_rules(self, rel_dir: str) -> tuple[list[Rule], list[Rule]]:
        """(.gitignore rules, .codeasstignore rules) defined in one directory."""
        if rel_dir not in self._per_dir:
            found: list[list[Rule]] = []
            for name in self.IGNORE_FILES:
                path = self.root / rel_dir / name
                source = f"{rel_dir}/{name}" if rel_dir else name
                found.append(parse_rules(_read_text(path), source, rel_dir) if path.is_file() else [])
            self._per_dir[rel_dir] = (found[0], found[1])
        return self._per_dir[rel_dir]

    def verdict(self, rel_path: str, is_dir: bool) -> Verdict:
        """Decide one path, assuming its parent directories are not excluded."""
        parent = rel_path.rsplit("/", 1)[0] if "/" in rel_path else ""
        decided: Rule | None = None
        # Last match wins, so scan from the highest-precedence rule and stop at the first hit.
        for rule in reversed(self._applicable(parent)):
            local = rel_path[len(rule.base) + 1 :] if rule.base else rel_path
            if rule.regex.match(local + "/" if is_dir else local):
                decided = rule
                break
        return Verdict(excluded=bool(decided and not decided.negated), rule=decided)

    def _applicable(self, rel_dir: str) -> list[Rule]:
        """All rules that apply inside `rel_dir`, lowest precedence first."""
        cached = self._layers.get(rel_dir)
        if cached is None:
            ancestors = [""]
            if rel_dir:
                parts = rel_dir.split("/")
                ancestors += ["/".join(parts[: i + 1]) for i in range(len(parts))]
            cached = list(self._base)
            for which in (0, 1):  # every .gitignore first, then every .codeasstignore
                for directory in ancestors:
                    cached += self._dir_rules(directory)[which]
            self._layers[rel_dir] = cached
        return cached


def excluded(rules: IgnoreRules, rel: str) -> str:
    """Why the rules exclude the file `rel` or a folder above it ("" if they do not)."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        verdict = rules.verdict("/".join(parts[:depth]), is_dir=depth < len(parts))
        if verdict.excluded:
            return verdict.describe() if depth == len(parts) else (
                f"its folder {'/'.join(parts[:depth])}/ is {verdict.describe()}")
    return ""


def may_read(root: Path, path: str) -> tuple[Path, str]:
    """The file `path` names (relative to `root`, or absolute) and its name relative to `root`;
    ValueError saying why not when it holds a NUL, or it or the file it resolves to through any
    symlinks lies outside the repository or is excluded by the index's ignore rules. The one check
    before reading a file someone else named: `codeasst serve`'s requests, `codeasst mcp`'s tools."""
    if "\0" in path:
        raise ValueError(f"{path!r} holds a NUL character")
    try:
        rels = inside(root, Path(path))
    except ValueError as exc:
        raise ValueError(f"{path} {exc}") from None
    rules = IgnoreRules(root)
    for rel in rels:
        if why := excluded(rules, rel):
            raise ValueError(f"{path} is ignored ({why})")
    return root / rels[0], rels[0]


@dataclass(frozen=True)
class FileInfo:
    path: str  # relative to the repo root, POSIX separators
    size: int
    mtime_ns: int


@dataclass
class Scan:
    files: list[FileInfo] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _symlink_reason(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "symlink loop"
        return "broken symlink"
    return "symlink (not followed)"


def _is_virtualenv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def scan(root: Path, rules: IgnoreRules, max_file_bytes: int) -> Scan:
    """Walk the repository with os.scandir, pruning excluded directories."""
    result = Scan()
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            result.skipped.append((rel_dir or ".", f"unreadable directory: {exc.strerror}"))
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_symlink():
                    if not rules.verdict(rel, is_dir=False).excluded:
                        result.skipped.append((rel, _symlink_reason(entry.path)))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if not rules.verdict(rel, is_dir=True).excluded and not _is_virtualenv(entry.path):
                        subdirs.append(rel)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue  # sockets, FIFOs, devices
                if rules.verdict(rel, is_dir=False).excluded:
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                result.skipped.append((rel, f"unreadable: {exc.strerror}"))
                continue
            if st.st_size > max_file_bytes:
                result.skipped.append((rel, f"too large ({_size(st.st_size)} > {_size(max_file_bytes)} cap)"))
                continue
            result.files.append(FileInfo(rel, st.st_size, st.st_mtime_ns))
        stack.extend(reversed(subdirs))
    result.files.sort(key=lambda f: f.path)
    return result


def _size(n: int) -> str:
    if n < 10_000:
        return f"{n:,} bytes"
    if n < 10_000_000:
        return f"{n / 1000:,.0f} KB"
    return f"{n / 1_000_000:,.1f} MB"


def decode_source(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) for indexable source, or (None, reason) to skip it."""
    if b"\x00" in data[:SNIFF_BYTES]:
        return None, "binary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (bad byte at offset {exc.start})"
    text = text.removeprefix("\ufeff")
    if len(text) > 2 * MINIFIED_LINE_CHARS:
        lines = text.count("\n") + 1
        if len(text) / lines > MINIFIED_LINE_CHARS:
            return None, "minified (lines average over 1,000 characters)"
    return text, None


def inside(root: Path, path: Path) -> list[str]:
    """`path` (absolute, or relative to `root`) relative to `root` as POSIX names: as written, then as its
    symlinks resolve (one name where both agree). ValueError saying how it leads out where either lies
    outside the repository. The one containment check: `codeasst serve` guards every path a request
    names with it, `codeasst lsp` every document it is sent."""
    named = Path(os.path.abspath(path if path.is_absolute() else root / path))
    real = Path(os.path.realpath(named))
    rels = []
    for candidate, base, what in ((named, Path(os.path.abspath(root)), ""),
                                  (real, Path(os.path.realpath(root)), " through a symlink")):
        try:
            rels.append(candidate.relative_to(base).as_posix())
        except ValueError:
            raise ValueError(f"leads outside the repository {root}{what}") from None
    return list(dict.fromkeys(rels))


def explain(root: Path, target: Path, rules: IgnoreRules, max_file_bytes: int) -> tuple[bool, str]:
    """Whether `target` would be indexed, and why, naming the rule and its file."""
    if not target.exists() and not target.is_symlink():
        raise UsageError(f"path does not exist: {target}")
    absolute = target if target.is_absolute() else Path.cwd() / target
    try:
        rel = Path(os.path.abspath(absolute)).relative_to(root).as_posix()
    except ValueError:
        raise UsageError(f"{target} is outside the repository {root}") from None
    if rel == ".":
        return True, "the repository root"
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        verdict = rules.verdict(parent, is_dir=True)
        if verdict.excluded:
            return False, f"parent directory {parent}/ is {verdict.describe()}"
        if _is_virtualenv(str(root / parent)):
            return False, f"parent directory {parent}/ is a virtualenv (has pyvenv.cfg)"
    full = root / rel
    if full.is_symlink():
        return False, _symlink_reason(str(full))
    is_dir = full.is_dir()
    verdict = rules.verdict(rel, is_dir=is_dir)
    if verdict.excluded:
        return False, verdict.describe()
    if is_dir:
        if _is_virtualenv(str(full)):
            return False, "a virtualenv (has pyvenv.cfg)"
        return True, f"directory is walked: {verdict.describe()}"
    size = full.stat().st_size
    if size > max_file_bytes:
        return False, f"too large ({_size(size)} > {_size(max_file_bytes)} cap, index.max_file_bytes)"
    try:
        data = full.read_bytes()
    except OSError as exc:
        return False, f"unreadable: {exc.strerror}"
    _text, reason = decode_source(data)
    if reason:
        return False, reason
    return True, verdict.describe()
