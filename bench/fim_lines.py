"""Single-line infilling rows from MBPP functions, for `codeasst eval fim`.

    python bench/fim_lines.py ../shared/data/lintfix_dev.jsonl tests/data/fim/mbpp_lines.jsonl

SAFIM's one-line holes are all the body of a block just opened. A user's holes are mostly
elsewhere: between two statements, a function's last line, a line after a nested block. This
builds such rows from the dev set's MBPP functions (lintfix_dev.jsonl, each with its asserts),
by a rule fixed before any model ran:
- candidate lines: one-line statements inside a function body (not its `def` line, not a
  docstring, comment, `else:`-like line or a line that continues another);
- emptied, a line must be noticed: with the original line the asserts pass, with the line
  emptied (`pass` where the block would be empty) they fail;
- one line per function, chosen by a hash of the task id and the line number.

A row: {"task_id", "kind": "line", "prefix" (up to the emptied line, with its indentation, as
an editor's auto-indent puts the cursor), "suffix" (from the line's end to the function's
file end), "ground_truth", "test_code" (the setup code and the asserts, run after the program
and never shown to the model), "unit_tests": [] }. `eval fim --cursor line-start` moves the
indentation into the hole. The code is run here to check the rule (in a temporary folder, `-I`,
an empty environment, a timeout), as `eval fim` runs it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from codeasst.evals import sandbox

_BLOCK_KEYWORDS = ("else", "elif", "except", "finally", "try", "def", "class", "@")


def passes(program: str) -> bool:
    """Whether the dataset's program and its asserts run clean; sandboxed, as every eval runs code it did not write."""
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "main.py"
        file.write_text(program, encoding="utf-8")
        return sandbox.run_python([str(file)], cwd=Path(tmp), timeout_s=10).ok


def candidates(code: str) -> list[int]:
    """0-based numbers of the lines that may be emptied."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.split("\n")
    found = []
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        docstring = ast.get_docstring(func) is not None
        for node in ast.walk(func):
            if not isinstance(node, ast.stmt) or node is func or node.lineno != node.end_lineno:
                continue
            if docstring and node is func.body[0]:
                continue
            number = node.lineno - 1
            text = lines[number].strip()
            if not text or text.startswith(("#", *_BLOCK_KEYWORDS)) or text.endswith((":", "\\")):
                continue
            if number not in found:
                found.append(number)
    return sorted(found)


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    rows, skipped = [], {"no candidate": 0, "original fails": 0, "not noticed": 0}
    for line in source.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        code = data["code"].replace("\r\n", "\n")
        test_code = (data.get("test_setup_code") or "") + "\n" + "\n".join(data["tests"]) + "\n"
        numbers = candidates(code)
        if not numbers:
            skipped["no candidate"] += 1
            continue
        if not passes(code + "\n" + test_code):
            skipped["original fails"] += 1
            continue
        lines = code.split("\n")
        order = sorted(numbers, key=lambda n: hashlib.sha256(f"{data['task_id']}:{n}".encode()).hexdigest())
        for number in order:
            indent = lines[number][: len(lines[number]) - len(lines[number].lstrip())]
            emptied = lines[:number] + [indent + "pass"] + lines[number + 1:]
            if passes("\n".join(emptied) + "\n" + test_code):
                continue  # the asserts do not notice this line
            prefix = "\n".join(lines[:number]) + "\n" + indent
            rows.append({"task_id": f"mbpp/{data['task_id']}/line{number + 1}", "kind": "line", "prefix": prefix,
                         "suffix": "\n" + "\n".join(lines[number + 1:]),
                         "ground_truth": lines[number][len(indent):].rstrip(), "test_code": test_code,
                         "unit_tests": []})
            break
        else:
            skipped["not noticed"] += 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows written to {target}; skipped: {skipped}")


if __name__ == "__main__":
    main()
