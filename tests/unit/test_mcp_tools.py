"""The MCP tools' logic over a scripted assistant: every result within mcp.max_chars (text and structured
content alike) and saying how to get the rest, each structured result valid against its tool's output
schema, and every bad argument a one-line refusal."""

from __future__ import annotations

import json

import jsonschema
import pytest

from codeasst.access import Assistant
from codeasst.errors import CodeasstError
from codeasst.mcp.tools import TOOLS, Refused, call

LONG = "\n".join(f"    value_{i} = compute(value_{i - 1}, {i})  # step {i}" for i in range(1, 2001))


class Scripted:
    """What the tools read of an Assistant, scripted."""

    where = "here"

    def __init__(self, root, hits: int = 3) -> None:
        self.root = root
        self.hits = hits
        (root / "pkg").mkdir()
        (root / "pkg" / "big.py").write_text("def big():\n" + LONG + "\n")

    def search(self, query, k=None, **kwargs):
        self.search_args = kwargs
        return {"hits": [{"path": "pkg/big.py", "start_line": 1 + 20 * i, "end_line": 20 + 20 * i,
                          "symbol": f"pkg.big.part{i}", "kind": "function", "role": "implementation",
                          "score": 0.5, "sources": ["bm25-chunks"]} for i in range(min(self.hits, k))],
                "notes": [], "dense": {"embedded": 0, "total": 10}}

    def definition(self, name, limit=20):
        if name == "missing":
            raise CodeasstError("no definition named 'missing' in the code graph", hint="try a shorter name")
        return [{"qname": "pkg.big.big", "kind": "function", "path": "pkg/big.py", "line": 1, "end_line": 2001,
                 "signature": "def big()", "doc": "", "source": "def big():\n" + LONG},
                {"qname": "other.big", "kind": "function", "path": "other.py", "line": 3, "end_line": 4,
                 "signature": "def big(x)", "doc": "", "source": "def big(x):\n    return x"}]

    def status(self):
        return {"root": str(self.root), "indexed": True, "files": 1, "chunks": 100,
                "dense": {"embedded": 10, "total": 100}, "stale": {"added": ["new.py"], "modified": [], "deleted": []}}

    refs_lines = staticmethod(Assistant.refs_lines)


def valid(name: str, data: dict) -> None:
    jsonschema.validate(data, TOOLS[name].output_schema())


def sizes(result) -> tuple[int, int]:
    return len(result.text), len(json.dumps(result.data))


def test_a_2000_line_definition_is_cut_within_the_budget_and_read_on_with_offset(tmp_path):
    assistant = Scripted(tmp_path)
    first = call(assistant, "definition", {"name": "big"}, max_chars=4000)
    valid("definition", first.data)
    assert max(sizes(first)) <= 4000
    cut = first.data["cut"]
    assert cut and "offset=" in cut and cut in first.text
    offset = int(cut.split("offset=")[1].split()[0])
    shown = first.data["definitions"][0]["source"].splitlines()
    assert len(shown) == offset and shown[0] == "def big():"
    assert first.data["found"] == 2 and "other.py:3-4  other.big" in first.text  # the other place is named

    more = call(assistant, "definition", {"name": "big", "offset": offset}, max_chars=4000)
    d = more.data["definitions"][0]
    assert d["source_from"] == 1 + offset  # file lines, not the result's own
    assert d["source"].splitlines()[0] == LONG.splitlines()[offset - 1]
    assert f"{1 + offset:>6}  {LONG.splitlines()[offset - 1]}" in more.text


def test_search_hits_are_cut_within_the_budget_and_say_how_to_get_the_rest(tmp_path):
    assistant = Scripted(tmp_path, hits=50)
    result = call(assistant, "search", {"query": "compute the values", "k": 50}, max_chars=3000)
    valid("search", result.data)
    assert max(sizes(result)) <= 3000
    assert 0 < len(result.data["hits"]) < 50 and "fewer (k)" in result.data["cut"]
    assert result.data["words_only"] and result.text.startswith("note: no vectors yet")
    first = result.data["hits"][0]
    assert first["location"] == "pkg/big.py:1-20" and first["preview"].startswith("def big():")
    assert assistant.search_args["no_llm"] is True  # the agent's model wrote the query

    whole = call(assistant, "search", {"query": "compute", "k": 3, "role": "test", "path": "pkg/"}, max_chars=12000)
    assert whole.data["cut"] is None and len(whole.data["hits"]) == 3
    assert assistant.search_args["roles"] == ["test"] and assistant.search_args["path"] == "pkg/"


def test_status_is_valid_against_its_schema(tmp_path):
    result = call(Scripted(tmp_path), "status", {}, max_chars=12000)
    valid("status", result.data)
    assert result.data["changed_since"]["added"] == ["new.py"] and "vectors for 10 of 100" in result.text


@pytest.mark.parametrize(("name", "arguments", "says"), [
    ("nope", {}, "unknown tool 'nope'"),
    ("search", {"query": 3}, "search: query: Input should be a valid string"),
    ("search", {"query": "x", "k": 0}, "search: k: Input should be greater than or equal to 1"),
    ("search", {"query": "x" * 5000}, "search: query: String should have at most 2000 characters"),
    ("search", {"query": "x", "role": "secrets"}, "search: role: Input should be"),
    ("search", {"query": "x", "extra": 1}, "search: extra: Extra inputs are not permitted"),
    ("search", [1, 2], "search: arguments must be an object"),
    ("definition", {}, "definition: name: Field required"),
    ("definition", {"name": "missing"}, "no definition named 'missing' in the code graph (try a shorter name)"),
    ("lint", {"path": "../outside.py"}, "leads outside the repository"),
    ("lint", {"path": "pkg/\x00big.py"}, "holds a NUL character"),
])
def test_bad_arguments_are_refused_in_one_line(tmp_path, name, arguments, says):
    with pytest.raises(Refused) as refused:
        call(Scripted(tmp_path), name, arguments, max_chars=12000)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_every_tool_has_an_object_schema_in_and_out():
    for tool in TOOLS.values():
        assert tool.input_schema()["type"] == "object" and tool.output_schema()["type"] == "object"
        assert tool.input_schema().get("additionalProperties") is False  # an unknown argument is refused
        jsonschema.Draft202012Validator.check_schema(tool.output_schema())
