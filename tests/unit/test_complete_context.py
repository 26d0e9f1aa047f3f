"""Other files' context for a completion, first in the prompt, the same in `complete` and in the
server's warm-up: stubs of the definitions a file imports from its repository, chunks of other files
sharing the words before the cursor, and the server's ring buffer of files a client left."""

from __future__ import annotations

from dataclasses import replace

from fastapi.testclient import TestClient

from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.complete.context import RING_FILES, RecentFiles, imported_definitions, related_chunks
from codeasst.complete.fim import CompleteOptions
from codeasst.serve.app import create_app
from codeasst.services import build_services
from codeasst.tasks.complete import complete_at, other_files
from codeasst.wire.events import EventStore

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
    monkeypatch.setattr(llm, "warm", lambda text, **_: warmed.append(text) or 0)
    (root / "pkg/use.py").write_text(USE)
    client = TestClient(create_app(services, events=EventStore(root.parent / "events.sqlite")), base_url="http://127.0.0.1")
    assert client.post("/v1/open", json={"path": "pkg/use.py", "line": line, "col": col}).status_code == 200
    assert prompt.startswith(warmed[0]) and len(warmed[0]) > len(prompt) - 40, "all but the marker is warm"


def test_no_context_at_the_default_budget(make_repo):
    root = make_repo(FILES)
    llm = ScriptedLLM(["return helper(x)"])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    complete_at(services, USE, USE.count("\n"), 5, "pkg/use.py")
    assert llm.history[-1].startswith("<|fim_prefix|>from os import path")


# The index source: chunks of other files that share the words of the lines before the cursor.
PRICES = '''\
def unrelated(values):
    """Something else entirely, long enough that the file is cut into more than one chunk.

    It keeps the values that say something, in a stable order, once each."""
    kept = [value for value in values if value is not None and value != "" and not str(value).isspace()]
    ordered = sorted(kept, key=lambda value: (type(value).__name__, str(value)))
    unique = list(dict.fromkeys(ordered))
    return [str(value).strip().lower() for value in unique if len(str(value).strip()) > 1]


def apply_discount(invoice, rate):
    """Lower an invoice's total by a rate."""
    invoice.total = invoice.total * (1 - rate)
    return invoice
'''
BILLING = '''\
from shop.prices import apply_discount


def checkout(invoice, customer):
    rate = customer.discount_rate
    invoice = apply_discount(invoice, rate)
    
'''
CAP = 1_000_000  # index.max_file_bytes
INDEXED = {"shop/prices.py": PRICES, "shop/billing.py": BILLING, "shop/other.py": "def noise(level, volume):\n    return level * volume\n",
           "docs/discount.md": "# invoice discount rate apply_discount\n", "build/gen.py": "def apply_discount(): ...\n",
           ".gitignore": "build/\n"}


def test_the_index_source_finds_the_chunk_sharing_the_words_before_the_cursor(make_repo):
    root = make_repo(INDEXED)
    found = related_chunks(root, "shop/billing.py", BILLING, CAP)
    assert found == [("shop/prices.py", PRICES[PRICES.index("def apply_discount"):].rstrip("\n"))], \
        "the chunk sharing the words, cut as the index cuts the file; not the file itself, not markdown, " \
        "not what .gitignore excludes, not chunks sharing little more than `def`"
    assert "shop/prices.py" not in dict(related_chunks(root, "shop/billing.py", BILLING, 100)), \
        "a file over index.max_file_bytes is left out, as the index leaves it"
    assert related_chunks(root, "shop/billing.py", "", CAP) == []
    assert related_chunks(root, "notes.txt", BILLING, CAP) == [], "no grammar, nothing to compare with"


