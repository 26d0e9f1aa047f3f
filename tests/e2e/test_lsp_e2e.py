"""`codeasst lsp` end to end through the real protocol, with the bundled model: it starts its own
`codeasst serve`, answers inline completion, counts the accept in `codeasst stats`, answers a client
that declares completion only, fixes a file through a code action, finds a definition by a word of
its docstring, answers `codeasst.ask`, and stops the server it started when the editor leaves."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time

import pytest

from codeasst.wire import discovery
from tests.e2e.conftest import run_json
from tests.lsp_client import COMPLETION_CAPS, INLINE_CAPS, LspProcess

pytestmark = pytest.mark.slow

MODULE = '''\
import os


def squares(limit):
    """Squares of the numbers below limit, in order."""
    return [i * i for i in range(0,limit)]


def add(a, b):
    """Return the sum of a and b."""
    return a + b


def is_even(n):
    """Return True when n is even."""
    

print(is_even(4))
'''
BODY = (15, 4)  # 0-based: the empty, indented line of is_even's body


def _until(ask, timeout: float = 180.0):
    """`ask()` until it gives something: the server the LSP started loads its models first."""
    deadline = time.monotonic() + timeout
    while True:
        found = ask()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


def test_the_lsp_in_an_editors_place(make_repo):
    root = make_repo({"shop/mod.py": MODULE})
    lsp = LspProcess(root)
    other = None
    try:
        lsp.initialize(root, INLINE_CAPS)
        uri = lsp.open(root / "shop" / "mod.py", MODULE)
        # flake8 speaks first: the unused import and the missing whitespace
        diagnostics = lsp.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p["diagnostics"])
        codes = {d["code"] for d in diagnostics["diagnostics"]}
        assert {"F401", "E231"} <= codes, codes

        position = {"line": BODY[0], "character": BODY[1]}

        def inline():
            return lsp.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}})["items"]

        items = _until(inline)
        assert items, "\n".join(lsp.stderr[-20:])
        [item] = items
        assert item["insertText"].startswith("return n % 2 == 0"), item
        lines = MODULE.split("\n")
        lines[BODY[0]] = "    " + item["insertText"]
        ast.parse("\n".join(lines))  # inserted where it was asked, the module parses
        command = item["command"]
        assert lsp.request("workspace/executeCommand", {"command": command["command"],
                                                         "arguments": command["arguments"]}) == {"recorded": True}
        server = discovery.find(root)
        assert server is not None and server.pid != lsp.proc.pid

        # `codeasst stats` (the CLI) counts what the LSP reported
        def accepted():
            return [d for d in run_json("stats") if d["accepted"]]

        [day] = _until(accepted, 30)
        assert day["shown"] >= 1 and day["accepted"] == 1 and day["happiness"] > 0

        # A client that declares completion only gets the suggestion as one completion item.
        other = LspProcess(root)
        other.initialize(root, COMPLETION_CAPS)
        other_uri = other.open(root / "shop" / "mod.py", MODULE)
        result = other.request("textDocument/completion", {"textDocument": {"uri": other_uri}, "position": position})
        [completion] = result["items"]
        assert completion["textEdit"]["newText"].startswith("return n % 2 == 0")
        assert completion["command"]["command"] == "codeasst.accept"

        # Fix the file through the code action: the edit leaves a flake8-clean file.
        actions = lsp.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0},
                                                    "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": diagnostics["diagnostics"]}})
        titles = [a["title"] for a in actions]
        assert "codeasst: fix the file" in titles and any(t.startswith("codeasst: fix F401") for t in titles)
        whole = next(a for a in actions if a["title"] == "codeasst: fix the file")
        resolved = lsp.request("codeAction/resolve", whole, timeout=300)
        [change] = resolved["edit"]["documentChanges"]
        fixed = change["edits"][0]["newText"]
        (root / "shop" / "mod.py").write_text(fixed)
        flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select=F401,E231,E302", "shop/mod.py"], cwd=root,
                                capture_output=True, text=True, check=False)
        assert flake8.stdout == "", flake8.stdout
        assert "def is_even(n):" in fixed and "range(0, limit)" in fixed

        # Code search: a definition by a word of its docstring, and by the start of its name.
        found = lsp.request("workspace/symbol", {"query": "numbers below limit"})
        assert found and found[0]["name"] == "squares", found
        assert lsp.request("workspace/symbol", {"query": "is_ev"})[0]["name"] == "is_even"

        answer = lsp.request("workspace/executeCommand", {"command": "codeasst.ask",
                                                           "arguments": ["What does add return?"]}, timeout=300)
        assert answer["markdown"].strip() and all(loc["uri"].startswith(root.as_uri()) for loc in answer["locations"])
        other.close()
        other = None
    finally:
        if other is not None:
            other.close()
        assert lsp.close() == 0
    # The server this LSP started stops with it.
    deadline = time.monotonic() + 20
    while discovery.find(root) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert discovery.find(root) is None
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)
