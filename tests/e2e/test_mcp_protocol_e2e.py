"""`codeasst mcp` at the protocol level: the real command on raw pipes (newline-delimited JSON-RPC, the MCP
stdio transport), fed what a correct client never sends: a thousand malformed and hostile messages, a call
before the handshake, a cancel mid-call, a client that just leaves, paths that lead out of the repository.
Whatever comes in, the process stays up, standard output holds nothing but JSON-RPC, and every request the
transport can read gets exactly one answer."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Self

import mcp_types
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION  # what the SDK's own client offers in `initialize`

from tests.e2e.conftest import CLI, run_cli

pytestmark = pytest.mark.slow

TOOLS = {"search", "definition", "references", "ask", "lint", "fix", "status", "index"}
SHOP = '''"""A small shop: carts and their totals."""


def total_price(items):
    """Sum the prices of the items in a cart."""
    return sum(item.price for item in items)


class Cart:
    """The items a customer picked."""

    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)

    def total(self):
        return total_price(self.items)
'''
FILES = {"pkg/__init__.py": "", "pkg/shop.py": SHOP,
         "pkg/tax.py": '"""Tax by region."""\n\n\ndef tax_rate(region):\n    return {"eu": 0.2}.get(region, 0.0)\n'}
SECRET = "sk-live-123"


class McpPipe:
    """`codeasst mcp -C repo` started as an agent starts it; lines written raw, every stdout line kept."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen([*CLI, "mcp", "-C", str(repo)], cwd=repo, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        self.lines: list[bytes] = []  # everything the server wrote to stdout, in order
        self.answers: dict[str, list[dict]] = {}  # json.dumps(id) -> the responses carrying that id
        self.stderr: list[str] = []
        self.next_id = 0
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append(line)
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None  # assert_pure reports it
                if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
                    self.answers.setdefault(json.dumps(message["id"]), []).append(message)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    # Sending.

    def send_line(self, line: bytes) -> None:
        try:
            self.proc.stdin.write(line + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise AssertionError(f"the server is gone: rc={self.proc.wait(timeout=10)}\n{self.tail()}") from None

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message).encode())

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def start(self, method: str, params: dict | None = None) -> int:
        """Send a request; its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                   **({"params": params} if params is not None else {})})
        return self.next_id

    # Answers.

    def answered(self, request_id: Any) -> list[dict]:
        return self.answered_raw(json.dumps(request_id))

    def answered_raw(self, key: str) -> list[dict]:
        """The answers to the id whose JSON is `key`."""
        with self.changed:
            return list(self.answers.get(key, []))

    def wait_for(self, keys: set[str], timeout: float) -> set[str]:
        """Wait until every id in `keys` (json.dumps form) has an answer; those still without one."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while keys - self.answers.keys() and time.monotonic() < deadline and self.proc.poll() is None:
                self.changed.wait(0.2)
            return keys - self.answers.keys()

    def request(self, method: str, params: dict | None = None, timeout: float = 120) -> dict:
        request_id = self.start(method, params)
        missing = self.wait_for({json.dumps(request_id)}, timeout)
        assert not missing, f"no answer to {method} (waited up to {timeout} s); rc={self.proc.poll()}\n{self.tail()}"
        return self.answered(request_id)[0]

    def initialize(self) -> dict:
        answer = self.request("initialize", {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                                             "clientInfo": {"name": "protocol-test", "version": "0"}})
        self.notify("notifications/initialized")
        return answer

    def call(self, name: str, arguments: Any, timeout: float = 120) -> dict:
        """A tools/call's result (the tool's own answer, isError or not)."""
        answer = self.request("tools/call", {"name": name, "arguments": arguments}, timeout)
        assert "result" in answer, answer
        return answer["result"]

    # Ending.

    def leave(self, timeout: float = 10) -> int:
        """Close stdin, as a client that goes away does; the exit status."""
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def tail(self) -> str:
        return "stderr:\n" + "".join(self.stderr[-30:])

    def assert_pure(self) -> None:
        """Every stdout line is one JSON-RPC message the SDK itself can read, and nothing else is there."""
        for line in self.lines:
            assert line.endswith(b"\n"), line[:200]
            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            assert json.loads(line)["jsonrpc"] == "2.0", line[:200]


