"""`codeasst lsp` under bad input and faults, through the real protocol: the process started as an
editor starts it, joined to a `codeasst serve` on a scripted model (serve_harness), a plain JSON-RPC
client (tests/lsp_client.py) that can also send what a correct client never would."""

from __future__ import annotations

import json
import os
import random
import time
from contextlib import contextmanager

import pytest

from codeasst.wire import discovery
from tests.lsp_client import COMPLETION_CAPS, INLINE_CAPS, LspError, LspProcess
from tests.unit.serve_harness import TOKEN, SlowLLM, listening, services_for

MODULE = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    \n"


def inline(lsp: LspProcess, uri: str, line: int, character: int, timeout: float = 60.0):
    return lsp.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2}}, timeout=timeout)


@pytest.fixture
def served(make_repo):
    """A repository with a scripted `codeasst serve` announced for it: (root, state)."""
    root = make_repo({"mod.py": MODULE, "vendor/lib.py": "x = 1\n", ".codeasstignore": "vendor/\n"})
    with listening(services_for(root)) as (port, state):
        record = discovery.announce(root, f"http://127.0.0.1:{port}", TOKEN)
        yield root, state
        record.unlink(missing_ok=True)


@contextmanager
def joined(root, services, capabilities=INLINE_CAPS):
    """`codeasst lsp` (never starting a server) joined to a `codeasst serve` on `services`: (lsp, state)."""
    with listening(services) as (port, state):
        record = discovery.announce(root, f"http://127.0.0.1:{port}", TOKEN)
        lsp = LspProcess(root, "--no-start")
        try:
            lsp.initialize(root, capabilities)
            yield lsp, state
        finally:
            lsp.close()
            record.unlink(missing_ok=True)


def ask_inline(lsp: LspProcess, uri: str, line: int, character: int) -> int:
    """The id of an inline completion request sent, its answer not waited for."""
    return lsp.start_request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character}, "context": {"triggerKind": 2}})


@pytest.fixture
def lsp(served):
    root, _ = served
    process = LspProcess(root, "--no-start")
    process.initialize(root, INLINE_CAPS, options={"discard_after_s": 1})
    yield process
    process.close()


def test_a_suggestion_from_the_server_and_its_accept(served, lsp):
    root, state = served
    uri = lsp.open(root / "mod.py", MODULE)
    result = inline(lsp, uri, 5, 4)
    assert result["items"] and result["items"][0]["insertText"] == "return a + b"
    command = result["items"][0]["command"]
    assert command["command"] == "codeasst.accept"
    assert lsp.request("workspace/executeCommand", {"command": command["command"],
                                                     "arguments": command["arguments"]}) == {"recorded": True}
    deadline = time.time() + 10
    while time.time() < deadline and not any(d.accepted for d in state.events.days()):
        time.sleep(0.1)
    [day] = state.events.days()
    assert (day.shown, day.accepted) == (1, 1)
    # accepted once: a second accept of the same suggestion records nothing
    assert lsp.request("workspace/executeCommand", {"command": "codeasst.accept",
                                                     "arguments": command["arguments"]}) == {"recorded": False}


def test_a_shown_suggestion_the_next_request_replaces_is_a_discard(served, lsp):
    root, state = served
    uri = lsp.open(root / "mod.py", MODULE)
    assert inline(lsp, uri, 5, 4)["items"]
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 4}}, "text": "x = 1\n    "}]})
    inline(lsp, uri, 6, 4)
    deadline = time.time() + 10
    while time.time() < deadline and not any(d.discarded for d in state.events.days()):
        time.sleep(0.1)
    assert sum(d.discarded for d in state.events.days()) >= 1


def test_a_shown_suggestion_nobody_accepts_in_time_is_a_discard(served, lsp):
    root, state = served
    uri = lsp.open(root / "mod.py", MODULE)
    assert inline(lsp, uri, 5, 4)["items"]
    deadline = time.time() + 10  # discard_after_s is 1 here; no other request comes
    while time.time() < deadline and not any(d.discarded for d in state.events.days()):
        time.sleep(0.1)
    [day] = state.events.days()
    assert (day.shown, day.discarded, day.accepted) == (1, 1, 0)


