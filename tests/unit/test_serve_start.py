"""`codeasst serve` starting: what a client that finds it at once can expect."""

from __future__ import annotations

import socket

from typer.testing import CliRunner

from codeasst import cli
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.services import build_services
from codeasst.wire import discovery


def test_the_server_listens_before_it_announces_itself(make_repo, monkeypatch):
    """A client that finds the announcement at once must be able to connect, not be refused
    (the typing replay once was, in the moment between the two)."""
    services = build_services(make_repo({"mod.py": "x = 1\n"}), embedder=HashingEmbedder(), llm=ScriptedLLM([]))
    monkeypatch.setattr("codeasst.cli.editor.make_services", lambda *args, **kwargs: services)
    connected = []

    def announce(root, url, token):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5):
            connected.append(url)
        raise KeyboardInterrupt  # stop here: the server is not needed past this point

    monkeypatch.setattr(discovery, "announce", announce)
    CliRunner().invoke(cli.app, ["serve", "--port", "0"])
    assert connected, "the announced address refused a connection"