def text_of(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def assert_refused(result: dict) -> str:
    """A tool error of one line; its text."""
    text = text_of(result)
    assert result["isError"] is True, result
    assert len(text.splitlines()) == 1, text
    return text


# 1. The handshake.

def test_handshake_lists_eight_tools_and_search_names_places(make_repo):
    repo = make_repo(FILES)
    run_cli("index", cwd=repo)
    with McpPipe(repo) as mcp:
        init = mcp.initialize()["result"]
        assert init["protocolVersion"] == LATEST_HANDSHAKE_VERSION
        assert init["serverInfo"]["name"] == "codeasst" and "tools" in init["capabilities"]
        tools = mcp.request("tools/list")["result"]["tools"]
        assert {t["name"] for t in tools} == TOOLS and len(tools) == 8
        for tool in tools:
            assert tool["inputSchema"]["type"] == "object" and tool["outputSchema"]["type"] == "object", tool
            assert tool["description"]

        result = mcp.call("search", {"query": "sum the prices of the items in a cart"})
        assert result["isError"] is False, result
        hits = result["structuredContent"]["hits"]
        assert hits and hits[0]["path"] == "pkg/shop.py", result
        assert re.fullmatch(r"pkg/shop\.py:\d+-\d+", hits[0]["location"]), hits[0]
        assert re.search(r"^pkg/shop\.py:\d+-\d+  ", text_of(result), re.MULTILINE), text_of(result)
        assert hits[0]["location"] in text_of(result)
        assert mcp.leave() == 0
    mcp.assert_pure()
    assert len(mcp.lines) == 3  # the three answers, nothing else (notes go to stderr)


# 2. A thousand bad messages.

class Fuzz:
    """Seeded messages a broken or hostile client might send, each with what it must get back:
    "result" (a JSON-RPC result), "error" (a JSON-RPC error), "tool_ok" / "tool_error" (a tools/call result,
    isError false / true), "maybe" (a valid id on a line the transport cannot read: no answer, or an error),
    "none" (no usable id: nothing may answer it)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ids = 1000
        self.never = 10**9  # ids of lines the server cannot read: no answer may carry one
        self.never_ids: set[str] = set()
        self.messages: list[tuple[bytes, str | None, str, str]] = []  # (line, id key, expect, category)

    def new_id(self) -> Any:
        self.ids += 1
        return self.rng.choice([self.ids, -self.ids, f"req-{self.ids}", f"ид-{self.ids}", str(self.ids)])

    def add(self, category: str, expect: str, message: dict | None = None, line: bytes | None = None,
            request_id: Any = None) -> None:
        if message is not None:
            request_id = message.get("id") if isinstance(message, dict) else None
            line = json.dumps(message).encode()
        key = json.dumps(request_id) if expect != "none" else None
        self.messages.append((line, key, expect, category))

    def call(self, name: Any, arguments: Any = None, *, omit: bool = False) -> dict:
        params = {"name": name} if omit else {"name": name, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": self.new_id(), "method": "tools/call", "params": params}

    def build(self, count: int) -> list[tuple[bytes, str | None, str, str]]:
        makers = [(getattr(self, name), weight) for name, weight in (
            ("not_json", 8), ("truncated", 8), ("not_object", 6), ("no_jsonrpc", 4), ("wrong_version", 4),
            ("unknown_method", 6), ("notification", 5), ("odd_id", 6), ("unknown_tool", 5), ("wrong_types", 12),
            ("missing_args", 4), ("extra_args", 4), ("huge", 3), ("outside", 8), ("nul", 4), ("unicode", 5),
            ("surrogate", 4), ("nested", 4), ("bad_params", 4), ("client_answers", 3), ("fine", 8))]
        funcs, weights = zip(*makers)
        while len(self.messages) < count:
            self.rng.choices(funcs, weights)[0]()
        return self.messages[:count]

    # The kinds.

    def not_json(self) -> None:
        line = self.rng.choice([b"hello", b"{", b"}", b"{]", b"Content-Length: 42", b"", b"   ", b"\t",
                                b"{'single': 'quotes'}", b"NaN", b"undefined", b"\x00\x01\x02", b"\xff\xfe\xfd",
                                b'{"jsonrpc": "2.0", "id": 1,, "method": "ping"}', b"[" * 100_000,
                                bytes(self.rng.randrange(32, 127) for _ in range(self.rng.randrange(1, 80)))])
        self.add("not_json", "none", line=line)

    def truncated(self) -> None:
        self.never += 1
        self.never_ids.add(json.dumps(self.never))
        whole = json.dumps({"jsonrpc": "2.0", "id": self.never, "method": "tools/call",
                            "params": {"name": "search", "arguments": {"query": "total price"}}}).encode()
        self.add("truncated", "none", line=whole[:self.rng.randrange(1, len(whole) - 1)])

    def not_object(self) -> None:
        line = self.rng.choice([b"42", b"-1.5e300", b"[]", b"[1, 2, 3]", b'"a string"', b"null", b"true",
                                b'[{"jsonrpc": "2.0"}]', b"1e999999"])
        self.add("not_object", "none", line=line)

    def no_jsonrpc(self) -> None:
        self.add("no_jsonrpc", "maybe", {"id": self.new_id(), "method": self.rng.choice(["tools/list", "ping"])})

    def wrong_version(self) -> None:
        version = self.rng.choice(["1.0", "2", 2.0, "3.0", None, "", [2]])
        self.add("wrong_version", "maybe", {"jsonrpc": version, "id": self.new_id(), "method": "tools/list"})

    def unknown_method(self) -> None:
        method = self.rng.choice(["nope", "tools/destroy", "resources/list", "prompts/list", "rpc.discover", "",
                                  "TOOLS/LIST", "tools/list/", "$/cancelRequest", "shutdown", "exit"])
        self.add("unknown_method", "error", {"jsonrpc": "2.0", "id": self.new_id(), "method": method})

    def notification(self) -> None:
        message = self.rng.choice([
            {"jsonrpc": "2.0", "method": "notifications/whatever"},
            {"jsonrpc": "2.0", "method": "nope", "params": {"x": 1}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 123456789}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": None}},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": "x"}},
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]},
            {"jsonrpc": "2.0", "method": "exit"}])
        self.add("notification", "none", message)

    def odd_id(self) -> None:
        odd = self.rng.choice([None, 1.5, 1e-3, {"a": [1]}, [1], True, False])
        self.add("odd_id", "none", {"jsonrpc": "2.0", "id": odd, "method": self.rng.choice(["tools/list", "ping"])})

    def unknown_tool(self) -> None:
        name = self.rng.choice(["nosuch", "", "SEARCH", "search ", "../search", "\u0000", "a" * 1000, "ask\n"])
        self.add("unknown_tool", "tool_error", self.call(name, {"query": "x"}))

    def wrong_types(self) -> None:
        name, arguments = self.rng.choice([
            ("search", {"query": 5}), ("search", {"query": ["a"]}), ("search", {"query": {"a": 1}}),
            ("search", {"query": None}), ("search", {"query": True}), ("search", {"query": "x", "k": "ten"}),
            ("search", {"query": "x", "k": 0}), ("search", {"query": "x", "k": -5}),
            ("search", {"query": "x", "k": 10**9}), ("search", {"query": "x", "k": 51}),
            ("search", {"query": "x", "k": 1.5}), ("search", {"query": "x", "k": None}),
            ("search", {"query": "x", "k": []}), ("search", {"query": "x", "role": "villain"}),
            ("search", {"query": "x", "path": 7}), ("definition", {"name": 3}),
            ("definition", {"name": "total_price", "offset": -1}), ("definition", {"name": "x", "offset": "one"}),
            ("references", {"name": "total_price", "limit": 0}), ("references", {"name": "x", "limit": 201}),
            ("lint", {"path": ["pkg/shop.py"]}), ("lint", {"path": "pkg/shop.py", "text": 12}),
            ("index", {"rebuild": 2}), ("index", {"rebuild": "perhaps"}), ("index", {"rebuild": []}),
            ("ask", {"question": 42})])
        self.add("wrong_types", "tool_error", self.call(name, arguments))

    def missing_args(self) -> None:
        name = self.rng.choice(["search", "definition", "references", "lint", "fix", "ask"])
        omit = self.rng.random() < 0.5
        self.add("missing_args", "tool_error", self.call(name, {}, omit=omit))

    def extra_args(self) -> None:
        name, arguments = self.rng.choice([
            ("search", {"query": "x", "zzz": 1}), ("status", {"force": True}),
            ("index", {"rebuild": False, "vectors": True}), ("definition", {"name": "x", "path": "pkg"}),
            ("lint", {"path": "pkg/shop.py", "fix": True})])
        self.add("extra_args", "tool_error", self.call(name, arguments))

    def huge(self) -> None:
        big = "x" * 200_000
        name, arguments = self.rng.choice([
            ("search", {"query": big}), ("definition", {"name": big}), ("references", {"name": big}),
            ("lint", {"path": big}), ("ask", {"question": big}), ("search", {"query": "x", "path": big}),
            ("lint", {"path": "a" * 300 + ".py"}),  # within the field's limit, longer than a file name may be
            ("lint", {"path": "/".join(["d"] * 500)})])
        self.add("huge", "tool_error", self.call(name, arguments))

    def outside(self) -> None:
        name, arguments = self.rng.choice([
            ("lint", {"path": "../outside.py"}), ("lint", {"path": "../../../etc/passwd"}),
            ("lint", {"path": "pkg/../../x.py"}), ("lint", {"path": ".."}), ("fix", {"path": "../outside.py"}),
            ("lint", {"path": "/etc/passwd"}), ("lint", {"path": "/"}), ("lint", {"path": "//etc/hosts"}),
            ("lint", {"path": "/proc/self/environ"}), ("fix", {"path": "/etc/passwd"}),
            ("lint", {"path": ".git/config"}), ("lint", {"path": "~/.ssh/id_rsa"}),
            ("search", {"query": "x", "path": "../"}), ("search", {"query": "x", "path": "/etc"}),
            ("search", {"query": "x", "path": "../../**"})])
        self.add("outside", "tool_error", self.call(name, arguments))

    def nul(self) -> None:
        name, arguments, expect = self.rng.choice([
            ("lint", {"path": "pkg/shop.py\u0000"}, "tool_error"), ("lint", {"path": "\u0000"}, "tool_error"),
            ("fix", {"path": "pkg/\u0000shop.py"}, "tool_error"), ("search", {"query": "x", "path": "pkg\u0000"},
                                                                   "tool_error"),
            ("definition", {"name": "total\u0000price"}, "tool_error"),
            ("search", {"query": "total\u0000price"}, "tool_ok")])
        self.add("nul", expect, self.call(name, arguments))

    def unicode(self) -> None:
        odd = self.rng.choice(["\u202etotal price", "cart\u200d\u200dtotal", "🛒 total 💸", "e\u0301\u0301\u0301",
                               "\uffff\ufffe", "line\u2028sep\u2029para", "\ufeffprice", "ﬁ ß İ ǅ", "\U0010ffff"])
        if self.rng.random() < 0.4:
            self.add("unicode", "tool_ok", self.call("search", {"query": odd, "k": 3}))
        else:
            self.add("unicode", "tool_error", self.call("definition", {"name": odd}))

    def surrogate(self) -> None:
        request_id = self.new_id()
        escape = self.rng.choice(["\\ud800", "\\udfff", "\\ud800\\ud800", "\\udc00x", "a\\ud83d"])
        name, arguments = self.rng.choice([('"search"', '{"query":"' + escape + '"}'),
                                           ('"lint"', '{"path":"' + escape + '.py"}'), ('"' + escape + '"', "{}")])
        self.add("surrogate", "maybe", line=_raw_call(request_id, name, arguments), request_id=request_id)

    def nested(self) -> None:
        depth = self.rng.choice([64, 5000])
        request_id = self.new_id()
        line = _raw_call(request_id, '"search"', '{"query":' + "[" * depth + "]" * depth + "}")
        # the SDK's JSON reader stops at a depth of about 200: deeper, the line is unreadable
        self.add("nested", "tool_error" if depth < 128 else "maybe", line=line, request_id=request_id)

    def bad_params(self) -> None:
        kind = self.rng.randrange(5)
        if kind == 0:
            message = {"jsonrpc": "2.0", "id": self.new_id(), "method": "tools/call",
                       "params": {"name": "search", "arguments": self.rng.choice([[1, 2], "query", 5])}}
            self.add("bad_params", "error", message)
        elif kind == 1:
            self.add("bad_params", "error", {"jsonrpc": "2.0", "id": self.new_id(), "method": "tools/call"})
        elif kind == 2:
            self.add("bad_params", "error", {"jsonrpc": "2.0", "id": self.new_id(), "method": "tools/call",
                                             "params": {"name": 5}})
        else:  # params that are not an object: not an MCP request at all, the transport drops the line
            self.add("bad_params", "maybe", {"jsonrpc": "2.0", "id": self.new_id(), "method": "tools/call",
                                             "params": self.rng.choice(["x", [1, 2]])})

    def client_answers(self) -> None:
        self.never += 1
        self.never_ids.add(json.dumps(self.never))
        self.add("client_answers", "none", self.rng.choice([
            {"jsonrpc": "2.0", "id": self.never, "result": {}},
            {"jsonrpc": "2.0", "id": self.never, "error": {"code": -1, "message": "no"}}]))

    def fine(self) -> None:
        name, arguments = self.rng.choice([
            (None, None), ("status", {}), ("definition", {"name": "total_price"}),
            ("references", {"name": "Cart.total"}), ("search", {"query": "tax rate of a region", "k": 2}),
            ("lint", {"path": "pkg/tax.py"})])
        if name is None:
            self.add("fine", "result", {"jsonrpc": "2.0", "id": self.new_id(),
                                        "method": self.rng.choice(["ping", "tools/list"])})
        else:
            self.add("fine", "tool_ok", self.call(name, arguments))


def _raw_call(request_id: Any, name: str, arguments: str) -> bytes:
    """A tools/call line with its name and arguments written as JSON by hand, where json.dumps cannot."""
    return ('{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"method":"tools/call","params":{"name":' + name
            + ',"arguments":' + arguments + "}}").encode()


def _verdict(expect: str, answers: list[dict]) -> str | None:
    """Why `answers` is wrong for a message that expects `expect`; None when it is right."""
    if expect == "maybe":
        if len(answers) > 1 or (answers and "error" not in answers[0]):
            return f"at most one error expected, got {answers}"
        return None
    if len(answers) != 1:
        return f"exactly one answer expected, got {len(answers)}"
    answer = answers[0]
    if expect == "error":
        return None if isinstance(answer.get("error", {}).get("code"), int) else f"an error expected: {answer}"
    if "result" not in answer:
        return f"a result expected: {answer}"
    if expect == "result":
        return None
    result = answer["result"]
    if expect == "tool_ok":
        return None if result.get("isError") is False and "structuredContent" in result else f"a tool result: {result}"
    texts = text_of(result).splitlines()
    return None if result.get("isError") is True and len(texts) == 1 else f"a one-line tool error expected: {result}"


def test_a_thousand_bad_messages_then_a_search_still_answers(make_repo):
    repo = make_repo(FILES)
    run_cli("index", cwd=repo)
    fuzz = Fuzz(seed=20250807)
    messages = fuzz.build(1000)
    expected = {key: expect for _line, key, expect, _cat in messages if key is not None}
    assert len(expected) == len([m for m in messages if m[1] is not None]), "ids must be unique"
    must = {key for key, expect in expected.items() if expect != "maybe"}

    with McpPipe(repo) as mcp:
        mcp.initialize()
        started = time.monotonic()
        for line, _key, _expect, _category in messages:
            mcp.send_line(line)
        missing = mcp.wait_for(must, timeout=60)
        assert not missing, f"{len(missing)} requests got no answer, e.g. {sorted(missing)[:5]}\n{mcp.tail()}"
        answered_in = time.monotonic() - started

        final = mcp.call("search", {"query": "sum the prices of the items in a cart"}, timeout=30)
        assert final["isError"] is False and final["structuredContent"]["hits"][0]["path"] == "pkg/shop.py", final
        assert mcp.proc.poll() is None, "the server died"

        wrong = [(category, line[:160], why) for line, key, expect, category in messages if key is not None
                 if (why := _verdict(expect, mcp.answered_raw(key)))]
        assert not wrong, f"{len(wrong)} wrong answers:\n" + "\n".join(map(str, wrong[:10]))
        sent = set(expected) | {json.dumps(n) for n in range(1, mcp.next_id + 1)}  # the fuzz's and the pipe's own
        strangers = [a for key, answers in mcp.answers.items() if key not in sent and key != "null" for a in answers]
        assert not strangers, f"answers to ids never sent or unreadable: {strangers[:5]}"
        assert not fuzz.never_ids & mcp.answers.keys()
        assert mcp.leave() == 0
    mcp.assert_pure()

    got = Counter()
    for key in expected:
        for answer in mcp.answered_raw(key):
            got["error" if "error" in answer else "tool_error" if answer["result"].get("isError")
                else "result"] += 1
    print(f"\n{len(messages)} messages: {dict(Counter(m[2] for m in messages))}; answers: {dict(got)}; "
          f"unanswered (maybe): {sum(1 for k, e in expected.items() if e == 'maybe' and not mcp.answered_raw(k))}; "
          f"stdout lines: {len(mcp.lines)}; all answered in {answered_in:.1f} s")


# 3. Before the handshake.

def test_a_call_before_initialize_is_an_error_and_the_server_still_works(make_repo):
    repo = make_repo(FILES)
    with McpPipe(repo) as mcp:
        for method, params in (("tools/call", {"name": "status", "arguments": {}}), ("tools/list", None)):
            early = mcp.request(method, params, timeout=30)
            # an error, whichever: SDK 2.3 answers any served method before `initialize` with -32602
            assert "result" not in early and isinstance(early["error"]["code"], int), early
        assert mcp.proc.poll() is None
        mcp.initialize()
        status = mcp.call("status", {})
        assert status["isError"] is False and status["structuredContent"]["indexed"] is False, status
        assert "not indexed yet" in text_of(status)
        assert mcp.leave() == 0
    mcp.assert_pure()


# 4. The client leaves.

@pytest.mark.parametrize("when", ["before initialize", "after a call", "with a call under way"])
def test_the_client_leaves_without_shutdown_and_the_server_ends(make_repo, when):
    repo = make_repo(FILES)
    with McpPipe(repo) as mcp:
        if when != "before initialize":
            mcp.initialize()
        if when == "after a call":
            assert mcp.call("status", {})["isError"] is False
        if when == "with a call under way":  # never indexed: the search indexes first, for a second or more
            mcp.start("tools/call", {"name": "search", "arguments": {"query": "cart total"}})
        left = time.monotonic()
        assert mcp.leave(timeout=10) == 0, mcp.tail()
        assert time.monotonic() - left < 10
    mcp.assert_pure()


# 5. A cancelled call.

def _generated(count: int) -> dict[str, str]:
    """`count` modules of nine small functions each: enough for `index` to take a second or more."""
    files = {}
    for i in range(count):
        body = "\n\n\n".join(f'def func_{i}_{j}(value, other=None):\n    """Compute thing {j} of module {i}."""\n'
                             f"    total = value * {j} + {i}\n    if other is not None:\n"
                             f"        total += helper_{i}(other)\n    return total" for j in range(8))
        files[f"pkg{i % 10}/mod_{i}.py"] = f'"""Module {i}."""\n\n\ndef helper_{i}(x):\n    return x + {i}\n\n\n{body}\n'
    return files


def test_a_cancelled_call_gets_no_answer_and_the_server_goes_on(make_repo):
    repo = make_repo(_generated(800))
    with McpPipe(repo) as mcp:
        mcp.initialize()
        slow = mcp.start("tools/call", {"name": "index", "arguments": {"rebuild": True}})
        time.sleep(0.25)
        # (measured: a rebuild of these 800 files takes 1.5-2 s here, the status below 0.1 s)
        assert not mcp.answered(slow), "the index finished before the cancel was sent: make the repository larger"
        mcp.notify("notifications/cancelled", {"requestId": slow, "reason": "the user moved on"})
        asked = time.monotonic()
        status = mcp.call("status", {}, timeout=10)
        assert time.monotonic() - asked < 5, "status waited for the cancelled call"
        assert status["isError"] is False, status
        # answered while the abandoned rebuild still ran, not queued behind it: the index it shows is not yet whole
        assert status["structuredContent"]["files"] < 800, status

        # The cancelled work, abandoned in its thread, still ends; the SDK never answers the request.
        deadline = time.monotonic() + 60
        while not (done := mcp.call("status", {}))["structuredContent"]["indexed"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert done["structuredContent"]["files"] == 800, done
        assert all("error" in answer for answer in mcp.answered(slow)), mcp.answered(slow)
        assert mcp.proc.poll() is None
        assert mcp.leave() == 0
    mcp.assert_pure()


# 6. Never indexed.

def test_a_repository_never_indexed_answers_from_words_alone(make_repo):
    repo = make_repo(FILES)
    with McpPipe(repo) as mcp:
        mcp.initialize()
        result = mcp.call("search", {"query": "sum the prices of the items in a cart"})
        assert result["isError"] is False, result
        found = result["structuredContent"]
        assert found["words_only"] is True, found
        assert any(note.startswith("no vectors yet: these hits come from words and exact matches alone")
                   for note in found["notes"]), found["notes"]
        assert text_of(result).startswith("note: no vectors yet"), text_of(result)
        assert found["hits"] and found["hits"][0]["path"] == "pkg/shop.py", found
        assert mcp.leave() == 0
    mcp.assert_pure()


# 7. Containment.

def test_paths_out_of_the_repository_and_ignored_files_are_refused(make_repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "creds.py").write_text(f'TOKEN = "{SECRET}"\n\n\ndef leak():\n    return TOKEN\n')
    (tmp_path / "outside.py").write_text(f'OUTSIDE = "{SECRET}"\n')
    repo = make_repo({**FILES, ".gitignore": "secret.py\n", "secret.py": f'TOKEN = "{SECRET}"\n'})
    (repo / "linked").symlink_to(elsewhere, target_is_directory=True)
    run_cli("index", cwd=repo)
    with McpPipe(repo) as mcp:
        mcp.initialize()
        for path, why in (("linked/creds.py", "through a symlink"), ("secret.py", "is ignored"),
                          ("../outside.py", "leads outside the repository")):
            refused = assert_refused(mcp.call("lint", {"path": path}))
            assert why in refused and SECRET not in refused, refused
        for query in (SECRET, "TOKEN leak"):
            found = mcp.call("search", {"query": query})
            assert found["isError"] is False, found
            shown = json.dumps({k: v for k, v in found["structuredContent"].items() if k != "query"})
            assert SECRET not in shown and SECRET not in text_of(found), found
            assert not any(h["path"].startswith(("linked/", "secret.py")) for h in found["structuredContent"]["hits"])
        assert mcp.leave() == 0
    mcp.assert_pure()


# Bugs found while these tests were written, fixed since.

def test_lint_reads_an_unsaved_buffer_as_sent(make_repo):
    repo = make_repo(FILES)
    with McpPipe(repo) as mcp:
        mcp.initialize()
        clean = mcp.call("lint", {"path": "pkg/tax.py", "text": "x = 1\n"})
        assert clean["structuredContent"]["findings"] == [], text_of(clean)  # was W292: the text was stripped
        loose = mcp.call("search", {"query": "tax", "k": "3"})  # a string is not a number
        assert loose["isError"] and "k: Input should be a valid integer" in text_of(loose)
        prose = mcp.call("lint", {"path": "README.md"})
        assert prose["isError"] and "not a Python file" in text_of(prose)
        two = mcp.call("lint", {"path": "a\nfake: line.py"})
        assert two["isError"] and len(text_of(two).splitlines()) == 1, text_of(two)


def test_a_name_too_long_for_the_file_system_is_refused_cleanly(make_repo):
    repo = make_repo(FILES)
    with McpPipe(repo) as mcp:
        mcp.initialize()
        refused = assert_refused(mcp.call("lint", {"path": "a" * 300 + ".py"}))
        assert mcp.leave() == 0
    assert not refused.startswith("lint failed:"), refused  # was "lint failed: OSError: [Errno 36] ..."
    assert "Traceback" not in "".join(mcp.stderr), mcp.tail()