def test_bad_documents_and_positions_are_empty_results_never_reads(served, lsp, tmp_path):
    root, state = served
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'do not read'\n")
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    opened = {
        "outside": lsp.open(secret, secret.read_text()),
        "through a symlinked folder": lsp.open(root / "out" / "secret.py", secret.read_text()),
        "ignored": lsp.open(root / "vendor" / "lib.py", "x = 1\n"),
        "not a file": "untitled:Untitled-1",
    }
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": "untitled:Untitled-1", "languageId": "python",
                                                         "version": 1, "text": "x = 1\n"}})
    for why, uri in opened.items():
        assert inline(lsp, uri, 0, 0)["items"] == [], why
    uri = lsp.open(root / "mod.py", MODULE)
    assert inline(lsp, uri, 50, 0)["items"] == [], "a line past the end"
    assert inline(lsp, uri, 0, 500)["items"] == [], "a column past the end (the line's end: silence there)"
    assert inline(lsp, (root / "never.py").as_uri(), 0, 0)["items"] == [], "a document never opened"
    # Only the column past the end reached the server: LSP clamps it to the line's end (the spec says so).
    assert state.served["complete"] <= 1
    assert lsp.request("workspace/symbol", {"query": "add"})  # still answering
    assert any("outside the repository" in line for line in lsp.stderr)
    assert any("ignored" in line or "403" in line for line in lsp.stderr)


def test_a_file_that_is_not_utf8_on_disk_is_not_read(served, lsp):
    root, _ = served
    (root / "latin.py").write_bytes(b"name = '\xe9'\n")
    # never opened: nothing is read from disk, whatever its bytes
    assert inline(lsp, (root / "latin.py").as_uri(), 0, 3)["items"] == []
    result = lsp.request("textDocument/codeAction", {"textDocument": {"uri": (root / "latin.py").as_uri()},
                                                     "range": {"start": {"line": 0, "character": 0},
                                                               "end": {"line": 0, "character": 0}},
                                                     "context": {"diagnostics": []}})
    assert result == []


def test_a_stale_version_is_answered_empty(make_repo):
    root = make_repo({"mod.py": MODULE})
    with joined(root, services_for(root, SlowLLM(["return a * b"] * 5, delay=0.3))) as (lsp, _state):
        uri = lsp.open(root / "mod.py", MODULE)
        asked = ask_inline(lsp, uri, 5, 4)
        time.sleep(0.5)
        lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 4}}, "text": "r"}]})
        assert lsp.answer(asked, 60)["result"]["items"] == []


def test_cancel_request_ends_the_servers_work(make_repo):
    root = make_repo({"mod.py": MODULE})
    llm = SlowLLM(["return a * b + a * b + a * b"] * 5, delay=2.0)  # still writing when the cancel comes
    with joined(root, services_for(root, llm)) as (lsp, _state):
        uri = lsp.open(root / "mod.py", MODULE)
        asked = ask_inline(lsp, uri, 5, 4)
        time.sleep(1.0)
        started = time.time()
        lsp.notify("$/cancelRequest", {"id": asked})
        answer = lsp.answer(asked, 30)
        assert answer.get("error", {}).get("code") == -32800, answer  # RequestCancelled
        assert llm.stopped.wait(5), "the server went on generating for a cancelled request"
        assert time.time() - started < 5


def test_a_server_that_dies_mid_request_leaves_an_empty_result(make_repo):
    root = make_repo({"mod.py": MODULE})
    lsp = None
    with listening(services_for(root, SlowLLM(["return a * b + a * b"] * 5, delay=0.5))) as (port, state):
        record = discovery.announce(root, f"http://127.0.0.1:{port}", TOKEN)
        lsp = LspProcess(root, "--no-start")
        lsp.initialize(root, INLINE_CAPS)
        uri = lsp.open(root / "mod.py", MODULE)
        asked = ask_inline(lsp, uri, 5, 4)
        time.sleep(1.0)
        record.unlink()
        state.stop()
    try:
        assert lsp.answer(asked, 30)["result"]["items"] == []
        assert inline(lsp, uri, 5, 4)["items"] == []  # no server now: silence, not an error
        assert lsp.proc.poll() is None
    finally:
        assert lsp.close() == 0


def test_a_client_that_disappears_ends_the_process(served):
    root, _ = served
    lsp = LspProcess(root, "--no-start")
    lsp.initialize(root, INLINE_CAPS)
    lsp.open(root / "mod.py", MODULE)
    lsp.proc.stdin.close()  # the editor is gone without shutdown
    assert lsp.proc.wait(20) is not None


