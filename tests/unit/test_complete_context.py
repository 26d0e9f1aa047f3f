"""Other files' context for a completion: stubs of the definitions a file imports from its repository,
first in the prompt, the same in `complete` and in the server's warm-up."""

from __future__ import annotations

from fastapi.testclient import TestClient

from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.complete.context import imported_definitions
from codeasst.serve.app import create_app
from codeasst.serve.events import EventStore
from codeasst.services import build_services
from codeasst.tasks.complete import complete_at

CORE = '''\
import os

LIMIT = 10  # the most parts


def helper(a, b=2):  # adds
    # a comment before the body
    """Add two numbers.

    More about it."""
    total = a + b
    return total


class Thing(Base):
    """A thing."""

    def __init__(self, size):
        self.size = size

    def grow(self, by: int) -> "Thing":
        return Thing(self.size + by)

    def _secret(self):
        return os.environ["HOME"]
'''
USE = '''\
from os import path
from .core import (helper,
                   Thing as T)
from pkg import LIMIT, missing
from ..elsewhere import outside


def run(x):
    
'''
FILES = {"pkg/__init__.py": "from .core import LIMIT\n", "pkg/core.py": CORE, "pkg/use.py": USE,
         "elsewhere.py": "def outside():\n    return 1\n"}


def test_the_names_a_file_imports_from_its_repository_become_stubs(make_repo):
    root = make_repo(FILES)
    context = dict(imported_definitions(root, "pkg/use.py", USE))
    assert list(context) == ["pkg/core.py", "elsewhere.py"], "os is not in the repository"
    assert context["elsewhere.py"] == "def outside():\n    ..."
    assert list(dict(imported_definitions(root / "pkg", "use.py", USE))) == ["core.py"], \
        "../elsewhere.py is outside a repository rooted at pkg/"
    stubs = context["pkg/core.py"]
    assert stubs.startswith("def helper(a, b=2):  # adds\n    \"\"\"Add two numbers.\"\"\"\n    ...")
    assert "class Thing(Base):" in stubs and "    def grow(self, by: int) -> \"Thing\":" in stubs
    assert "LIMIT = 10" in stubs, "a re-export in __init__.py is followed to the definition"
    for body in ("total = a + b", "a comment before the body", "self.size = size", "_secret", "More about"):
        assert body not in stubs


def test_the_prompt_starts_with_the_stubs_and_the_warm_up_builds_the_same_prompt(make_repo, monkeypatch):
    root = make_repo(FILES)
    monkeypatch.setenv("CODEASST_COMPLETE__CONTEXT_TOKENS", "512")
    llm = ScriptedLLM(["return helper(x)", "return helper(x)"])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    line, col = USE.count("\n"), 5
    suggestion = complete_at(services, USE, line, col, "pkg/use.py")
    assert suggestion.text == "return helper(x)"
    prompt = llm.history[-1]
    assert prompt.startswith(f"<|repo_name|>{root.name}\n<|file_sep|>pkg/core.py\ndef helper(a, b=2):")
    assert "<|file_sep|>pkg/use.py\n<|fim_prefix|>from os import path" in prompt

    warmed = []
    monkeypatch.setattr(llm, "warm", lambda text: warmed.append(text) or 0)
    (root / "pkg/use.py").write_text(USE)
    client = TestClient(create_app(services, events=EventStore(root.parent / "events.sqlite")))
    assert client.post("/v1/open", json={"path": "pkg/use.py", "line": line, "col": col}).status_code == 200
    assert prompt.startswith(warmed[0]) and len(warmed[0]) > len(prompt) - 40, "all but the marker is warm"


def test_no_context_at_the_default_budget(make_repo):
    root = make_repo(FILES)
    llm = ScriptedLLM(["return helper(x)"])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    complete_at(services, USE, USE.count("\n"), 5, "pkg/use.py")
    assert llm.history[-1].startswith("<|fim_prefix|>from os import path")
