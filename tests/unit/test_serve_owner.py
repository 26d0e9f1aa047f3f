"""One owner for the embedded index: while `codeasst serve` runs, no other codeasst process opens
the same Chroma folder; they go through the server (the chat too), or wait, or are refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from codeasst.access import connect
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.chat.assistant import ChatAssistant
from codeasst.errors import IndexLocked
from codeasst.index import owner
from codeasst.services import build_services
from codeasst.wire import discovery
from tests.unit.serve_harness import TOKEN, listening

MODULE = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n"


def hold(index_dir, how: str) -> subprocess.Popen:
    """Another process that takes the index (`own`, as the server does, or `share`, as a command)
    and prints "held" once it has it; it keeps it until its stdin closes."""
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from codeasst.index import owner
        owner.{how}(Path({str(index_dir)!r}), **({{"on_wait": lambda: print("waiting", flush=True)}}
                                                if "{how}" == "own" else {{}}))
        print("held", flush=True)
        sys.stdin.read()
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_a_command_never_opens_an_index_a_server_owns(make_repo):
    services = build_services(make_repo({"mod.py": MODULE}), embedder=HashingEmbedder(), llm=ScriptedLLM())
    server = hold(services.repo.index_dir, "own")
    try:
        assert server.stdout.readline().strip() == "held"
        for open_it in (services.open_store, services.indexer):
            with pytest.raises(IndexLocked, match=r"codeasst serve \(pid \d+\) owns this repository's index") as err:
                open_it()
            assert err.value.exit_code == 75
    finally:
        server.communicate("", timeout=10)
    assert services.indexer().run().files == 1, "once the server is gone, the command works alone"


def test_a_server_waits_for_a_command_that_has_the_index_open(make_repo):
    services = build_services(make_repo({"mod.py": MODULE}), embedder=HashingEmbedder(), llm=ScriptedLLM())
    services.indexer()  # this process, a command, now holds the store
    server = hold(services.repo.index_dir, "own")
    try:
        assert server.stdout.readline().strip() == "waiting"
        time.sleep(0.5)
        assert server.poll() is None
        owner.release(services.repo.index_dir)
        assert server.stdout.readline().strip() == "held"
    finally:
        server.communicate("", timeout=10)


def test_the_chat_goes_through_a_running_server(make_repo, monkeypatch):
    root = make_repo({"mod.py": MODULE})
    served_services = build_services(root, embedder=HashingEmbedder(),
                                     llm=ScriptedLLM(["`add` returns the sum of its arguments [1]."]))
    with listening(served_services) as (port, state):
        discovery.announce(root, f"http://127.0.0.1:{port}", TOKEN)
        mine = build_services(root, embedder=HashingEmbedder(), llm=ScriptedLLM())

        def never(*_args, **_kwargs):
            raise AssertionError("the chat opened the index itself")

        monkeypatch.setattr(mine, "open_store", never)
        monkeypatch.setattr(mine, "indexer", never)
        assistant = ChatAssistant(connect(mine))
        shown: list[str] = []
        turn = assistant.answer("what does add return?", [], on_text=shown.append, cancelled=lambda: False)
        assert turn.state == "done" and "sum of its arguments" in turn.answer and "".join(shown).strip()
        assert turn.sources and turn.sources[0].path == "mod.py" and turn.sources[0].verified
        assert [s.path for s in assistant.search("sum of a and b")] == ["mod.py"]
        assert assistant.status().files == 1
        assert state.served["ask"] == 1 and state.served["search"] == 1
