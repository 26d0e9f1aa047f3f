"""Attributes and constants in the code graph (issue 43): where they are set, what their comments say, who
reads them; and their words on their class's chunk. Real tree-sitter, real SQLite."""

from __future__ import annotations

import sqlite3
import time

import pytest

from codeasst.index import chunkdb
from codeasst.index.chunker import chunk_file
from codeasst.index.graph import FileGraph, extract
from tests.unit.test_graph import build

SESSION = '''\
from dataclasses import dataclass

from .config import TIMEOUT_S, helper
from . import config

MAX_RETRIES = 3  #: a comment at the end of the line is no doc
BACKOFF = 0.5
T = TypeVar("T")
logger = get_logger()
__all__ = ["Session"]
# ------------------------------------------------------------
#: How many lines an outline shows.
OUTLINE_LINES = 12

if TYPE_CHECKING:
    CACHE_SIZE = 10


class Session:
    #: A case-insensitive dictionary of headers to be sent on each request.
    headers = default_headers()
    __slots__ = ()

    def reset(self):
        self.timeout = None
        self.headers = {}
        self.cookies, self.auth = {}, None

    def __init__(self):
        #: Default timeout, in seconds, for every request this session sends.
        self.timeout = 30
        self.verify = True
        """Whether to verify TLS certificates."""
        # type: ignore
        self.cert = None
        # The proxies to use, by scheme.
        self.proxies = {
            "http": None,
        }
        self.send = self.send  # a method's name is no attribute
        self.retries = MAX_RETRIES

    def send(self, request):
        self.timeout += 1
        self.timeout = 5
        if self.verify:
            helper(MAX_RETRIES=1)
            return self.timeout * BACKOFF + config.LIMIT + TIMEOUT_S
        "self.proxies, in a string, is no read"
        return self.send(request)


@dataclass
class Options:
    #: how many lines an outline shows
    lines: int = 12
    name: str

    def shown(self):
        return self.lines


def compute():
    LOCAL_TABLE = {}
    BACKOFF, _ = 0, 1
    return LOCAL_TABLE, MAX_RETRIES
'''


def defs_of(graph: FileGraph, kind: str) -> dict:
    return {d.qname: d for d in graph.defs if d.kind == kind}


def reads_of(graph: FileGraph) -> set[tuple[str, str, int]]:
    return {(graph.defs[e.src].qname, e.target, e.line) for e in graph.edges if e.kind == "read"}


@pytest.fixture(scope="module")
def session() -> FileGraph:
    graph = extract("pkg/session.py", SESSION)
    assert graph is not None
    return graph


def test_attributes_are_definitions_with_their_doc_comments(session):
    attrs = defs_of(session, "attribute")
    timeout = attrs["pkg.session.Session.timeout"]
    # set first in reset(), but the constructor's assignment defines it, with its `#:` doc
    assert (timeout.line, timeout.end_line, timeout.signature) == (31, 31, "self.timeout = 30")
    assert timeout.doc == "Default timeout, in seconds, for every request this session sends."
    assert session.defs[timeout.parent].qname == "pkg.session.Session"
    assert attrs["pkg.session.Session.verify"].doc == "Whether to verify TLS certificates."  # a string after
    assert attrs["pkg.session.Session.headers"].doc.startswith("A case-insensitive dictionary of headers")
    assert attrs["pkg.session.Session.headers"].line == 21, "the class body's assignment, not reset()'s"
    proxies = attrs["pkg.session.Session.proxies"]
    assert (proxies.line, proxies.end_line) == (37, 39) and proxies.doc == "The proxies to use, by scheme."
    assert attrs["pkg.session.Session.cert"].doc == "", "a tool's pragma is no doc"
    assert "pkg.session.Session.send" not in attrs and "pkg.session.Session.__slots__" not in attrs
    assert attrs["pkg.session.Session.auth"].signature == "self.cookies, self.auth = {}, None"
    assert attrs["pkg.session.Session.retries"].signature == "self.retries = MAX_RETRIES"


