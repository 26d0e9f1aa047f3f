"""`codeasst serve` against the browser and against clients that misbehave, through HTTP on real
127.0.0.1 listeners (uvicorn in a thread). A scripted model and the hashing embedder stand in for
the real ones: what is tested is the guard, the queue and the streams, not the answers."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from codeasst.backends.fake import ScriptedLLM
from codeasst.wire import discovery
from codeasst.wire.client import ServerClient
from tests.unit.serve_harness import TOKEN, SlowLLM, listening, request, services_for

MODULE = "def add(a, b):\n    \n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def repo(make_repo, tmp_path):
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "credentials").write_text("aws_secret_access_key = hunter2\n")
    root = make_repo({"mod.py": MODULE, ".gitignore": "private/\n", "private/notes.py": "token = 'x'\n",
                      ".env": "PASSWORD=hunter2\n", ".codeasstignore": "drafts.py\n", "drafts.py": "x = 1\n"})
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "link.py").symlink_to(outside / "credentials")
    (root / "inner").symlink_to(root / "private", target_is_directory=True)  # inside, but to an ignored folder
    return root


def test_a_page_cannot_reach_the_server_by_rebinding_or_from_its_origin(repo):
    with listening(services_for(repo)) as (port, _):
        assert request(port, "GET", "/v1/health")[0] == 200
        assert request(port, "GET", "/v1/health", headers={"Host": f"localhost:{port}"})[0] == 200
        # DNS rebinding: the page's own name resolves to 127.0.0.1, and its requests carry that name
        for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1.nip.io:{port}",
                     f"127.0.0.1:{port + 1}"):
            status, body = request(port, "POST", "/v1/search", {"query": "add", "no_llm": True},
                                   headers={"Host": host})
            assert status == 403 and "Host" in body["detail"], (host, status, body)
        # a cross-site request, with or without the token, and a no-cors one that sends no Origin
        for headers in ({"Origin": "http://attacker.example"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "cross-site"}):
            status, body = request(port, "POST", "/v1/search", {"query": "add", "no_llm": True}, headers=headers)
            assert status == 403 and "web pages" in body["detail"], (headers, status, body)
        status, body = request(port, "POST", "/v1/ask", {"question": "what does add do?"},
                               headers={"Origin": "http://attacker.example"})
        assert status == 403 and "def add" not in json.dumps(body)


def test_an_origin_the_user_allowed_gets_cors_and_still_needs_the_token(repo, monkeypatch):
    monkeypatch.setenv("CODEASST_SERVE__ALLOWED_ORIGINS", '["http://localhost:3000"]')
    with listening(services_for(repo)) as (port, _):
        origin = {"Origin": "http://localhost:3000"}
        preflight = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        preflight.request("OPTIONS", "/v1/health", headers={**origin, "Access-Control-Request-Method": "GET",
                                                            "Access-Control-Request-Headers": "authorization"})
        answer = preflight.getresponse()
        assert answer.status == 200 and answer.getheader("access-control-allow-origin") == "http://localhost:3000"
        assert request(port, "GET", "/v1/health", headers=origin)[0] == 200
        assert request(port, "GET", "/v1/health", headers=origin, token=None)[0] == 401
        assert request(port, "GET", "/v1/health", headers={"Origin": "http://localhost:3001"})[0] == 403


def test_every_route_but_the_api_description_needs_the_token(repo):
    with listening(services_for(repo)) as (port, _):
        for method, route, payload in [("GET", "/v1/health", None), ("GET", "/v1/status", None),
                                       ("POST", "/v1/search", {"query": "add"}), ("POST", "/v1/ask", {"question": "a"}),
                                       ("POST", "/v1/complete", {"path": "mod.py", "line": 2, "col": 5}),
                                       ("POST", "/v1/open", {"path": "mod.py"}), ("POST", "/v1/index", {}),
                                       ("POST", "/v1/events", {"kind": "shown", "id": "x"})]:
            for token in (None, "wrong", TOKEN[:-1]):
                status, body = request(port, method, route, payload, token=token)
                assert status == 401 and "token" in body["detail"], (route, token, status)
        assert request(port, "GET", "/openapi.json", token=None)[0] == 200


@pytest.mark.parametrize("route", ["/v1/complete", "/v1/open"])
def test_paths_are_resolved_contained_and_checked_against_the_ignore_rules_at_every_route(repo, route):
    cases = [("linkdir/credentials", "outside the repository"), ("link.py", "outside the repository"),
             (str(repo.parent / "home" / ".aws" / "credentials"), "outside the repository"),
             ("../home/.aws/credentials", "outside the repository"),
             (".env", "ignored"), ("private/notes.py", "ignored"), ("drafts.py", "ignored"),
             ("inner/notes.py", "ignored")]
    with listening(services_for(repo)) as (port, state):
        for path, fragment in cases:
            for text in (None, "x = 1\n"):  # the buffer sent, or the file read from disk: refused alike
                status, body = request(port, "POST", route, {"path": path, "line": 1, "col": 1, "text": text,
                                                             "client": "c"})
                assert status == 403 and fragment in body["detail"], (path, text, status, body)
        assert request(port, "POST", route, {"path": "mod.py", "line": 2, "col": 5, "client": "c"})[0] == 200
        recent = state.clients.peek("c").recent
        assert [path for path, _ in recent.pieces] + [recent.at[0]] == ["mod.py"], "nothing refused was kept"


class ByPromptLLM(SlowLLM):
    """A long answer to a question, a short completion otherwise, whatever the order they come in:
    the checked answer may be stopped before the model is asked at all."""

    def stream(self, prompt, params):
        self.replies = ["The function add returns the sum [1]. " * 30 if "Question:" in prompt else "return a + b"]
        return super().stream(prompt, params)


def test_a_client_that_leaves_before_the_stream_starts_releases_the_model(repo):
    llm = ByPromptLLM([], delay=0.1)
    with listening(services_for(repo, llm)) as (port, state):
        body = json.dumps({"question": "what does add return?"}).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        # gone before a byte was read: the completion that follows gets the model, not a hang
        started = time.perf_counter()
        status, reply = request(port, "POST", "/v1/complete", {"path": "mod.py", "line": 2, "col": 5}, timeout=20)
        assert status == 200 and time.perf_counter() - started < 10, reply
        assert state.queue_for(state.services.llm).depth() == {"waiting": 0, "running": False}


def asking(port: int) -> http.client.HTTPConnection:
    """An /v1/ask whose first line has come: the model is writing the answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    connection.request("POST", "/v1/ask", json.dumps({"question": "what does add return?"}),
                       {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert json.loads(connection.getresponse().readline())["type"] in ("index", "text", "note")
    return connection


def test_a_client_that_leaves_mid_stream_stops_the_model_at_its_next_token(repo):
    llm = SlowLLM(["The function add returns the sum of its two arguments [1]. " * 40], delay=0.05)
    with listening(services_for(repo, llm)) as (port, state):
        connection = asking(port)
        connection.sock.shutdown(socket.SHUT_RDWR)  # the user closed the editor
        connection.close()
        assert llm.stopped.wait(10), "the model went on writing for nobody"
        deadline = time.time() + 10
        while state.streams.get("client gone", 0) < 1 and time.time() < deadline:
            time.sleep(0.05)
        assert state.streams["client gone"] == 1 and state.queue_for(state.services.llm).depth()["running"] is False


def test_sigterm_stops_the_server_within_seconds_with_requests_waiting(make_repo, tmp_path):
    """A real `codeasst serve` process (run_server) on a scripted model that takes a second a token:
    one client generates, five wait, and SIGTERM ends them all."""
    root = make_repo({"mod.py": MODULE})
    proc = subprocess.Popen([sys.executable, "-m", "tests.unit.serve_harness", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while (found := discovery.find(root)) is None and time.time() < deadline:
            time.sleep(0.1)
        assert found is not None, proc.stderr.read() if proc.poll() is not None else "no record"
        port = int(found.url.rsplit(":", 1)[1])
        answers: list[int] = []

        def ask(client: str) -> None:
            try:
                answers.append(request(port, "POST", "/v1/complete", {"path": "mod.py", "line": 2, "col": 5,
                                                                      "client": client}, token=found.token,
                                       timeout=60)[0])
            except OSError:
                answers.append(0)

        threads = [threading.Thread(target=ask, args=(f"c{i}",)) for i in range(6)]
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        started = time.perf_counter()
        proc.terminate()
        proc.wait(timeout=20)
        stopped = time.perf_counter() - started
        for thread in threads:
            thread.join(10)
        assert stopped < 8, f"SIGTERM took {stopped:.1f} s"
        assert len(answers) == 6 and 503 in answers, answers
        assert discovery.find(root) is None and not discovery.record_path(root).exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_cli_never_talks_to_a_configured_proxy(repo, tmp_path):
    """`http_proxy` and friends would send the code and the token to the proxy: a listening socket
    stands in for it, and must see no connection while a CLI command goes to the server."""
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(8)
    proxy.settimeout(0.5)
    proxy_url = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    with listening(services_for(repo)) as (port, _):
        discovery.announce(repo, f"http://127.0.0.1:{port}", TOKEN)
        env = {**os.environ, **{name: proxy_url for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")},
               "no_proxy": "", "NO_PROXY": ""}
        result = subprocess.run([sys.executable, "-m", "codeasst.cli", "status", "--json", "-C", str(repo)],
                                env=env, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["embedder"] == "fake-hashing-64", "the answer came from the server"
        with pytest.raises(TimeoutError):
            proxy.accept()
        os.environ.update({"http_proxy": proxy_url, "HTTP_PROXY": proxy_url})
        try:
            assert ServerClient.find(repo).health()["pid"] == os.getpid()
        finally:
            for name in ("http_proxy", "HTTP_PROXY"):
                os.environ.pop(name)
        with pytest.raises(TimeoutError):
            proxy.accept()
    proxy.close()


def test_client_state_is_bounded_by_the_caps(repo, monkeypatch):
    monkeypatch.setenv("CODEASST_SERVE__MAX_CLIENTS", "8")
    monkeypatch.setenv("CODEASST_SERVE__MAX_CLIENT_CHARS", "2000")
    with listening(services_for(repo, ScriptedLLM(["return a + b"] * 300))) as (port, _):
        big = MODULE + "# " + "x" * 50_000 + "\n"
        for i in range(200):
            assert request(port, "POST", "/v1/complete", {"path": "mod.py", "line": 2, "col": 5, "text": big,
                                                          "client": f"buffer-{i}"})[0] == 200
        health = request(port, "GET", "/v1/health")[1]
        assert health["clients"]["kept"] == 8 and health["clients"]["forgotten"] == 192
        assert health["clients"]["chars"] <= 8 * 2000


def test_a_full_queue_answers_429_at_once(repo, monkeypatch):
    monkeypatch.setenv("CODEASST_SERVE__MAX_QUEUE", "1")
    llm = SlowLLM(["return a + b"] * 5, delay=0.5)
    with listening(services_for(repo, llm)) as (port, _):
        statuses: list[int] = []
        threads = [threading.Thread(target=lambda i=i: statuses.append(request(
            port, "POST", "/v1/complete", {"path": "mod.py", "line": 2, "col": 5, "client": f"c{i}"})[0]))
            for i in range(3)]
        for thread in threads:
            thread.start()
            time.sleep(0.2)
        for thread in threads:
            thread.join(30)
        assert sorted(statuses) == [200, 200, 429], statuses


def test_no_token_is_for_loopback_only(make_repo):
    from typer.testing import CliRunner

    from codeasst import cli

    root = make_repo({"mod.py": MODULE})
    refused = CliRunner().invoke(cli.app, ["serve", "--host", "0.0.0.0", "--no-token", "-C", str(root)])
    assert refused.exit_code == 2 and "needs a token" in refused.output
    both = CliRunner().invoke(cli.app, ["serve", "--no-token", "--token", "x" * 20, "-C", str(root)])
    assert both.exit_code == 2 and "contradict" in both.output


def test_what_the_gate_silences_does_not_wait_for_the_model(repo):
    llm = SlowLLM(["The function add returns the sum of its two arguments [1]. " * 40], delay=0.1)
    with listening(services_for(repo, llm)) as (port, state):
        connection = asking(port)
        assert state.queue_for(state.services.llm).depth()["running"], "the answer holds the model"
        started = time.perf_counter()
        status, reply = request(port, "POST", "/v1/complete", {"path": "mod.py", "line": 1, "col": 6})
        assert status == 200 and reply["text"] == "" and "inside an identifier" in reply["reason"], reply
        assert time.perf_counter() - started < 1.5
        connection.close()


def test_a_reader_slower_than_the_model_is_cut_off_and_the_work_stops():
    """LineStream on a real listener: the work writes 64 KB lines as fast as it can to a client that
    never reads; once the kernel's buffers and the stream's own (64 KB here) are full, the client is
    cut off and the work told to stop, instead of waiting on the client."""
    from fastapi import FastAPI

    from codeasst.serve.streams import Gone, LineStream

    outcome: dict = {}
    app = FastAPI()

    @app.post("/lines")
    def lines() -> LineStream:
        def work(emit, gone) -> None:
            written = 0
            try:
                while written < 300_000_000:  # far more than any buffer: only being cut off ends it early
                    emit({"type": "text", "text": "x" * 65_536})
                    written += 65_536
            except Gone:
                outcome["written"] = written
                raise

        return LineStream(work, max_bytes=65_536, on_end=lambda why: outcome.setdefault("ended", why))

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="critical"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", port))
        reader.sendall(f"POST /lines HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n".encode())
        deadline = time.time() + 30
        while "ended" not in outcome and time.time() < deadline:
            time.sleep(0.05)
        assert outcome.get("ended") == "slow reader", outcome
        assert outcome["written"] < 200_000_000
        reader.close()
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_client_with_a_request_in_flight_is_never_forgotten():
    """Else a flood of other ids would give its next request a new state, and the older request,
    still waiting for the model, would never learn that it is stale."""
    from codeasst.access.clients import ClientTable

    table = ClientTable(max_clients=4)
    with table.hold("editor") as editor:
        for i in range(100):
            with table.hold(f"other-{i}"):
                pass
        assert table.peek("editor") is editor and len(table) == 4
    with table.hold("one-more"):
        pass
    assert table.peek("editor") is None and len(table) == 4 and table.forgotten == 98


def test_a_warm_up_that_comes_after_a_completion_does_not_end_it(make_repo):
    # An editor (codeasst lsp) may send a file's open after its first completion request in it.
    root = make_repo({"mod.py": "def add(a, b):\n    \n"})
    with listening(services_for(root, SlowLLM(["return a + b"] * 5, delay=0.3))) as (port, _state):
        at = {"path": "mod.py", "line": 2, "col": 5, "client": "editor"}
        answers: dict = {}
        asking = threading.Thread(target=lambda: answers.update(complete=request(port, "POST", "/v1/complete", at)))
        asking.start()
        time.sleep(0.3)
        status, _ = request(port, "POST", "/v1/open", {"path": "mod.py", "client": "editor"})
        asking.join(30)
        status_complete, reply = answers["complete"]
        assert (status, status_complete) == (200, 200)
        assert reply["text"] == "return a + b", reply