def test_the_ring_keeps_the_lines_around_the_cursor_in_each_file_left():
    ring = RecentFiles()
    a = "\n".join(f"a{n}" for n in range(1, 101))
    ring.visit("a.py", a, 50)
    assert ring.context("b.py") == [], "nothing is left yet"
    ring.visit("a.py", a, 60)
    ring.visit("b.py", "b1\nb2", 2)
    piece = ring.context("b.py")[0]
    assert piece[0] == "a.py" and piece[1].split("\n")[0] == "a28" and piece[1].split("\n")[-1] == "a76", \
        "32 lines before the last cursor in a.py, 16 after"
    ring.visit("a.py", a, 3)
    assert [p for p, _ in ring.context("a.py")] == ["b.py"], "the file the client is in is never its own context"
    ring.visit("c.py", "c1", 1)
    assert [p for p, _ in ring.context("c.py")] == ["a.py", "b.py"], "most recent first, one piece per file"
    assert ring.context("c.py")[0][1].startswith("a1\na2"), "a.py's piece is the one around its latest cursor"
    for number in range(20):
        ring.visit(f"f{number}.py", "x", 1)
    assert len(ring.context("z.py")) == RING_FILES


def test_the_sources_come_in_the_configured_order_within_the_budget(make_repo):
    root = make_repo({**INDEXED, "shop/__init__.py": ""})
    options = CompleteOptions(context_tokens=512)
    recent = [("shop/other.py", "def noise():"), ("shop/billing.py", "its own text")]
    found = other_files(root, BILLING, "shop/billing.py", options, recent=recent)["context"]
    paths = [path for path, _ in found]
    assert paths[0] == "shop/prices.py" and found[0][1].startswith("def apply_discount(invoice, rate):\n    \"\"\""), \
        "imports first: the stub"
    assert paths[1] == "shop/prices.py" and "invoice.total * (1 - rate)" in found[1][1], "then the index's chunk"
    assert paths[-1] == "shop/other.py" and "shop/billing.py" not in paths, "then the ring, less the file itself"
    only = other_files(root, BILLING, "shop/billing.py", replace(options, context_sources=("recent",)), recent=recent)
    assert only["context"] == recent[:1]
    assert other_files(root, BILLING, "shop/billing.py", replace(options, context_tokens=0), recent=recent) == {}


def test_the_server_keeps_a_clients_context_while_it_types_in_one_file(make_repo, monkeypatch):
    root = make_repo(INDEXED)
    monkeypatch.setenv("CODEASST_COMPLETE__CONTEXT_TOKENS", "1024")
    monkeypatch.setenv("CODEASST_COMPLETE__CONTEXT_SOURCES", '["index", "recent"]')
    llm = ScriptedLLM(["x = 1"] * 4)
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    warmed = []
    monkeypatch.setattr(llm, "warm", lambda text, **_: warmed.append(text) or 0)
    client = TestClient(create_app(services, events=EventStore(root.parent / "events.sqlite")), base_url="http://127.0.0.1")
    line = BILLING.count("\n")  # the last line, indented by 4
    assert client.post("/v1/open", json={"path": "shop/prices.py", "line": 7, "col": 5, "client": "me"}).status_code == 200
    assert client.post("/v1/open", json={"path": "shop/billing.py", "line": line, "col": 5,
                                         "client": "me"}).status_code == 200
    head = warmed[-1].split("<|file_sep|>shop/billing.py\n")[0]
    assert "<|file_sep|>shop/prices.py\ndef apply_discount(" in head, "the index's chunk"
    assert "<|file_sep|>shop/prices.py\ndef unrelated(values):" in head, "the ring: the lines around the cursor left"

    at = BILLING.removesuffix("\n")
    moved_on = at + "level = noise(level, volume)\n    " * 12  # other.py's words: the index's choice differs
    assert related_chunks(root, "shop/billing.py", moved_on, CAP)[0][0] == "shop/other.py"
    for text in (at, moved_on):
        reply = client.post("/v1/complete", json={"path": "shop/billing.py", "text": text, "client": "me",
                                                  "line": text.count("\n") + 1, "col": 5})
        assert reply.status_code == 200
        assert llm.history[-1].startswith(head), "the same other files while the client stays in billing.py"
    client.post("/v1/complete", json={"path": "shop/billing.py", "text": BILLING, "line": line, "col": 5,
                                      "client": "someone else"})
    assert "def unrelated" not in llm.history[-1], "another client's ring is its own: it has left no file yet"