def test_a_completion_only_client_gets_one_item_replacing_from_the_word(make_repo):
    from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
    from codeasst.services import build_services

    text = "def add(a, b):\n    ret\n"
    root = make_repo({"mod.py": text})
    # the gate shows every candidate: a suggestion in mid-word is what this test is about
    services = build_services(root, {"complete.min_confidence": 0.0}, embedder=HashingEmbedder(),
                              llm=ScriptedLLM(["urn a + b"] * 10))
    with joined(root, services, COMPLETION_CAPS) as (lsp, _state):
        inline_client = LspProcess(root, "--no-start")
        try:
            uri = lsp.open(root / "mod.py", text)
            result = lsp.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                             "position": {"line": 1, "character": 7}})
            [item] = result["items"]
            edit = item["textEdit"]
            assert edit["range"]["start"] == {"line": 1, "character": 4}  # from the word the client filters by
            assert edit["newText"] == "return a + b" and item["command"]["command"] == "codeasst.accept"
            # a client that shows inline completion gets nothing twice: no completion item
            inline_client.initialize(root, INLINE_CAPS)
            uri = inline_client.open(root / "mod.py", text)
            assert inline_client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                                     "position": {"line": 1, "character": 7}})[
                "items"] == []
        finally:
            inline_client.close()


def _junk(rng: random.Random) -> bytes:
    methods = ["initialize", "textDocument/inlineCompletion", "textDocument/completion", "textDocument/didOpen",
               "textDocument/didChange", "textDocument/codeAction", "workspace/symbol", "workspace/executeCommand",
               "codeAction/resolve", "textDocument/didClose", "$/cancelRequest", "no/such", "", "initialized"]
    values = [None, 0, -1, 2**40, "", "x" * rng.randint(0, 300), [], {}, {"uri": "file:///etc/passwd"},
              {"line": -5, "character": 10**9}, True, 1.5, "file:///../../etc/shadow", "\udcff"[:0] + "é\u2028"]

    def value(depth: int = 0):
        if depth < 3 and rng.random() < 0.3:
            return {rng.choice(["textDocument", "position", "uri", "text", "contentChanges", "query", "command",
                                "arguments", "context", "range", "id"]): value(depth + 1) for _ in range(rng.randint(0, 4))}
        return rng.choice(values)

    kind = rng.random()
    if kind < 0.15:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))
    if kind < 0.25:
        return json.dumps(value()).encode()
    message = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", 2]), "method": rng.choice(methods),
               "params": value()}
    if rng.random() < 0.7:
        message["id"] = rng.choice([rng.randint(1000, 10**6), "s" + str(rng.randint(0, 99)), None, [], 1.5])
    if message["method"] == "workspace/executeCommand" and rng.random() < 0.5:
        message["params"] = {"command": rng.choice(["codeasst.accept", "codeasst.discard", "codeasst.fixFile",
                                                    "codeasst.ask", "nope"]), "arguments": [value(), value()]}
    return json.dumps(message).encode()


def test_a_thousand_random_and_malformed_messages_do_not_bring_it_down(served):
    root, _ = served
    lsp = LspProcess(root, "--no-start")
    rng = random.Random(int(os.environ.get("CODEASST_FUZZ_SEED", "7")))
    lsp.initialize(root, INLINE_CAPS)
    lsp.open(root / "mod.py", MODULE)
    for _ in range(1200):
        lsp.send_raw(_junk(rng))
    # after all of it, the whole conversation still works: once the server has worked through what the
    # junk asked of it (on a loaded machine a symbol search meanwhile may find the server's queue full)
    deadline, found = time.monotonic() + 120, []
    while not found and time.monotonic() < deadline:
        found = lsp.request("workspace/symbol", {"query": "add"}, timeout=120)
        time.sleep(0 if found else 2)
    assert found and found[0]["name"] == "add", "\n".join(lsp.stderr[-20:])
    again = lsp.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
    assert "capabilities" in again or again is None
    with pytest.raises(LspError):
        lsp.request("workspace/executeCommand", {"command": "codeasst.accept", "arguments": [17]})
    assert lsp.proc.poll() is None, "\n".join(lsp.stderr[-20:])
    assert lsp.close() == 0
    assert not any("Traceback" in line for line in lsp.stderr), "\n".join(lsp.stderr[-30:])


def test_a_request_that_does_not_fit_gets_an_error_and_junk_a_parse_error(lsp):
    lsp.send({"jsonrpc": "2.0", "id": 9001, "method": "textDocument/inlineCompletion", "params": {"x": 1}})
    assert lsp.answer(9001, 30)["error"]["code"] == -32602  # InvalidParams, to the request that sent it
    lsp.send_raw(b"{not json")
    assert lsp.answer("null", 30)["error"]["code"] == -32700  # ParseError, id null: nobody's request
    lsp.send({"jsonrpc": "2.0", "id": 9002, "method": "no/such/method"})
    assert lsp.answer(9002, 30)["error"]["code"] == -32601
