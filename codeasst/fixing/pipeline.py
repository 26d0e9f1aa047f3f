"""The fix loop: deterministic fixes to a fixed point, then the model, one unit at a time, for a
few rounds. Each step must pass verify.py, so the text only ever gets better, and what
comes out at the end is the best verified result, with the reason for whatever remains."""

from __future__ import annotations

import ast
import difflib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from codeasst import prompt
from codeasst.backends.base import LLM
from codeasst.errors import CodeasstError
from codeasst.fixing import mechanical, renames, syntax
from codeasst.fixing.codes import AUTOPEP8_UNSAFE, CodeClass, classify
from codeasst.fixing.docstrings import fix_long_docstrings
from codeasst.fixing.edits import block_of, parents
from codeasst.fixing.formatter import Formatter, format_changed
from codeasst.fixing.source import SourceFile
from codeasst.fixing.units import Unit, add_imports, ask_for_code, extract_code, group_by_unit, splice
from codeasst.fixing.verify import Namespace, State, lines_inside_strings, verify
from codeasst.lint import Diagnostic, Linter

# Whitespace flake8 flags inside a multi-line string is part of the string's value.
_VALUE_WHITESPACE = frozenset({"W291", "W293", "W191", "E101"})
_HINTS = {
    "E741": "Rename each variable called l, O or I to a descriptive name, everywhere it is used.",
    "F841": "Remove the unused variable; keep any call on its right-hand side as a statement.",
    "F821": "Import, define or correct the spelling of the undefined name.",
    "E731": "Use a def statement instead of assigning a lambda.",
}


_ONE_BY_ONE = 40  # lines retried one at a time when a fix of all of them together is refused
# What the model is not asked about, because no answer could pass verification without changing what the
# code does: each call costs tens of seconds on a CPU, and the answer would be rejected. E501 is not
# asked about either: the wrapper (wrap.py) has tried every layout that keeps the AST, which is all the
# model may change for it (see _long_line_reason).
_LONE_STRING = re.compile(r"""\s*[rRbBuUfF]{0,2}('|")[^\n]*\1\s*$""")
_NOT_FOR_MODEL = {
    "F401": "removing the import could change what the module offers or does (a re-export, or a probe for "
            "an optional module)",
    "E402": "moving an import changes the order in which the module runs",
    "C901": "lowering the complexity needs a refactoring, which fix does not attempt",
    "F403": "a star import: which names it brings is not known here",
    "F405": "the name may come from a star import: which names it brings is not known here",
}
# Python 2's builtins: in code written for both Pythons an undefined `unicode` sits on a Python 2 path,
# and any replacement changes what that path does.
_PY2_BUILTINS = frozenset({"unicode", "basestring", "long", "xrange", "raw_input", "unichr", "file", "reduce",
                           "cmp", "execfile", "buffer", "apply", "intern", "coerce", "reload", "StandardError"})


class SourceSyntaxError(CodeasstError):
    """The input does not parse; fixing lint in it is refused."""

    exit_code = 2


@dataclass(frozen=True)
class FixOptions:
    """How `fix` works; the defaults of the [fix] settings section."""

    linter: tuple[str, ...] = ()  # empty: flake8 from codeasst's own interpreter
    linter_timeout_s: float = 60.0
    max_rounds: int = 3  # model attempts per unit; each retry is told why the last was rejected
    max_file_bytes: int = 1_000_000
    max_unit_lines: int = 120  # longest function shown whole to the model
    use_llm: bool = True
    try_syntax: bool = False  # let the model try to repair a syntax error (refused by default)
    remove_unused_imports: bool = False  # let F401 fixes drop imports that may be re-exports (verify.Namespace)
    formatter: str = "auto"  # "auto": the project's black or ruff format on the changed lines; "off"


@dataclass(frozen=True)
class Change:
    stage: str  # "autopep8", "rules", "model", or the project's formatter ("black", "ruff")
    codes: list[str]  # one entry per diagnostic it removed
    where: str
    note: str = ""


@dataclass(frozen=True)
class Rejection:
    stage: str
    where: str
    reason: str


