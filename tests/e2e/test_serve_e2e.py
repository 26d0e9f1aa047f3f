"""`codeasst serve` with the real model over real HTTP on 127.0.0.1: completion with the KV prefix
kept between requests, the type-ahead cache, 4xx for every kind of malformed request, the random
bearer token in the 0600 discovery record, events and `codeasst stats`, and the one-shot CLI going
through the server, which owns the index: `index` there, then `search` finding the change."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.e2e.conftest import CLI, free_port, run_cli, run_json, wait_for_port
from tests.e2e.test_complete_e2e import BODY_LINE, MODULE

pytestmark = pytest.mark.slow
TOKEN: str | None = None  # the server's own, read from its discovery record by the fixture


def call(url: str, route: str, payload: dict | bytes | None = None, token: str | None = "record") -> tuple[int, dict]:
    token = TOKEN if token == "record" else token
    data = payload if isinstance(payload, bytes) or payload is None else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url + route, data, headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def server(make_repo):
    root = make_repo({"mod.py": MODULE, "latin1.py": b"x = '\xe9'\n", ".gitignore": "secret.py\n",
                      "secret.py": "password = 'x'\n"})
    port = free_port()
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "-C", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, 300)
        info = run_json("serve", "--info", cwd=root)
        assert info["url"] == f"http://127.0.0.1:{port}" and len(info["token"]) >= 32
        assert stat.S_IMODE(os.stat(info["record"]).st_mode) == 0o600
        global TOKEN
        TOKEN = info["token"]
        yield root, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_complete_over_http_keeps_the_prefix_warm_and_refuses_bad_requests(server):
    root, url = server
    assert call(url, "/v1/health", token=None)[0] == 401
    assert call(url, "/v1/health", token="wrong")[0] == 401
    openapi = json.loads(urllib.request.urlopen(url + "/openapi.json", timeout=30).read())
    assert {"/v1/complete", "/v1/search", "/v1/ask", "/v1/events", "/v1/open"} <= set(openapi["paths"])

    at = {"path": "mod.py", "line": BODY_LINE, "col": 5, "client": "editor"}
    # the editor says the file is open, with its cursor: the prompt there is evaluated now
    status, opened = call(url, "/v1/open", {"path": "mod.py", "line": BODY_LINE, "col": 5})
    assert status == 200 and opened["tokens"] > 0, opened
    status, first = call(url, "/v1/complete", at)
    assert status == 200 and first["text"].startswith("return n % 2 == 0"), first
    assert first["cached_tokens"] >= first["prompt_tokens"] - 1, "the open did not warm the prompt at the cursor"
    status, again = call(url, "/v1/complete", at)
    assert again["text"] == first["text"]
    assert again["cached_tokens"] >= first["prompt_tokens"] - 1  # the whole prompt was in the KV cache

    # the user types the suggestion's first characters: the rest comes from the type-ahead cache
    typed = MODULE.split("\n")
    typed[BODY_LINE - 1] = "    ret"
    status, ahead = call(url, "/v1/complete", {**at, "col": 8, "text": "\n".join(typed)})
    assert ahead["cached"] == "type-ahead" and first["text"] == "ret" + ahead["text"]

    for payload, code, fragment in [
        ({**at, "line": 99}, 422, "line 99 is outside the text"),
        ({**at, "col": 0}, 422, "greater than or equal to 1"),
        ({**at, "path": "../elsewhere.py"}, 403, "outside the repository"),
        ({**at, "path": "missing.py"}, 404, "no such file"),
        ({**at, "path": "latin1.py", "line": 1}, 400, "not UTF-8"),
        ({**at, "path": "secret.py", "line": 1}, 403, "ignored"),
    ]:
        status, body = call(url, "/v1/complete", payload)
        assert status == code and fragment in str(body["detail"]), (payload, status, body)
    assert call(url, "/v1/complete", b"\xff\xfe not json")[0] in (400, 422)
    # a body over the limit is refused from its declared length, before it is read
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"POST /v1/complete HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
                     + b"Content-Type: application/json\r\n"
                     b"Content-Length: 5242880\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 413 ")

    # events, and the seed's metrics over them
    assert call(url, "/v1/events", {"kind": "shown", "id": "a", "shown_length": 20})[0] == 200
    assert call(url, "/v1/events", {"kind": "accepted", "id": "a", "accepted_length": 20})[0] == 200
    assert call(url, "/v1/events", {"kind": "eaten", "id": "a"})[0] == 422
    (day,) = run_json("stats", cwd=root)
    assert (day["shown"], day["accepted"], day["accept_rate"]) == (1, 1, 1.0)
    assert day["happiness"] == pytest.approx(20 - 3 - 0.05 * 20)

    # a one-shot `codeasst complete` in this repository asks the running server
    started = time.perf_counter()
    result = run_json("complete", "mod.py", "--line", str(BODY_LINE), "--col", "5", cwd=root)
    assert result["server"] == url and result["text"] == first["text"]
    assert time.perf_counter() - started < 60

    # and so does `codeasst search`, with the same hits it finds alone
    hits = run_json("search", "is_even", "--no-llm", "-k", "3", cwd=root)
    assert hits[0]["path"] == "mod.py"
    assert call(url, "/v1/health")[1]["served"]["search"] == 1

    # and `codeasst ask`: the answer streams from the server, the footer is drawn here
    asked = run_cli("ask", "What does is_even return?", cwd=root)
    assert "Sources (* drawn on by the answer):" in asked.stdout and "mod.py:" in asked.stdout
    answer = run_json("ask", "What does is_even return?", cwd=root)
    assert answer["answer"].strip() and answer["system"] == "checked"
    served = call(url, "/v1/health")[1]["served"]
    assert (served["search"], served["ask"]) == (1, 2)

    # the server owns the index: `index` runs there, and the next search finds what changed
    changed = MODULE + "\n\ndef zebra_quartz_checksum(data):\n    return sum(data) % 251\n"
    (root / "mod.py").write_text(changed)
    indexed = run_cli("index", "--json", cwd=root)
    assert "indexing through codeasst serve" in indexed.stderr and json.loads(indexed.stdout)["changed"] == 1
    hits = run_json("search", "zebra_quartz_checksum", "--no-llm", "-k", "3", cwd=root)
    new_line = changed.split("\n").index("def zebra_quartz_checksum(data):") + 1
    assert hits[0]["path"] == "mod.py" and hits[0]["start_line"] <= new_line <= hits[0]["end_line"], hits[0]
    assert run_json("status", cwd=root)["store_problem"] is None
    # an option the server cannot honour is refused, not run beside it on the same store
    refused = run_cli("index", "--chunk-chars", "500", cwd=root, check_rc=75)
    assert "owns this repository's index" in refused.stderr


def test_a_running_server_embeds_what_a_search_left_waiting_and_says_so_until_done(make_repo):
    """Lexical first: a search leaves the vectors to later (search_embed_limit 0 here, as in a big
    repository), and `codeasst serve` embeds them in the background; /v1/status and a search through
    it say how far it has come, then answer with every vector. Real embedder, Chroma and HTTP."""
    kinds = [f"{a}{b}" for a in ("alpha", "bravo", "delta", "kilo", "lima", "tango") for b in
             ("red", "green", "blue", "amber", "violet", "cyan", "white", "black", "grey", "pink",
              "gold", "teal", "navy", "rust", "sand", "mint", "plum", "jade", "onyx", "ruby")]
    root = make_repo({f"pkg/m{i}.py": f"def handle_{kind}(request):\n    '''Handle the {kind} request.'''\n"
                      f"    return request.reply({i})\n" for i, kind in enumerate(kinds)})
    query = "handle the tangomint request"
    lexical = {"CODEASST_INDEX__SEARCH_EMBED_LIMIT": "0"}
    first = run_cli("search", query, "--no-llm", "--json", "-C", str(root), env=lexical)
    assert "not yet embedded: dense search covers 0 of 120 chunks" in first.stderr
    assert json.loads(first.stdout)[0]["path"] == f"pkg/m{kinds.index('tangomint')}.py"

    port = free_port()
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "-C", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **lexical})
    try:
        wait_for_port(port, 300)
        deadline = time.time() + 300
        while (dense := run_json("status", cwd=root)["dense"]) != {"embedded": 120, "total": 120}:
            assert dense["total"] == 120 and time.time() < deadline, dense
            time.sleep(0.5)
        after = run_cli("search", query, "--no-llm", "--json", cwd=root)
        assert "not yet embedded" not in after.stderr
        assert json.loads(after.stdout)[0]["path"] == f"pkg/m{kinds.index('tangomint')}.py"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert run_json("status", "-C", str(root))["store_problem"] is None