def test_dataclass_fields_are_attributes(session):
    attrs = defs_of(session, "attribute")
    assert attrs["pkg.session.Options.lines"].doc == "how many lines an outline shows"
    assert attrs["pkg.session.Options.lines"].signature == "lines: int = 12"
    assert attrs["pkg.session.Options.name"].signature == "name: str"


def test_module_constants_are_upper_case_names_at_module_level(session):
    constants = defs_of(session, "constant")
    assert set(constants) == {"pkg.session.MAX_RETRIES", "pkg.session.BACKOFF", "pkg.session.OUTLINE_LINES",
                              "pkg.session.CACHE_SIZE"}
    assert constants["pkg.session.MAX_RETRIES"].doc == "", "a comment at the end of the line is no doc"
    assert constants["pkg.session.MAX_RETRIES"].signature == "MAX_RETRIES = 3"
    assert constants["pkg.session.BACKOFF"].doc == "", "nor is it the doc of the line after"
    assert constants["pkg.session.OUTLINE_LINES"].doc == "How many lines an outline shows."
    assert all(session.defs[d.parent].kind == "module" for d in constants.values())


def test_a_plain_comment_above_is_a_doc_unless_it_is_a_note_a_pragma_or_a_banner():
    graph = extract("limits.py", (
        "# how many times a request is tried\nRETRIES = 3\n"
        "# TODO: make this a setting\nTIMEOUT = 5\n"
        "# --- limits ---\nLIMIT = 1\n"
        "#: the marked doc\n#: on two lines\nMARKED = 2\n"
    ))
    docs = {d.name: d.doc for d in graph.defs if d.kind == "constant"}
    assert docs == {"RETRIES": "how many times a request is tried", "TIMEOUT": "", "LIMIT": "",
                    "MARKED": "the marked doc on two lines"}


def test_reads_are_edges_and_writes_calls_and_names_are_not(session):
    reads = reads_of(session)
    send, init = "pkg.session.Session.send", "pkg.session.Session.__init__"
    assert reads == {
        (send, "pkg.session.Session.verify", 46),
        (send, "pkg.session.Session.timeout", 48),  # `+=` and `=` on lines 44-45 are writes
        (send, "pkg.session.BACKOFF", 48),
        (send, "pkg.config.LIMIT", 48),  # through the imported module
        (send, "pkg.config.TIMEOUT_S", 48),  # imported by name
        (init, "pkg.session.MAX_RETRIES", 41),
        ("pkg.session.Options.shown", "pkg.session.Options.lines", 60),
        ("pkg.session.compute", "pkg.session.MAX_RETRIES", 66),
    }  # not helper(MAX_RETRIES=1)'s keyword, not self.send(...), not the string's "self.proxies"


def test_the_other_edges_are_as_before(session):
    """A constant passed on is read, not a definition passed on: no `ref` edge into it."""
    assert not [e for e in session.edges if e.kind != "read" and e.target and "MAX_RETRIES" in e.target]
    assert [d.kind for d in session.defs[:7]] == ["module", "class", "method", "method", "method", "class", "method"]