@dataclass
class FixResult:
    name: str
    original: str
    fixed: str
    before: list[Diagnostic]
    after: list[Diagnostic]
    changes: list[Change] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    reasons: dict[Diagnostic, str] = field(default_factory=dict)  # why each of `after` remains
    llm_calls: int = 0
    seconds: float = 0.0
    written: bool = False
    source: SourceFile | None = field(default=None, repr=False)  # where write_fix puts it back
    newline: str = "\n"  # the input's line ending, for text that did not come from a file (stdin)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    @property
    def clean(self) -> bool:
        return not self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.fixed.splitlines(keepends=True),
                                            f"a/{self.name}", f"b/{self.name}"))

    def to_json(self, with_diff: bool = True) -> dict:
        data = {
            "path": self.name, "clean": self.clean, "changed": self.changed, "written": self.written,
            "before": len(self.before), "fixed": len(self.before) - len(self.after),
            "remaining": [{**d.to_json(), "reason": self.reasons.get(d, "")} for d in self.after],
            "changes": [vars(c) for c in self.changes], "rejected": [vars(r) for r in self.rejected],
            "llm_calls": self.llm_calls, "seconds": round(self.seconds, 3),
        }
        if with_diff:
            data["diff"] = self.diff()
        return data


def parse_or_refuse(text: str, name: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise SourceSyntaxError(f"{name}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}; nothing was fixed",
                                hint="fix it first, or pass --try-syntax to let the model try") from None


class _Run:
    def __init__(self, state: State, linter: Linter, llm: Callable[[], LLM] | None, options: FixOptions,
                 encoding: str) -> None:
        self.state, self.linter, self.llm, self.options = state, linter, llm, options
        self.encoding = encoding
        # Where the linter takes the text to be (stdin: stdin.py at the root) tells a package's module.
        self.namespace = Namespace.of(linter.cwd / linter.display_name, state.tree, options.remove_unused_imports)
        self.changes: list[Change] = []
        self.rejected: list[Rejection] = []
        self.llm_calls = 0
        self.last_reason: dict[tuple[str, str], str] = {}
        self.answers: dict[tuple[str, str], set[str]] = {}  # each unit's rejected candidates
        self.given_up: set[tuple[str, str]] = set()  # units whose retry repeated a rejected answer

    def attempt(self, stage: str, candidate: str | None, codes: set[str], where: str, note: str = "") -> bool:
        if candidate is None:
            return False
        targeted = [d for d in self.state.diagnostics if d.code in codes]
        verdict = verify(self.state, candidate, targeted, self.linter, self.encoding, self.namespace)
        if not verdict.ok:
            self.rejected.append(Rejection(stage, where, verdict.reason))
            return False
        self.state = verdict.state
        self.changes.append(Change(stage, verdict.fixed, where, note))
        return True

    def deterministic(self) -> None:
        for _ in range(4):  # a fix can expose another (a rename shortens a line); four passes is plenty
            if not self.state.diagnostics or not self._deterministic_pass():
                return

    def _deterministic_pass(self) -> bool:
        progressed = False
        diags = self.state.diagnostics
        limit = mechanical.line_limit(diags)
        auto = {d.code for d in diags if classify(d.code) in (CodeClass.STYLE, CodeClass.EQUIVALENT)} \
            - AUTOPEP8_UNSAFE
        if auto:
            progressed |= self._autopep8(auto, limit)
        rules: list[tuple[set[str], Callable[[], str | None]]] = [
            ({"E711", "E712"}, lambda: mechanical.fix_singletons(self.state.text, self.state.diagnostics)),
            ({"E722"}, lambda: mechanical.fix_bare_except(self.state.text, self.state.diagnostics)),
            ({"E731"}, lambda: self._blank_line_before_def(mechanical.fix_lambda_assignments(
                self.state.text, self.state.tree, self.state.diagnostics), limit)),
            ({"F401"}, lambda: mechanical.fix_unused_imports(self.state.text, self.state.tree,
                                                            self.state.diagnostics, self.namespace)),
            ({"F841"}, lambda: mechanical.fix_unused_variables(self.state.text, self.state.tree,
                                                              self.state.diagnostics)),
            ({"E501"}, lambda: mechanical.fix_long_comments(self.state.text, self.state.diagnostics, limit)),
            ({"E501"}, lambda: fix_long_docstrings(self.state.text, self.state.tree, self.state.diagnostics,
                                                   limit)),
            ({"E501"}, lambda: mechanical.fix_long_lines(self.state.text, self.state.diagnostics, limit)),
        ]
        for codes, rule in rules:
            if any(d.code in codes for d in self.state.diagnostics):
                progressed |= self.attempt("rules", self._then_wrap(rule(), limit), codes, "file")
        if any(d.code in ("W503", "W504") for d in self.state.diagnostics):
            joined = mechanical.fix_operator_breaks(self.state.text, self.state.diagnostics,
                                                    self.linter.line_limit() or limit)
            progressed |= self.attempt("rules", joined, {"W503", "W504"}, "file")
        long_rows = [d.line for d in self.state.diagnostics if d.code == "E501"]
        for row in long_rows[:_ONE_BY_ONE] if 1 < len(long_rows) else ():  # one bad wrap must not sink the rest
            line = next((d.line for d in self.state.diagnostics if d.code == "E501" and d.line >= row), None)
            candidate = mechanical.fix_long_lines(self.state.text, self.state.diagnostics, limit, only=line)
            progressed |= self.attempt("rules", candidate, {"E501"}, f"line {line}")
        if any(d.code == "E741" for d in self.state.diagnostics):
            renamed = renames.fix_ambiguous_names(self.state.text, self.state.tree, self.state.diagnostics)
            if renamed is not None:
                progressed |= self.attempt("rules", self._then_wrap(renamed[0], limit), {"E741"}, "file",
                                           "; ".join(renamed[1]))
        return progressed

    def format_changed(self, formatter: Formatter, original: str) -> None:
        """The project's formatter on the lines the fixes changed; kept only if flake8 reports nothing new."""
        candidate = format_changed(formatter, original, self.state.text, self.linter.display_name)
        if candidate is None:
            return
        verdict = verify(self.state, candidate, [], self.linter, self.encoding, self.namespace, must_fix=False)
        if not verdict.ok:
            self.rejected.append(Rejection(formatter.name, "changed lines", verdict.reason))
            return
        self.state = verdict.state
        self.changes.append(Change(formatter.name, [], "changed lines", "the project's formatter"))

    def _wrap_at(self, limit: int) -> int:
        # Without an E501 we do not know the project's limit: wrap only past the longest line there is.
        if any(d.code == "E501" for d in self.state.diagnostics):
            return limit
        return max([limit, *map(len, self.state.text.splitlines())])

    @staticmethod
    def _blank_line_before_def(candidate: str | None, limit: int) -> str | None:
        """A lambda turned into a def among statements needs the blank line before it (E306), or the
        verifier refuses the fix and the model is asked instead: tens of seconds for a blank line."""
        if candidate is None:
            return None
        return mechanical.autopep8_fix(candidate, {"E301", "E305", "E306"}, limit) or candidate

    def _then_wrap(self, candidate: str | None, limit: int) -> str | None:
        """A fix that lengthens a line (a rename, a re-indent) is wrapped in the same step."""
        if candidate is None:
            return None
        return mechanical.fix_overlong(candidate, self._wrap_at(limit)) or candidate

    def _autopep8_candidate(self, select: set[str], limit: int, wrap: bool = True) -> str:
        # Whitespace inside a multi-line string is part of its value: respell such strings first,
        # or autopep8 strips it (the AST check then refuses its whole fix).
        text = mechanical.fix_whitespace_in_strings(self.state.text, self.state.tree, self.state.diagnostics) \
            or self.state.text
        fixed = mechanical.autopep8_fix(text, select, limit) or text
        return (mechanical.fix_overlong(fixed, self._wrap_at(limit)) if wrap else None) or fixed

    def _autopep8(self, codes: set[str], limit: int) -> bool:
        select = set(codes)
        for _ in range(3):
            before = len(self.rejected)
            if self.attempt("autopep8", self._autopep8_candidate(select, limit), codes, "file"):
                return True
            reason = self.rejected[before].reason if len(self.rejected) > before else ""
            # Fixing one thing can expose another (splitting a line, a missing space): let it fix that too.
            introduced = re.match(r"it introduced (\w+) ", reason)
            if not introduced or classify(introduced.group(1)) is not CodeClass.STYLE \
                    or introduced.group(1) in select:
                break
            select.add(introduced.group(1))
        progressed = False
        for code in sorted(codes) if len(codes) > 1 else ():  # keep each code's fix that is safe on its own
            progressed |= self.attempt("autopep8", self._autopep8_candidate({code}, limit, wrap=False),
                                       {code}, "file")
        return progressed

    def for_model(self) -> list[Diagnostic]:
        inside = lines_inside_strings(self.state.text)
        return [d for d in self.state.diagnostics if self._not_for_model(d, inside) is None]

    def _not_for_model(self, diag: Diagnostic, inside: set[int]) -> str | None:
        """Why the model is not asked about `diag` (None: it is)."""
        if diag.code in _VALUE_WHITESPACE and diag.line in inside:
            return "inside a multi-line string: removing it would change the string's value"
        if diag.code == "E501":
            return self._long_line_reason(diag, inside)
        if diag.code == "F821" and (name := re.match(r"undefined name '(\w+)'", diag.message)) \
                and name.group(1) in _PY2_BUILTINS:
            return f"'{name.group(1)}' is a Python 2 builtin, for code that runs on both: replacing it would " \
                "change what the code does on Python 2"
        if diag.code == "F811" and (m := re.match(r"redefinition of unused '.+?' from line (\d+)", diag.message)) \
                and self._other_branch(diag.line, int(m.group(1))):
            return "redefined in another branch (an if, else or try): each definition is the one that runs on " \
                "some path, so removing either changes what the code does"
        return _NOT_FOR_MODEL.get(diag.code)

    def _other_branch(self, row: int, other: int) -> bool:
        """Whether the statements at `row` and `other` sit in different blocks of statements."""
        parent_map = parents(self.state.tree)

        def block(line: int) -> int | None:
            around = [node for node in ast.walk(self.state.tree)
                      if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)]
            inner = max(around, key=lambda node: node.lineno, default=None)  # the innermost holds the line
            return id(block_of(inner, parent_map)) if inner is not None else None

        return block(row) != block(other)

    def _long_line_reason(self, diag: Diagnostic, inside: set[int]) -> str:
        lines = self.state.text.splitlines()
        line = lines[diag.line - 1] if diag.line <= len(lines) else ""
        if diag.line in inside:
            return "inside a multi-line string: a docstring's prose is wrapped, but this is a literal block, " \
                "doctest, table or word longer than the line, or a string whose value would change"
        if line.lstrip().startswith("#"):
            return "a comment that cannot be wrapped (a word longer than the limit, or a directive)"
        if _LONE_STRING.match(line):
            return "a lone string on one line: a docstring with a word too long to wrap at, or a string whose " \
                "value would change"
        return "cannot be wrapped without changing behaviour: no layout of the statement fits (a string, name " \
            "or comment too long to split)"

    def model_rounds(self) -> None:
        if self.llm is None or not self.options.use_llm:
            return
        for _ in range(self.options.max_rounds):
            tried: set[tuple[str, str]] = set()
            while True:
                lines = self.state.text.splitlines()
                groups = group_by_unit(self.state.tree, self.for_model(), self.options.max_unit_lines)
                pending = [(u, ds) for u, ds in groups if self._key(u, lines) not in tried | self.given_up]
                if not pending:
                    break
                unit, diags = pending[0]
                tried.add(self._key(unit, lines))
                self._ask_model(unit, diags)
            if not self.for_model():
                return

    @staticmethod
    def _key(unit: Unit, lines: list[str]) -> tuple[str, str]:
        return unit.function or "", lines[unit.start - 1].strip() if unit.start <= len(lines) else ""

    def _ask_model(self, unit: Unit, diags: list[Diagnostic]) -> None:
        lines = self.state.text.splitlines(keepends=True)
        key = self._key(unit, [line.rstrip("\n") for line in lines])
        snippet, margin = unit.snippet(lines)
        limit = mechanical.line_limit(diags)
        hints = [_HINTS[c].format(limit=limit) for c in sorted({d.code for d in diags}) if c in _HINTS]
        if key in self.last_reason:
            hints.append(f"Your previous answer was rejected: {self.last_reason[key]}.")
        messages = prompt.load("fix").messages(
            code=snippet.rstrip("\n"), feedback="\n".join(d.feedback(unit.start) for d in diags),
            hints="\n".join(hints) + ("\n" if hints else ""))
        # Room for the whole unit again plus some slack: a fix is about as long as its input.
        reply = ask_for_code(self.llm(), messages, max(128, int(len(snippet) / 2.5) + 96))
        self.llm_calls += 1
        extracted = extract_code(reply, unit)
        if extracted is None:
            self._rejected(key, "it held no code", reply)
            self.rejected.append(Rejection("model", unit.name, "the answer held no code"))
            return
        candidate = splice(self.state.text, unit, extracted.code, margin)
        wanted = [i for i in extracted.imports if i.strip() not in {x.strip() for x in lines}]
        if wanted and any(d.code == "F821" for d in diags):
            try:
                candidate = add_imports(candidate, ast.parse(candidate), wanted)
            except SyntaxError:
                pass  # the splice itself does not parse: verify says so
        before = len(self.rejected)
        if not self.attempt("model", candidate, {d.code for d in diags}, unit.name):
            self._rejected(key, self.rejected[before].reason if len(self.rejected) > before else "rejected", candidate)

    def _rejected(self, key: tuple[str, str], reason: str, answer: str) -> None:
        """Remember why. The unit is not asked again when the model gave the code back as it was (it sees
        nothing to change), or when a retry repeats a rejected answer or is rejected for the same reason
        (telling it why did not help): each further call costs tens of seconds for the same answer."""
        seen = self.answers.setdefault(key, set())
        if answer == self.state.text or answer in seen or self.last_reason.get(key) == reason:
            self.given_up.add(key)
        seen.add(answer)
        self.last_reason[key] = reason

    def reasons(self) -> dict[Diagnostic, str]:
        inside = lines_inside_strings(self.state.text)
        why = {}
        for diag in self.state.diagnostics:
            if (reason := self._not_for_model(diag, inside)) is not None:
                why[diag] = reason
            elif self.llm is None or not self.options.use_llm:
                why[diag] = "no deterministic fix applies; the model was not used"
            else:
                unit = group_by_unit(self.state.tree, [diag], self.options.max_unit_lines)[0][0]
                lines = self.state.text.splitlines()
                key = self._key(unit, lines)
                reason = self.last_reason.get(key)
                why[diag] = f"every fix was rejected; the last because {reason}" if reason else \
                    "no verified fix was found"
                if key in self.given_up:
                    why[diag] += " (a retry repeated the mistake, so the model was not asked again)"
        return why


