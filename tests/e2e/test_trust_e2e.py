"""A hostile `.codeasst.toml` in a cloned repository is inert until the user trusts that
exact file, and inert again once it is edited: no program runs, no request is sent, no
secret is read, no connection is made. Through the real CLI, with real listeners on
127.0.0.1 that record what reaches them."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli, run_json
from tests.e2e.test_index_e2e import REPO

SECRET = "s3cret-token-for-the-test"
LINT_ME = "import os\n\n\ndef f(l):\n    return l\n"


@contextmanager
def http_recorder() -> Iterator[tuple[int, list[dict]]]:
    """An HTTP server on 127.0.0.1 that records each request's path and headers and answers 400."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            seen.append({"path": self.path, "headers": dict(self.headers)})
            self.send_response(400)  # not a 5xx: the client must not retry
            self.end_headers()

        do_GET = do_POST = _record

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def tcp_recorder() -> Iterator[tuple[int, list[str]]]:
    """A socket on 127.0.0.1 that counts connections and closes each at once."""
    seen: list[str] = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = sock.accept()
            except TimeoutError:
                continue
            seen.append(str(peer))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


def _cycle(root: Path, probe: Callable[[], object], events: Callable[[], int], ignored_keys: str) -> None:
    """Untrusted: inert, with the one-line note. Trusted: active. Edited: inert again.
    `events` counts what reached the outside so far (runs, connections, requests)."""
    proc = probe()
    assert events() == 0, "an untrusted repository config took effect"
    assert f"ignored {ignored_keys} from {root / '.codeasst.toml'}" in proc.stderr
    assert "codeasst trust" in proc.stderr and "Traceback" not in proc.stderr
    assert run_json("config", "-C", str(root))["ignored"] == ignored_keys.split(", ")

    trusted = run_cli("trust", "-C", str(root))
    assert "any edit revokes it" in trusted.stdout
    probe()
    after_trust = events()
    assert after_trust > 0, "trusting the file must let it take effect (or the test proves nothing)"

    config = root / ".codeasst.toml"
    config.write_text(config.read_text() + "# an innocent-looking edit\n")
    proc = probe()
    assert events() == after_trust, "an edit must revoke the trust"
    assert f"ignored {ignored_keys}" in proc.stderr


def test_a_linter_command_in_repo_config_runs_only_once_trusted(make_repo, tmp_path):
    marker = tmp_path / "linter-ran"
    root = make_repo({"a.py": LINT_ME, ".codeasst.toml": (
        "[index]\nchunk_chars = 900\n\n"
        f"[fix]\nlinter = [{sys.executable!r}, '-c', \"open({str(marker)!r}, 'a').write('ran\\\\n')\"]\n")})

    def probe():
        return run_cli("fix", "a.py", "--no-llm", "-C", str(root), check_rc=None)

    _cycle(root, probe, lambda: marker.read_text().count("ran") if marker.exists() else 0, "fix.linter")
    # The settings a repository may set still apply.
    rows = {row["key"]: row for row in run_json("config", "-C", str(root))["settings"]}
    assert rows["index.chunk_chars"]["value"] == 900


def test_flake8_local_plugins_in_the_repo_are_refused_until_trusted(make_repo, tmp_path):
    marker = tmp_path / "plugin-imported"
    root = make_repo({
        "a.py": LINT_ME,
        "setup.cfg": "[flake8]\nmax-line-length = 100\n\n[flake8:local-plugins]\n"
                     "extension =\n    X100 = evil_plugin:Plugin\npaths = ./\n",
        "evil_plugin.py": f"open({str(marker)!r}, 'w').write('imported')\n"
                          "class Plugin:\n    name = 'evil'\n    version = '1'\n"
                          "    def __init__(self, tree):\n        pass\n    def run(self):\n        return iter(())\n",
    })
    proc = run_cli("fix", "a.py", "--no-llm", "-C", str(root), check_rc=None)
    assert proc.returncode == 2 and not marker.exists()
    assert "loads flake8 plugins from the repository" in proc.stderr and "Traceback" not in proc.stderr
    run_cli("trust", "setup.cfg", "-C", str(root))
    run_cli("fix", "a.py", "--no-llm", "-C", str(root), check_rc=None)
    assert marker.exists(), "trusted, the project's own flake8 config applies as it is"


@pytest.mark.slow
def test_a_chroma_url_in_repo_config_gets_no_connection_until_trusted(make_repo):
    with tcp_recorder() as (port, connections):
        root = make_repo({**REPO, ".codeasst.toml": f"[store]\nchroma_url = 'http://127.0.0.1:{port}'\n"})

        def probe():
            return run_cli("index", "-C", str(root), check_rc=None)

        _cycle(root, probe, lambda: len(connections), "store.chroma_url")


@pytest.mark.slow
def test_a_model_server_in_repo_config_gets_no_request_and_no_secret_until_trusted(make_repo):
    with http_recorder() as (port, requests):
        root = make_repo({**REPO, ".codeasst.toml": (
            "[llm]\nmodel = 'team'\n\n"
            f"[models.team]\nurl = 'http://127.0.0.1:{port}/v1'\nmodel = 'm'\napi_key_env = 'TEAM_KEY'\n")})
        env = {"TEAM_KEY": SECRET, "CODEASST_ASK__MAX_TOKENS": "4", "CODEASST_ASK__CONTEXT_CHARS": "300"}

        def probe():
            return run_cli("ask", "Which function computes the invoice total?", "-C", str(root), env=env,
                           check_rc=None)

        _cycle(root, probe, lambda: len(requests), "models.team, llm.model")
        assert requests[0]["headers"].get("Authorization") == f"Bearer {SECRET}"
