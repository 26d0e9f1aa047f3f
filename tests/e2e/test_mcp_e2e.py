"""`codeasst mcp` driven by the official MCP SDK's own client over stdio, through the CLI entry point,
against a real index (Chroma, the embedder, the tree-sitter graph) and the real model: the handshake,
every tool, a tool error, the end of the session; then joined to a running `codeasst serve` that
dies under it, and two agents at once on one repository."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.conftest import CLI, free_port, run_cli, run_json, wait_for_port

pytestmark = pytest.mark.slow

FILES = {
    "billing/__init__.py": "",
    "billing/invoice.py": '''"""Invoices: totals with tax, and their rounding."""

from billing.rates import tax_rate


def invoice_total(items, region):
    """The total of an invoice's items with the region's tax, rounded to cents."""
    subtotal = sum(price * qty for price, qty in items)
    if subtotal < 0:
        raise ValueError("an invoice cannot be negative")
    return round(subtotal * (1 + tax_rate(region)), 2)


def print_invoice(items, region):
    print("total:", invoice_total(items, region))
''',
    "billing/rates.py": '''"""Tax rates by region."""

RATES = {"eu": 0.2, "us": 0.07}


def tax_rate(region):
    """The tax rate of a region; 0 where none is known."""
    return RATES.get(region, 0.0)
''',
    "tests/test_invoice.py": '''from billing.invoice import invoice_total


def test_total_with_tax():
    assert invoice_total([(10.0, 2)], "eu") == 24.0
''',
    "messy.py": "import os\nx=1  \ny = x+1\n",
    ".gitignore": "secret.py\n",
    "secret.py": 'TOKEN = "sk-live-4242"\n',
}


def params(root: Path) -> StdioServerParameters:
    # The SDK passes a small default environment; the test's CODEASST_HOME must reach the server.
    return StdioServerParameters(command=sys.executable, args=["-m", "codeasst.cli", "mcp", "-C", str(root)],
                                 env=dict(os.environ))


@asynccontextmanager
async def agent(root: Path):
    async with Client(params(root), read_timeout_seconds=600) as client:
        yield client


def text(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_an_agent_uses_every_tool_over_stdio(make_repo):
    root = make_repo(FILES)
    run_cli("index", cwd=root)
    (root / "billing" / "rates.py").write_text(FILES["billing/rates.py"] + "\n\ndef zero_rate():\n    return 0.0\n")

    async def session():
        async with agent(root) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"search", "definition", "references", "ask", "lint", "fix", "status", "index"}
            assert all(t.output_schema and t.input_schema["type"] == "object" and t.description
                       for t in listed.values())

            status = await client.call_tool("status", {})
            assert status.structured_content["where"] == "here"
            assert "billing/rates.py" in status.structured_content["changed_since"]["modified"]

            indexed = await client.call_tool("index", {})
            assert not indexed.is_error and indexed.structured_content["changed"] == 1, text(indexed)

            found = await client.call_tool("search", {"query": "where is the tax added to an invoice total"})
            hits = found.structured_content["hits"]
            assert hits[0]["location"] == "billing/invoice.py:1-15", text(found)  # a small file is one chunk
            assert ("billing/invoice.py:1-15  billing.invoice  (file, implementation)\n"
                    '    """Invoices: totals with tax, and their rounding."""') in text(found)
            assert all("sk-live-4242" not in h["preview"] for h in hits)
            only_tests = await client.call_tool("search", {"query": "invoice total", "role": "test"})
            assert {h["path"] for h in only_tests.structured_content["hits"]} == {"tests/test_invoice.py"}

            definition = await client.call_tool("definition", {"name": "invoice_total"})
            (d,) = definition.structured_content["definitions"]
            assert (d["location"], d["source_from"]) == ("billing/invoice.py:6-11", 6)
            assert 'raise ValueError("an invoice cannot be negative")' in d["source"]
            assert "    10          raise ValueError" in text(definition)  # numbered lines of the file

            refs = await client.call_tool("references", {"name": "invoice_total"})
            (place,) = refs.structured_content["places"]
            assert {c["location"] for c in place["callers"]} == {"billing/invoice.py:15", "tests/test_invoice.py:5"}
            assert [c["targets"] for c in place["callees"] if c["name"] == "tax_rate"] == [
                ["billing.rates.tax_rate at billing/rates.py:6"]]
            shape = await client.call_tool("references", {"name": "invoice_total", "outline": True})
            (outlined,) = shape.structured_content["places"]
            assert '     9      if subtotal < 0:' in outlined["outline"]
            assert any(line.startswith("    11      return round(") and "billing.rates.tax_rate at billing/rates.py:6"
                       in line for line in outlined["outline"]), outlined["outline"]

            lint = await client.call_tool("lint", {"path": "messy.py"})
            codes = {f["code"] for f in lint.structured_content["findings"]}
            assert {"F401", "E225", "W291"} <= codes and "messy.py:2:2: E225" in text(lint)

            fixed = await client.call_tool("fix", {"path": "messy.py"})
            diff = fixed.structured_content["diff"]
            assert "+x = 1" in diff and "nothing was written" in text(fixed)
            assert (root / "messy.py").read_text() == FILES["messy.py"]  # the repository is untouched

            updates: list[str] = []

            async def on_progress(progress, total, message):
                updates.append(message or "")

            answer = await client.call_tool("ask", {"question": "How is the tax added to an invoice's total?"},
                                            progress_callback=on_progress)
            assert not answer.is_error, text(answer)
            assert any(c["location"].startswith("billing/") and c["verified"]
                       for c in answer.structured_content["citations"]), text(answer)
            assert updates, "the answer sent no progress"

            refused = await client.call_tool("lint", {"path": "secret.py"})
            assert refused.is_error and "ignored" in text(refused) and len(text(refused).splitlines()) == 1
            wrong = await client.call_tool("search", {"query": "x", "k": "many"})
            assert wrong.is_error and text(wrong).startswith("search: k:")

    anyio.run(session)


def test_through_a_server_that_dies_the_next_call_works_alone(make_repo):
    root = make_repo(FILES)
    port = free_port()
    server = subprocess.Popen([*CLI, "serve", "--port", str(port), "-C", str(root)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, 300)
        url = run_json("serve", "--info", cwd=root)["url"]

        async def session():
            async with agent(root) as client:
                status = await client.call_tool("status", {})
                assert status.structured_content["where"] == url
                indexed = await client.call_tool("index", {})
                assert "vectors follow in the background" in text(indexed)
                found = await client.call_tool("definition", {"name": "tax_rate"})
                assert not found.is_error, text(found)
                assert found.structured_content["definitions"][0]["location"] == "billing/rates.py:6-8"

                server.send_signal(signal.SIGKILL)
                server.wait(timeout=30)
                after = await client.call_tool("search", {"query": "tax rate of a region"})
                assert not after.is_error, text(after)  # the server gone: answered here, with a note
                assert after.structured_content["hits"][0]["path"] == "billing/rates.py"
                alone = await client.call_tool("status", {})
                assert alone.structured_content["where"] == "here"

        anyio.run(session)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=60)


def test_two_agents_index_one_repository_at_once(make_repo):
    root = make_repo({**FILES, **{f"gen/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(150)}})
    results: list = []

    async def one():
        async with agent(root) as client:
            results.append(await client.call_tool("index", {}))
            results.append(await client.call_tool("references", {"name": "tax_rate"}))

    async def both():
        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    started = time.monotonic()
    anyio.run(both)
    assert all(not r.is_error for r in results), [text(r) for r in results]
    indexed = [r.structured_content for r in results if "added" in r.structured_content]
    # one run added the files; the other, waiting for its lock, found them there: nothing written twice
    assert sorted(r["added"] for r in indexed) == [0, len(FILES) + 150 - 1], indexed  # secret.py is ignored
    assert time.monotonic() - started < 300
    status = run_json("status", cwd=root)
    assert status["files"] == len(FILES) + 150 - 2  # and billing/__init__.py, empty, holds no chunk


def test_definition_and_references_in_rust_java_and_cpp(make_repo):
    from tests.unit.test_graph_langs import CPP, JAVA, RUST

    root = make_repo({**RUST.files, **JAVA.files, **CPP.files})
    run_cli("index", cwd=root)

    async def session():
        async with agent(root) as client:
            for name, location, caller in (("Parser.peek", "src/parser.rs:19-21", "src/parser.rs:28"),
                                           ("Cart.check", "src/main/java/com/shop/Cart.java:26-26",
                                            "src/main/java/com/shop/Cart.java:16"),
                                           ("scale", "src/shape.cpp:13-13", "src/shape.cpp:8")):
                definition = await client.call_tool("definition", {"name": name})
                assert not definition.is_error, text(definition)
                (d,) = definition.structured_content["definitions"]
                assert d["location"] == location, text(definition)
                refs = await client.call_tool("references", {"name": name, "outline": True})
                (place,) = refs.structured_content["places"]
                assert caller in {c["location"] for c in place["callers"]}, text(refs)
                first = int(location.split(":")[1].split("-")[0])
                assert place["outline"] and place["outline"][0].split()[0] == str(first), text(refs)

    anyio.run(session)