def test_the_graph_reads_them_only_where_asked(tmp_path):
    g = build(tmp_path, {
        "pkg/session.py": SESSION,
        "pkg/config.py": "LIMIT = 5\nTIMEOUT_S = 2\n\n\ndef helper(**kw):\n    return kw\n",
        "pkg/retry.py": (
            "from .session import Session, MAX_RETRIES\n\n\n"
            "class RetrySession(Session):\n"
            "    def again(self):\n"
            "        self.callback()\n"
            "        return self.timeout, MAX_RETRIES\n"
        ),
    })
    assert g.find("timeout") == [], "a reader that means functions and classes gets no attribute"
    (timeout,) = g.find("timeout", values=True)
    assert timeout.qname == "pkg.session.Session.timeout"
    readers, unresolved = g.in_edges(timeout, ("read",))
    assert {(e.src.qname, e.line) for e in readers} == {("pkg.session.Session.send", 48),
                                                       ("pkg.retry.RetrySession.again", 7)}  # through the base
    assert unresolved == 0
    (limit,) = g.find("LIMIT", values=True)
    assert {e.src.qname for e in g.in_edges(limit, ("read",))[0]} == {"pkg.session.Session.send"}
    (retries,) = g.find("session.MAX_RETRIES", values=True)
    assert {e.src.qname for e in g.in_edges(retries, ("read",))[0]} == {
        "pkg.session.Session.__init__", "pkg.session.compute", "pkg.retry.RetrySession.again"}
    (cls,) = g.find("Session")
    assert [m.name for m in g.members(cls)] == ["reset", "__init__", "send"], "members are still its methods"
    assert {"headers", "timeout", "verify"} <= {m.name for m in g.members(cls, values=True)}
    assert all(d.kind not in ("attribute", "constant") for d in g.in_file("pkg/session.py"))
    assert g.referenced(["timeout"]) == {}, "reads do not count as the rest of the code leaning on a name"
    (again,) = g.find("RetrySession.again")
    assert [found for _, found in g.out_edges(again)] == [[]], "a call never resolves to an attribute"
    assert [(d.qname, d.kind) for d in g.starting("TIMEOUT_", values=True)] == [("pkg.config.TIMEOUT_S", "constant")]
    assert g.starting("TIMEOUT_") == []


def _big_class(n: int) -> str:
    body = "".join(f"        #: attribute number {i}\n        self.a{i} = {i}\n" for i in range(n))
    reads = "".join(f"        total += self.a{i}\n" for i in range(n))
    return f"class Big:\n    def __init__(self):\n{body}\n    def total(self):\n        total = 0\n{reads}        return total\n"


def _extract_time(source: str) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        extract("big.py", source)
        best = min(best, time.perf_counter() - started)
    return best


def test_a_class_with_2000_attributes_stays_fast():
    source = _big_class(2000)
    started = time.perf_counter()
    graph = extract("big.py", source)
    chunks = chunk_file("big.py", source, max_chars=1000)
    assert time.perf_counter() - started < 2.0
    attrs = defs_of(graph, "attribute")
    assert len(attrs) == 2000 and attrs["big.Big.a1999"].doc == "attribute number 1999"
    assert len(reads_of(graph)) == 2000
    assert "a1999: attribute number 1999" in chunks[0].extra_words
    small, big = _extract_time(_big_class(250)), _extract_time(source)
    # Eight times the attributes, about eight times the time (0.06 s here); a cost per pair of them, even one
    # as cheap as a list of the class's names made per attribute, makes it 20.
    assert big < 14 * small, f"{small:.4f} s for 250 attributes, {big:.4f} s for 2000"


@pytest.mark.parametrize("source", [
    "class A:\n    x = \n    def f(self):\n        self.y =\n",
    "class A(:\n    #: doc\n    self. = 3\n",
    "MAX = (\nclass B:\n    def __init__(self):\n        self.z = [1,\n",
    "self.x = 1\ncls.y = 2\nthis.z = 3\n",
    "def f(self):\n    self.a = 1\n    return self.a\n",
    "\ufeff#: \u00e9t\u00e9\nCAF\u00c9 = 1\n",
])
def test_broken_or_odd_sources_never_crash(source):
    graph = extract("odd.py", source)
    assert graph is not None
    chunk_file("odd.py", source * 40, max_chars=200)