def fix_source(text: str, linter: Linter, *, llm: Callable[[], LLM] | None, options: FixOptions = FixOptions(),
               name: str = "<stdin>", encoding: str = "utf-8", formatter: Formatter | None = None) -> FixResult:
    """Fix `text` (LF line endings) in memory; `llm` is called only if a model is needed; `formatter`
    (the project's own) lays out the changed lines at the end."""
    started = time.perf_counter()
    original, changes, rejected, calls = text, [], [], 0
    try:
        ast.parse(text)
    except SyntaxError as exc:
        if not (options.try_syntax and options.use_llm and llm is not None):
            parse_or_refuse(text, name)  # raises the one-line SourceSyntaxError
        repaired, reasons, calls = syntax.repair(text, exc, llm, linter, options.max_rounds,
                                                 options.max_unit_lines, encoding)
        rejected = [Rejection("model", f"line {exc.lineno}", reason) for reason in reasons]
        if repaired is None:
            raise SourceSyntaxError(f"{name}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}; the model "
                                    f"could not repair it ({reasons[-1] if reasons else 'no attempt'})") from None
        changes = [Change("model", ["E999"], f"line {exc.lineno}", "repaired a syntax error; review the diff")]
        text = repaired
    tree = parse_or_refuse(text, name)
    diagnostics = linter.check(text, encoding)
    if any(d.code == "E999" for d in diagnostics):
        first = next(d for d in diagnostics if d.code == "E999")
        raise SourceSyntaxError(f"{name}:{first.line}:{first.col}: flake8: {first.message}; nothing was fixed")
    run = _Run(State(text, tree, diagnostics), linter, llm, options, encoding)
    run.changes, run.rejected, run.llm_calls = changes, rejected, calls
    run.deterministic()
    run.model_rounds()
    if formatter is not None:
        run.format_changed(formatter, text)
    return FixResult(name=name, original=original, fixed=run.state.text, before=diagnostics,
                     after=run.state.diagnostics, changes=run.changes, rejected=run.rejected,
                     reasons=run.reasons(), llm_calls=run.llm_calls, seconds=time.perf_counter() - started)