@pytest.mark.parametrize("path", ["src/session.ts", "src/session.js"])
def test_typescript_and_javascript_fields_this_and_constants(path):
    ts = (
        "export const MAX_RETRIES = 3;\n"
        "class Session extends Base {\n"
        "  /** Default timeout, in seconds. */\n"
        "  timeout = 30;\n"
        "  handle = () => 1;\n"
        "  constructor() {\n"
        "    // the headers to send\n"
        "    this.headers = {};\n"
        "  }\n"
        "  send() { return this.timeout + this.headers.size + MAX_RETRIES; }\n"
        "}\n"
    )
    graph = extract(path, ts)
    attrs = defs_of(graph, "attribute")
    assert attrs["session.Session.timeout"].doc == "Default timeout, in seconds."
    assert attrs["session.Session.headers"].doc == "the headers to send"
    assert "session.Session.handle" in attrs
    assert set(defs_of(graph, "constant")) == {"session.MAX_RETRIES"}
    assert {(t, line) for _, t, line in reads_of(graph)} == {
        ("session.Session.timeout", 10), ("session.Session.headers", 10), ("session.MAX_RETRIES", 10)}
    assert [e.name for e in graph.edges if e.kind == "inherit"] == ["Base"]


def test_go_struct_fields_constants_and_receiver_reads(tmp_path):
    g = build(tmp_path, {
        "client/client.go": (
            "package client\n\n"
            "const MaxRetries = 3\n\n"
            "type Client struct {\n"
            "\t// Timeout for every request.\n"
            "\tTimeout int\n"
            "\tA, B string\n"
            "}\n"
        ),
        "client/do.go": (
            "package client\n\n"
            "func (c *Client) Do() int {\n"
            "\tc.Timeout = 3\n"
            "\treturn c.Timeout + len(c.A)\n"
            "}\n"
        ),
    })
    (timeout,) = g.find("Client.Timeout", values=True)
    assert (timeout.kind, timeout.doc, timeout.line) == ("attribute", "Timeout for every request.", 7)
    assert [(e.src.qname, e.line) for e in g.in_edges(timeout, ("read",))[0]] == [("client.do.Client.Do", 5)]
    assert {d.name for d in g.find("B", values=True)} == {"B"}
    assert [d.kind for d in g.find("MaxRetries", values=True)] == ["constant"]


def test_search_words_find_a_class_chunk_by_its_attributes_doc():
    """The class is too big for one chunk: collapsed, its text no longer shows what `__init__` sets; its
    words do, for the lexical index, and neither its text nor its vector's text changes."""
    filler = "".join(f"        step_{i} = request.step({i})\n" for i in range(30))
    source = SESSION.replace("    def send(self, request):\n", "    def send(self, request):\n" + filler)
    chunks = chunk_file("pkg/session.py", source, max_chars=1000)
    (cls,) = [c for c in chunks if c.kind == "class" and c.name == "pkg.session.Session" and c.extra_words]
    assert "timeout: Default timeout, in seconds, for every request this session sends." in cls.extra_words
    assert "verify: Whether to verify TLS certificates." in cls.extra_words
    assert "TLS" not in cls.text and "headers" not in cls.extra_words  # the text shows headers itself
    db = sqlite3.connect(":memory:")
    db.executescript(chunkdb.SCHEMA)
    table = chunkdb.ChunkTable(db)
    table.add([(str(i), c, chunkdb.PENDING) for i, c in enumerate(chunks)], set())
    found = [chunks[int(id_)] for id_, _ in table.rank("TLS certificates")]
    assert cls in found[:2]  # beside __init__, whose text says it
    assert table.by_id([str(chunks.index(cls))])[str(chunks.index(cls))].text == cls.text


def test_symbol_search_gives_attributes_the_room_functions_and_classes_leave(make_repo):
    from codeasst.backends.fake import HashingEmbedder
    from codeasst.services import build_services
    from codeasst.tasks.refs import symbols

    root = make_repo({"pkg/__init__.py": "", "pkg/session.py": SESSION,
                      "pkg/timing.py": "def time_left(deadline):\n    return deadline\n"})
    services = build_services(root, embedder=HashingEmbedder())
    assert [(s["qname"], s["kind"]) for s in symbols(services, "time", limit=1)] == [
        ("pkg.timing.time_left", "function")]
    found = [(s["qname"], s["kind"]) for s in symbols(services, "time", limit=5)]
    assert found == [("pkg.timing.time_left", "function"), ("pkg.session.Session.timeout", "attribute")]
    assert [s["kind"] for s in symbols(services, "Session.timeout")] == ["attribute"]
